"""Below the base-rate check's minimum size, which comparator should the multinomial default use?

The multinomial default (dpsgd) has two alpha rules (``skdp/linear_model/_auto.py``):

* ``A``, shrinking: the comparator ``M_0 = 1024``, ``gamma = 1`` -- strong shrinkage (toward
  the class priors) at small privacy sample sizes;
* ``B``, checked: the flat, nearly unregularised comparator (``M_0 = 65536``, ``gamma = 0``)
  followed by the base-rate check (fall back to the class priors when the majority class
  classifies more training rows, judged on noisy counts).

The check runs where the public ``n mu`` (``mu`` the GDP parameter of the budget) reaches
``CHECK_MIN_SIZE``; below it the default used ``A``.  This script fits, on each cell and
seed, ``A``, ``B`` (the check forced on) and ``C`` (the flat comparator without the check),
and scores two families of rules by their mean shortfall to the best of the three per cell
and by their shortfall to the majority rate: "check from G" (``B`` where ``n mu >= G``,
else ``A``) and "flat from G" (``B`` where ``n mu >= 200``, ``C`` where ``G <= n mu < 200``,
else ``A``: the committed rule, ``DPSGD_FLAT_MIN_SIZE``).

Cells around and below the check's minimum (``n mu`` from ~60 to ~900):

* ``calibrate`` (chooses ``G``): synthetic multinomial problems
  (``calibrate_auto.multinomial_problem``: tabular designs with rows at the bound,
  imbalanced Dirichlet(2) priors; and a balanced variant), K = 3, 5, 10, weak and strong
  signal, p = 10 and 40, n = 500, 1,000, 1,600, epsilon = 0.5, 1 (and 2 at n = 500);
* ``check`` (kept out of the choice): real-derived cells, subsampled so ``n mu`` falls in
  the same range -- digits on 600 and 900 training rows and on its classes 0-4, wine quality
  as 3 classes (800 and 1,500 rows) and 5 classes (1,500 rows), concrete strength as 3 and 5
  quantile bins, airfoil noise and bike-sharing counts (1,000 and 2,000 rows) as 4 bins;
  epsilon 0.5, 1, 2.  The benchmark cell itself (all of digits, ``bench_multiclass.py``) is
  not among them.

Writes ``benchmarks/results/calibrate_check_size.md`` / ``.json``.
Run: ``SKDP_DATA=... python benchmarks/calibrate_check_size.py [--seeds 16 --workers 2]``
(about 6 minutes on 2 cores).
"""

import argparse
import itertools
import multiprocessing as mp
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import data_home, log, machine_info, write_results  # noqa: E402

DELTA = 1e-6
GATES = (0.0, 60.0, 80.0, 100.0, 120.0, 150.0, 200.0, 250.0, 1e9)


def _balanced_problem(n, p, K, rng, signal, design):
    from calibrate_auto import tabular_design

    X = tabular_design(2 * n, p, rng, 1.0, design)
    W = rng.standard_normal((p, K))
    W *= signal / (X @ W).std()
    Z = X @ W
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random((2 * n, 1))).argmax(axis=1)
    return X[:n], y[:n], X[n:], y[n:]


def synthetic_cells():
    from calibrate_auto import MULTI_SIGNALS

    out = []
    for K, signal, balance, p, n, eps in itertools.product(
            (3, 5, 10), ("weak", "strong"), ("imbalanced", "balanced"), (10, 40),
            (500, 1000, 1600), (0.5, 1.0, 2.0)):
        if eps == 2.0 and n != 500:
            continue
        out.append(("calibrate", f"K={K} {signal} {balance} p={p}", n, eps,
                    dict(K=K, signal=MULTI_SIGNALS[signal], balance=balance, p=p, n=n)))
    return out


def _quantile_classes(t, k):
    return np.digitize(t, np.quantile(t, np.linspace(0, 1, k + 1)[1:-1]))


