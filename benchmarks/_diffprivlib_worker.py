"""Runs diffprivlib in its own environment (it imports only with scikit-learn <= 1.7.2).

Usage: ``<python with diffprivlib> _diffprivlib_worker.py IN.npz OUT.json``.  ``IN.npz``
holds ``X_train, y_train, X_test, y_test, kind ("classification"/"regression"),
epsilons, seeds, Cs, data_norm, y_bound``; the worker fits diffprivlib's
``LogisticRegression`` (one fit per epsilon x seed x C) or ``LinearRegression`` (bounds
from the public ``data_norm`` / ``y_bound``) and writes the test scores and the versions.
"""

import json
import sys
import warnings

import numpy as np


def main(inp, out):
    import diffprivlib
    import sklearn
    from diffprivlib.models import LinearRegression, LogisticRegression
    from sklearn.metrics import r2_score, roc_auc_score

    d = np.load(inp, allow_pickle=False)
    Xtr, ytr, Xte, yte = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    kind = str(d["kind"])
    results = []
    warnings.simplefilter("ignore")
    for eps in d["epsilons"]:
        for seed in d["seeds"]:
            if kind == "classification":
                for C in d["Cs"]:
                    m = LogisticRegression(epsilon=float(eps), data_norm=float(d["data_norm"]),
                                           C=float(C), random_state=int(seed))
                    m.fit(Xtr, ytr)
                    proba = m.predict_proba(Xte)[:, 1]
                    results.append({"epsilon": float(eps), "seed": int(seed), "C": float(C),
                                    "accuracy": float(m.score(Xte, yte)),
                                    "auc": float(roc_auc_score(yte, proba))})
            else:
                p = Xtr.shape[1]
                bx = float(d["data_norm"])
                m = LinearRegression(epsilon=float(eps), bounds_X=(-bx * np.ones(p), bx * np.ones(p)),
                                     bounds_y=(-float(d["y_bound"]), float(d["y_bound"])),
                                     random_state=int(seed))
                m.fit(Xtr, ytr)
                results.append({"epsilon": float(eps), "seed": int(seed),
                                "r2": float(r2_score(yte, m.predict(Xte)))})
    versions = {"diffprivlib": diffprivlib.__version__, "scikit-learn": sklearn.__version__,
                "numpy": np.__version__, "python": sys.version.split()[0]}
    with open(out, "w") as fh:
        json.dump({"versions": versions, "results": results}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
