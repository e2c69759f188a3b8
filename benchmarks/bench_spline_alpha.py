"""The spline-basis alpha rule of a private pipeline's Huber model (issue 48, the weak year
column): ``make_private_pipeline(DPHuberRegressor(y_bound=1.0), ...)`` with the rule
(``alpha="auto_spline"`` pinned by the plan: the ``auto`` rule times
``clip(t/12, 1, 6)``, ``skdp.linear_model._auto.spline_basis_alpha_factor``) and without
it (``SPLINE_ALPHA_MAX_FACTOR = 1``: the plain ``auto`` rule, the code before).

Tables, the target publicly scaled into [-1, 1]:

* ``years_reg`` of ``_small_tables`` (2,000 rows: a strong numeric column, a noise column,
  a weak integer column of 20 years) and ``years_noyear`` (the same rows without the year
  column: the issue's "dropping the column gains it back");
* the raw regression tables of ``_raw_protocol`` (airfoil 1,503 rows, concrete 1,030,
  wine 6,497; public target ranges) and seeded subsamples of them (``airfoil_500``,
  ``concrete_500``, ``wine_2000``; rows drawn once with seed 20261129).

70/30 split (``split_regression``, seed = the noise seed), delta = 1e-6, mean test R^2
over the seeds +- its standard error.  Writes ``results/spline_alpha.md`` and ``.json``.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_spline_alpha.py [--seeds 0-39] [--report-only]

``--thresholds 1,0.5,0.3333`` instead fits the pipeline as the code stands (the rule fires
only where ``y_bound <= huber_threshold``) with ``DPHuberRegressor(y_bound=1.0,
huber_threshold=k)`` for each ``k`` and writes ``results/huber_threshold.md`` and ``.json``:
how the threshold compares with the alpha rule as a lever (a follow-up of issue 48).
"""

import _one_thread  # noqa: F401  (before numpy: one thread per pool, SKDP_DATA)
import sys
from pathlib import Path

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _common import git_state, log, machine_info, write_results  # noqa: E402
from _raw_protocol import (CATEGORICAL, NUMERIC, load_raw_regression,  # noqa: E402
                           parse_seeds, split_regression)
from _small_tables import load_table  # noqa: E402

from skdp import DPHuberRegressor, make_private_pipeline  # noqa: E402
from skdp.linear_model import _auto  # noqa: E402

TABLES = ("years_reg", "years_noyear", "airfoil", "concrete", "wine", "airfoil_500",
          "concrete_500", "wine_2000")
EPSILONS = (0.5, 1.0, 2.0, 10.0)
DELTA = 1e-6
SUBSAMPLE_SEED = 20261129


def table(name):
    if name in ("years_reg", "years_noyear"):
        X, y, _ = load_table("years_reg")
        return (X.drop(columns=["year"]) if name == "years_noyear" else X), y
    base, _, n = name.partition("_")
    X, y = load_raw_regression(base)
    if n:
        idx = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(len(y), int(n),
                                                                   replace=False))
        X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    return X, y


