"""Does the multinomial default's dpsgd schedule stall?  (issue 35, part 3)

A held-out 6-class set (n ~ 21,700 training rows, p = 5) had the default at 0.334 accuracy
at epsilon = 10 for every alpha <= 1e-4, where ``solver="phased"`` reached 0.360.  The
cells here look for that failure and measure the step rule of
:func:`skdp.linear_model._auto.dpsgd_schedule` that fixes it.

Cells (6 classes and 5 features unless named; 70/30 stratified split, ``random_state=0``;
``delta = 1e-6``, ``data_norm = 1``):

* **synthetic (calibration)**: ``make_classification`` with 6 classes on 5 features, scaled
  as bench_multiclass does (``base``: ``X/(3 sqrt 5)``, rows clipped to norm 1), min-max
  scaled as the ``skdp.datasets`` loaders do (column to [0, 1], divided by ``sqrt(d)``:
  ``minmax``), imbalanced classes (``imb``: majority 0.28), heavy-tailed columns min-max
  scaled (``skew``: three columns ``exp(1.2 x)``, most rows near 0), nearly constant
  columns (``narrow``: ``0.5 + 0.04 x/sd``), weak signal (``weak``); a smaller ``imb
  minmax`` (4,550 rows), 10 classes on 30 min-max features (1,400 rows) and
  bench_multiclass's ``synth 3 weak``;
* **real-derived (check only)**: adult's relationship (6 classes) and occupation (top 5 +
  other) from age, fnlwgt, education-num, capital-gain, hours-per-week; credit card's age
  sextiles from LIMIT_BAL, PAY_0, BILL_AMT1, PAY_AMT1, MARRIAGE_2; bike sharing's hour of
  day in 4-hour blocks from temp, atemp, hum, windspeed and the count; wine quality (3..8)
  from alcohol, volatile acidity, density, chlorides, residual sugar (columns min-max
  scaled and divided by ``sqrt 5``); and bench_multiclass's digits and wine 3/5 classes.

Columns: the default (``DPLogisticRegression`` with only ``epsilon``, ``data_norm`` and
``classes``) with the previous schedule (``n_steps`` = the epoch rule's ``T_0``, passed
explicitly) and with the current rule, paired on the same seeds; ``--variants`` adds the
rule at other constants (``Z``: ``STEPS_NOISE_MULTIPLIER``, ``M``: ``MAX_STEPS_FACTOR``);
``phased`` at ``alpha = 1e-5`` without the check (the issue's reference); non-private
scikit-learn.

``--calibration-sample``: instead, a sample of the multinomial alpha calibration's synthetic
cells (``benchmarks/calibrate_auto.py --multinomial``; 3 and 10 classes, weak and strong
signal, dense and one-hot designs, n = 2000 and 10000, p = 10, epsilon = 2 and 10, where the
rule adds steps), the default with the previous and the current schedule, paired seeds;
writes ``results/dpsgd_stall_calibration_sample.md``.

Writes ``benchmarks/results/dpsgd_stall.md`` and ``.json``.
Run: ``SKDP_DATA=... python benchmarks/bench_dpsgd_stall.py [--seeds 5] [--variants]
[--calibration-sample]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).parent))
from _common import data_home, log, machine_info, write_results  # noqa: E402
from bench_multiclass import cells as multiclass_cells  # noqa: E402

from skdp import DPLogisticRegression, datasets  # noqa: E402
from skdp.linear_model import _auto  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
DELTA = 1e-6
VARIANTS = ((7.0, 8.0), (10.0, 8.0), (5.0, 4.0), (5.0, 16.0))
IMBALANCED = [0.334, 0.2, 0.15, 0.13, 0.1, 0.086]


def _unit_rows(X):
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]


def _minmax(X):
    X = np.asarray(X, dtype=float)
    lo, hi = X.min(0), X.max(0)
    return (X - lo) / np.where(hi > lo, hi - lo, 1.0) / np.sqrt(X.shape[1])


def synthetic_cells():
    kw = dict(n_informative=4, n_redundant=0, n_classes=6, n_clusters_per_class=1)
    X, y = make_classification(31_000, 5, flip_y=0.3, class_sep=0.6, random_state=1, **kw)
    yield "synth 6 minmax", _minmax(X), y
    X, y = make_classification(31_000, 5, flip_y=0.3, class_sep=0.6, weights=IMBALANCED,
                               random_state=2, **kw)
    yield "synth 6 imb", _unit_rows(X / (3 * np.sqrt(5))), y
    yield "synth 6 imb minmax", _minmax(X), y
    yield "synth 6 imb minmax small", _minmax(X[:6500]), y[:6500]
    Xt = X.copy()
    Xt[:, :3] = np.exp(1.2 * Xt[:, :3])
    yield "synth 6 imb skew", _minmax(Xt), y
    yield "synth 6 imb narrow", _unit_rows((0.5 + 0.04 * X / X.std(0)) / np.sqrt(5)), y
    X, y = make_classification(31_000, 5, n_informative=3, n_redundant=1, n_classes=6,
                               n_clusters_per_class=1, flip_y=0.5, class_sep=0.4,
                               weights=IMBALANCED, random_state=4)
    yield "synth 6 weak minmax", _minmax(X), y
    X, y = make_classification(2000, 30, n_informative=10, n_classes=10,
                               n_clusters_per_class=1, flip_y=0.2, random_state=5)
    yield "synth 10 classes p30 minmax", _minmax(X), y


def _raw(bunch):
    """The loader's columns back on [0, 1] (the loaders divide by sqrt(d))."""
    return bunch.data * np.sqrt(bunch.data.shape[1]), list(bunch.feature_names)


