"""Raw regression targets through a private pipeline, with and without their public range.

``make_private_pipeline(DPHuberRegressor(...))`` on the raw regression tables of
``_raw_protocol`` (airfoil 1,503 rows, concrete 1,030, wine 6,497) and their seeded
subsamples (``airfoil_500``, ``concrete_500``, ``wine_2000``, as in
``bench_spline_alpha.py``), and on UCI bike sharing's hourly table (``bike``, 17,379 rows,
and ``bike_2000``; the 8 calendar and weather codes categorical, the 4 weather
measurements numeric; rentals per hour, documented as 1-977, public range 0-1,000: a
skewed count whose mean, 190, is far from the middle of its range), and on two tables not
used to choose the ``target_range`` rules (``HELD_OUT``): Adult's weekly working hours
(5,000 rows, range 0-100) and UCI bike sharing's daily table (731 rows, range 0-10,000);
the target **in its own units** (dB, MPa, quality points, rentals, hours):

* ``raw``: ``DPHuberRegressor()`` -- what a user who passes the raw target gets;
* ``range``: ``DPHuberRegressor(target_range=(low, high))`` with the public range of
  ``_raw_protocol.REGRESSION_TARGET_RANGE`` (the targets' mean is released, the model is
  fitted on the targets minus it over the range's half-width and shrinks towards it,
  :mod:`skdp.linear_model._target_range`);
* ``midpoint`` (reference): the target centred on the middle of that range (public, free)
  and ``DPHuberRegressor(y_bound=half-width)``: shrinking towards the middle instead of
  towards the private mean;
* ``scaled`` (reference): the target mapped publicly into [-1, 1] and
  ``DPHuberRegressor(y_bound=1.0)``, the protocol of every other regression result in
  ``results/`` (centred on the middle, and the Huber threshold of 1 then half the range).

70/30 split (``split_regression``, seed = the noise seed), delta = 1e-6, numba on one
thread; mean test R^2 (in the target's units; R^2 is unchanged by the affine map) over the
seeds +- its standard error.  Writes ``results/target_range.md`` and ``.json``.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_target_range.py \\
        [--seeds 0-19] [--tables airfoil,concrete,...]
"""

import _one_thread  # noqa: F401  (before numpy: one thread per pool, SKDP_DATA)
import os
import sys
from pathlib import Path

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _common import git_state, log, machine_info, write_results  # noqa: E402
from _raw_protocol import (CATEGORICAL, NUMERIC, REGRESSION_TARGET_RANGE,  # noqa: E402
                           parse_seeds, split_regression)
from bench_spline_alpha import SUBSAMPLE_SEED, table  # noqa: E402

from skdp import DPHuberRegressor, make_private_pipeline  # noqa: E402

TABLES = ("airfoil", "concrete", "wine", "airfoil_500", "concrete_500", "wine_2000",
          "bike", "bike_2000", "adult_hours", "bike_day")
#: tables not used to choose ``TARGET_RANGE_THRESHOLD`` and ``TARGET_RANGE_ALPHA_FACTOR``
HELD_OUT = ("adult_hours", "bike_day")
ADULT_HOURS_RANGE = (0.0, 100.0)
BIKE_DAY_RANGE = (0.0, 10000.0)
BIKE_DAY_CATEGORICAL = ["season", "yr", "mnth", "holiday", "weekday", "workingday",
                        "weathersit"]
BIKE_RANGE = (0.0, 1000.0)
BIKE_CATEGORICAL = ["season", "yr", "mnth", "hr", "holiday", "weekday", "workingday",
                    "weathersit"]
BIKE_NUMERIC = ["temp", "atemp", "hum", "windspeed"]
EPSILONS = (0.5, 1.0, 2.0, 10.0)
DELTA = 1e-6
VARIANTS = ("raw", "range", "midpoint", "scaled")


def bike(n=None):
    """UCI bike sharing (hourly) as a raw table: codes as strings, rentals as the target;
    ``n`` rows drawn once with the subsample seed of ``bench_spline_alpha.py``."""
    import pandas as pd

    df = pd.read_csv(Path(os.environ["SKDP_DATA"]) / "bike" / "hour.csv")
    X = pd.concat([df[BIKE_CATEGORICAL].astype(str), df[BIKE_NUMERIC]], axis=1)
    y = df["cnt"].to_numpy(dtype=np.float64)
    if n:
        idx = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(len(y), n, replace=False))
        X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    return X, y


def adult_hours():
    """Adult's weekly working hours as the target of the other raw columns, 5,000 rows
    drawn once (seed 7); public range 0-100 hours."""
    from _raw_protocol import load_raw

    X, _ = load_raw("adult")
    y = X.pop("hours-per-week").to_numpy(dtype=np.float64)
    idx = np.sort(np.random.default_rng(7).choice(len(y), 5000, replace=False))
    return X.iloc[idx].reset_index(drop=True), y[idx]


def bike_day():
    """UCI bike sharing (daily, 731 rows): codes as strings, rentals per day as the
    target; public range 0-10,000."""
    import pandas as pd

    df = pd.read_csv(Path(os.environ["SKDP_DATA"]) / "bike" / "day.csv")
    X = pd.concat([df[BIKE_DAY_CATEGORICAL].astype(str), df[BIKE_NUMERIC]], axis=1)
    return X, df["cnt"].to_numpy(dtype=np.float64)


