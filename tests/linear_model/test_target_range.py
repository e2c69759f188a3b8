"""``DPHuberRegressor(target_range=(low, high))``: the targets are clipped to the public
range and centred on its middle, their mean is released with ``TARGET_CENTRE_SHARE`` of
``mu^2``, and the model is fitted on the targets minus that mean at the largest epsilon that
composes with it (:mod:`skdp.linear_model._target_range`).  The model is the one fitted on
the publicly shifted targets at that epsilon -- same noise, same event -- the planned event
is the fitted one, the mean's noise has the calibrated scale, and bad ranges are refused
before any row is read."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import r2_score

from skdp import DPHuberRegressor, make_private_pipeline
from skdp.accounting import compose, gaussian_event
from skdp.linear_model._auto import (TARGET_CENTRE_SHARE, TARGET_RANGE_ALPHA_FACTOR,
                                     TARGET_RANGE_THRESHOLD, pipeline_model_alpha)
from skdp.linear_model._base import planned_dp_event
from skdp.linear_model._target_range import centre_seed, release_target_centre
from skdp.preprocessing._common import gdp_mu

LOW, HIGH = 100.0, 150.0
CENTRE = 125.0


def _design(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * 0.4
    y = CENTRE + 12.0 * X[:, 0] - 6.0 * X[:, 1] + rng.normal(0.0, 4.0, n)
    return X, y


@pytest.mark.parametrize("solver", ["auto", "phased", "dpsgd"])
def test_the_model_is_the_fit_on_the_centred_targets_over_the_half_width(solver):
    """With the range the model is the plain fit of ``z = (clip(y) - centre)/h``
    (``h = (high - low)/2``) with ``y_bound = 2``, the threshold ``TARGET_RANGE_THRESHOLD``
    and the auto rule's alpha times ``TARGET_RANGE_ALPHA_FACTOR``, at the model's share --
    same noise, same event -- and its coefficients are that fit's times ``h``."""
    X, y = _design()
    kw = dict(delta=1e-6, data_norm=1.5, solver=solver, random_state=3)
    ranged = DPHuberRegressor(epsilon=1.0, target_range=(LOW, HIGH), **kw).fit(X, y)
    model_epsilon = ranged.budget_split_["model"][0]
    h = 0.5 * (HIGH - LOW)
    assert ranged.target_scale_ == h
    assert ranged.budget_split_["mu_share_target_centre"] == TARGET_CENTRE_SHARE
    z = (np.clip(y, LOW, HIGH) - ranged.target_centre_) / h
    auto = DPHuberRegressor(epsilon=model_epsilon, y_bound=2.0,
                            huber_threshold=TARGET_RANGE_THRESHOLD, **kw).fit(X, z)
    assert ranged.alpha_ == TARGET_RANGE_ALPHA_FACTOR * auto.alpha_
    plain = DPHuberRegressor(epsilon=model_epsilon, y_bound=2.0, alpha=ranged.alpha_,
                             huber_threshold=TARGET_RANGE_THRESHOLD, **kw).fit(X, z)
    # z here is the fit's up to the rounding of (u - c)/h against (clip(y) - (m + c))/h
    np.testing.assert_allclose(ranged.coef_, h * plain.coef_, rtol=1e-9, atol=1e-9)
    assert ranged.intercept_ == pytest.approx(h * plain.intercept_ + ranged.target_centre_,
                                              rel=1e-9)
    # the fit's event: the mean's Gaussian release, then the model's; within the budget
    centre_event = gaussian_event(1.0, np.sqrt(TARGET_CENTRE_SHARE) * gdp_mu(1.0, 1e-6))
    assert repr(ranged.dp_event_) == repr(compose(centre_event, plain.dp_event_))
    assert ranged.epsilon_ <= 1.0
    # and the plan of a fit with the range is that event
    assert repr(planned_dp_event(DPHuberRegressor(epsilon=1.0, target_range=(LOW, HIGH),
                                                  **kw), X.shape[0], X.shape[1])) \
        == repr(ranged.dp_event_)


