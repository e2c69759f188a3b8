"""``python -m skdp demo``: every estimator on embedded real data, private vs non-private.

Data: the Adult census-income and Bike-sharing sets shipped with the package, preprocessed
with public constants only (:func:`skdp.datasets.load_demo_adult`,
:func:`skdp.datasets.load_demo_bike`), so ``data_norm`` (the public bound on the feature
rows) makes each private fit (epsilon, delta)-DP end to end.  The train/test split is a
fixed random split (public).  Every estimator runs at its **defaults** (``solver="auto"``,
``alpha="auto"``): only ``epsilon``, ``data_norm`` and the residual scale of the robust
losses (``huber_threshold``, ``loss_scale``: a property of the target's units, fixed a
priori) are set.  The chosen solver is printed.  The non-private scikit-learn rows use the
same features.

The robust-regression case (:class:`~skdp.DPNonconvexRegressor`, Welsch loss) fits the bike
data after replacing 10 % of the *training* targets by gross outliers (a fixed seeded
corruption, public); the test split is clean.  Each line is printed as soon as its fit ends.
"""

import math
import sys
import time
import warnings

import numpy as np
from sklearn.linear_model import HuberRegressor, LogisticRegression
from sklearn.model_selection import train_test_split

from .datasets import load_demo_adult, load_demo_bike
from .linear_model import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor

EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-6


def _timed_fit(model, X, y):
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def _gross_outliers(y, fraction=0.1, seed=0):
    """Replace a seeded random ``fraction`` of the targets by values in [3, 6] (public)."""
    rng = np.random.default_rng(seed)
    bad = rng.random(len(y)) < fraction
    y = np.array(y, dtype=float)
    y[bad] = rng.uniform(3.0, 6.0, bad.sum())
    return y


def _cases():
    adult = load_demo_adult()
    bike = load_demo_bike()
    return [
        (
            "adult (census income)",
            adult,
            "accuracy",
            lambda eps, norm: DPLogisticRegression(
                epsilon=eps, delta=DELTA, data_norm=norm, classes=[0, 1],
                random_state=0),
            lambda: LogisticRegression(max_iter=1000),
        ),
        (
            "bike sharing (hourly)",
            bike,
            "R^2",
            lambda eps, norm: DPHuberRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, huber_threshold=0.1, random_state=0),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
        ),
        (
            "bike + 10% outliers",
            bike,
            "R^2",
            lambda eps, norm: DPNonconvexRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, loss="welsch", loss_scale=0.3,
                random_state=0),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
            _gross_outliers,
        ),
    ]


HEADER = (
    f"{'estimator':<22} {'data':<22} {'metric':<8} {'eps':>5} {'eps spent':>9} "
    f"{'delta':>7} {'DP score':>9} {'sklearn':>8} {'solver_':<23} {'DP fit s':>8} {'DP?':>4}"
)


def _line(r):
    return (f"{r[0]:<22} {r[1]:<22} {r[2]:<8} {r[3]:>5g} {r[4]:>9.4f} {r[5]:>7.0e} "
            f"{r[6]:>9.4f} {r[7]:>8.4f} {r[8]:<23} {r[9]:>8.3f} {'yes' if r[10] else 'NO':>4}")


def run_demo(out=sys.stdout):
    """Fit every estimator at several epsilons and print a privacy/utility table, one line
    per fit as soon as it ends."""
    print(HEADER, file=out)
    print("-" * len(HEADER), file=out, flush=True)
    rows = []
    for name, bunch, metric, make_dp, make_sk, *corrupt in _cases():
        X_tr, X_te, y_tr, y_te = train_test_split(
            bunch.data, bunch.target, test_size=0.2, random_state=0
        )
        if corrupt:
            y_tr = corrupt[0](y_tr)
        norm = bunch.row_norm_bound  # public bound on the feature rows
        sk = make_sk()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk.fit(X_tr, y_tr)
        sk_score = sk.score(X_te, y_te)
        for eps in EPSILONS:
            dp = make_dp(eps, norm)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dp_time = _timed_fit(dp, X_tr, y_tr)
            except ValueError as exc:  # explained in one line, never a silent nan
                print(f"{type(dp).__name__:<22} {name:<22} eps={eps:g}: refused: "
                      f"{str(exc).split(';')[0]}", file=out, flush=True)
                continue
            row = (type(dp).__name__, name, metric, eps, dp.epsilon_, dp.delta_,
                   dp.score(X_te, y_te), sk_score, dp.solver_, dp_time,
                   dp.privacy_guaranteed_)
            rows.append(row)
            print(_line(row), file=out, flush=True)
    print(
        "\nScores are on a held-out 20% split.  Preprocessing uses public constants only "
        "(no statistic of the training data); DP fits are (eps spent, delta)-DP under "
        "replace-one neighbours, with solver and alpha chosen by skdp's public 'auto' "
        "rules.  The sklearn column is a non-private reference.  The first DP fit "
        "includes numba's kernel load time.",
        file=out,
    )
    return rows