def real_cells(home):
    X, names = _raw(datasets.load_adult(data_home=home))
    num = [names.index(c) for c in ("age", "fnlwgt", "education-num", "capital-gain",
                                    "hours-per-week")]
    rel = [i for i, c in enumerate(names) if c.startswith("relationship_")]
    yield "adult relationship", X[:, num] / np.sqrt(5), X[:, rel].argmax(1)
    occ = X[:, [i for i, c in enumerate(names) if c.startswith("occupation_")]].argmax(1)
    top = list(np.argsort(-np.bincount(occ))[:5])
    yield "adult occupation", X[:, num] / np.sqrt(5), np.array(
        [top.index(v) if v in top else 5 for v in occ])
    X, names = _raw(datasets.load_credit_card(data_home=home))
    cols = [names.index(c) for c in ("LIMIT_BAL", "PAY_0", "BILL_AMT1", "PAY_AMT1",
                                     "MARRIAGE_2")]
    age = X[:, names.index("AGE")]
    yield "credit card age", X[:, cols] / np.sqrt(5), np.digitize(
        age, np.quantile(age, np.arange(1, 6) / 6))
    bike = datasets.load_bike_sharing(data_home=home)
    X, names = _raw(bike)
    hour = X[:, [names.index(f"hr_{h}") for h in range(24)]].argmax(1)
    cnt = np.asarray(bike.target, dtype=float)
    cnt = (cnt - cnt.min()) / (cnt.max() - cnt.min())
    cols = [names.index(c) for c in ("temp", "atemp", "hum", "windspeed")]
    yield "bike hour", np.c_[X[:, cols], cnt] / np.sqrt(5), hour // 4
    wine = datasets.load_wine_quality(data_home=home)
    X, names = _raw(wine)
    cols = [names.index(c) for c in ("alcohol", "volatile acidity", "density", "chlorides",
                                     "residual sugar")]
    yield "wine quality p5", X[:, cols] / np.sqrt(5), np.clip(wine.target, 3, 8).astype(int)


def all_cells(home):
    mc = {name: (X, y) for name, X, y in multiclass_cells(home)}
    for name, X, y in synthetic_cells():
        yield "synthetic", name, X, y
    for name in ("synth 6 classes", "synth 3 weak"):
        yield "synthetic", name, *mc[name]
    for name, X, y in real_cells(home):
        yield "real", name, X, y
    for name in ("digits", "wine 5 classes", "wine 3 classes"):
        yield "real", name, *mc[name]


def rule_steps(n, p, eps, z=None, m=None):
    """The default's ``n_steps`` under the rule with constants ``(z, m)`` (None: current)."""
    old = _auto.STEPS_NOISE_MULTIPLIER, _auto.MAX_STEPS_FACTOR
    try:
        if z is not None:
            _auto.STEPS_NOISE_MULTIPLIER, _auto.MAX_STEPS_FACTOR = z, m
        return _auto.dpsgd_schedule(n, p, epsilon=eps, delta=DELTA, multinomial=True)[1]
    finally:
        _auto.STEPS_NOISE_MULTIPLIER, _auto.MAX_STEPS_FACTOR = old


