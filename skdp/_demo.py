"""``python -m skdp demo``: every estimator on embedded real data, private vs non-private.

Data: the Adult census-income and Bike-sharing sets shipped with the package, preprocessed
with public constants only (:func:`skdp.datasets.load_demo_adult`,
:func:`skdp.datasets.load_demo_bike`), so ``data_norm`` is a public bound and each private
fit is (epsilon, delta)-DP end to end.  The train/test split is a fixed random split
(public).  Hyperparameters (``alpha``, ``huber_threshold``) are fixed a priori, not tuned on
the data: ``alpha = 0.01 / min(epsilon, 1)`` (a public rule -- stronger regularisation at
small epsilon, where the noise ``~ 1/(n alpha epsilon)`` dominates).  The non-private
scikit-learn rows use the same features.

The robust-regression case (:class:`~skdp.DPNonconvexRegressor`, Welsch loss, private
SpiderBoost) fits the bike data after replacing 10 % of the *training* targets by gross
outliers (a fixed seeded corruption, public); the test split is clean.  Its single-pass
solver needs more rows than the bike data has at small epsilon: such a fit is refused with
the ``n`` it needs and shown as ``nan``.
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


def _alpha(epsilon):
    return 0.01 / min(epsilon, 1.0)


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
                epsilon=eps, delta=DELTA, data_norm=norm, alpha=_alpha(eps),
                random_state=0,
            ),
            lambda: LogisticRegression(max_iter=1000),
        ),
        (
            "bike sharing (hourly)",
            bike,
            "R^2",
            lambda eps, norm: DPHuberRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, alpha=_alpha(eps), huber_threshold=0.1,
                random_state=0,
            ),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
        ),
        (
            "bike + 10% outliers",
            bike,
            "R^2",
            lambda eps, norm: DPNonconvexRegressor(
                epsilon=eps, delta=DELTA, data_norm=norm, loss="welsch", loss_scale=0.3,
                random_state=0,
            ),
            lambda: HuberRegressor(epsilon=1.35, alpha=1e-4, max_iter=1000),
            _gross_outliers,
        ),
    ]


def run_demo(out=sys.stdout):
    """Fit every estimator at several epsilons and print a privacy/utility table."""
    rows = []
    for name, bunch, metric, make_dp, make_sk, *corrupt in _cases():
        X_tr, X_te, y_tr, y_te = train_test_split(
            bunch.data, bunch.target, test_size=0.2, random_state=0
        )
        if corrupt:
            y_tr = corrupt[0](y_tr)
        norm = math.hypot(bunch.row_norm_bound, 1.0)  # features + intercept column
        sk = make_sk()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk_time = _timed_fit(sk, X_tr, y_tr)
        sk_score = sk.score(X_te, y_te)
        for eps in EPSILONS:
            dp = make_dp(eps, norm)
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*nearly vacuous")
                    dp_time = _timed_fit(dp, X_tr, y_tr)
            except ValueError as exc:  # too few rows for this epsilon (message names n)
                if "needs at least n" not in str(exc):
                    raise
                rows.append((type(dp).__name__, name, metric, eps, math.nan, dp.delta,
                             math.nan, sk_score, math.nan, sk_time, True))
                continue
            rows.append((
                type(dp).__name__, name, metric, eps, dp.epsilon_, dp.delta_,
                dp.score(X_te, y_te), sk_score, dp_time, sk_time, dp.privacy_guaranteed_,
            ))
    header = (
        f"{'estimator':<22} {'data':<22} {'metric':<8} {'eps':>5} {'eps spent':>9} "
        f"{'delta':>7} {'DP score':>9} {'sklearn':>8} {'DP fit s':>9} {'skl fit s':>9} "
        f"{'DP?':>4}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    for r in rows:
        print(
            f"{r[0]:<22} {r[1]:<22} {r[2]:<8} {r[3]:>5g} {r[4]:>9.4f} {r[5]:>7.0e} "
            f"{r[6]:>9.4f} {r[7]:>8.4f} {r[8]:>9.3f} {r[9]:>9.3f} {'yes' if r[10] else 'NO':>4}",
            file=out,
        )
    print(
        "\nScores are on a held-out 20% split.  Preprocessing uses public constants only "
        "(no statistic of the training data); DP fits are (eps spent, delta)-DP under "
        "replace-one neighbours.  The sklearn columns are non-private references.  "
        "The first DP fit includes numba's kernel load time.",
        file=out,
    )
    return rows