def real_sets(home):
    from sklearn.datasets import load_digits

    from skdp import datasets

    X, y = load_digits(return_X_y=True)
    yield "digits n=600", X / 128.0, y, 600
    yield "digits n=900", X / 128.0, y, 900
    keep = y < 5
    yield "digits 0-4", X[keep] / 128.0, y[keep], None
    wine = datasets.load_wine_quality(data_home=home)
    yield "wine 3 classes", wine.data, np.digitize(wine.target, [5.5, 6.5]), 1500
    yield "wine 5 classes", wine.data, np.clip(wine.target, 4, 8).astype(int), 1500
    yield "wine 3 classes n=800", wine.data, np.digitize(wine.target, [5.5, 6.5]), 800
    c = datasets.load_concrete(data_home=home)
    yield "concrete 3 bins", c.data, _quantile_classes(c.target, 3), None
    yield "concrete 5 bins", c.data, _quantile_classes(c.target, 5), None
    a = datasets.load_airfoil(data_home=home)
    yield "airfoil 4 bins", a.data, _quantile_classes(a.target, 4), None
    b = datasets.load_bike_sharing(data_home=home)
    yield "bike 4 bins", b.data, _quantile_classes(b.target, 4), 2000
    yield "bike 4 bins n=1000", b.data, _quantile_classes(b.target, 4), 1000


def real_cells(home):
    out = []
    for name, X, y, cap in real_sets(home):
        for eps in (0.5, 1.0, 2.0):
            out.append(("check", name, cap, eps, dict(home=str(home))))
    return out


def _real_data(name, cap, home, seed):
    from sklearn.model_selection import train_test_split

    for nm, X, y, c in real_sets(home):
        if nm == name:
            X, y = np.asarray(X, float), np.asarray(y)
            if c is not None:     # subsample (seeded) to 1/0.7 x cap rows
                idx = np.random.default_rng(seed).choice(len(y), int(c / 0.7),
                                                         replace=False)
                X, y = X[idx], y[idx]
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                  stratify=y)
            return Xtr, ytr, Xte, yte
    raise KeyError(name)


def run_cell(args):
    split, name, n, eps, spec, seeds = args
    from calibrate_auto import multinomial_problem

    from skdp import DPLogisticRegression
    from skdp._solvers._objective_perturbation import budget_mu
    from skdp.linear_model import _auto

    rows = []
    for s in seeds:
        rng = np.random.default_rng(7919 * s + 13 * len(name) + int(10 * eps))
        if split == "calibrate":
            if spec["balance"] == "balanced":
                Xtr, ytr, Xte, yte = _balanced_problem(spec["n"], spec["p"], spec["K"], rng,
                                                       spec["signal"], "decaying")
            else:
                Xtr, ytr, Xte, yte = multinomial_problem(spec["n"], spec["p"], spec["K"],
                                                         rng, 1.0, "decaying", spec["signal"])
            classes = np.arange(spec["K"])
        else:
            Xtr, ytr, Xte, yte = _real_data(name, n, spec["home"], s)
            classes = np.unique(np.concatenate([ytr, yte]))
        kw = dict(epsilon=eps, delta=DELTA, data_norm=1.0, classes=classes, random_state=s)
        est = DPLogisticRegression(**kw)
        loss, k = est._planning_loss()
        R = est._public_row_bound()
        P = (Xtr.shape[1] + 1) * k
        rule = dict(n=len(ytr), p=P, epsilon=eps, delta=DELTA, row_bound=R)
        a_unchecked = _auto.auto_alpha("dpsgd", loss, checked=False, **rule)
        a_flat = _auto.auto_alpha("dpsgd", loss, checked=True, **rule)
        res = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res["A"] = DPLogisticRegression(alpha=a_unchecked, base_rate_fallback=False,
                                            **kw).fit(Xtr, ytr).score(Xte, yte)
            res["C"] = DPLogisticRegression(alpha=a_flat, base_rate_fallback=False,
                                            **kw).fit(Xtr, ytr).score(Xte, yte)
            old = _auto.CHECK_MIN_SIZE
            _auto.CHECK_MIN_SIZE = 0.0
            try:
                b = DPLogisticRegression(**kw).fit(Xtr, ytr)
            finally:
                _auto.CHECK_MIN_SIZE = old
            assert b.alpha_ == a_flat
            res["B"] = b.score(Xte, yte)
            res["fell"] = int(b.base_rate_fallback_)
        res["majority"] = float(np.max(np.bincount(yte)) / len(yte))
        res["n_mu"] = len(ytr) * budget_mu(eps, DELTA, 1)
        res["n"], res["p"], res["K"] = len(ytr), Xtr.shape[1], k
        rows.append(res)
    m = {key: float(np.mean([r[key] for r in rows]))
         for key in ("A", "B", "C", "fell", "majority", "n_mu", "n", "p", "K")}
    return (split, name, eps, m)


