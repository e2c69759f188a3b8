"""The private pipeline on raw Parquet tables with Dask, beside the in-memory pipeline, a
non-private Dask pipeline doing the same work, and DP-EBM.

A seeded, public generator writes Adult-shaped raw tables (6 numeric columns -- ages,
skewed weights, capital gains that are mostly zero with a heavy tail, hours -- and 8 string
columns of 2 to 41 values, missing values in 3 of them) to Parquet, in chunks of
``CHUNK_ROWS`` rows (one file each, ``ROW_GROUP`` rows per row group), so a table of any
size is written in bounded memory.  Every setting runs in a fresh process:

Each skdp run first fits the pipeline once on 2*10^4 other rows (numba compiles its
kernels in the client and in each worker), then times the fit.

* ``skdp_dask``: ``make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
  epsilon=1)`` on ``dd.read_parquet`` with a ``LocalCluster`` of 2 worker processes x 1
  thread (the machine's 2 cores); NUMBA_NUM_THREADS=1 in each worker;
* ``skdp_memory``: the same pipeline on ``pd.read_parquet`` (numba 2 threads), where the
  table fits in memory;
* both with ``solver="auto"`` (objective perturbation from ``n epsilon = 3 x 10^5``,
  ``skdp.linear_model._auto.pipeline_model_solver``) and, up to ``--dpsgd-up-to`` rows,
  ``solver="dpsgd"`` (one round trip to the workers per step);
* ``dask_nonprivate``: the same work without privacy on the same cluster: knots at the
  exact quantiles of each numeric column (``ddf.quantile``), categories from
  ``ddf.unique()``, scikit-learn's ``SplineTransformer`` (degree 1, the same knots count)
  and ``OneHotEncoder`` applied per partition, and an L2-regularised logistic regression
  fitted by L-BFGS whose loss and gradient are reduced over the persisted partitions (what
  dask-ml's ``LogisticRegression(solver="lbfgs")`` does; dask-ml is not installed here);
* ``dpebm``: DP-EBM (interpret-core, /work/venvs/interpret) in memory at 10^6 rows, with
  bounds read from the data (labelled: a leak DP-EBM's API asks for).

Reported: fit wall time (the plan, every pass and the model; reading Parquet included),
time per row, accuracy and AUC on a fresh test table of 10^5 rows (another seed), the
peak resident memory of the client and of each worker process (``ru_maxrss``), and for
the Dask fit the largest difference from the in-memory fit's knots (0 = bit-identical),
whether its categories are equal and the difference of the coefficients.

    python benchmarks/bench_raw_dask.py --sizes 1000000 10000000 [--data DIR]

writes ``results/raw_dask.{md,json}``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK_ROWS = 1_000_000
ROW_GROUP = 500_000
EPSILON = 1.0
NUMERIC = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
           "hours_per_week"]
CATEGORICAL = ["workclass", "education", "marital_status", "occupation", "relationship",
               "race", "sex", "native_country"]
LEVELS = {"workclass": 8, "education": 16, "marital_status": 7, "occupation": 14,
          "relationship": 6, "race": 5, "sex": 2, "native_country": 41}
MISSING = {"workclass": 0.056, "occupation": 0.057, "native_country": 0.018}


# ----------------------------------------------------------------------------- data


def chunk(n_rows, seed, k):
    """Rows ``k * CHUNK_ROWS ...`` of the table of ``seed`` (public, reproducible)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng([seed, k])
    age = np.clip(rng.gamma(6.0, 6.5, n_rows) + 17, 17, 90).round()
    cols = {
        "age": age,
        "fnlwgt": rng.lognormal(12.0, 0.55, n_rows).round(),
        "education_num": rng.integers(1, 17, n_rows).astype(np.float64),
        "capital_gain": np.where(rng.random(n_rows) < 0.92, 0.0,
                                 rng.pareto(1.2, n_rows) * 3000).round(),
        "capital_loss": np.where(rng.random(n_rows) < 0.95, 0.0,
                                 rng.normal(1900, 350, n_rows)).round(),
        "hours_per_week": np.clip(rng.normal(40, 12, n_rows), 1, 99).round(),
    }
    for name, m in LEVELS.items():
        p = 1.0 / np.arange(1, m + 1) ** 1.3            # skewed: a few common values
        values = np.array([f"{name[:3]}_{i}" for i in range(m)], dtype=object)
        col = values[rng.choice(m, n_rows, p=p / p.sum())]
        if name in MISSING:
            col[rng.random(n_rows) < MISSING[name]] = None
        cols[name] = col
    df = pd.DataFrame(cols)
    score = (0.05 * (age - 38) + 0.3 * (cols["education_num"] - 10)
             + 0.0004 * np.minimum(cols["capital_gain"], 20000)
             + 0.03 * (cols["hours_per_week"] - 40)
             + 1.2 * (df["marital_status"] == "mar_0") - 0.8 * (df["sex"] == "sex_1")
             + 0.5 * (df["occupation"] == "occ_1") - 1.6)
    df["y"] = (score + rng.logistic(size=n_rows) > 0).astype(np.int64)
    return df


