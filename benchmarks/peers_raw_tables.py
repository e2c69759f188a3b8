"""Peers of the "raw table to private classifier" benchmark (DP-EBM, diffprivlib, sklearn).

Run with the peer's own virtual environment (no skdp import; see benchmarks/README.md)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 \\
        /work/venvs/interpret/bin/python benchmarks/peers_raw_tables.py \\
        --peer dpebm --seeds 0-9 --out benchmarks/results/raw_tables_dpebm.json

For every data set x seed (x epsilon for the private peers) it fits on the training split of
``_raw_protocol.split`` and writes test accuracy, ROC AUC and the wall time of the fit.  A
cell already in the JSON is skipped, so an interrupted run resumes; the file is rewritten
(atomic rename) after every cell.  Every data-derived choice that a private fit should have
taken from public knowledge is labelled in its row.
"""

import argparse
import json
import os
import platform
import sys
import time
import warnings

import numpy as np
import pandas as pd
import sklearn
from sklearn.metrics import accuracy_score, roc_auc_score

from _raw_protocol import (CATEGORICAL, DATASETS, EPSILONS, NUMERIC, load_raw, parse_seeds,
                           split)

DELTA = 1e-6
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
MISSING = "missing"  # adult's NaN (all in categorical columns) become their own category


def scores(y_test, proba):
    return {"accuracy": float(accuracy_score(y_test, proba >= 0.5)),
            "auc": float(roc_auc_score(y_test, proba))}


def timed_fit(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def fill_missing(X):
    X = X.copy()
    cat = CATEGORICAL(X)
    X[cat] = X[cat].fillna(MISSING)
    return X


# --------------------------------------------------------------------------- peers


def run_dpebm(Xtr, Xte, ytr, yte, seed, eps):
    from interpret.privacy import DPExplainableBoostingClassifier

    Xtr, Xte = fill_missing(Xtr), fill_missing(Xte)  # private binning rejects missing values
    cat = set(CATEGORICAL(Xtr))
    types = ["nominal" if c in cat else "continuous" for c in Xtr.columns]
    bounds = {c: (float(Xtr[c].min()), float(Xtr[c].max())) for c in NUMERIC(Xtr)}
    rows = []
    for config, extra in (("default", {}), ("learning_rate=0.1", {"learning_rate": 0.1})):
        m = DPExplainableBoostingClassifier(epsilon=eps, delta=DELTA, random_state=seed,
                                            feature_types=types, privacy_bounds=bounds,
                                            n_jobs=1, **extra)
        secs = timed_fit(m, Xtr, ytr)
        rows.append({"config": config, **scores(yte, m.predict_proba(Xte)[:, 1]),
                     "fit_seconds": secs, "learning_rate": m.learning_rate, "delta": DELTA,
                     "n_jobs": 1,
                     "bounds": "data-derived (leak)",
                     "feature_types": "given: 'nominal' for object columns, 'continuous' for "
                                      "the rest (categories themselves: DP-EBM's private "
                                      "categorical binning)",
                     "missing": f"NaN in categoricals -> category {MISSING!r}"})
    return rows


def run_diffprivlib(Xtr, Xte, ytr, yte, seed, eps):
    from diffprivlib.models import LogisticRegression
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder

    Xtr, Xte = fill_missing(Xtr), fill_missing(Xte)
    design = ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), CATEGORICAL(Xtr)),
        ("num", MinMaxScaler(), NUMERIC(Xtr)),
    ]).fit(Xtr)
    Ztr, Zte = design.transform(Xtr), design.transform(Xte)
    data_norm = float(np.linalg.norm(Ztr, axis=1).max())
    fits = {}
    for C in C_GRID:
        m = LogisticRegression(epsilon=eps, data_norm=data_norm, C=C, random_state=seed)
        secs = timed_fit(m, Ztr, ytr)
        fits[C] = {**scores(yte, m.predict_proba(Zte)[:, 1]), "fit_seconds": secs}
    best = max(C_GRID, key=lambda C: (fits[C]["accuracy"], fits[C]["auc"]))
    common = {"n_features": int(Ztr.shape[1]), "data_norm": data_norm,
              "data_norm_source": "data-derived (leak): max row norm of the training design",
              "categories": "data-derived (leak): one-hot categories of the training split",
              "scaling": "data-derived (leak): min-max with the training min/max",
              "missing": f"NaN in categoricals -> category {MISSING!r}"}
    return [
        {"config": "default C", "C": 1.0, **fits[1.0], **common},
        {"config": "oracle C", "C": best, **fits[best], **common,
         "C_choice": f"oracle C: best test accuracy (then AUC) over {list(C_GRID)}",
         "per_C": {str(C): fits[C] for C in C_GRID}},
    ]