def accuracies(make, seeds, Xtr, ytr, Xte, yte):
    out = []
    for s in seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(make(s).fit(Xtr, ytr).score(Xte, yte))
    return np.array(out)


def run_cell(X, y, seeds, variants):
    y = np.unique(y, return_inverse=True)[1]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    classes = np.unique(y)
    n, d = Xtr.shape
    p = (d + 1) * len(classes)
    out = {"n_train": n, "p": d, "classes": len(classes),
           "majority": float(np.max(np.bincount(yte)) / len(yte)),
           "sklearn": float(LogisticRegression(max_iter=3000).fit(Xtr, ytr).score(Xte, yte)),
           "T0": _auto.dpsgd_schedule(n, p)[1]}
    for eps in EPSILONS:
        steps = {"previous": out["T0"], "default": rule_steps(n, p, eps)}
        if variants:
            steps.update({f"Z={z:g} M={m:g}": rule_steps(n, p, eps, z, m) for z, m in VARIANTS})
        acc = {}
        for T in sorted(set(steps.values())):
            acc[T] = accuracies(
                lambda s: DPLogisticRegression(epsilon=eps, delta=DELTA, data_norm=1.0,
                                               classes=classes, random_state=s, n_steps=T),
                seeds, Xtr, ytr, Xte, yte)
        row = {k: {"n_steps": T, "accuracy": float(acc[T].mean()),
                   "se": float(acc[T].std() / np.sqrt(len(seeds))),
                   "minus_previous": float((acc[T] - acc[out["T0"]]).mean()),
                   "minus_previous_se": float((acc[T] - acc[out["T0"]]).std()
                                              / np.sqrt(len(seeds)))}
               for k, T in steps.items()}
        ph = accuracies(lambda s: DPLogisticRegression(
            epsilon=eps, delta=DELTA, data_norm=1.0, classes=classes, random_state=s,
            solver="phased", alpha=1e-5, base_rate_fallback=False), seeds, Xtr, ytr, Xte, yte)
        row["phased 1e-5"] = {"accuracy": float(ph.mean()),
                              "se": float(ph.std() / np.sqrt(len(seeds)))}
        out[str(eps)] = row
    return out


def render(raw):
    keys = ["previous", "default"] + [f"Z={z:g} M={m:g}" for z, m in VARIANTS
                                      if raw["variants"]]
    lines = [
        "# dpsgd's multinomial schedule: stalls and the step rule", "",
        f"`benchmarks/bench_dpsgd_stall.py`, {raw['n_seeds']} paired seeds, delta = 1e-6, "
        f"data_norm = 1; {raw['elapsed_s']:.0f} s on {raw['machine'].get('cpu', '?')}.  "
        "`previous`: the default with the epoch rule's steps `T0` (20 epochs of "
        "b = 4 sqrt n at these sizes); `default`: the current rule (steps while the "
        f"planned noise multiplier is <= {raw['Z']:g}, at most {raw['M']:g} T0).  Accuracy "
        "(steps); `+-` is the paired standard error of the difference to `previous`.  "
        "Synthetic cells calibrate the constants, real-derived cells only check them.", "",
        "| kind | cell | n | K | majority | sklearn | eps | phased 1e-5 | "
        + " | ".join(keys) + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(keys)]
    for name, c in raw["cells"].items():
        for eps in EPSILONS:
            r = c[str(eps)]
            cols = [f"{r['previous']['accuracy']:.3f} ({r['previous']['n_steps']})"]
            for k in keys[1:]:
                v = r[k]
                cols.append(f"{v['accuracy']:.3f} ({v['n_steps']}) {v['minus_previous']:+.3f}"
                            f" +- {v['minus_previous_se']:.3f}" if v["n_steps"] != c["T0"]
                            else f"= ({v['n_steps']})")
            lines.append(
                f"| {c['kind']} | {name} | {c['n_train']} | {c['classes']} | "
                f"{c['majority']:.3f} | {c['sklearn']:.3f} | {eps:g} | "
                f"{r['phased 1e-5']['accuracy']:.3f} | " + " | ".join(cols) + " |")
    lines += ["", "Mean change of the default against `previous` (accuracy points x 100):", "",
              "| kind | eps | " + " | ".join(keys[1:]) + " |",
              "|---|---|" + "---|" * (len(keys) - 1)]
    for kind in ("synthetic", "real"):
        for eps in EPSILONS:
            rows = [c[str(eps)] for c in raw["cells"].values() if c["kind"] == kind]
            if not rows:
                continue
            lines.append(f"| {kind} | {eps:g} | " + " | ".join(
                f"mean {100 * np.mean([r[k]['minus_previous'] for r in rows]):+.2f}, worst "
                f"{100 * min(r[k]['minus_previous'] for r in rows):+.2f}" for k in keys[1:])
                + " |")
    return "\n".join(lines)


