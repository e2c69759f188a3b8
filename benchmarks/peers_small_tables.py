"""DP-EBM on the small and rare-positive tables of ``_small_tables`` (issue 48's analogues).

Run with DP-EBM's own virtual environment (no skdp import)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 \\
        /work/venvs/interpret/bin/python benchmarks/peers_small_tables.py --seeds 0-9 \\
        --out benchmarks/results/small_tables_dpebm.json

For every table x seed x epsilon it fits DP-EBM at its defaults and at
``learning_rate=0.1`` on the training split of ``_small_tables.split_table`` and writes test
accuracy and ROC AUC (R^2 for the regression table) and the wall time.  DP-EBM is given
``privacy_bounds`` = the training split's min/max of every numeric column (data-derived:
no DP guarantee for those bounds; labelled in every row) and, for the regression table, the
public target range [-1, 1] of the table's construction.  Cells already in the JSON are
skipped; the file is rewritten (atomic rename) after every cell.
"""

import argparse
import json
import os
import sys
import time
import warnings

from sklearn.metrics import r2_score

from _raw_protocol import CATEGORICAL, NUMERIC, parse_seeds
from _small_tables import DELTA, EPSILONS, NAMES, load_table, split_table
from peers_raw_tables import fill_missing, scores, timed_fit, versions, write_atomic

CONFIGS = (("default", {}), ("learning_rate=0.1", {"learning_rate": 0.1}))


def run_dpebm(Xtr, Xte, ytr, yte, kind, seed, eps):
    from interpret.privacy import (DPExplainableBoostingClassifier,
                                   DPExplainableBoostingRegressor)

    Xtr, Xte = fill_missing(Xtr), fill_missing(Xte)
    cat = set(CATEGORICAL(Xtr))
    types = ["nominal" if c in cat else "continuous" for c in Xtr.columns]
    bounds = {c: (float(Xtr[c].min()), float(Xtr[c].max())) for c in NUMERIC(Xtr)}
    rows = []
    for config, extra in CONFIGS:
        common = dict(epsilon=eps, delta=DELTA, random_state=seed, feature_types=types,
                      privacy_bounds=bounds, n_jobs=1, **extra)
        if kind == "binary":
            m = DPExplainableBoostingClassifier(**common)
            secs = timed_fit(m, Xtr, ytr)
            out = scores(yte, m.predict_proba(Xte)[:, 1])
        else:
            m = DPExplainableBoostingRegressor(privacy_target_min=-1.0,
                                               privacy_target_max=1.0, **common)
            secs = timed_fit(m, Xtr, ytr)
            out = {"r2": float(r2_score(yte, m.predict(Xte)))}
        rows.append({"config": config, **out, "fit_seconds": secs,
                     "learning_rate": m.learning_rate, "delta": DELTA, "n_jobs": 1,
                     "bounds": "data-derived (leak): training min/max of numeric columns",
                     "target_range": None if kind == "binary" else "public [-1, 1]"})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--tables", default=",".join(NAMES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args(argv)
    ver = versions("interpret")
    doc = {"peer": "dpebm", "versions": ver, "rows": []}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            doc = json.load(fh)
        if doc.get("versions") != ver:
            sys.exit(f"{args.out} holds {doc.get('versions')}, not {ver}: use another --out")
    doc.setdefault("runs", []).append({
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "seeds": args.seeds,
        **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                          "MKL_NUM_THREADS")}, "nice": os.nice(0)})
    doc["protocol"] = {"split": "_small_tables.split_table (70/30, stratified for binary)",
                       "epsilons": list(EPSILONS), "delta": DELTA}
    done = {(r["table"], r["seed"], r["epsilon"]) for r in doc["rows"]}
    warnings.simplefilter("ignore")
    tables = args.tables.split(",")
    cache = {}
    for seed in parse_seeds(args.seeds):
        for name in tables:
            todo = [e for e in EPSILONS if (name, seed, e) not in done]
            if not todo:
                continue
            if name not in cache:
                cache[name] = load_table(name, args.data_home)
            X, y, kind = cache[name]
            Xtr, Xte, ytr, yte = split_table(X, y, kind, seed)
            for eps in todo:
                rows = run_dpebm(Xtr, Xte, ytr, yte, kind, seed, eps)
                doc["rows"] += [{"table": name, "seed": seed, "epsilon": eps, **r}
                                for r in rows]
                write_atomic(args.out, doc)
                print(f"{name:16s} seed={seed} eps={eps} " + "  ".join(
                    f"{r['config']}: " + " ".join(f"{k}={r[k]:.4f}" for k in
                                                  ("accuracy", "auc", "r2") if k in r)
                    + f" {r['fit_seconds']:.1f}s" for r in rows), flush=True)


if __name__ == "__main__":
    main()