def pipeline_r2(X, y, eps, seed, **model_kw):
    """``(test R^2, alpha_, training rows)`` of ``make_private_pipeline(DPHuberRegressor(
    y_bound=1.0, **model_kw))`` on the seed's split, its guarantee checked."""
    Xtr, Xte, ytr, yte = split_regression(X, y, seed)
    pipe = make_private_pipeline(DPHuberRegressor(y_bound=1.0, **model_kw), epsilon=eps,
                                 delta=DELTA, numeric=NUMERIC(X),
                                 categorical=CATEGORICAL(X), random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(Xtr, ytr)
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= eps * (1 + 1e-9)
    return r2_score(yte, pipe.predict(Xte)), pipe[-1].alpha_, len(ytr)


def threshold_scores(X, y, eps, seeds, kappa):
    return np.array([pipeline_r2(X, y, eps, s, huber_threshold=kappa)[0] for s in seeds])


def run_thresholds(args, seeds):
    kappas = [float(k) for k in args.thresholds.split(",")]
    t0 = time.time()
    raw = {"seeds": args.seeds, "n_seeds": len(seeds), "thresholds": kappas, "cells": [],
           "git": git_state(), "machine": machine_info()}
    for name in args.tables.split(","):
        X, y = table(name)
        for eps in EPSILONS:
            cell = {"table": name, "epsilon": eps, "r2": {}, "se": {}}
            for k in kappas:
                r = threshold_scores(X, y, eps, seeds, k)
                cell["r2"][f"{k:g}"] = float(r.mean())
                cell["se"][f"{k:g}"] = float(r.std() / np.sqrt(len(r)))
            raw["cells"].append(cell)
            log(f"{name:14s} eps={eps:<4} " + " ".join(
                f"k={k}: {v:+.4f}" for k, v in cell["r2"].items()))
    raw["elapsed_s"] = time.time() - t0
    keys = [f"{k:g}" for k in kappas]
    lines = ["# The Huber threshold of a private pipeline's regressor on targets in [-1, 1]", "",
             f"`benchmarks/bench_spline_alpha.py --thresholds {args.thresholds} --seeds "
             f"{args.seeds}` ({len(seeds)} seeds), git {raw['git']}, "
             f"{raw['elapsed_s']:.0f} s, NUMBA_NUM_THREADS="
             f"{raw['machine']['env'].get('NUMBA_NUM_THREADS')}.  "
             "`make_private_pipeline(DPHuberRegressor(y_bound=1.0, huber_threshold=k))`, "
             "delta = 1e-6; mean test R^2 +- standard error.  The spline-basis alpha rule "
             "fires at k = 1 only (y_bound <= k).", "",
             "| table | eps | " + " | ".join(f"k = {k}" for k in keys) + " |",
             "|---|---|" + "---|" * len(keys)]
    for c in raw["cells"]:
        lines.append(f"| {c['table']} | {c['epsilon']:g} | " + " | ".join(
            f"{c['r2'][k]:+.4f} +- {c['se'][k]:.4f}" for k in keys) + " |")
    md, _ = write_results("huber_threshold", "\n".join(lines), raw)
    print(md.read_text())


def fit_scores(X, y, eps, seeds, rule):
    saved = _auto.SPLINE_ALPHA_MAX_FACTOR
    _auto.SPLINE_ALPHA_MAX_FACTOR = saved if rule else 1.0
    try:
        out, alphas = [], []
        for s in seeds:
            r2, alpha, n_train = pipeline_r2(X, y, eps, s)
            out.append(r2)
            alphas.append(alpha)
        return np.array(out), float(np.median(alphas)), n_train
    finally:
        _auto.SPLINE_ALPHA_MAX_FACTOR = saved


def render(raw):
    lines = ["# The spline-basis alpha rule of a private pipeline's Huber model", "",
             f"`benchmarks/bench_spline_alpha.py --seeds {raw['seeds']}` "
             f"({raw['n_seeds']} seeds), git {raw['git']}, {raw['elapsed_s']:.0f} s, "
             f"NUMBA_NUM_THREADS={raw['machine']['env'].get('NUMBA_NUM_THREADS')}.  "
             "`make_private_pipeline(DPHuberRegressor(y_bound=1.0))`, delta = 1e-6, 70/30 "
             "split per seed; mean test R^2 +- standard error; median `alpha_`.  "
             "\"before\": the plain `auto` rule (`SPLINE_ALPHA_MAX_FACTOR = 1`); \"rule\": "
             f"`auto` x clip(t/{raw['knee']:g}, 1, {raw['max_factor']:g}) "
             "(`spline_basis_alpha_factor`).", "",
             "| table | n train | eps | before R^2 | alpha_ | rule R^2 | alpha_ | change |",
             "|---|---|---|---|---|---|---|---|"]
    for c in raw["cells"]:
        b, r = c["before"], c["rule"]
        lines.append(f"| {c['table']} | {c['n_train']} | {c['epsilon']:g} | "
                     f"{b['r2']:+.4f} +- {b['se']:.4f} | {b['alpha']:.3g} | "
                     f"{r['r2']:+.4f} +- {r['se']:.4f} | {r['alpha']:.3g} | "
                     f"{r['r2'] - b['r2']:+.4f} |")
    gap = {c["epsilon"]: {} for c in raw["cells"]}
    for c in raw["cells"]:
        if c["table"] in ("years_reg", "years_noyear"):
            gap[c["epsilon"]][c["table"]] = c
    lines += ["", "## The year column's cost (years_noyear minus years_reg R^2)", "",
              "| eps | before | rule |", "|---|---|---|"]
    for eps, g in gap.items():
        if len(g) == 2:
            lines.append(f"| {eps:g} | "
                         f"{g['years_noyear']['before']['r2'] - g['years_reg']['before']['r2']:+.4f} | "
                         f"{g['years_noyear']['rule']['r2'] - g['years_reg']['rule']['r2']:+.4f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-39")
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--thresholds", default=None,
                    help="comma-separated huber_threshold values (module docstring)")
    ap.add_argument("--report-only", action="store_true",
                    help="re-render results/spline_alpha.md from its .json")
    args = ap.parse_args()
    if args.report_only:
        from _common import RESULTS_DIR

        raw = json.loads((RESULTS_DIR / "spline_alpha.json").read_text())
        raw.setdefault("knee", _auto.SPLINE_ALPHA_KNEE)
        raw.setdefault("max_factor", _auto.SPLINE_ALPHA_MAX_FACTOR)
        md, _ = write_results("spline_alpha", render(raw), raw)
        print(md.read_text())
        return
    seeds = parse_seeds(args.seeds)
    if args.thresholds:
        run_thresholds(args, seeds)
        return
    t0 = time.time()
    raw = {"seeds": args.seeds, "n_seeds": len(seeds), "cells": [], "git": git_state(),
           "machine": machine_info(), "knee": _auto.SPLINE_ALPHA_KNEE,
           "max_factor": _auto.SPLINE_ALPHA_MAX_FACTOR}
    for name in args.tables.split(","):
        X, y = table(name)
        for eps in EPSILONS:
            cell = {"table": name, "epsilon": eps}
            for key, rule in (("before", False), ("rule", True)):
                r, alpha, n_train = fit_scores(X, y, eps, seeds, rule)
                cell[key] = {"r2": float(r.mean()), "se": float(r.std() / np.sqrt(len(r))),
                             "min": float(r.min()), "alpha": alpha,
                             "per_seed": [float(v) for v in r]}
                cell["n_train"] = n_train
            raw["cells"].append(cell)
            log(f"{name:14s} eps={eps:<4} before {cell['before']['r2']:+.4f} "
                f"rule {cell['rule']['r2']:+.4f}")
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results("spline_alpha", render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