def test_the_absolute_loss_keeps_the_targets_units():
    """``huber_threshold=0`` has no scale to free (its gradient does not grow with the
    targets): the model is the plain absolute-loss fit of ``clip(y) - centre`` with
    ``y_bound = high - low`` and the plain ``alpha`` rule."""
    X, y = _design(n=800)
    kw = dict(delta=1e-6, data_norm=1.5, huber_threshold=0.0, random_state=2)
    ranged = DPHuberRegressor(epsilon=1.0, target_range=(LOW, HIGH), **kw).fit(X, y)
    assert ranged.target_scale_ == 1.0 and ranged.solver_ == "phased"
    shifted = np.clip(y, LOW, HIGH) - ranged.target_centre_
    plain = DPHuberRegressor(epsilon=ranged.budget_split_["model"][0], y_bound=HIGH - LOW,
                             **kw).fit(X, shifted)
    assert ranged.alpha_ == plain.alpha_
    np.testing.assert_allclose(ranged.coef_, plain.coef_, rtol=1e-9, atol=1e-9)
    assert DPHuberRegressor(target_range=(LOW, HIGH), huber_threshold=0.0) \
        ._planning_loss()[0].__class__.__name__ == "AbsoluteLoss"


def test_the_fit_is_unit_free():
    """The plan does not depend on the target's units: the same event for the range in
    decibels, in millibels and shifted; a threshold given in the target's units is read
    in half-widths."""
    events = {repr(planned_dp_event(DPHuberRegressor(epsilon=1.0, data_norm=1.5,
                                                     target_range=(a * LOW + b, a * HIGH + b)),
                                    1500, 4))
              for a, b in ((1.0, 0.0), (100.0, 0.0), (1.0, -125.0), (0.01, 7.0))}
    assert len(events) == 1
    given = DPHuberRegressor(huber_threshold=5.0, target_range=(LOW, HIGH))
    assert given._planning_loss()[0].huber_threshold == 5.0 / (0.5 * (HIGH - LOW))
    assert DPHuberRegressor(target_range=(LOW, HIGH))._planning_loss()[0].huber_threshold \
        == TARGET_RANGE_THRESHOLD
    assert DPHuberRegressor()._planning_loss()[0].huber_threshold == 1.0
    assert DPHuberRegressor(huber_threshold=0.3)._planning_loss()[0].huber_threshold == 0.3


def test_the_released_mean_has_the_calibrated_noise_and_sensitivity():
    """The mean of ``u = clip(y) - m`` (``|u| <= h``) moves by at most ``2h/n`` when one
    row is replaced (the worst pair: ``-h`` for ``+h``), and its noise has the std of a
    ``mu``-GDP Gaussian release at that sensitivity (the scaler's calibration, up to its
    ``1e-9`` margin and summation inflation)."""
    n, h, mu = 500, 25.0, 0.3
    u = np.full(n, -h)
    neighbour = u.copy()
    neighbour[0] = h
    assert abs(neighbour.mean() - u.mean()) == pytest.approx(2 * h / n)
    draws = np.array([release_target_centre(np.zeros(n), h, mu, 1e-6, seed)[0]
                      for seed in range(400)])
    expected = 2 * h / (n * mu)
    assert abs(draws.mean()) < 4 * expected / np.sqrt(400)
    assert draws.std() == pytest.approx(expected, rel=0.12)
    _, event = release_target_centre(np.zeros(n), h, mu, 1e-6, 0)
    assert repr(event) == repr(gaussian_event(1.0, mu))


def test_the_centre_has_its_own_noise_stream():
    assert centre_seed(None) is None
    assert centre_seed(7) == centre_seed(7) != centre_seed(8)
    assert centre_seed(7) not in (7, None)
    a = release_target_centre(np.zeros(300), 1.0, 0.5, 1e-6, 7)[0]
    b = release_target_centre(np.zeros(300), 1.0, 0.5, 1e-6, 8)[0]
    assert a != b


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


@pytest.mark.parametrize("low, high, threshold", [(LOW, HIGH, "auto"),
                                                  (120.5, 121.5, 1.0)])