def _rules():
    """``(family, G, pick)``: ``pick(m)`` is the strategy a rule runs on a cell."""
    out = [("check from G (else A)", G, lambda m, G=G: "B" if m["n_mu"] >= G else "A")
           for G in GATES]
    out += [("flat from G, check from 200 (else A)", G,
             lambda m, G=G: "B" if m["n_mu"] >= 200 else ("C" if m["n_mu"] >= G else "A"))
            for G in GATES if G <= 200]
    return out


def gate_table(cells):
    """For every rule: mean / worst shortfall to max(A, B, C) and to the majority."""
    lines = ["| rule | G | split | cells | mean shortfall to best | worst | "
             "cells below majority - 0.005 | worst vs majority |",
             "|---|---|---|---|---|---|---|---|"]
    for family, G, pick in _rules():
        for split in ("calibrate", "check"):
            sub = [c for c in cells if c[0] == split]
            if not sub:
                continue
            sf, vm = [], []
            for _, _, _, m in sub:
                got = m[pick(m)]
                sf.append(max(m["A"], m["B"], m["C"]) - got)
                vm.append(got - m["majority"])
            gl = "never" if G > 1e8 else f"{G:g}"
            lines.append(f"| {family} | {gl} | {split} | {len(sub)} | {np.mean(sf):.4f} | "
                         f"{np.max(sf):.3f} | {sum(v < -0.005 for v in vm)} | "
                         f"{np.min(vm):+.3f} |")
    return lines


def render(raw):
    cells = raw["cells"]
    lines = ["# Multinomial default: where the base-rate check starts", "",
             f"`benchmarks/calibrate_check_size.py`, {raw['seeds']} seeds per cell, "
             f"delta = 1e-6, data_norm = 1; {raw['elapsed_s']:.0f} s.  A: unchecked rule "
             "(M_0 = 1024, gamma = 1); B: flat comparator + base-rate check (forced on); "
             "C: flat comparator, no check.  Rules: 'check from G': B where n mu >= G, else A "
             "(G = 200: the rule before); 'flat from G': B where n mu >= 200, C where "
             "G <= n mu < 200, else A.", "",
             *gate_table(cells), "", "## Cells", "",
             "| split | cell | n | p | K | eps | n mu | majority | A | B | C | fell (B) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for split, name, eps, m in sorted(cells, key=lambda c: (c[0], c[3]["n_mu"])):
        lines.append(f"| {split} | {name} | {m['n']:.0f} | {m['p']:.0f} | {m['K']:.0f} | "
                     f"{eps:g} | {m['n_mu']:.0f} | {m['majority']:.3f} | {m['A']:.3f} | "
                     f"{m['B']:.3f} | {m['C']:.3f} | {m['fell']:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", choices=("calibrate", "check"))
    args = ap.parse_args()
    t0 = time.time()
    seeds = tuple(range(args.seeds))
    todo = []
    if args.only != "check":
        todo += synthetic_cells()
    if args.only != "calibrate":
        todo += real_cells(data_home())
    todo = [c + (seeds,) for c in todo]
    cells = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for c in pool.imap_unordered(run_cell, todo):
            log(f"{c[0]} {c[1]} eps={c[2]:g} n_mu={c[3]['n_mu']:.0f} "
                f"A={c[3]['A']:.3f} B={c[3]['B']:.3f} C={c[3]['C']:.3f} "
                f"maj={c[3]['majority']:.3f}")
            cells.append(c)
    raw = {"seeds": args.seeds, "cells": cells, "machine": machine_info(),
           "elapsed_s": time.time() - t0}
    md, _ = write_results("calibrate_check_size", render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
