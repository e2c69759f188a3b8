"""``DPHuberRegressor(target_range=(low, high))``: the model is fitted on the targets clipped
to the public range and centred on its middle ``c``, with ``y_bound`` its half-width, and
``c`` is added to the intercept (:mod:`skdp.linear_model._target_range`).  The fit is the
one on the publicly centred targets -- same noise, same event, same plan -- and bad ranges
are refused before any row is read."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import r2_score

from skdp import DPHuberRegressor, make_private_pipeline
from skdp.linear_model._auto import pipeline_model_alpha
from skdp.linear_model._base import planned_dp_event

LOW, HIGH = 100.0, 150.0
CENTRE, HALF = 125.0, 25.0


def _design(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * 0.4
    y = CENTRE + 12.0 * X[:, 0] - 6.0 * X[:, 1] + rng.normal(0.0, 4.0, n)
    return X, y


def _centred(y, low=LOW, high=HIGH):
    return np.clip(y, low, high) - 0.5 * (low + high)


@pytest.mark.parametrize("solver", ["auto", "phased", "dpsgd"])
def test_the_fit_is_the_centred_fit_with_the_centre_in_the_intercept(solver):
    X, y = _design()
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.5, solver=solver, random_state=3)
    ranged = DPHuberRegressor(target_range=(LOW, HIGH), **kw).fit(X, y)
    centred = DPHuberRegressor(y_bound=HALF, **kw).fit(X, _centred(y))
    np.testing.assert_array_equal(ranged.coef_, centred.coef_)
    assert ranged.intercept_ == centred.intercept_ + CENTRE
    np.testing.assert_allclose(ranged.predict(X), CENTRE + centred.predict(X), rtol=1e-13)
    assert ranged.epsilon_ == centred.epsilon_ and ranged.alpha_ == centred.alpha_
    assert repr(ranged.dp_event_) == repr(centred.dp_event_)
    # the plan of a fit with the range is the plan of the centred fit
    assert repr(planned_dp_event(DPHuberRegressor(target_range=(LOW, HIGH), **kw),
                                 X.shape[0], X.shape[1])) == repr(ranged.dp_event_)


def test_targets_beyond_the_range_are_clipped_to_it():
    X, y = _design()
    far = y.copy()
    far[:10] = 1e9      # beyond high: the same as high
    far[10:20] = -1e9   # beyond low: the same as low
    near = y.copy()
    near[:10], near[10:20] = HIGH, LOW
    kw = dict(epsilon=1.0, data_norm=1.5, target_range=(LOW, HIGH), random_state=0)
    a = DPHuberRegressor(**kw).fit(X, far)
    b = DPHuberRegressor(**kw).fit(X, near)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_


def test_the_range_keeps_a_raw_targets_model_near_its_level():
    """The reason for the parameter: a raw target far from 0, where the private model
    shrinks towards 0, predicts far off; with its public range it predicts around the
    range's middle (a weak-signal fit at small n epsilon)."""
    X, y = _design(n=400)
    kw = dict(epsilon=0.5, data_norm=1.5, random_state=0)
    raw = DPHuberRegressor(**kw).fit(X, y)
    ranged = DPHuberRegressor(target_range=(LOW, HIGH), **kw).fit(X, y)
    assert r2_score(y, raw.predict(X)) < -1.0
    assert r2_score(y, ranged.predict(X)) > 0.0


def _frame(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(40.0, 12.0, n), "b": rng.uniform(0, 100, n),
                      "c": rng.choice(["u", "v", "w"], n)})
    y = CENTRE + 10.0 * np.tanh((X["a"] - 40) / 12) + 5.0 * (X["c"] == "u") \
        + rng.normal(0, 4.0, n)
    return X, y.to_numpy()