def calibration_sample(seeds):
    """The default, previous and current schedule, on a sample of calibrate_auto's
    multinomial cells (module docstring)."""
    from calibrate_auto import MULTI_SIGNALS, multinomial_problem

    rows = []
    for K in (3, 10):
        for signal in ("weak", "strong"):
            for design in ("decaying", "onehot"):
                for n in (2000, 10_000):
                    for eps in (2.0, 10.0):
                        p = 10
                        P = (p + 1) * K
                        T0, T = _auto.dpsgd_schedule(n, P)[1], rule_steps(n, P, eps)
                        acc = {T0: [], T: []}
                        for s in seeds:
                            rng = np.random.default_rng(1000 * s + n + p + K)
                            Xtr, ytr, Xte, yte = multinomial_problem(
                                n, p, K, rng, 1.0, design, MULTI_SIGNALS[signal])
                            for steps in acc:
                                with warnings.catch_warnings():
                                    warnings.simplefilter("ignore")
                                    est = DPLogisticRegression(
                                        epsilon=eps, data_norm=1.0, classes=list(range(K)),
                                        random_state=s, n_steps=steps).fit(Xtr, ytr)
                                acc[steps].append(est.score(Xte, yte))
                        d = np.array(acc[T]) - np.array(acc[T0])
                        rows.append((K, signal, design, n, eps, T0, T, np.mean(acc[T0]),
                                     np.mean(acc[T]), d.mean(), d.std() / np.sqrt(len(d))))
                        log(f"{rows[-1]}")
    lines = ["# dpsgd's multinomial step rule on a sample of the alpha calibration's cells", "",
             f"`benchmarks/bench_dpsgd_stall.py --calibration-sample`, {len(seeds)} paired "
             "seeds; cells of `calibrate_auto.py --multinomial` (p = 10, bounds tight), the "
             "default (alpha rule, base-rate check) with the previous steps `T0` and with "
             "the current rule's `T`.", "",
             "| K | signal | design | n | eps | T0 | T | previous | default | "
             "default - previous |", "|---|---|---|---|---|---|---|---|---|---|"]
    for K, sig, des, n, eps, T0, T, a0, a1, d, se in rows:
        lines.append(f"| {K} | {sig} | {des} | {n} | {eps:g} | {T0} | {T} | {a0:.3f} | "
                     f"{a1:.3f} | {d:+.3f} +- {se:.3f} |")
    diffs = [r[9] for r in rows]
    lines += ["", f"Mean change {np.mean(diffs):+.4f}, worst {min(diffs):+.4f}, best "
              f"{max(diffs):+.4f} over {len(rows)} cells."]
    raw = {"n_seeds": len(seeds), "rows": [list(map(lambda v: v if isinstance(v, str)
                                                    else float(v), r)) for r in rows]}
    md, _ = write_results("dpsgd_stall_calibration_sample", "\n".join(lines), raw)
    print(md.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--variants", action="store_true",
                    help="also the rule at other constants (calibration)")
    ap.add_argument("--only", default="", help="comma-separated substrings of cell names")
    ap.add_argument("--name", default="dpsgd_stall")
    ap.add_argument("--calibration-sample", action="store_true")
    args = ap.parse_args()
    if args.calibration_sample:
        return calibration_sample(range(args.seeds))
    t0 = time.time()
    raw = {"n_seeds": args.seeds, "variants": args.variants, "cells": {},
           "Z": _auto.STEPS_NOISE_MULTIPLIER, "M": _auto.MAX_STEPS_FACTOR,
           "machine": machine_info()}
    only = [s for s in args.only.split(",") if s]
    for kind, name, X, y in all_cells(data_home()):
        if only and not any(s in name for s in only):
            continue
        log(f"{kind} {name}: n={len(y)} p={X.shape[1]}")
        raw["cells"][name] = {"kind": kind, **run_cell(
            np.asarray(X, dtype=float), np.asarray(y), range(args.seeds), args.variants)}
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results(args.name, render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