def run_sklearn(Xtr, Xte, ytr, yte, seed, eps):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat, num = CATEGORICAL(Xtr), NUMERIC(Xtr)
    logreg = make_pipeline(ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore"), cat),
        ("num", StandardScaler(), num),
    ]), LogisticRegression(max_iter=1000))
    secs = timed_fit(logreg, fill_missing(Xtr), ytr)
    rows = [{"config": "LogisticRegression", **scores(yte, logreg.predict_proba(fill_missing(Xte))[:, 1]),
             "fit_seconds": secs, "missing": f"NaN in categoricals -> category {MISSING!r}"}]

    # pandas Categorical with the training split's categories (unseen test levels -> NaN)
    Ctr, Cte = Xtr.copy(), Xte.copy()
    for c in cat:
        dtype = pd.CategoricalDtype(sorted(Xtr[c].dropna().unique()))
        Ctr[c], Cte[c] = Xtr[c].astype(dtype), Xte[c].astype(dtype)
    hgb = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=seed)
    secs = timed_fit(hgb, Ctr, ytr)
    rows.append({"config": "HistGradientBoostingClassifier",
                 **scores(yte, hgb.predict_proba(Cte)[:, 1]), "fit_seconds": secs,
                 "missing": "NaN left to HGB's native missing-value handling"})
    return rows


PEERS = {"dpebm": (run_dpebm, "interpret", True),
         "diffprivlib": (run_diffprivlib, "diffprivlib", True),
         "sklearn": (run_sklearn, None, False)}


# --------------------------------------------------------------------------- driver


def versions(module_name):
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "pandas": pd.__version__, "scikit-learn": sklearn.__version__}
    if module_name is not None:
        v[module_name] = __import__(module_name).__version__
    return v


def write_atomic(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", required=True, choices=sorted(PEERS))
    ap.add_argument("--seeds", default="0-9", help="e.g. 0-9, 0,3,5 or 0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--data-home", default=None, help="default: $SKDP_DATA or ../shared/data")
    args = ap.parse_args(argv)
    run, module_name, private = PEERS[args.peer]

    ver = versions(module_name)
    doc = {"peer": args.peer, "versions": ver, "rows": []}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            doc = json.load(fh)
        if doc.get("peer") != args.peer or doc.get("versions") != ver:
            sys.exit(f"{args.out} holds {doc.get('peer')} {doc.get('versions')}, not "
                     f"{args.peer} {ver}: use another --out")
    doc.setdefault("runs", []).append({  # one entry per invocation (runs can resume)
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "seeds": args.seeds,
        **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                          "MKL_NUM_THREADS")},
        "nice": os.nice(0), "cpu_count": os.cpu_count(), "machine": platform.machine(),
    })
    doc["protocol"] = {"split": "train_test_split(test_size=0.3, stratify=y, random_state=seed)",
                       "epsilons": list(EPSILONS) if private else None,
                       "delta": DELTA if args.peer == "dpebm" else None}
    done = {(r["dataset"], r["seed"], r["epsilon"]) for r in doc["rows"]}

    warnings.simplefilter("ignore")
    for seed in parse_seeds(args.seeds):  # seeds outermost: a cut-short run keeps whole seeds
        for name in DATASETS:
            todo = [e for e in (EPSILONS if private else (None,)) if (name, seed, e) not in done]
            if not todo:
                continue
            X, y = load_raw(name, args.data_home)
            Xtr, Xte, ytr, yte = split(X, y, seed)
            for eps in todo:
                rows = run(Xtr, Xte, ytr, yte, seed, eps)
                doc["rows"] += [{"dataset": name, "seed": seed, "epsilon": eps, **r} for r in rows]
                write_atomic(args.out, doc)
                print(f"{name:12s} seed={seed} eps={eps} " + "  ".join(
                    f"{r['config']}: acc={r['accuracy']:.4f} auc={r['auc']:.4f} "
                    f"{r['fit_seconds']:.1f}s" for r in rows), flush=True)


if __name__ == "__main__":
    main()
