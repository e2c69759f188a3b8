"""The multinomial default against skdp's own alpha grid and the majority class.

Target (issue 35): the multinomial default within 0.02 accuracy of skdp's oracle grid on
every multiclass cell, and (as for the binary default) not below the majority rate.

"default" is ``DPLogisticRegression`` with only ``epsilon``, ``data_norm`` and ``classes``:
dpsgd with the flat comparator of a checked fit and the base-rate check
(``skdp/linear_model/_base_rate.py``); "no check" is ``base_rate_fallback=False``, which
also restores the previous comparator (``M_0 = 1024``, ``gamma = 1``); the oracle is the
alpha of ``ALPHAS`` (no check) with the best mean test accuracy over the grid seeds (an
upper bound no private workflow has), then fitted again on the default's seeds: the
"oracle" column is that second, paired measurement.  The maximum over six noisy grid means
is biased upwards (on digits at epsilon = 1 every alpha <= 1e-4 fits nearly the same model,
and the grid's best mean moved between 0.454 and 0.499 with the seeds); re-measuring the
chosen alpha on other seeds removes that bias, and pairing it with the default's seeds
gives the difference its own standard error.  Cells: scikit-learn's digits (pixels / 128: rows of norm <= 1, 10
balanced classes), wine quality as 3 and 5 classes, and synthetic sets (3 weak imbalanced
classes; 6 classes on 5 features, ~21,700 training rows).  70/30 stratified split
(``random_state=0``), ``delta = 1e-6``, ``data_norm = 1``.

Writes ``benchmarks/results/multiclass.md`` and ``.json``.
Run: ``SKDP_DATA=... python benchmarks/bench_multiclass.py [--seeds 20 --grid-seeds 10]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).parent))
from _common import data_home, log, machine_info, write_results  # noqa: E402

from skdp import DPLogisticRegression, datasets  # noqa: E402

EPSILONS = (0.5, 1.0, 10.0)
DELTA = 1e-6
ALPHAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def _unit_rows(X):
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]


def cells(home):
    X, y = load_digits(return_X_y=True)
    yield "digits", X / 128.0, y
    wine = datasets.load_wine_quality(data_home=home)
    yield "wine 5 classes", wine.data, np.clip(wine.target, 4, 8).astype(int)
    yield "wine 3 classes", wine.data, np.digitize(wine.target, [5.5, 6.5])
    Xs, ys = make_classification(5400, 11, n_informative=3, n_classes=3,
                                 weights=[0.5, 0.3, 0.2], flip_y=0.4, class_sep=0.5,
                                 random_state=0)
    yield "synth 3 weak", _unit_rows(Xs / (3 * np.sqrt(11))), ys
    Xs, ys = make_classification(31_000, 5, n_informative=4, n_redundant=0, n_classes=6,
                                 n_clusters_per_class=1, flip_y=0.3, class_sep=0.6,
                                 random_state=1)
    yield "synth 6 classes", _unit_rows(Xs / (3 * np.sqrt(5))), ys


def mean_accuracy(make, seeds, Xtr, ytr, Xte, yte):
    acc, extra = [], {}
    seeds = list(seeds)
    for s in seeds:
        est = make(s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xtr, ytr)
        acc.append(est.score(Xte, yte))
        extra = {"alpha_": float(est.alpha_),
                 "fell_back": extra.get("fell_back", 0) + int(est.base_rate_fallback_)}
    return {"accuracy": float(np.mean(acc)), "se": float(np.std(acc) / np.sqrt(len(acc))),
            "per_seed": [float(a) for a in acc], **extra}


def paired(a, b):
    """Mean and standard error of the seed-by-seed difference ``a - b``."""
    diff = np.asarray(a["per_seed"]) - np.asarray(b["per_seed"])
    return {"mean": float(diff.mean()), "se": float(diff.std() / np.sqrt(len(diff)))}


def run_cell(X, y, seeds, grid_seeds):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    classes = np.unique(y)
    out = {"n_train": len(ytr), "p": X.shape[1], "classes": len(classes),
           "majority": float(np.max(np.bincount(yte)) / len(yte)),
           "sklearn": float(LogisticRegression(max_iter=3000).fit(Xtr, ytr).score(Xte, yte))}
    for eps in EPSILONS:
        def make(**kw):
            return lambda s: DPLogisticRegression(epsilon=eps, delta=DELTA, data_norm=1.0,
                                                  classes=classes, random_state=s, **kw)
        row = {"default": mean_accuracy(make(), seeds, Xtr, ytr, Xte, yte),
               "no check": mean_accuracy(make(base_rate_fallback=False), seeds,
                                         Xtr, ytr, Xte, yte)}
        grid = {a: mean_accuracy(make(alpha=a, base_rate_fallback=False), grid_seeds,
                                 Xtr, ytr, Xte, yte) for a in ALPHAS}
        best = max(grid, key=lambda a: grid[a]["accuracy"])
        row["grid"] = {str(a): {"accuracy": grid[a]["accuracy"], "se": grid[a]["se"]}
                       for a in ALPHAS}
        row["oracle"] = {"alpha": best, "grid_accuracy": grid[best]["accuracy"],
                         **mean_accuracy(make(alpha=best, base_rate_fallback=False), seeds,
                                         Xtr, ytr, Xte, yte)}
        row["default - oracle"] = paired(row["default"], row["oracle"])
        out[str(eps)] = row
    return out


def render(raw):
    lines = ["# The multinomial default against skdp's alpha grid", "",
             f"`benchmarks/bench_multiclass.py`: defaults over {raw['n_seeds']} seeds, the "
             f"grid over {raw['grid_seeds']}; delta = 1e-6, data_norm = 1; "
             f"{raw['elapsed_s']:.0f} s on {raw['machine'].get('cpu', '?')}.  Accuracy +- its "
             "standard error; `- oracle` and `- majority` for the default (targets: >= "
             "-0.02 and >= -0.005); `fell` = fits that fell back to the class priors.  "
             "oracle: the alpha with the best mean over the grid seeds (`grid best`, that "
             "biased maximum), refitted on the default's seeds; `default - oracle` is the "
             "paired difference +- its standard error.", "",
             "| cell | n | p | K | majority | sklearn | eps | default | fell | alpha_ | "
             "no check (previous rule) | grid best (alpha) | oracle | default - oracle | "
             "default - majority |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in raw["cells"].items():
        for eps in EPSILONS:
            r = c[str(eps)]
            d, o, g = r["default"], r["no check"], r["oracle"]
            lines.append(
                f"| {name} | {c['n_train']} | {c['p']} | {c['classes']} | "
                f"{c['majority']:.3f} | {c['sklearn']:.3f} | {eps:g} | "
                f"{d['accuracy']:.3f} +- {d['se']:.3f} | {d['fell_back']} | "
                f"{d['alpha_']:.2g} | {o['accuracy']:.3f} +- {o['se']:.3f} | "
                f"{g['grid_accuracy']:.3f} ({g['alpha']:g}) | "
                f"{g['accuracy']:.3f} +- {g['se']:.3f} | "
                f"{r['default - oracle']['mean']:+.3f} +- {r['default - oracle']['se']:.3f} | "
                f"{d['accuracy'] - c['majority']:+.3f} |")
    gaps = [c[str(eps)]["default - oracle"]["mean"] for c in raw["cells"].values()
            for eps in EPSILONS]
    lines += ["", f"Default within 0.02 of the oracle: {sum(g >= -0.02 for g in gaps)} of "
              f"{len(gaps)} cells; worst {min(gaps):+.3f}."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--grid-seeds", type=int, default=10)
    args = ap.parse_args()
    t0 = time.time()
    raw = {"n_seeds": args.seeds, "grid_seeds": args.grid_seeds, "cells": {},
           "machine": machine_info()}
    for name, X, y in cells(data_home()):
        log(f"{name}: n={len(y)} p={X.shape[1]}")
        raw["cells"][name] = run_cell(np.asarray(X, dtype=float), np.asarray(y),
                                      range(args.seeds), range(100, 100 + args.grid_seeds))
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results("multiclass", render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
