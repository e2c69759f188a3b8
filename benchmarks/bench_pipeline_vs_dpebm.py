"""Fit time of the private pipeline against DP-EBM, from 10^3 to 10^6 rows (issue 48, part 5).

Target: ``skdp.make_private_pipeline(skdp.DPLogisticRegression(classes=[0, 1]), epsilon=1,
delta=1e-6, random_state=seed)`` fits no slower than interpret-core's
``DPExplainableBoostingClassifier(epsilon=1, delta=1e-6)`` at every size, on Adult
resampled with replacement to ``n`` rows, at one thread and at the default threads.

Protocol.  Two long-lived workers per thread setting, one per side: skdp in this
interpreter, DP-EBM in its own virtual environment (``--dpebm-python``, default
``/work/venvs/interpret/bin/python``); neither imports the other.  Each worker loads Adult
once (``_raw_protocol.load_raw``), fits once at 3,000 rows to warm up (numba's compilation,
imports), then answers requests ``(n, seed)`` with the wall time of one fit on the rows
drawn with ``numpy.random.default_rng(seed).choice(len(X), n, replace=True)`` -- the
resampling is outside the timing, the conversion of the table inside it.  Rounds are
interleaved: for every round and size, skdp then DP-EBM.  One thread: ``NUMBA_NUM_THREADS =
OMP_NUM_THREADS = 1`` and DP-EBM's ``n_jobs=1``; default threads: the variables unset and
DP-EBM's default ``n_jobs``.  DP-EBM is given data-derived bounds (``privacy_bounds`` from
the training rows' min and max: a leak, labelled in the results) and the schema
(``feature_types``); its missing categorical values become a category ``"missing"``.

Usage::

    python benchmarks/bench_pipeline_vs_dpebm.py [--rounds 3] [--sizes 1000 10000 ...]

Writes ``benchmarks/results/pipeline_vs_dpebm.{md,json}`` with the commit it ran on.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
EPSILON = 1.0
DELTA = 1e-6
SIZES = (1_000, 10_000, 100_000, 1_000_000)


# ----------------------------------------------------------------------------- workers

def _worker(side, threads):
    import warnings

    import numpy as np

    sys.path.insert(0, HERE)
    from _raw_protocol import CATEGORICAL, NUMERIC, load_raw

    warnings.simplefilter("ignore")
    X_all, y_all = load_raw("adult")

    if side == "skdp":
        import skdp

        schema = dict(numeric=NUMERIC(X_all), categorical=CATEGORICAL(X_all))

        def fit(X, y, seed):
            pipe = skdp.make_private_pipeline(
                skdp.DPLogisticRegression(classes=[0, 1]), epsilon=EPSILON, delta=DELTA,
                random_state=seed, **schema)
            start = time.perf_counter()
            pipe.fit(X, y)
            return time.perf_counter() - start
    else:
        from interpret.privacy import DPExplainableBoostingClassifier

        cat = set(CATEGORICAL(X_all))
        types = ["nominal" if c in cat else "continuous" for c in X_all.columns]
        extra = {"n_jobs": 1} if threads == "1" else {}

        def fit(X, y, seed):
            X = X.copy()
            X[list(cat)] = X[list(cat)].fillna("missing")
            bounds = {c: (float(X[c].min()), float(X[c].max())) for c in NUMERIC(X)}
            model = DPExplainableBoostingClassifier(
                epsilon=EPSILON, delta=DELTA, random_state=seed, feature_types=types,
                privacy_bounds=bounds, **extra)
            start = time.perf_counter()
            model.fit(X, y)
            return time.perf_counter() - start

    def rows(n, seed):
        idx = np.random.default_rng(seed).choice(len(X_all), n, replace=True)
        return X_all.iloc[idx].reset_index(drop=True), y_all[idx]

    fit(*rows(3000, 0), 0)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        X, y = rows(request["n"], request["seed"])
        seconds = fit(X, y, request["seed"])
        print(json.dumps({"seconds": seconds}), flush=True)


class _Worker:
    def __init__(self, python, side, threads):
        env = dict(os.environ, PYTHONPATH=ROOT if side == "skdp" else "")
        for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "MKL_NUM_THREADS"):
            env.pop(name, None)
            if threads == "1":
                env[name] = "1"
        if side == "skdp":
            env.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".numba_cache"))
        self.proc = subprocess.Popen(
            [python, __file__, "--worker", side, "--threads", threads], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("a worker died (see its stderr above)")
        return json.loads(line)

    def fit(self, n, seed):
        self.proc.stdin.write(json.dumps({"n": n, "seed": seed}) + "\n")
        self.proc.stdin.flush()
        return self._read()["seconds"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ----------------------------------------------------------------------------- driver

def _commit():
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return head, bool(dirty)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--threads", nargs="+", default=["1", "default"])
    parser.add_argument("--dpebm-python", default="/work/venvs/interpret/bin/python")
    parser.add_argument("--worker", choices=["skdp", "dpebm"], help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.threads[0])
        return
    cells = []
    for threads in args.threads:
        ours = _Worker(sys.executable, "skdp", threads)
        theirs = _Worker(args.dpebm_python, "dpebm", threads)
        times = {n: {"skdp": [], "dpebm": []} for n in args.sizes}
        try:
            for r in range(args.rounds):
                for n in args.sizes:
                    times[n]["skdp"].append(ours.fit(n, r))
                    times[n]["dpebm"].append(theirs.fit(n, r))
                    print(f"threads={threads} round {r} n={n}: skdp "
                          f"{times[n]['skdp'][-1]:.3f} s, DP-EBM {times[n]['dpebm'][-1]:.3f} s",
                          flush=True)
        finally:
            ours.close()
            theirs.close()
        for n in args.sizes:
            s, d = times[n]["skdp"], times[n]["dpebm"]
            cells.append({"threads": threads, "n": n, "skdp_seconds": s, "dpebm_seconds": d,
                          "skdp_median": statistics.median(s),
                          "dpebm_median": statistics.median(d),
                          "median_ratio": statistics.median(a / b for a, b in zip(s, d))})
    commit, dirty = _commit()
    doc = {"commit": commit, "dirty_tree": dirty, "epsilon": EPSILON, "delta": DELTA,
           "rounds": args.rounds, "dpebm_bounds": "data-derived (leak): training min/max",
           "cells": cells}
    lines = [
        "# Private pipeline against DP-EBM: fit time (issue 48, part 5)", "",
        f"Commit `{commit}`{' (tree had uncommitted changes)' if dirty else ''}; epsilon "
        f"{EPSILON:g}, delta {DELTA:g}; Adult resampled with replacement to n rows; "
        f"{args.rounds} interleaved rounds (skdp, then DP-EBM, per size) in long-lived "
        "workers, one per side and thread setting. DP-EBM (interpret-core in its own venv) "
        "is given data-derived bounds (a leak). One thread: NUMBA_NUM_THREADS = "
        "OMP_NUM_THREADS = 1 and DP-EBM n_jobs=1; default: both sides' defaults. Generated by "
        "`benchmarks/bench_pipeline_vs_dpebm.py`.", "",
        "| threads | n | skdp pipeline (s, median) | DP-EBM (s, median) | median ratio "
        "skdp / DP-EBM | skdp no slower | skdp round 0 (s) | DP-EBM round 0 (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(f"| {c['threads']} | {c['n']:,} | {c['skdp_median']:.3f} | "
                     f"{c['dpebm_median']:.3f} | {c['median_ratio']:.2f} | "
                     f"{'yes' if c['median_ratio'] <= 1.0 else 'no'} | "
                     f"{c['skdp_seconds'][0]:.3f} | {c['dpebm_seconds'][0]:.3f} |")
    lines += ["", "Round 0 is the first fit at each size in the worker: skdp plans that size "
              "afresh there (its placeholder fits and the budget split's accounting, "
              "cached for later fits of the same size and budget); the medians are over "
              "all rounds.", ""]
    if not args.no_write:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "pipeline_vs_dpebm.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(RESULTS, "pipeline_vs_dpebm.md"), "w") as f:
            f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
