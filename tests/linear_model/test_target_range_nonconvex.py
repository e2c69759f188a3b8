"""``DPNonconvexRegressor(target_range=(low, high))``: as ``DPHuberRegressor``'s (the
targets clipped to the public range, their mean released with ``TARGET_CENTRE_SHARE`` of
``mu^2``, the model fitted on the targets minus it over the half-width ``h``), with the
loss's scale in half-widths: ``loss_scale`` is read in the target's units and divided by
``h`` (``"auto"``: ``TARGET_RANGE_LOSS_SCALE``).  The model is the plain fit of the divided
targets at the model's share -- same noise, same event -- the plan is the fit's event, the
fit is unit-free, and what cannot be made unit-free is refused before any row is read."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import r2_score

from skdp import DPNonconvexRegressor, make_private_pipeline
from skdp.accounting import compose, gaussian_event
from skdp.linear_model._auto import (DEFAULT_LOSS_SCALE, TARGET_CENTRE_SHARE,
                                     TARGET_RANGE_LOSS_SCALE)
from skdp.linear_model._base import planned_dp_event
from skdp.linear_model._nonconvex import _loss_of
from skdp.preprocessing._common import gdp_mu

LOW, HIGH = 100.0, 150.0
H = 0.5 * (HIGH - LOW)


def _design(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * 0.4
    y = 125.0 + 12.0 * X[:, 0] - 6.0 * X[:, 1] + rng.normal(0.0, 4.0, n)
    y[::50] += 60.0                         # gross outliers, clipped to the range
    return X, y


@pytest.mark.parametrize("solver, epsilon", [("auto", 1.0), ("warm_gd", 20.0),
                                             ("spider", 2.0)])
def test_the_model_is_the_fit_on_the_centred_targets_over_the_half_width(solver, epsilon):
    """The model is the plain fit of ``z = (clip(y) - centre)/h`` with ``y_bound = 2`` and
    the loss's scale over ``h``, at the model's share (``warm_gd`` at epsilon 20 runs its
    robust refinement steps; at 1 it is the Huber warm start); its coefficients are that
    fit's times ``h``; the event composes the mean and the model, as planned."""
    X, y = _design()
    kw = dict(delta=1e-6, data_norm=1.5, solver=solver, random_state=3)
    ranged = DPNonconvexRegressor(epsilon=epsilon, target_range=(LOW, HIGH), **kw).fit(X, y)
    assert ranged.target_scale_ == H
    assert ranged.budget_split_["mu_share_target_centre"] == TARGET_CENTRE_SHARE
    if solver == "warm_gd":
        assert ranged.solver_params_["refinement"] == "ran"
    z = (np.clip(y, LOW, HIGH) - ranged.target_centre_) / H
    plain = DPNonconvexRegressor(epsilon=ranged.budget_split_["model"][0], y_bound=2.0,
                                 loss_scale=TARGET_RANGE_LOSS_SCALE, **kw).fit(X, z)
    np.testing.assert_allclose(ranged.coef_, H * plain.coef_, rtol=1e-9, atol=1e-9)
    assert ranged.intercept_ == pytest.approx(H * plain.intercept_ + ranged.target_centre_,
                                              rel=1e-9)
    mu = gdp_mu(epsilon, 1e-6)
    centre_event = gaussian_event(1.0, np.sqrt(TARGET_CENTRE_SHARE) * mu)
    assert repr(ranged.dp_event_) == repr(compose(centre_event, plain.dp_event_))
    assert ranged.epsilon_ <= epsilon
    planned = planned_dp_event(DPNonconvexRegressor(epsilon=epsilon,
                                                    target_range=(LOW, HIGH), **kw),
                               X.shape[0], X.shape[1])
    assert repr(planned) == repr(ranged.dp_event_)


