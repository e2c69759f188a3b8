"""A composite's one search for an estimator that releases its own statistics first
(:mod:`skdp.linear_model._nested_share`): the share the composite hands the estimator
(``model_epsilon``) keeps both the composite and the estimator within their budgets under
the exact accountant, plan and fit agree, a share that fails its check is not used,
nothing outside a composite splits this way, and the search is one search (it plans the
model a handful of times, not once per point of an outer search)."""

import numpy as np
import pandas as pd

import skdp.linear_model._base as base
from skdp import DPHuberRegressor, make_private_pipeline
from skdp.accounting import compose, gaussian_event, get_epsilon
from skdp.accounting._sampled import joint_calibrations
from skdp.linear_model import _nested_share as nested
from skdp.linear_model._base import _released_events, planned_dp_event
from skdp.linear_model._budget import _gaussian_guess, largest_model_epsilon

DELTA = 1e-6
RANGE = (100.0, 150.0)
EPSILON = 1.0


def _transformers():
    """Three Gaussian releases as a pipeline's transformers make them (GDP parameters
    about sqrt(5 %) of the budget's)."""
    return [gaussian_event(1.0, 0.06), gaussian_event(1.0, 0.06), gaussian_event(1.0, 0.08)]


def _estimator(**kw):
    return DPHuberRegressor(data_norm=2.0, target_range=RANGE, **kw)


def _split(n=3000, p=40):
    """Inside a composite: the estimator's epsilon and the model's share it is handed."""
    events = _transformers()
    with joint_calibrations():
        g, params = nested.model_split(_estimator(), events, n, p, EPSILON, DELTA)
    return events, g, params.get("model_epsilon")


def test_the_estimator_gets_the_gaussian_share_and_its_model_fits_both_budgets():
    events, g, share = _split()
    assert g == _gaussian_guess(events, EPSILON, DELTA)
    assert share is not None and 0.0 < share < g
    own, inner = _released_events(_estimator(epsilon=g, delta=DELTA), ["target_centre"],
                                  3000, g, DELTA)
    model = planned_dp_event(inner.set_params(epsilon=share, delta=DELTA), 3000, 40)
    composite = get_epsilon(compose(*events, *own, model), DELTA)
    mine = get_epsilon(compose(*own, model), DELTA)
    assert composite <= EPSILON and mine <= g
    # and the share is the largest such, to the search's tolerance: 1 % more breaks one
    bigger = planned_dp_event(inner.set_params(epsilon=share * 1.01), 3000, 40)
    assert (get_epsilon(compose(*events, *own, bigger), DELTA) > EPSILON
            or get_epsilon(compose(*own, bigger), DELTA) > g)


def test_plan_and_fit_take_the_share_they_are_handed():
    events, g, share = _split(n=400, p=3)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = 125.0 + 10.0 * X[:, 0] + rng.normal(0.0, 3.0, 400)
    est = _estimator(epsilon=g, delta=DELTA, random_state=0, model_epsilon=share)
    planned = planned_dp_event(est, 400, 3)
    fitted = est.fit(X, y)
    assert fitted.budget_split_["model"][0] == share
    assert repr(planned) == repr(fitted.dp_event_)
    assert fitted.epsilon_ <= g
    # without the share handed over: the estimator's own search
    alone = _estimator(epsilon=g, delta=DELTA, random_state=0).fit(X, y)
    assert alone.budget_split_["model"][0] != share
    assert alone.epsilon_ <= g


def test_a_handed_share_that_fails_its_check_is_not_used():
    events, g, share = _split(n=400, p=3)
    # the whole budget: with the mean, above g
    est = _estimator(epsilon=g, delta=DELTA, model_epsilon=g)
    own, inner = _released_events(est, ["target_centre"], 400, g, DELTA)
    got = nested.released_bounds_model_epsilon(est, inner, own, 400, 3, g, DELTA)
    # searched with room for the reservation's loosening (RELEASED_BOUNDS_EPSILON_MARGIN)
    from skdp.linear_model._auto import RELEASED_BOUNDS_EPSILON_MARGIN

    target = g * (1.0 - RELEASED_BOUNDS_EPSILON_MARGIN)
    assert got == largest_model_epsilon(inner, own, 400, 3, target, DELTA)
    assert got < g


def _frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(40.0, 12.0, n), "b": rng.uniform(0, 100, n),
                      "c": rng.choice(["u", "v", "w"], n)})
    y = 125.0 + 10.0 * np.tanh((X["a"] - 40) / 12) + 5.0 * (X["c"] == "u") \
        + rng.normal(0, 4.0, n)
    return X, y.to_numpy()


def test_a_pipeline_fit_plans_the_model_a_handful_of_times(monkeypatch):
    """The pipeline's fit at a new epsilon plans the inner model in one search (plan
    check and fit: at most 9 plans, the guess, the slope step and the secant), where the
    search inside a search planned it 3 times at each of 6 points of the outer one; the
    fit is within the pipeline's budget and releases what was planned."""
    X, y = _frame()
    plans = []
    original = base.planned_dp_event

    def counting(estimator, *args, **kwargs):
        if getattr(estimator, "target_range", None) is None:
            plans.append(float(estimator.epsilon))
        return original(estimator, *args, **kwargs)

    monkeypatch.setattr(base, "planned_dp_event", counting)
    pipe = make_private_pipeline(DPHuberRegressor(target_range=RANGE), epsilon=1.0137,
                                 delta=DELTA, numeric=["a", "b"], categorical=["c"],
                                 random_state=0).fit(X, y)
    assert 0 < len(set(plans)) <= 9
    assert pipe.epsilon_ <= 1.0137
    est = pipe[-1]
    assert est.epsilon_ <= est.epsilon
    assert est.budget_split_["model"][0] < est.epsilon


def test_outside_a_composite_the_estimator_keeps_its_own_search():
    events = _transformers()
    probe = _estimator()
    assert nested.nested_share(probe, events, 3000, 40, EPSILON, DELTA) is None
    standalone = largest_model_epsilon(_estimator(), events, 3000, 40, EPSILON, DELTA)
    _, g, _ = _split()
    assert standalone < g       # the nested search: the estimator's epsilon composes
