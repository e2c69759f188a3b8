"""A private grid search over the private pipeline on raw Parquet with Dask, beside the
same search in memory.

The table is ``bench_raw_dask.py``'s Adult-shaped generator (6 numeric columns, 8 string
columns, missing values, a binary label).  The search is
``DPGridSearchCV(make_private_pipeline(DPLogisticRegression(classes=[0, 1],
solver="objective_perturbation")), {"model__alpha": ALPHAS}, epsilon=1, cv=3)``: two
candidates, three folds, the selected candidate refitted on all rows, the whole procedure
accounted in ``epsilon_``.  Objective perturbation's Dask fit is the in-memory model up
to the rounding of its partition sums, so the two searches should select the same
candidate and release the same score.  Every setting runs in a fresh process:

* ``dask``: on ``dd.read_parquet`` with a ``LocalCluster`` of 2 worker processes x 1
  thread (numba 1 thread each): the folds are split by position on the partitions, every
  fit runs on the workers and every fold is scored per partition there;
* ``memory``: on ``pd.read_parquet`` (numba's 2 threads).

Each run first fits the pipeline once on 2*10^4 other rows (numba compiles its kernels in
the client and the workers), then times the search, reading Parquet included.  Reported:
the search's wall time, the selected candidate, the released score, ``epsilon_``, the
refitted model's accuracy on a fresh test table of 10^5 rows, and whether the selection,
score and events equal the in-memory search's.

    python benchmarks/bench_dask_search.py --sizes 100000 1000000 [--solver dpsgd]

writes ``results/dask_search.{md,json}`` (``--solver dpsgd``: the model's DP-SGD, whose
Dask steps read the in-memory batches with the in-memory noise, so the searches should
agree as well; ``results/dask_search_dpsgd.{md,json}``).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import bench_raw_dask as raw

RESULTS = Path(__file__).resolve().parent / "results"
#: above objective perturbation's privacy floor at these sizes and per-fit budgets
ALPHAS = [1e-3, 1e-2]
EPSILON = 1.0


def make_search(solver):
    from skdp.model_selection import DPGridSearchCV

    return DPGridSearchCV(raw.make_pipe(solver), {"model__alpha": ALPHAS},
                          epsilon=EPSILON, cv=3, random_state=0)


def summary(search, seconds):
    import numpy as np

    Xte, yte = raw.test_table()
    proba = np.asarray(search.predict_proba(Xte))[:, 1]
    return {"search_s": seconds, "best_params": search.best_params_,
            "best_score": float(search.best_score_), "epsilon_": float(search.epsilon_),
            "event": repr(search.dp_event_), **raw.scores(yte, proba),
            "coef": search.best_estimator_[-1].coef_.ravel().tolist()}


def run_memory(path, n_rows, solver):
    import warnings

    import pandas as pd

    warm = raw.chunk(20_000, 99, 0)
    raw.make_pipe(solver).fit(warm.drop(columns="y"), warm["y"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        df = pd.read_parquet(path)
        y = df.pop("y").to_numpy()
        search = make_search(solver).fit(df, y)
        seconds = time.perf_counter() - t0
    return {**summary(search, seconds), "threads": "numba 2 (default)"}


def run_dask(path, n_rows, solver):
    import warnings

    import dask.dataframe as dd

    c, client = raw.cluster()
    with c, client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = dd.from_pandas(raw.chunk(20_000, 99, 0), npartitions=2)
        raw.make_pipe(solver).fit(warm.drop(columns="y"), warm["y"])
        t0 = time.perf_counter()
        ddf = dd.read_parquet(path, split_row_groups=True)
        search = make_search(solver).fit(ddf.drop(columns="y"), ddf["y"])
        seconds = time.perf_counter() - t0
        out = summary(search, seconds)
        out["partitions"] = ddf.npartitions
    return {**out, "threads": "2 worker processes x 1 thread (numba 1)"}


RUNS = {"memory": run_memory, "dask": run_dask}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10 ** 5, 10 ** 6])
    ap.add_argument("--data", default="/tmp/skdp_dask_search")
    ap.add_argument("--solver", default="objective_perturbation",
                    choices=["objective_perturbation", "dpsgd"])
    ap.add_argument("--child", nargs=4)
    args = ap.parse_args()
    if args.child:
        kind, path, n_rows, solver = args.child
        print("RESULT " + json.dumps(RUNS[kind](path, int(n_rows), solver)), flush=True)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine_info, machine_info_markdown

    commit = raw._commit()
    rows = []
    for n in args.sizes:
        path = raw.write_table(Path(args.data) / f"n{n}", n,
                               row_group=min(raw.ROW_GROUP, max(n // 4, 1)))
        memory = raw.spawn("memory", path, n, args.solver, script=__file__)
        dask_run = raw.spawn("dask", path, n, args.solver, script=__file__)
        for name, run in (("memory", memory), ("dask", dask_run)):
            if "error" in run:
                raise RuntimeError(f"{name} at n={n} failed:\n{run['error']}")
        same = {k: memory[k] == dask_run[k] for k in ("best_params", "best_score",
                                                       "epsilon_", "event")}
        coef_diff = max(abs(a - b) for a, b in zip(memory["coef"], dask_run["coef"]))
        rows.append({"n": n, "memory": memory, "dask": dask_run, "same": same,
                     "max_coef_diff": coef_diff})
        print(n, round(memory["search_s"], 2), round(dask_run["search_s"], 2), same,
              coef_diff, flush=True)
    lines = ["# A private grid search over the pipeline on raw Parquet with Dask", "",
             "Written by `benchmarks/bench_dask_search.py` (module docstring: table, "
             f"search, settings) at commit `{commit}`, the model's solver "
             f"`{args.solver}`.  epsilon = {EPSILON} for the whole "
             "search (2 candidates, 3 folds, refit), delta = 1e-6; test table of 10^5 "
             "fresh rows; one run per size, each setting in a fresh process.", ""]
    lines += [machine_info_markdown(machine_info(), None), ""]
    lines += ["| rows | setting | threads | search (s) | selected alpha | released score | "
              "epsilon_ | test accuracy | test AUC |",
              "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for name in ("dask", "memory"):
            v = r[name]
            lines.append(f"| {r['n']:,} | {name} | {v['threads']} | {v['search_s']:.2f} | "
                         f"{v['best_params']['model__alpha']:g} | {v['best_score']:.6f} | "
                         f"{v['epsilon_']:.4f} | {v['accuracy']:.4f} | {v['auc']:.4f} |")
        ratio = r["dask"]["search_s"] / r["memory"]["search_s"]
        same = " / ".join("yes" if r["same"][k] else "no"
                          for k in ("best_params", "best_score", "epsilon_", "event"))
        lines.append(f"| {r['n']:,} | Dask / in-memory time: {ratio:.2f}; selection / "
                     f"score / epsilon / event equal: {same}; largest refit coefficient "
                     f"difference {r['max_coef_diff']:.1e} | | | | | | | |")
    lines += ["", "Reproduce: `python benchmarks/bench_dask_search.py --sizes " +
              " ".join(str(n) for n in args.sizes) + f" --solver {args.solver}`"]
    out = "dask_search" if args.solver == "objective_perturbation" else \
        f"dask_search_{args.solver}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{out}.json").write_text(json.dumps(
        {"commit": commit, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