def test_a_pipeline_plans_and_fits_the_mean_and_the_model(low, high, threshold):
    """The pipeline's plan composes the transformers, the targets' mean and the model; the
    fit releases exactly that (the pipeline checks its planned events), and the spline-basis
    alpha rule compares the model's bound and threshold in the model's units, half-widths
    (it fires for the narrow range with a threshold of 1: 2 <= 1/0.5)."""
    X, y = _frame()
    y = low + (high - low) * (y - y.min()) / (y.max() - y.min())
    kw = dict(epsilon=1.0, delta=1e-6, numeric=["a", "b"], categorical=["c"],
              random_state=0)
    model = DPHuberRegressor(target_range=(low, high), huber_threshold=threshold)
    ranged = make_private_pipeline(model, **kw).fit(X, y)
    fitted = ranged[-1]
    assert ranged.epsilon_ <= 1.0 and fitted.epsilon_ <= fitted.epsilon
    assert low <= fitted.target_centre_ <= high
    assert abs(fitted.target_centre_ - y.mean()) < 0.05 * (high - low)
    assert set(fitted.budget_split_) >= {"target centre", "model"}
    assert fitted.target_range == (low, high) and fitted.alpha == "auto"   # restored
    fires = pipeline_model_alpha(model, ["DPSplineTransformer"]) != {}
    assert fires == (threshold != "auto")
    raw = make_private_pipeline(DPHuberRegressor(), **kw).fit(X, y)
    assert r2_score(y, ranged.predict(X)) > max(0.0, r2_score(y, raw.predict(X)))


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
    """The plan view -- what every solver's planner reads -- carries the model's bound and
    threshold, in half-widths: ``y_bound = 2`` for the targets minus their mean over the
    half-width, and the threshold over the half-width (no planner's event depends on the
    bound today: this pins the contract for the next one)."""
    from skdp._losses import HuberLoss

    est = DPHuberRegressor(epsilon=1.0, data_norm=1.5, target_range=(LOW, HIGH),
                           huber_threshold=2.5)
    plan = est._fit_plan(1500, 4, HuberLoss(1.0), 1, 1.5)
    view = est._plan_view(plan, 4, HuberLoss(1.0))
    assert view.y_bound == 2.0 and view.huber_threshold == 2.5 / (0.5 * (HIGH - LOW))
    plain = DPHuberRegressor(epsilon=1.0, data_norm=1.5)
    assert plain._plan_view(plan, 4, HuberLoss(1.0)).y_bound is None


def test_pure_dp_is_refused_and_a_dask_fit_is_the_in_memory_one():
    X, y = _design(n=600)
    with pytest.raises(ValueError, match="delta > 0"):
        DPHuberRegressor(delta=0.0, data_norm=1.5, target_range=(LOW, HIGH)).fit(X, y)
    da = pytest.importorskip("dask.array")
    kw = dict(data_norm=1.5, target_range=(LOW, HIGH), random_state=5)
    mem = DPHuberRegressor(**kw).fit(X, y)
    lazy = DPHuberRegressor(**kw).fit(da.from_array(X, chunks=150),
                                      da.from_array(y, chunks=150))
    assert repr(lazy.dp_event_) == repr(mem.dp_event_)
    assert lazy.target_centre_ == pytest.approx(mem.target_centre_, abs=1e-9)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-6, atol=1e-6)
    # with a released data_norm too: its leaf counts are summed from the partitions
    kw = dict(data_norm="auto", target_range=(LOW, HIGH), random_state=5)
    mem = DPHuberRegressor(**kw).fit(X, y)
    lazy = DPHuberRegressor(**kw).fit(da.from_array(X, chunks=150),
                                      da.from_array(y, chunks=150))
    assert lazy.data_norm_ == mem.data_norm_ and lazy.budget_split_ == mem.budget_split_
    assert repr(lazy.dp_event_) == repr(mem.dp_event_)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-6, atol=1e-6)


def test_a_private_search_over_a_target_range_pipeline_runs_within_its_budget():
    """A private search fixes each candidate's plan before any row (model_plan="fixed",
    the model's alpha pinned): the estimator's share then comes from its own search, as
    its fit finds it, and every candidate spends what its plan gave it (a share found
    for the unpinned estimator overspent here: BudgetExceededError)."""
    from skdp.model_selection import DPGridSearchCV, make_private_scorer

    X, y = _frame(n=1500)
    pipe = make_private_pipeline(DPHuberRegressor(target_range=(LOW, HIGH)), epsilon=2.0,
                                 delta=1e-6, numeric=["a", "b"], categorical=["c"],
                                 random_state=0)
    scorer = make_private_scorer(lambda t, p: np.minimum(np.abs(t - p), 50.0), lower=0,
                                 upper=50, greater_is_better=False)
    search = DPGridSearchCV(pipe, {"model__huber_threshold": ["auto", 10.0]}, epsilon=2.0,
                            delta=1e-6, scoring=scorer, cv=2, random_state=0).fit(X, y)
    assert search.epsilon_ <= 2.0
    best = search.best_estimator_[-1]
    assert best.target_scale_ == 0.5 * (HIGH - LOW) and best.epsilon_ <= best.epsilon