def write_table(path, n_rows, seed=0, make_chunk=None, row_group=ROW_GROUP):
    """The table of ``n_rows`` rows as Parquet files of ``CHUNK_ROWS`` rows under ``path``
    (kept when already complete); ``make_chunk(rows, seed, k)`` (default :func:`chunk`)
    builds the frame of chunk ``k``, written in row groups of ``row_group`` rows."""
    make_chunk = chunk if make_chunk is None else make_chunk
    path = Path(path)
    done = path / "_complete"
    if done.exists() and done.read_text() == str(n_rows):
        return path
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):
        old.unlink()
    for k in range(0, (n_rows + CHUNK_ROWS - 1) // CHUNK_ROWS):
        m = min(CHUNK_ROWS, n_rows - k * CHUNK_ROWS)
        make_chunk(m, seed, k).to_parquet(path / f"part-{k:05d}.parquet", index=False,
                                          row_group_size=row_group)
    done.write_text(str(n_rows))
    return path


def test_table():
    df = chunk(100_000, 12345, 0)
    return df.drop(columns="y"), df["y"].to_numpy()


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- runs


def make_pipe(solver="auto"):
    from skdp import DPLogisticRegression, make_private_pipeline

    return make_private_pipeline(DPLogisticRegression(classes=[0, 1], solver=solver),
                                 epsilon=EPSILON, numeric=NUMERIC, categorical=CATEGORICAL,
                                 random_state=0)


SOLVERS = {0: "auto", 1: "dpsgd"}


def released(pipe):
    cols = pipe.named_steps["columns"]
    return ([k.tolist() for k in cols.named_transformers_["numeric"].knots_],
            cols.named_transformers_["categorical"].categories_)


def scores(y, proba):
    import numpy as np
    from sklearn.metrics import roc_auc_score

    return {"accuracy": float(np.mean((proba > 0.5) == y)),
            "auc": float(roc_auc_score(y, proba))}


def cluster():
    import distributed

    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address=":0", memory_limit="9GiB",
                                 env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    return c, distributed.Client(c)


def worker_peaks(client):
    return sorted(client.run(peak_mb).values())


def run_skdp_memory(path, n_rows, solver=0):
    import pandas as pd

    solver = SOLVERS[solver]
    Xte, yte = test_table()
    warm = chunk(20_000, 99, 0)                 # compile numba's kernels first
    make_pipe(solver).fit(warm.drop(columns="y"), warm["y"].to_numpy())
    t0 = time.perf_counter()
    df = pd.read_parquet(path)
    y = df.pop("y").to_numpy()
    pipe = make_pipe(solver).fit(df, y)
    secs = time.perf_counter() - t0
    knots, cats = released(pipe)
    return {"fit_s": secs, **scores(yte, pipe.predict_proba(Xte)[:, 1]),
            "solver": pipe[-1].solver_, "epsilon_": pipe.epsilon_, "knots": knots,
            "categories": cats, "coef": pipe[-1].coef_.ravel().tolist(),
            "peak_client_mb": peak_mb(), "threads": "numba 2 (default)"}


def run_skdp_dask(path, n_rows, solver=0):
    import dask.dataframe as dd

    solver = SOLVERS[solver]
    Xte, yte = test_table()
    c, client = cluster()
    with c, client:
        warm = dd.from_pandas(chunk(20_000, 99, 0), npartitions=2)   # compile on workers
        make_pipe(solver).fit(warm.drop(columns="y"), warm["y"])
        t0 = time.perf_counter()
        ddf = dd.read_parquet(path, split_row_groups=True)
        y = ddf["y"]
        X = ddf.drop(columns="y")
        pipe = make_pipe(solver).fit(X, y)
        secs = time.perf_counter() - t0
        proba = pipe.predict_proba(Xte)[:, 1]
        knots, cats = released(pipe)
        return {"fit_s": secs, **scores(yte, proba), "solver": pipe[-1].solver_,
                "epsilon_": pipe.epsilon_, "knots": knots, "categories": cats,
                "coef": pipe[-1].coef_.ravel().tolist(), "partitions": X.npartitions,
                "peak_client_mb": peak_mb(), "peak_workers_mb": worker_peaks(client),
                "threads": "2 workers x 1 thread (processes)"}


def _basis(frame, knots, cats):
    import numpy as np
    import scipy.sparse as sp
    from sklearn.preprocessing import OneHotEncoder, SplineTransformer

    blocks = []
    for name, k in zip(NUMERIC, knots):
        x = frame[[name]].to_numpy(dtype=np.float64)
        miss = np.isnan(x)
        x = np.where(miss, k[0], x)
        st = SplineTransformer(knots=np.asarray(k)[:, None], degree=1,
                               extrapolation="constant").fit(np.asarray(k)[:, None])
        blocks += [sp.csr_matrix(st.transform(x) * ~miss), sp.csr_matrix(miss, dtype=float)]
    enc = OneHotEncoder(categories=cats, handle_unknown="ignore", sparse_output=True)
    import pandas as pd

    enc.fit(pd.DataFrame({c: [v[0]] for c, v in zip(CATEGORICAL, cats)}))
    blocks.append(enc.transform(frame[CATEGORICAL].fillna("__missing__")))
    return sp.hstack(blocks, format="csr")


def _loss_grad(X, y, w):
    import numpy as np

    z = X @ w[:-1] + w[-1]
    g = 1.0 / (1.0 + np.exp(-z)) - y
    return np.append(X.T @ g, [g.sum(), np.sum(np.logaddexp(0.0, z) - y * z)])


def run_dask_nonprivate(path, n_rows, n_knots):
    """Exact quantile knots and categories, the basis per partition (CSR, as the private
    pipeline keeps it for DP-SGD), L-BFGS on the persisted design (loss and gradient
    reduced over partitions)."""
    import dask
    import dask.dataframe as dd
    import numpy as np
    from scipy.optimize import minimize

    Xte, yte = test_table()
    c, client = cluster()
    with c, client:
        t0 = time.perf_counter()
        ddf = dd.read_parquet(path, split_row_groups=True)
        levels = np.linspace(0.01, 0.99, n_knots)
        qs = dask.compute(*[ddf[c].quantile(levels) for c in NUMERIC])
        knots = [np.unique(np.asarray(q, dtype=np.float64)) for q in qs]
        uniq = dask.compute(*[ddf[c].dropna().unique() for c in CATEGORICAL])
        cats = [sorted(u.tolist()) + ["__missing__"] for u in uniq]
        width = _basis(Xte.iloc[:2], knots, cats).shape[1]
        parts = ddf.to_delayed()
        blocks = client.persist([dask.delayed(_basis)(p, knots, cats) for p in parts])
        ys = client.persist([dask.delayed(lambda f: f["y"].to_numpy(np.float64))(p)
                             for p in parts])
        n = int(sum(dask.compute(*[dask.delayed(len)(y) for y in ys])))
        alpha = 1e-4

        def f(w):
            total = np.sum(dask.compute(*[dask.delayed(_loss_grad)(X, y, w)
                                          for X, y in zip(blocks, ys)]), axis=0)
            return (total[-1] / n + 0.5 * alpha * w[:-1] @ w[:-1],
                    np.append(total[:-2] / n + alpha * w[:-1], total[-2] / n))

        res = minimize(f, np.zeros(width + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": 100})
        secs = time.perf_counter() - t0
        w = res.x
        z = _basis(Xte, knots, cats) @ w[:-1] + w[-1]
        return {"fit_s": secs, **scores(yte, 1 / (1 + np.exp(-z))),
                "lbfgs_iterations": int(res.nit), "peak_client_mb": peak_mb(),
                "peak_workers_mb": worker_peaks(client),
                "threads": "2 workers x 1 thread (processes)"}


def run_dpebm(path, n_rows):
    script = f"""
import json, resource, time, sys
import numpy as np, pandas as pd
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from bench_raw_dask import test_table, CATEGORICAL, NUMERIC, scores
from interpret.privacy import DPExplainableBoostingClassifier
t0 = time.perf_counter()
df = pd.read_parquet({str(path)!r})
y = df.pop("y").to_numpy()
df[CATEGORICAL] = df[CATEGORICAL].fillna("__missing__")
bounds = {{c: (float(df[c].min()), float(df[c].max())) for c in NUMERIC}}
types = ["continuous" if c in NUMERIC else "nominal" for c in df.columns]
m = DPExplainableBoostingClassifier(epsilon={EPSILON}, delta=1e-6, random_state=0,
                                    feature_types=types, privacy_bounds=bounds, n_jobs=1)
m.fit(df, y)
secs = time.perf_counter() - t0
Xte, yte = test_table()
Xte[CATEGORICAL] = Xte[CATEGORICAL].fillna("__missing__")
out = {{"fit_s": secs, **scores(yte, m.predict_proba(Xte)[:, 1]),
        "peak_client_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "bounds": "data-derived (leak)", "threads": "n_jobs=1"}}
print(json.dumps(out))
"""
    out = subprocess.run(["/work/venvs/interpret/bin/python", "-c", script],
                         capture_output=True, text=True, timeout=7200)
    if out.returncode:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


RUNS = {"skdp_dask": run_skdp_dask, "skdp_memory": run_skdp_memory,
        "dask_nonprivate": run_dask_nonprivate, "dpebm": run_dpebm}


def child(kind, path, n_rows, extra):
    fn = RUNS[kind]
    out = fn(path, n_rows, *extra) if extra else fn(path, n_rows)
    print("RESULT " + json.dumps(out))


def spawn(kind, path, n_rows, *extra, script=__file__):
    """Run ``script --child kind path n_rows *extra`` in a fresh process; its RESULT."""
    cmd = [sys.executable, str(script), "--child", kind, str(path), str(n_rows),
           *map(str, extra)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * 3600)
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode or not lines:
        return {"error": (out.stderr or out.stdout)[-3000:], "process_wall_s": wall}
    res = json.loads(lines[-1][7:])
    res["process_wall_s"] = wall
    return res


def _commit():
    root = Path(__file__).resolve().parents[1]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=root, capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10 ** 6, 10 ** 7])
    ap.add_argument("--data", default="/tmp/skdp_raw_dask")
    ap.add_argument("--memory-up-to", type=int, default=10 ** 7)
    ap.add_argument("--dpsgd-up-to", type=int, default=10 ** 6,
                    help="also fit solver='dpsgd' (Dask and in memory) up to this size")
    ap.add_argument("--no-nonprivate", action="store_true",
                    help="skip the non-private Dask pipeline (e.g. at 10^8 rows)")
    ap.add_argument("--out", default="raw_dask",
                    help="results/<out>.{md,json} (default raw_dask)")
    ap.add_argument("--child", nargs="+")
    args = ap.parse_args()
    if args.child:
        kind, path, n, *extra = args.child
        child(kind, path, int(n), [int(e) for e in extra])
        return
    import numpy as np

    doc = {"commit": _commit(), "started": time.strftime("%Y-%m-%d %H:%M UTC",
                                                         time.gmtime()),
           "epsilon": EPSILON, "cluster": "LocalCluster 2 worker processes x 1 thread",
           "sizes": {}}
    for n in args.sizes:
        t0 = time.perf_counter()
        path = write_table(Path(args.data) / f"rows_{n}", n)
        cell = {"write_s": time.perf_counter() - t0}
        for s, tag in SOLVERS.items():
            if tag != "auto" and n > args.dpsgd_up_to:
                continue
            cell[f"skdp_dask_{tag}"] = spawn("skdp_dask", path, n, s)
            if n <= args.memory_up_to:
                cell[f"skdp_memory_{tag}"] = spawn("skdp_memory", path, n, s)
            mem, dsk = cell.get(f"skdp_memory_{tag}", {}), cell[f"skdp_dask_{tag}"]
            if "knots" in mem and "knots" in dsk:
                cell[f"knots_max_abs_diff_{tag}"] = max(
                    float(np.max(np.abs(np.subtract(a, b)))) if len(a) == len(b)
                    else np.inf for a, b in zip(mem["knots"], dsk["knots"]))
                cell[f"categories_equal_{tag}"] = mem["categories"] == dsk["categories"]
                cell[f"coef_max_abs_diff_{tag}"] = float(np.max(np.abs(
                    np.subtract(mem["coef"], dsk["coef"]))))
                cell[f"coef_max_abs_{tag}"] = float(np.max(np.abs(mem["coef"])))
        dsk = cell["skdp_dask_auto"]
        n_knots = max(len(k) for k in dsk.get("knots", [[0] * 8]))
        if not args.no_nonprivate:
            cell["dask_nonprivate"] = spawn("dask_nonprivate", path, n, n_knots)
        doc["sizes"][str(n)] = cell
        print(json.dumps({k: {kk: vv for kk, vv in v.items()
                              if kk not in ("knots", "categories", "coef")}
                          if isinstance(v, dict) else v for k, v in cell.items()}),
              flush=True)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.out}.json").write_text(json.dumps(doc, indent=1))
    if str(10 ** 6) in doc["sizes"]:     # last: the slowest peer, in memory only
        doc["sizes"][str(10 ** 6)]["dpebm"] = spawn(
            "dpebm", Path(args.data) / f"rows_{10 ** 6}", 10 ** 6)
    doc["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    doc["load_average_end"] = os.getloadavg()[0]
    (RESULTS / f"{args.out}.json").write_text(json.dumps(doc, indent=1))
    (RESULTS / f"{args.out}.md").write_text(report(doc))


def report(doc):
    lines = ["# The private pipeline on raw Parquet with Dask", "",
             f"`python benchmarks/bench_raw_dask.py`, commit {doc['commit']}, "
             f"{doc['started']} to {doc.get('finished')}, load average "
             f"{doc.get('load_average_end', float('nan')):.2f} at the end (shared 2-core "
             f"machine). Epsilon {doc['epsilon']}; Dask: {doc['cluster']} "
             "(NUMBA_NUM_THREADS=1 per worker); in memory: numba's default 2 threads. "
             "Fit time includes reading Parquet; accuracy/AUC on a fresh 10^5-row table.",
             "", "| rows | run | fit (s) | µs/row | accuracy | AUC | peak client MB | "
             "peak workers MB | notes |", "|---|---|---|---|---|---|---|---|---|"]
    for n, cell in doc["sizes"].items():
        for kind in ("skdp_dask_auto", "skdp_memory_auto", "skdp_dask_dpsgd",
                     "skdp_memory_dpsgd", "dask_nonprivate", "dpebm"):
            r = cell.get(kind)
            if r is None:
                continue
            if "error" in r:
                why = (r["error"].strip().splitlines() or ["stopped (killed)"])[-1][:120]
                lines.append(f"| {int(n):,} | {kind} | error | | | | | | {why} |")
                continue
            notes = {"dask_nonprivate": f"L-BFGS {r.get('lbfgs_iterations')} iterations",
                     "dpebm": "bounds data-derived (leak)"}.get(
                         kind, f"solver {r.get('solver')}" + (
                             f", {r.get('partitions')} partitions" if "dask" in kind else ""))
            lines.append(
                f"| {int(n):,} | {kind} | {r['fit_s']:.1f} | {1e6 * r['fit_s'] / int(n):.2f} "
                f"| {r['accuracy']:.4f} | {r['auc']:.4f} | {r['peak_client_mb']:.0f} | "
                f"{', '.join(f'{v:.0f}' for v in r.get('peak_workers_mb', [])) or '-'} | "
                f"{notes} |")
    lines.append("")
    for n, cell in doc["sizes"].items():
        for tag in ("auto", "dpsgd"):
            if f"knots_max_abs_diff_{tag}" not in cell:
                continue
            why = ("DP-SGD's batches and noise are the in-memory draws: partition sums added "
                   "in partition order, rounding only"
                   if cell[f"skdp_dask_{tag}"].get("solver") == "dpsgd" else
                   "partition sums added in partition order: rounding only")
            lines.append(
                f"- {int(n):,} rows, {tag}: Dask vs in memory (same random_state): knots max "
                f"|diff| {cell[f'knots_max_abs_diff_{tag}']:g} (0 = bit-identical), "
                f"categories equal: {cell[f'categories_equal_{tag}']}, coefficients max "
                f"|diff| {cell[f'coef_max_abs_diff_{tag}']:.3g} of max |coef| "
                f"{cell[f'coef_max_abs_{tag}']:.3g} ({why}).")
            a, b = cell.get(f"skdp_dask_{tag}", {}), cell.get(f"skdp_memory_{tag}", {})
            if "fit_s" in a and "fit_s" in b:
                lines.append(f"  Dask / in-memory fit time: {a['fit_s'] / b['fit_s']:.2f}x.")
            c = cell.get("dask_nonprivate", {})
            if "fit_s" in a and "fit_s" in c:
                lines.append(f"  Dask / non-private Dask fit time: {a['fit_s'] / c['fit_s']:.2f}x.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
