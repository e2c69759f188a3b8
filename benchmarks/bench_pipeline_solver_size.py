"""DP-SGD against objective perturbation as the private pipeline's model, by ``n epsilon``
(issue 49: the solver a pipeline picks on large tables, which decides how a Dask fit runs).

``make_private_pipeline(DPLogisticRegression(classes=[0, 1], solver=s), epsilon=eps,
delta=1e-6, random_state=seed)`` with ``s`` in {``dpsgd``, ``objective_perturbation``}, on

* ``adult``: Adult's training rows (a 70/30 split, stratified, seeded) resampled with
  replacement to ``n`` rows; scored on the held-out 30 % (real rows never trained on);
* ``synth``: the public Adult-shaped generator of ``bench_raw_dask.py`` (mixed types,
  missing values, skewed numbers), ``n`` fresh rows; scored on 10^5 rows of another seed.

ROC AUC and accuracy, means over seeds, and the difference objective perturbation minus
DP-SGD per ``(table, n, epsilon)``.  Accuracy only: time is not measured here.

    python benchmarks/bench_pipeline_solver_size.py [--seeds 0-2]

writes ``results/pipeline_solver_size.{md,json}`` with the commit it ran on.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
RESULTS = os.path.join(HERE, "results")
SIZES = (100_000, 300_000, 1_000_000)
EPSILONS = (0.3, 1.0, 3.0)
SOLVERS = ("dpsgd", "objective_perturbation")


def _tables():
    from sklearn.model_selection import train_test_split

    from _raw_protocol import CATEGORICAL, NUMERIC, load_raw
    from bench_raw_dask import CATEGORICAL as S_CAT, NUMERIC as S_NUM, chunk, test_table

    X, y = load_raw("adult")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    Xtr, Xte = Xtr.reset_index(drop=True), Xte.reset_index(drop=True)
    schema = dict(numeric=NUMERIC(X), categorical=CATEGORICAL(X))

    def adult(n, seed):
        idx = np.random.default_rng(seed).choice(len(Xtr), n, replace=True)
        return Xtr.iloc[idx].reset_index(drop=True), ytr[idx]

    def synth(n, seed):
        df = chunk(n, 1000 + seed, 0)
        return df.drop(columns="y"), df["y"].to_numpy()

    sXte, syte = test_table()
    return {"adult": (adult, Xte, yte, schema),
            "synth": (synth, sXte, syte, dict(numeric=S_NUM, categorical=S_CAT))}


def _score(pipe, X, y):
    from sklearn.metrics import roc_auc_score

    p = pipe.predict_proba(X)[:, 1]
    return float(roc_auc_score(y, p)), float(np.mean((p > 0.5) == y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    ap.add_argument("--tables", nargs="+", default=["adult", "synth"])
    ap.add_argument("--from-log", help="render the report from the JSON lines a run printed "
                    "(an interrupted run), with the commit it ran on given by --commit")
    ap.add_argument("--commit")
    ap.add_argument("--out", default="pipeline_solver_size",
                    help="results/<out>.{md,json} (default pipeline_solver_size)")
    args = ap.parse_args()
    if args.from_log:
        rows = [json.loads(line) for line in open(args.from_log) if line.startswith("{")]
        doc = {"started": "see the log", "git": {"commit": args.commit}, "rows": rows,
               "seeds": sorted({r["seed"] for r in rows}),
               "threads": "1 (NUMBA_NUM_THREADS=1)"}
        _write(doc, args.out)
        return
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    import skdp
    from _common import git_state

    tables = _tables()
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for name, (draw, Xte, yte, schema) in tables.items():
        if name not in args.tables:
            continue
        for n in args.sizes:
            for seed in seeds:
                Xtr, ytr = draw(n, seed)
                for eps in args.epsilons:
                    for solver in SOLVERS:
                        pipe = skdp.make_private_pipeline(
                            skdp.DPLogisticRegression(classes=[0, 1], solver=solver),
                            epsilon=eps, delta=1e-6, random_state=seed, **schema)
                        pipe.fit(Xtr, ytr)
                        auc, acc = _score(pipe, Xte, yte)
                        rows.append(dict(table=name, n=n, epsilon=eps, seed=seed,
                                         solver=solver, auc=auc, accuracy=acc,
                                         epsilon_spent=float(pipe.epsilon_)))
                        print(json.dumps(rows[-1]), flush=True)
    doc = {"started": started, "git": git_state(), "seeds": list(seeds), "rows": rows,
           "threads": os.environ.get("NUMBA_NUM_THREADS", "numba default")}
    _write(doc, args.out)


def _write(doc, out="pipeline_solver_size"):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{out}.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(RESULTS, f"{out}.md"), "w") as f:
        f.write(report(doc))


def report(doc):
    from collections import defaultdict

    cells = defaultdict(lambda: defaultdict(list))
    seeds = defaultdict(set)
    for r in doc["rows"]:
        cells[(r["table"], r["n"], r["epsilon"])][r["solver"]].append((r["auc"], r["accuracy"]))
        seeds[(r["table"], r["n"], r["epsilon"])].add(r["seed"])
    out = ["# The pipeline's model: DP-SGD or objective perturbation, by n epsilon", "",
           f"`python benchmarks/bench_pipeline_solver_size.py`, {doc['started']}, git "
           f"{doc['git']}, seeds {doc['seeds'][0]}-{doc['seeds'][-1]}, numba threads "
           f"{doc['threads']}. adult: Adult's 70 % training split resampled with replacement "
           "to n rows, scored on the held-out 30 %; synth: the Adult-shaped public generator "
           "of bench_raw_dask.py, scored on 10^5 fresh rows. Means over seeds.", "",
           "| table | n | ε | n·ε | seeds | AUC dpsgd | AUC op | Δ AUC | acc dpsgd | acc op | Δ acc |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (table, n, eps), by in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] * kv[0][2])):
        if not (by["dpsgd"] and by["objective_perturbation"]):
            continue                              # an interrupted run's last cell
        d = np.mean(by["dpsgd"], axis=0)
        o = np.mean(by["objective_perturbation"], axis=0)
        out.append(f"| {table} | {n:,} | {eps:g} | {n * eps:,.0f} | {len(seeds[(table, n, eps)])} | {d[0]:.4f} | {o[0]:.4f} | "
                   f"{o[0] - d[0]:+.4f} | {d[1]:.4f} | {o[1]:.4f} | {o[1] - d[1]:+.4f} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