def raw_units(name):
    """``(X, y, (low, high))``: the table with its target back in its own units."""
    if name == "adult_hours":
        return (*adult_hours(), ADULT_HOURS_RANGE)
    if name == "bike_day":
        return (*bike_day(), BIKE_DAY_RANGE)
    if name.startswith("bike"):
        _, _, n = name.partition("_")
        X, y = bike(int(n) if n else None)
        return X, y, BIKE_RANGE
    X, scaled = table(name)
    low, high = REGRESSION_TARGET_RANGE[name.partition("_")[0]]
    return X, 0.5 * (low + high) + 0.5 * (high - low) * scaled, (low, high)


def variant_r2(X, y, target_range, eps, seed, variant):
    """Test R^2 of one fit of the pipeline (module docstring), its guarantee checked."""
    Xtr, Xte, ytr, yte = split_regression(X, y, seed)
    low, high = target_range
    centre, half = 0.5 * (low + high), 0.5 * (high - low)
    if variant == "raw":
        model, fit_y, back = DPHuberRegressor(), ytr, (lambda p: p)
    elif variant == "range":
        model, fit_y, back = DPHuberRegressor(target_range=target_range), ytr, (lambda p: p)
    elif variant == "midpoint":
        model = DPHuberRegressor(y_bound=half)
        fit_y, back = np.clip(ytr, low, high) - centre, (lambda p: centre + p)
    else:
        model = DPHuberRegressor(y_bound=1.0)
        fit_y, back = (np.clip(ytr, low, high) - centre) / half, (lambda p: centre + half * p)
    return pipeline_r2(model, X, Xtr, fit_y, Xte, yte, back, eps, seed)


def pipeline_r2(model, X, Xtr, fit_y, Xte, yte, back, eps, seed):
    """Test R^2 (in the target's units: ``back`` maps a prediction there) of
    ``make_private_pipeline(model)`` fitted on ``(Xtr, fit_y)``, its guarantee checked."""
    pipe = make_private_pipeline(model, epsilon=eps, delta=DELTA, numeric=NUMERIC(X),
                                 categorical=CATEGORICAL(X), random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(Xtr, fit_y)
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= eps * (1 + 1e-9)
    return r2_score(yte, back(pipe.predict(Xte)))


def render(raw):
    lines = ["# Raw regression targets through a private pipeline, with their public range",
             "",
             f"`benchmarks/bench_target_range.py --seeds {raw['seeds']}` "
             f"({raw['n_seeds']} seeds), git {raw['git']}, {raw['elapsed_s']:.0f} s, "
             f"NUMBA_NUM_THREADS={raw['machine']['env'].get('NUMBA_NUM_THREADS')}.  "
             "`make_private_pipeline(DPHuberRegressor(...))` on the target in its own units, "
             "delta = 1e-6, 70/30 split per seed; mean test R^2 +- standard error.  raw: "
             "`DPHuberRegressor()`; range: `DPHuberRegressor(target_range=(low, high))` "
             "(the targets' private mean), the public range of "
             "`_raw_protocol.REGRESSION_TARGET_RANGE` (bike: (0, 1000); held out, not used to "
             "choose the range's rules: adult_hours (0, 100), bike_day (0, 10000)); midpoint "
             "(reference): the target centred on the range's middle, "
             "`DPHuberRegressor(y_bound=half-width)`; scaled (reference, the protocol of the "
             "other regression results): the target mapped into [-1, 1] by the range, "
             "`DPHuberRegressor(y_bound=1.0)`.", "",
             "| table | n train | range | eps | raw R^2 | range R^2 | midpoint R^2 | "
             "scaled R^2 | range - raw (paired) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in raw["cells"]:
        r = {v: np.array(c[v]) for v in VARIANTS}
        d = r["range"] - r["raw"]
        se = {v: r[v].std() / np.sqrt(len(r[v])) for v in VARIANTS}
        lines.append(
            f"| {c['table']} | {c['n_train']} | {tuple(c['target_range'])} | "
            f"{c['epsilon']:g} | " + " | ".join(
                f"{r[v].mean():+.3f} +- {se[v]:.3f}" for v in VARIANTS)
            + f" | {d.mean():+.3f} +- {d.std() / np.sqrt(len(d)):.3f} |")
    for other in ("raw", "midpoint"):
        diffs = [np.mean(np.array(c["range"]) - np.array(c[other])) for c in raw["cells"]]
        lines += ["", f"range - {other}: smallest mean change {min(diffs):+.4f}, "
                  f"{sum(d < 0 for d in diffs)} of {len(diffs)} cells below 0."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-19")
    parser.add_argument("--tables", default=",".join(TABLES))
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    t0 = time.time()
    raw = {"seeds": args.seeds, "n_seeds": len(seeds), "cells": [], "git": git_state()}
    for name in args.tables.split(","):
        X, y, target_range = raw_units(name)
        for eps in EPSILONS:
            cell = {"table": name, "epsilon": eps, "target_range": target_range,
                    "n_train": len(split_regression(X, y, 0)[2])}
            for v in VARIANTS:
                cell[v] = [float(variant_r2(X, y, target_range, eps, s, v)) for s in seeds]
            raw["cells"].append(cell)
            log(f"{name:14s} eps={eps:<4} " + " ".join(
                f"{v} {np.mean(cell[v]):+.4f}" for v in VARIANTS))
    raw["machine"] = machine_info()
    raw["elapsed_s"] = time.time() - t0
    md, _ = write_results("target_range", render(raw), raw)
    print(md.read_text())


if __name__ == "__main__":
    main()
