"""A three-class target through the private pipeline on raw Parquet with Dask, beside the
same pipeline in memory and scikit-learn's non-private pipeline.

The table is ``bench_raw_dask.py``'s Adult-shaped generator (6 numeric columns, 8 string
columns, missing values); the label is its linear score plus logistic noise cut at the
public thresholds ``CUTS`` into three classes ("low", "mid", "high"; about 29 / 29 / 42 %).
Every setting runs in a fresh process:

* ``skdp_dask``: ``make_private_pipeline(DPLogisticRegression(classes=[...]), epsilon=1)``
  on ``dd.read_parquet`` with a ``LocalCluster`` of 2 worker processes x 1 thread (numba 1
  thread each); the multinomial model's solver is DP-SGD (its default), one round trip to
  the workers per step;
* ``skdp_memory``: the same pipeline on ``pd.read_parquet`` (numba's 2 threads);
* ``sklearn``: scikit-learn's non-private pipeline in memory (exact-quantile
  ``SplineTransformer`` of degree 1 with the private pipeline's knot count, ``OneHotEncoder``,
  ``LogisticRegression``; 2 threads), the accuracy a private model can at best approach.

Each skdp run first fits once on 2*10^4 other rows (numba compiles its kernels in the client
and the workers), then times the fit, reading Parquet included.  Reported: fit wall time,
accuracy and log-loss on a fresh test table of 10^5 rows, whether the Dask fit's knots,
categories and model event equal the in-memory fit's.

    python benchmarks/bench_dask_multiclass.py --sizes 100000 1000000

writes ``results/dask_multiclass.{md,json}``.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import bench_raw_dask as raw

RESULTS = Path(__file__).resolve().parent / "results"
CLASSES = ["high", "low", "mid"]
#: public cuts of the generator's score (plus logistic noise) into the three classes
CUTS = (-0.5, 1.5)
EPSILON = 1.0


def three_classes(df):
    """The generator's frame with its binary ``y`` replaced by the three-class label
    (the score is recomputed from the public generator's columns)."""
    import numpy as np

    rng = np.random.default_rng(len(df))
    score = (0.05 * (df["age"] - 38) + 0.3 * (df["education_num"] - 10)
             + 0.0004 * np.minimum(df["capital_gain"], 20000)
             + 0.03 * (df["hours_per_week"] - 40)
             + 1.2 * (df["marital_status"] == "mar_0") - 0.8 * (df["sex"] == "sex_1")
             + 0.5 * (df["occupation"] == "occ_1"))
    index = np.digitize(score + rng.logistic(size=len(df)), CUTS)
    out = df.drop(columns="y")
    out["y"] = np.array(["low", "mid", "high"], dtype=object)[index]
    return out


def write_table(path, n_rows):
    """The three-class table as Parquet under ``path`` (kept when complete), in row groups
    of at most a quarter of it (4 partitions or more)."""
    return raw.write_table(path, n_rows, 0,
                           lambda m, seed, k: three_classes(raw.chunk(m, seed, k)),
                           row_group=min(raw.ROW_GROUP, max(n_rows // 4, 1)))


def test_table():
    df = three_classes(raw.chunk(100_000, 12345, 0))
    return df.drop(columns="y"), df["y"].to_numpy()


def make_pipe():
    from skdp import DPLogisticRegression, make_private_pipeline

    return make_private_pipeline(DPLogisticRegression(classes=CLASSES), epsilon=EPSILON,
                                 numeric=raw.NUMERIC, categorical=raw.CATEGORICAL,
                                 random_state=0)


def scores(y, proba, classes):
    import numpy as np
    from sklearn.metrics import log_loss

    return {"accuracy": float(np.mean(np.asarray(classes)[np.argmax(proba, axis=1)] == y)),
            "log_loss": float(log_loss(y, proba, labels=list(classes)))}


def summary(pipe):
    knots, cats = raw.released(pipe)
    return {"solver": pipe[-1].solver_, "epsilon_": pipe.epsilon_, "knots": knots,
            "categories": cats, "event": repr(pipe[-1].dp_event_),
            "n_iter": int(pipe[-1].n_iter_)}


def run_skdp_memory(path):
    import pandas as pd

    Xte, yte = test_table()
    warm = three_classes(raw.chunk(20_000, 99, 0))
    make_pipe().fit(warm.drop(columns="y"), warm["y"])
    t0 = time.perf_counter()
    df = pd.read_parquet(path)
    y = df.pop("y")
    pipe = make_pipe().fit(df, y)
    secs = time.perf_counter() - t0
    return {"fit_s": secs, **scores(yte, pipe.predict_proba(Xte), pipe.classes_),
            **summary(pipe), "threads": "numba 2 (default)"}


def run_skdp_dask(path):
    import dask.dataframe as dd

    Xte, yte = test_table()
    c, client = raw.cluster()
    with c, client:
        warm = dd.from_pandas(three_classes(raw.chunk(20_000, 99, 0)), npartitions=2)
        make_pipe().fit(warm.drop(columns="y"), warm["y"])
        t0 = time.perf_counter()
        ddf = dd.read_parquet(path, split_row_groups=True)
        pipe = make_pipe().fit(ddf.drop(columns="y"), ddf["y"])
        secs = time.perf_counter() - t0
        n_partitions = ddf.npartitions
    return {"fit_s": secs, **scores(yte, pipe.predict_proba(Xte), pipe.classes_),
            **summary(pipe), "partitions": n_partitions,
            "threads": "2 worker processes x 1 thread (numba 1)"}


def run_sklearn(path, n_knots):
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, SplineTransformer

    Xte, yte = test_table()
    t0 = time.perf_counter()
    df = pd.read_parquet(path)
    y = df.pop("y").to_numpy()
    columns = ColumnTransformer([
        ("numeric", make_pipeline(SimpleImputer(strategy="median"),
                                  SplineTransformer(n_knots=n_knots, degree=1,
                                                    knots="quantile")), raw.NUMERIC),
        ("categorical", OneHotEncoder(handle_unknown="ignore"), raw.CATEGORICAL),
    ])
    pipe = make_pipeline(columns, LogisticRegression(max_iter=1000)).fit(df, y)
    secs = time.perf_counter() - t0
    return {"fit_s": secs, **scores(yte, pipe.predict_proba(Xte), pipe.classes_),
            "threads": "BLAS 2 (default)"}


def child(kind, path, extra):
    if kind == "skdp_memory":
        out = run_skdp_memory(path)
    elif kind == "skdp_dask":
        out = run_skdp_dask(path)
    else:
        out = run_sklearn(path, int(extra))
    print("RESULT " + json.dumps(out), flush=True)


def in_child(kind, path, extra=0):
    env = dict(__import__("os").environ)
    proc = subprocess.run([sys.executable, __file__, "--child", kind, str(path), str(extra)],
                          capture_output=True, text=True, env=env, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{kind} failed:\n{proc.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10 ** 5, 10 ** 6])
    ap.add_argument("--data", default="/tmp/skdp_dask_multiclass")
    ap.add_argument("--child", nargs=3)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine_info, machine_info_markdown

    rows, lines = [], []
    for n in args.sizes:
        path = write_table(Path(args.data) / f"n{n}", n)
        memory = in_child("skdp_memory", path)
        dask_run = in_child("skdp_dask", path)
        n_knots = len(memory["knots"][0])
        sk = in_child("sklearn", path, n_knots)
        same = {"knots": memory["knots"] == dask_run["knots"],
                "categories": memory["categories"] == dask_run["categories"],
                "event": memory["event"] == dask_run["event"]}
        rows.append({"n": n, "skdp_memory": memory, "skdp_dask": dask_run, "sklearn": sk,
                     "same_as_memory": same})
        print(n, {k: round(v["fit_s"], 2) for k, v in
                  (("memory", memory), ("dask", dask_run), ("sklearn", sk))}, same,
              flush=True)
    lines += ["# A three-class target on raw Parquet with Dask (the multinomial model)", "",
              "Written by `benchmarks/bench_dask_multiclass.py` (module docstring: table, "
              f"settings).  epsilon = {EPSILON}, delta = 1e-6 (the pipeline's default); "
              "test table of 10^5 fresh rows; one run per size, each setting in a fresh "
              "process.", ""]
    lines += [machine_info_markdown(machine_info(), None), ""]
    lines += ["| rows | setting | threads | fit (s) | accuracy | log-loss | DP-SGD steps | "
              "knots / categories / event equal to in-memory |",
              "|---:|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        for name in ("skdp_dask", "skdp_memory", "sklearn"):
            v = r[name]
            same = r["same_as_memory"]
            eq = (" / ".join("yes" if same[k] else "no" for k in ("knots", "categories",
                                                                  "event"))
                  if name == "skdp_dask" else "")
            lines.append(f"| {r['n']:,} | {name} | {v['threads']} | {v['fit_s']:.2f} | "
                         f"{v['accuracy']:.4f} | {v['log_loss']:.4f} | "
                         f"{v.get('n_iter', '')} | {eq} |")
        ratio = r["skdp_dask"]["fit_s"] / r["skdp_memory"]["fit_s"]
        lines.append(f"| {r['n']:,} | Dask / in-memory time | | {ratio:.2f} | | | | |")
    lines += ["", "Reproduce: `python benchmarks/bench_dask_multiclass.py --sizes " +
              " ".join(str(n) for n in args.sizes) + "`"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dask_multiclass.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "dask_multiclass.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