@pytest.mark.parametrize("low, high", [(LOW, HIGH), (120.0, 122.0)])
def test_a_pipeline_with_the_range_is_the_pipeline_on_the_centred_targets(low, high):
    """Also where the half-width is within the threshold (1 <= 1), so the spline-basis
    alpha rule fires: it reads the bound the model is fitted with."""
    X, y = _frame()
    y = low + (high - low) * (y - y.min()) / (y.max() - y.min())
    kw = dict(epsilon=1.0, delta=1e-6, numeric=["a", "b"], categorical=["c"],
              random_state=0)
    model = DPHuberRegressor(target_range=(low, high))
    ranged = make_private_pipeline(model, **kw)
    centred = make_private_pipeline(DPHuberRegressor(y_bound=0.5 * (high - low)), **kw)
    ranged.fit(X, y)
    centred.fit(X, _centred(y, low, high))
    np.testing.assert_allclose(ranged.predict(X), 0.5 * (low + high) + centred.predict(X),
                               rtol=1e-13)
    assert ranged[-1].alpha_ == centred[-1].alpha_
    assert ranged.epsilon_ == centred.epsilon_ <= 1.0
    assert ranged[-1].target_range == (low, high)      # the user's parameter is kept
    assert ranged[-1].alpha == "auto"                    # and the pin restored
    fires = pipeline_model_alpha(model, ["DPSplineTransformer"]) != {}
    assert fires == (0.5 * (high - low) <= model.huber_threshold)
    assert hasattr(ranged.named_steps["columns"], "transformers_")


@pytest.mark.parametrize("target_range, match", [
    ((150.0, 100.0), "low < high"),
    ((100.0, 100.0), "low < high"),
    ((0.0, np.inf), "finite"),
    ((np.nan, 1.0), "finite"),
    ((-1.7e308, 1.7e308), "finite"),
    ((1.0, 2.0, 3.0), "pair"),
    (("0", "1"), "pair"),
    ((True, 2.0), "pair"),
])
def test_a_bad_range_is_refused_before_the_data_are_read(target_range, match):
    X, y = _design(n=50)
    est = DPHuberRegressor(data_norm=1.5, target_range=target_range)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_the_range_and_a_y_bound_are_exclusive():
    X, y = _design(n=50)
    for bound in (1.0, "auto"):
        est = DPHuberRegressor(data_norm=1.5, y_bound=bound, target_range=(LOW, HIGH))
        with pytest.raises(ValueError, match="leave y_bound=None"):
            est.fit(X, y)
        assert not hasattr(est, "coef_")


def test_a_pipeline_refuses_a_bad_range_before_any_release(monkeypatch):
    from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer

    fitted = []
    for cls in (DPSplineTransformer, DPOneHotEncoder):
        def recording_fit(self, *args, _fit=cls.fit, **kwargs):
            fitted.append(type(self).__name__)
            return _fit(self, *args, **kwargs)
        monkeypatch.setattr(cls, "fit", recording_fit)
    X, y = _frame(n=200)
    pipe = make_private_pipeline(DPHuberRegressor(y_bound=1.0, target_range=(LOW, HIGH)),
                                 epsilon=1.0, delta=1e-6, numeric=["a", "b"],
                                 categorical=["c"], random_state=0)
    with pytest.raises(ValueError, match="leave y_bound=None"):
        pipe.fit(X, y)
    assert fitted == []       # refused by the plan: no transformer saw a row


def test_non_finite_targets_are_refused_not_clipped():
    X, y = _design(n=50)
    y[3] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        DPHuberRegressor(data_norm=1.5, target_range=(LOW, HIGH)).fit(X, y)


def test_the_planners_see_the_bound_the_model_is_fitted_with():
    """The plan view -- what every solver's planner reads -- carries the centred targets'
    bound, the half-width, as the ``y_bound`` the solver receives (no planner's event
    depends on it today: this pins the contract for the next one)."""
    from skdp._losses import HuberLoss

    est = DPHuberRegressor(epsilon=1.0, data_norm=1.5, target_range=(LOW, HIGH))
    plan = est._fit_plan(1500, 4, HuberLoss(1.0), 1, 1.5)
    assert est._plan_view(plan, 4, HuberLoss(1.0)).y_bound == HALF
    plain = DPHuberRegressor(epsilon=1.0, data_norm=1.5)
    assert plain._plan_view(plan, 4, HuberLoss(1.0)).y_bound is None
