"""The binary default against the majority-class rate, with and without the base-rate
fallback (``skdp/linear_model/_base_rate.py``).

Target (issue 35): on every cell with epsilon >= 0.5 the default's mean accuracy is at
least the majority rate - 0.005, and its ROC AUC no worse than without the fallback.

Cells: weak-signal binary problems, where non-private logistic regression barely beats
the majority class (the failure mode), and the benchmark classifiers of
``bench_defaults.py`` (Adult, Bank, credit card: strong enough signal that the fallback
should never fire).  Each weak cell is a public, seeded construction:

* ``credit n=3.4k``: 4,860 rows of the credit-card data (seed 1), 70 % for training;
* ``wine >= 7``: wine quality binarised at 7 (19.6 % positive);
* ``adult 3 cols``: 10,000 Adult rows (seed 2), its first three feature columns only;
* ``synth p=28`` / ``synth p=14``: ``make_classification`` with a weak, imbalanced signal
  (``flip_y`` 0.25 / 0.2), rows scaled to norm <= 1.

Same protocol as ``bench_defaults.py``: 70/30 stratified split (``random_state=0``),
``data_norm=1``, ``delta=1e-6``, ``classes=[0, 1]``; ``--seeds`` noise seeds (the same
seeds with the fallback on and off).  Writes ``benchmarks/results/majority.md`` and
``.json``.  Run: ``SKDP_DATA=... python benchmarks/bench_majority.py [--seeds 20]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).parent))
from _common import data_home, log, machine_info, write_results  # noqa: E402

from skdp import DPLogisticRegression, datasets  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 10.0)
DELTA = 1e-6


def _unit_rows(X):
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]


def _synthetic(n, p, informative, weight, flip, sep, seed):
    X, y = make_classification(n, p, n_informative=informative, weights=[weight],
                               flip_y=flip, class_sep=sep, random_state=seed)
    return _unit_rows(X / (3.0 * np.sqrt(p))), y


def cells(home, weak_only=False):
    """``(name, kind, X, y)``: ``kind`` is ``"weak"`` or ``"benchmark"``."""
    cc = datasets.load_credit_card(data_home=home)
    idx = np.random.default_rng(1).choice(len(cc.target), 4860, replace=False)
    yield "credit n=3.4k", "weak", cc.data[idx], cc.target[idx]
    wine = datasets.load_wine_quality(data_home=home)
    yield "wine >= 7", "weak", wine.data, (wine.target >= 7).astype(int)
    adult = datasets.load_adult(data_home=home)
    idx = np.random.default_rng(2).choice(len(adult.target), 10_000, replace=False)
    yield "adult 3 cols", "weak", adult.data[idx][:, :3], adult.target[idx]
    yield ("synth p=28", "weak", *_synthetic(4860, 28, 4, 0.684, 0.25, 0.4, 0))
    yield ("synth p=14", "weak", *_synthetic(10_000, 14, 3, 0.758, 0.2, 0.3, 1))
    if weak_only:
        return
    yield "adult", "benchmark", adult.data, adult.target
    bank = datasets.load_bank(data_home=home)
    yield "bank", "benchmark", bank.data, bank.target
    yield "credit card", "benchmark", cc.data, cc.target


def run_cell(X, y, seeds):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    out = {"n_train": len(ytr), "p": X.shape[1],
           "majority": float(max(yte.mean(), 1.0 - yte.mean()))}
    sk = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
    out["sklearn"] = {"accuracy": float(sk.score(Xte, yte)),
                      "auc": float(roc_auc_score(yte, sk.decision_function(Xte)))}
    for eps in EPSILONS:
        row = {}
        for setting in ("auto", False):
            acc, auc, fell = [], [], 0
            for s in seeds:
                est = DPLogisticRegression(epsilon=eps, delta=DELTA, data_norm=1.0,
                                           classes=[0, 1], random_state=s,
                                           base_rate_fallback=setting)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xtr, ytr)
                acc.append(est.score(Xte, yte))
                auc.append(roc_auc_score(yte, est.decision_function(Xte)))
                fell += int(est.base_rate_fallback_)
            row["on" if setting else "off"] = {
                "accuracy": float(np.mean(acc)), "accuracy_se": float(np.std(acc) / np.sqrt(len(acc))),
                "auc": float(np.mean(auc)), "auc_se": float(np.std(auc) / np.sqrt(len(auc))),
                "fell_back": fell}
        out[str(eps)] = row
    return out


def render(raw):
    lines = ["# The binary default against the majority class", "",
             f"`benchmarks/bench_majority.py`, {raw['n_seeds']} noise seeds per cell (the same "
             "with the base-rate fallback on and off), delta = 1e-6, data_norm = 1; "
             f"{raw['elapsed_s']:.0f} s on {raw['machine'].get('cpu', '?')}.  `gap` = mean "
             "accuracy - majority rate (target >= -0.005 with the fallback on); `fell` = "
             "fits that fell back; AUC +- its standard error over seeds.", "",
             "| cell | n | p | majority | sklearn acc / AUC | eps | off: acc (gap) | off: AUC "
             "| on: acc (gap) | on: AUC | fell |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, cell in raw["cells"].items():
        for eps in EPSILONS:
            r = cell[str(eps)]
            off, on = r["off"], r["on"]
            lines.append(
                f"| {name} | {cell['n_train']} | {cell['p']} | {cell['majority']:.3f} | "
                f"{cell['sklearn']['accuracy']:.3f} / {cell['sklearn']['auc']:.3f} | {eps:g} | "
                f"{off['accuracy']:.3f} ({off['accuracy'] - cell['majority']:+.3f}) | "
                f"{off['auc']:.3f} +- {off['auc_se']:.3f} | "
                f"{on['accuracy']:.3f} ({on['accuracy'] - cell['majority']:+.3f}) | "
                f"{on['auc']:.3f} +- {on['auc_se']:.3f} | {on['fell_back']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--weak-only", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    raw = {"n_seeds": args.seeds, "epsilons": EPSILONS, "cells": {},
           "machine": machine_info()}
    for name, _kind, X, y in cells(data_home(), args.weak_only):
        log(f"{name}: n={len(y)} p={X.shape[1]}")
        raw["cells"][name] = run_cell(np.asarray(X, dtype=float), np.asarray(y),
                                      range(args.seeds))
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results("majority", render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
