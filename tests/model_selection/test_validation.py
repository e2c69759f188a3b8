"""dp_cross_validate: per-row accounting of k fits + k scores, reproducibility, refusals."""

import math

import numpy as np
import pytest

from skdp import DPLogisticRegression
from skdp.accounting import compose, gaussian_epsilon, gaussian_event, get_epsilon
from skdp.exceptions import BudgetExceededError
from skdp.model_selection import dp_cross_validate


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (302, 2))
    y = (X[:, 0] > 0.1 * rng.normal(size=302)).astype(int)
    return X, y


@pytest.mark.parametrize("k", [2, 5])
def test_total_is_k_minus_1_fits_plus_one_score(data, k):
    X, y = data
    res = dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), X, y, epsilon=1.0,
                            delta=1e-6, cv=k, random_state=0, return_estimator=True)
    models = res["estimator"]
    fit_mus = [m.sensitivity_ / m.noise_scale_ for m in models]
    assert max(fit_mus) == pytest.approx(min(fit_mus), rel=1e-9)
    sigma_s = np.array(res["budget_split"]["score_noise_std"])
    sens_s = np.array(res["budget_split"]["score_sensitivity"])
    # folds of 302 // k or +1 rows: sensitivity 1/|fold|, each released at the same mu
    assert set(np.round(1 / sens_s).astype(int)) <= {302 // k, 302 // k + 1}
    score_mu = (sens_s / sigma_s).max()
    expected = gaussian_epsilon(1e-6, math.sqrt((k - 1) * fit_mus[0] ** 2 + score_mu**2))
    assert res["epsilon"] == pytest.approx(expected, rel=1e-6)
    assert 0.99 < res["epsilon"] <= 1.0
    # the naive count (all k fits and all k scores for every row) is strictly larger
    naive = compose(*[m.dp_event_ for m in models],
                    *[gaussian_event(s, d) for s, d in zip(sigma_s, sens_s)])
    assert get_epsilon(naive, 1e-6) > res["epsilon"] * 1.1
    assert res["test_score"].shape == (k,)
    assert res["privacy_guaranteed"]


def test_pure(data):
    X, y = data
    res = dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=2.0), X, y, epsilon=1.0,
                            delta=0.0, cv=4, random_state=0, return_estimator=True)
    eps_fit = res["estimator"][0].epsilon_
    assert res["epsilon"] == pytest.approx(4 * eps_fit, rel=1e-9)  # 3 fits + 1 score
    assert res["epsilon"] <= 1.0


def test_scores_are_noisy_and_reproducible(data):
    X, y = data
    kw = dict(epsilon=1.0, cv=3)
    a = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=1, **kw)
    b = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=1,
                          n_jobs=2, **kw)
    c = dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                               data_norm=2.0), X, y, random_state=2, **kw)
    np.testing.assert_array_equal(a["test_score"], b["test_score"])
    assert not np.array_equal(a["test_score"], c["test_score"])
    # the noise is as claimed: the spread over seeds of a fold score matches sigma
    high = [dp_cross_validate(DPLogisticRegression(classes=[0, 1],
                                                   data_norm=2.0), X, y, epsilon=50.0,
                              cv=3, random_state=s)["test_score"] for s in range(3)]
    assert np.all(np.abs(np.array(high) - np.mean(high)) < 0.2)


def test_refusals(data):
    X, y = data
    est = DPLogisticRegression(classes=[0, 1], data_norm=2.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, cv=1)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, epsilon=0.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, y, delta=1.0)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X, None)
    with pytest.raises(ValueError):
        dp_cross_validate(est, X[:5], y[:5], cv=3)
    with pytest.raises(TypeError):
        dp_cross_validate(est, X, y, scoring=lambda e, X, y: 1.0)
    dpsgd = DPLogisticRegression(classes=[0, 1],
                                 data_norm=2.0, solver="dpsgd", batch_size=30, n_steps=20)
    with pytest.raises(BudgetExceededError):
        # Poisson-sampled fits are not Gaussian: the GDP split over-spends, caught
        # before any score is released
        dp_cross_validate(dpsgd, X, y, epsilon=1.0, cv=3, random_state=0)
