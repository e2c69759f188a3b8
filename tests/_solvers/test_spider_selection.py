"""Output rule ``selection="average"`` of private SpiderBoost: the mean of the last half of
the logged iterates.  It is post-processing of the released noisy sums, so the run, its
transcript, the random stream and the privacy event must be exactly those of
``selection="last"``; only the returned point differs."""

import numpy as np
import pytest

import skdp._solvers._spider as spider_mod
from skdp import DPNonconvexRegressor
from skdp._losses import WelschLoss
from skdp._solvers._spider import solve_spider
from skdp.accounting import get_epsilon


def _planted(n, seed):
    """Spec §9 test 7's saddle problem (as in test_spider.py)."""
    rng = np.random.default_rng(seed)
    th = rng.uniform(0, 2 * np.pi, n)
    A = np.c_[np.cos(th), np.sin(th)]
    y = rng.choice([-1.0, 1.0], n) * (A @ np.array([1.5, 0.0])) + 0.05 * rng.normal(size=n)
    return A, y


def _run(A, y, rng, **kw):
    args = dict(epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=1.0, fit_intercept=False,
                rng=rng)
    args.update(kw)
    return solve_spider(A, y, WelschLoss(1.0), **args)


def _expected_average(res_last):
    """Mean of entries ``k >= K//2`` of (stored iterates, then the final one if unstored)."""
    d = res_last.details
    traj, stride, t = d["trajectory"], d["stride"], d["steps"]
    final = res_last.coef[:, 0]
    iterates = traj if len(traj) * stride == t else np.vstack([traj, final[None, :]])
    return iterates[len(iterates) // 2:].mean(axis=0), len(iterates) - len(iterates) // 2


@pytest.fixture(scope="module")
def planted():
    return _planted(20_000, 7)


def test_average_is_post_processing_of_the_last_run(planted):
    A, y = planted
    rng_l, rng_a = np.random.default_rng(3), np.random.default_rng(3)
    last = _run(A, y, rng_l, selection="last")
    avg = _run(A, y, rng_a, selection="average")
    dl, da = last.details, avg.details
    # the same run: same transcript, data use, steps, and the same noise stream
    for key in ("log_bt", "log_D", "log_flag", "log_ptr", "trajectory"):
        assert np.array_equal(dl[key], da[key]), key
    assert dl["rows_used"] == da["rows_used"] and dl["n_train"] == da["n_train"] == len(y)
    assert da["n_validation"] == 0 and last.n_iter == avg.n_iter > 10
    assert last.n_gradient_evals == avg.n_gradient_evals
    # no extra draw from the generator (the rule adds no noise)
    assert rng_l.standard_normal() == rng_a.standard_normal()
    # the same privacy event (identical description and guarantee)
    assert repr(avg.dp_event) == repr(last.dp_event)
    assert get_epsilon(avg.dp_event, 1e-6) == get_epsilon(last.dp_event, 1e-6) <= 1.0 + 1e-9
    # the output is the mean of the last half of the logged trajectory
    expected, k = _expected_average(last)
    assert da["selection"] == "average" and da["n_averaged"] == k >= 5
    np.testing.assert_allclose(avg.coef[:, 0], expected, rtol=1e-14, atol=1e-15)
    assert not np.array_equal(avg.coef, last.coef)


def test_same_seed_is_bitwise_identical(planted):
    A, y = planted
    a = _run(A, y, np.random.default_rng(11), selection="average")
    b = _run(A, y, np.random.default_rng(11), selection="average")
    c = _run(A, y, np.random.default_rng(12), selection="average")
    assert np.array_equal(a.coef, b.coef) and np.array_equal(a.intercept, b.intercept)
    assert not np.array_equal(a.coef, c.coef)


@pytest.mark.parametrize("budget,final_logged", [(30, False), (41, True)])
def test_average_with_a_strided_trajectory(planted, monkeypatch, budget, final_logged):
    """With a small storage budget only every ``stride``-th iterate is logged; the average
    then runs over the logged ones plus the final iterate (once, also when the final step
    is itself logged)."""
    A, y = planted
    monkeypatch.setattr(spider_mod, "TRAJ_BUDGET", budget)
    last = _run(A, y, np.random.default_rng(5), selection="last", max_iter=40)
    avg = _run(A, y, np.random.default_rng(5), selection="average", max_iter=40)
    d = last.details
    assert d["stride"] > 1 and len(d["trajectory"]) == d["steps"] // d["stride"]
    assert (d["steps"] % d["stride"] == 0) == final_logged  # both branches are exercised
    if final_logged:
        assert np.array_equal(d["trajectory"][-1], last.coef[:, 0])
    assert np.array_equal(d["trajectory"], avg.details["trajectory"])
    expected, k = _expected_average(last)
    assert avg.details["n_averaged"] == k
    np.testing.assert_allclose(avg.coef[:, 0], expected, rtol=1e-14, atol=1e-15)


def test_estimator_average_matches_last_event_and_ledger_plan(planted):
    A, y = planted
    X = A * 0.7
    kw = dict(solver="spider", epsilon=1.0, delta=1e-6, data_norm=1.0, fit_intercept=False,
              loss_scale=1.0,
              random_state=2)
    last = DPNonconvexRegressor(selection="last", **kw).fit(X, y)
    avg = DPNonconvexRegressor(selection="average", **kw).fit(X, y)
    assert repr(avg.dp_event_) == repr(last.dp_event_)
    assert avg.epsilon_ == last.epsilon_ <= 1.0 and avg.privacy_guaranteed_
    assert avg.n_iter_ == last.n_iter_
    assert not np.array_equal(avg.coef_, last.coef_)
    again = DPNonconvexRegressor(selection="average", **kw).fit(X, y)
    assert np.array_equal(again.coef_, avg.coef_)
    # the privacy-ledger planner computes the same event before any data
    from skdp.linear_model._base import planned_dp_event

    est = DPNonconvexRegressor(selection="average", **kw)
    assert repr(planned_dp_event(est, len(y), n_features=2)) == repr(avg.dp_event_)


def test_invalid_selection_is_refused(planted):
    A, y = planted
    with pytest.raises(ValueError, match="selection"):
        _run(A[:2000], y[:2000], np.random.default_rng(0), selection="mean")
    with pytest.raises(ValueError, match="selection"):
        DPNonconvexRegressor(selection="mean", data_norm=1.0).fit(A[:2000], y[:2000])