def test_the_loss_scale_is_read_in_half_widths():
    """``loss_scale`` in the target's units over ``h``; ``"auto"``: 1 without a range,
    ``TARGET_RANGE_LOSS_SCALE`` half-widths with one; the absolute loss has no scale and
    keeps the target's units (``target_scale_ = 1``)."""
    assert _loss_of(DPNonconvexRegressor()).param == DEFAULT_LOSS_SCALE == 1.0
    assert _loss_of(DPNonconvexRegressor(loss_scale=0.3)).param == 0.3
    ranged = DPNonconvexRegressor(target_range=(LOW, HIGH))
    assert _loss_of(ranged).param == TARGET_RANGE_LOSS_SCALE
    assert _loss_of(DPNonconvexRegressor(target_range=(LOW, HIGH), loss_scale=5.0)).param \
        == 5.0 / H
    X, y = _design(n=1500)
    est = DPNonconvexRegressor(loss="absolute", solver="zeroth_order", data_norm=1.5,
                               target_range=(LOW, HIGH), random_state=0).fit(X, y)
    assert est.target_scale_ == 1.0 and est.epsilon_ <= 1.0


def test_the_fit_is_unit_free():
    """The same event for the range in decibels, in millibels and shifted, with the
    ``"auto"`` scale or a scale given in those units."""
    events = set()
    for a, b in ((1.0, 0.0), (100.0, 0.0), (1.0, -125.0), (0.01, 7.0)):
        for scale in ("auto", TARGET_RANGE_LOSS_SCALE * H * a):
            est = DPNonconvexRegressor(epsilon=1.0, data_norm=1.5, loss_scale=scale,
                                       target_range=(a * LOW + b, a * HIGH + b))
            events.add(repr(planned_dp_event(est, 3000, 4)))
    assert len(events) == 1
    X, y = _design(n=1500)
    kw = dict(data_norm=1.5, random_state=1)
    dB = DPNonconvexRegressor(target_range=(LOW, HIGH), **kw).fit(X, y)
    mB = DPNonconvexRegressor(target_range=(100 * LOW, 100 * HIGH), **kw).fit(X, 100 * y)
    np.testing.assert_allclose(mB.coef_, 100 * dB.coef_, rtol=1e-6)
    assert mB.intercept_ == pytest.approx(100 * dB.intercept_, rel=1e-9)


@pytest.mark.parametrize("kw, match", [
    (dict(target_range=(LOW, HIGH), y_bound=2.0), "leave y_bound=None"),
    (dict(target_range=(HIGH, LOW)), "low < high"),
    (dict(target_range=(LOW, HIGH), delta=0.0), "delta > 0"),
    (dict(target_range=(LOW, HIGH), solver="zeroth_order", loss_lipschitz=1.0,
          loss=lambda z, y: abs(z - y)), "callable loss"),
])
def test_what_cannot_be_made_unit_free_is_refused_before_the_data(kw, match):
    X, y = _design(n=50)
    est = DPNonconvexRegressor(data_norm=1.5, **kw)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_a_pipeline_on_a_raw_target_far_from_zero():
    """Through ``make_private_pipeline`` the plan composes the transformers, the mean and
    the model; without the range the model shrinks towards 0, 125 dB away from every row."""
    rng = np.random.default_rng(0)
    n = 1000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 10, n),
                      "c": rng.choice(["x", "y", "z"], n).astype(object)})
    y = 125.0 + 5.0 * X["a"].to_numpy() + 2.0 * (X["c"] == "x") + rng.normal(0, 2, n)
    kw = dict(epsilon=1.0, delta=1e-6, numeric=["a", "b"], categorical=["c"],
              random_state=0)
    ranged = make_private_pipeline(DPNonconvexRegressor(target_range=(LOW, HIGH)),
                                   **kw).fit(X, y)
    raw = make_private_pipeline(DPNonconvexRegressor(), **kw).fit(X, y)
    assert ranged.epsilon_ <= 1.0 and ranged[-1].target_range == (LOW, HIGH)
    assert set(ranged[-1].budget_split_) >= {"target centre", "model"}
    assert r2_score(y, raw.predict(X)) < -10.0
    assert r2_score(y, ranged.predict(X)) > 0.3


def test_a_dask_fit_is_the_in_memory_one():
    da = pytest.importorskip("dask.array")
    X, y = _design(n=1200)
    kw = dict(data_norm=1.5, target_range=(LOW, HIGH), random_state=5)
    mem = DPNonconvexRegressor(**kw).fit(X, y)
    lazy = DPNonconvexRegressor(**kw).fit(da.from_array(X, chunks=300),
                                          da.from_array(y, chunks=300))
    assert repr(lazy.dp_event_) == repr(mem.dp_event_)
    assert lazy.target_centre_ == pytest.approx(mem.target_centre_, abs=1e-9)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-6, atol=1e-6)
