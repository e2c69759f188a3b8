"""skdp.accounting._released_width: a plain Pipeline whose DP transformer releases the
width that the estimator after it reads.  The estimator's exact event, which follows the
released width, is not a proof of the composition; the pair that dominates every release
of its (epsilon, delta) is.  Private searches and cross-validation hand such a model a
public width instead, so that its exact event composes."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from skdp import (DPLogisticRegression, PrivatePipeline,  # noqa: E402
                  make_private_pipeline)
from skdp.accounting import (DeltaDpEvent, fitted_dp_event, get_epsilon,  # noqa: E402
                             pure_dp_event)
from skdp.accounting._events import events_close, same_privacy_profile  # noqa: E402
from skdp.model_selection import DPGridSearchCV, dp_cross_validate  # noqa: E402
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler,  # noqa: E402
                                DPSplineTransformer, DPStandardScaler)


def _table(n_jobs, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    job = rng.choice([f"j{i}" for i in range(n_jobs)], n).astype(object)
    X = pd.DataFrame({"a": rng.normal(size=n), "job": job})
    return X, ((X["a"] > 0) | (job == "j0")).astype(int)


def _columns():
    return make_column_transformer(
        (DPSplineTransformer(epsilon=0.1, random_state=1), ["a"]),
        (DPOneHotEncoder(epsilon=0.1, random_state=2), ["job"]))


def _exact(pipe):
    """The composition of every recorded event as it is (what fitted_dp_event reported
    before)."""
    from skdp.accounting import compose
    from skdp.accounting._fitted import _steps

    return compose(*[s.dp_event_ for s in _steps(pipe) if hasattr(s, "dp_event_")])


def _plain(**model):
    return make_pipeline(_columns(), DPLogisticRegression(
        classes=[0, 1], epsilon=0.8, data_norm=1.5, random_state=3, **model))


def test_an_estimator_reading_a_released_width_composes_its_dominating_pair():
    """Objective perturbation's alpha rule reads the released width: its exact event
    composed to 0.8821 and 0.8832 (at delta 1e-5) for tables releasing 3 and 9
    categories -- each branch's own number, not a guarantee of the mechanism; now one
    event, with the pair dominating every (0.8, 1e-6)-DP release."""
    events = []
    for n_jobs in (3, 9):
        pipe = _plain().fit(*_table(n_jobs))
        assert pipe[-1].auto_n_features_ is None
        assert pipe[-1].n_samples_seen_ == 3000
        event = fitted_dp_event(pipe)
        assert events_close(event.events[-2], pure_dp_event(0.8))
        assert events_close(event.events[-1], DeltaDpEvent(1e-6))
        events.append(event)
    assert events_close(*events)
    assert get_epsilon(events[0], 1e-5) <= 1.0


def test_the_probe_tells_a_width_following_event_from_a_fixed_one():
    from skdp.accounting._released_width import event_follows_width

    model = DPLogisticRegression(classes=[0, 1], epsilon=0.8, data_norm=1.5)
    assert event_follows_width(model, 3000)                 # alpha="auto"
    assert not event_follows_width(model.set_params(alpha=0.01), 3000)
    assert not event_follows_width(model.set_params(solver="output_perturbation"), 3000)


def test_the_probe_reaches_widths_far_above_the_fitted_one():
    """Audit: binary DP-SGD on 2,000 rows changes its schedule from about 12,500 columns
    on, a width a discovery over seven identifier-like columns can release; a probe that
    stopped at max(64 w, 4 n) called it width-free.  With a public rule width it is."""
    from skdp.accounting._released_width import event_follows_width

    model = DPLogisticRegression(classes=[0, 1], solver="dpsgd", epsilon=5.0, data_norm=1.0)
    assert event_follows_width(model, 2000)
    assert not event_follows_width(model.set_params(auto_n_features=14), 2000)


def _zeroth_order_paper(**kw):
    from skdp import DPNonconvexRegressor

    return DPNonconvexRegressor(loss="welsch", solver="zeroth_order", calibration="paper",
                                epsilon=1.0, delta=1e-6, data_norm=1.0, y_bound=1.0,
                                random_state=3, **kw)


def test_a_public_rule_width_that_does_not_fix_the_event_composes_the_pair():
    """Audit: zeroth_order at calibration="paper" reads the design's width in its own plan
    (its steps and tree), whatever auto_n_features says; its exact event at each released
    width composed to 1.8492 / 1.8406 / 1.8441, and a releasable width gives 1.8559.  It
    is composed as the pair dominating its (1, 1e-6) at every width."""
    events = []
    for n_jobs in (1, 3):
        X, _ = _table(n_jobs, n=1000)
        y = np.clip(np.random.default_rng(0).normal(size=1000) * 0.3 + (X["job"] == "j0"),
                    -1, 1)
        pipe = make_pipeline(DPOneHotEncoder(epsilon=2.0, random_state=1),
                             _zeroth_order_paper(auto_n_features=10)).fit(X[["job"]], y)
        event = fitted_dp_event(pipe)
        assert events_close(event.events[-1], DeltaDpEvent(1e-6))
        events.append(event)
    assert events_close(*events)


def _sawtooth_model(**kw):
    """zeroth_order at calibration="paper" with at most 4 steps: its event's GDP parameter
    is rho at T = 2 and 4 steps and 0.954 rho at T = 3 (widths 7-10 here), so probes at
    widths where T is 2 or 4 all see one event."""
    from skdp import DPNonconvexRegressor

    return DPNonconvexRegressor(loss="welsch", solver="zeroth_order", calibration="paper",
                                epsilon=2.0, delta=1e-6, data_norm=1.0, y_bound=1.0,
                                max_iter=4, smoothing_radius=1e-4, random_state=3, **kw)


def test_a_paper_zeroth_order_model_follows_the_width_whatever_the_probes_see():
    """Audit: every probe width sat at a tooth's peak, so the sawtooth model was called
    width-free and each released width's exact event composed (2.3134 at width 5, 2.2645
    at width 8, at delta 1e-5)."""
    from skdp.accounting._released_width import event_follows_width
    from skdp.linear_model._base import planned_dp_event

    model = _sawtooth_model()
    profiles = {w: planned_dp_event(model, 1000, w) for w in (1, 2, 8, 32)}
    assert same_privacy_profile(profiles[1], profiles[32])      # the probes' view
    assert not same_privacy_profile(profiles[1], profiles[8])   # a tooth between them
    assert event_follows_width(model, 1000)
    assert event_follows_width(model.set_params(auto_n_features=5), 1000)


def test_a_search_refuses_a_width_following_model_before_any_fit(monkeypatch):
    """Audit: the search pinned the placeholder width, the real fits' events followed the
    released width, and it raised after fitting on the private rows; now it refuses
    before any fit (every fit would add the pair's delta)."""
    from skdp import DPNonconvexRegressor
    from skdp.model_selection import make_private_scorer

    fits = []
    original = DPNonconvexRegressor.fit
    monkeypatch.setattr(DPNonconvexRegressor, "fit",
                        lambda self, *a, **k: fits.append(1) or original(self, *a, **k))
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.normal(size=1000)})
    y = np.clip(rng.normal(size=1000) * 0.3 + (X["c"] > 0), -1, 1)
    pipe = make_pipeline(DPSplineTransformer(random_state=1), _zeroth_order_paper())
    scorer = make_private_scorer(lambda t, p: abs(t - p), lower=0, upper=2,
                                 greater_is_better=False)
    search = DPGridSearchCV(pipe, {"dpnonconvexregressor__max_iter": [10_000]},
                            epsilon=8.0, delta=1e-5, cv=2, random_state=0, scoring=scorer)
    with pytest.raises(ValueError, match="depends on the width of its input"):
        search.fit(X, y)
    assert not fits


def test_a_public_rule_width_keeps_the_exact_event():
    """With auto_n_features the estimator's rules read a public width: its exact event
    is the same at every released width and composes as it is."""
    events = []
    for n_jobs in (3, 9):
        pipe = _plain(auto_n_features=3).fit(*_table(n_jobs))
        assert pipe[-1].auto_n_features_ == 3
        event = fitted_dp_event(pipe)
        assert events_close(event, _exact(pipe))
        events.append(event)
    assert events_close(*events)


def test_a_width_free_solver_keeps_its_exact_event():
    """Output perturbation calibrates from (epsilon, delta) alone."""
    pipe = _plain(solver="output_perturbation").fit(*_table(9))
    assert events_close(fitted_dp_event(pipe), _exact(pipe))


def test_a_pure_budget_is_dominated_by_its_pure_event():
    from skdp.accounting._released_width import dominating_pair, step_pair

    assert events_close(dominating_pair(0.8, 0.0), pure_dp_event(0.8))
    # the larger of the parameter and the certified value
    assert events_close(step_pair(0.8, 1e-6, 0.81, 0.0),
                        dominating_pair(0.81, 1e-6))


def test_nothing_changes_without_a_released_width():
    X, y = _table(3)
    pipe = make_pipeline(
        make_column_transformer((DPOneHotEncoder(categories=[["j0", "j1", "j2"]]), ["job"]),
                                ("passthrough", ["a"])),
        DPLogisticRegression(classes=[0, 1], epsilon=0.8, data_norm=1.5, random_state=3))
    pipe.fit(X, y)
    assert fitted_dp_event(pipe) == pipe[-1].dp_event_


def test_a_private_pipeline_keeps_its_planned_model_event():
    X, y = _table(9)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 numeric=["a"], categorical=["job"], random_state=0)
    pipe.fit(X, y)
    assert pipe[-1].auto_n_features_ == pipe.privacy_plan_.model_width
    assert events_close(fitted_dp_event(pipe), pipe.privacy_plan_.planned_event)


def test_a_private_pipeline_behind_a_released_width_is_its_budget_pair():
    """Its plan reads its input's width, released by the spline before it: as a unit it
    is (epsilon, delta)-DP at its plan's budget, composed as that pair."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = (X[:, 0] > 0).astype(int)
    inner = PrivatePipeline([("scale", DPRobustScaler()),
                             ("model", DPLogisticRegression(classes=[0, 1]))],
                            epsilon=1.0, random_state=5)
    pipe = make_pipeline(DPSplineTransformer(epsilon=0.2, feature_bounds=[(-4, 4)] * 2,
                                             random_state=1), inner).fit(X, y)
    plan = pipe[-1].privacy_plan_
    event = fitted_dp_event(pipe)
    assert events_close(event.events[-2], pure_dp_event(plan.epsilon))
    assert events_close(event.events[-1], DeltaDpEvent(plan.delta))


def test_a_dp_transformer_behind_a_released_width_is_its_calibration_target():
    """A robust scaler after a discovering encoder: its recorded event moves with its
    input's width in the ninth digit (the exact noise grid's rounding term), so it is
    composed as its calibration target, which bounds every width; the encoder before it
    and a model with a public rule width keep their events."""
    X, y = _table(9)
    pipe = make_pipeline(
        make_column_transformer((DPOneHotEncoder(epsilon=0.1, random_state=2), ["job"])),
        DPRobustScaler(epsilon=0.3, random_state=4),
        DPLogisticRegression(classes=[0, 1], epsilon=0.8, data_norm=1.5, random_state=3,
                             auto_n_features=4)).fit(X, y)
    from skdp.accounting import compose, gaussian_event, gaussian_mu_for

    encoder = pipe[0].named_transformers_["dponehotencoder"]
    target = gaussian_event(1.0, gaussian_mu_for(0.3, 1e-6))
    assert pipe[1].dp_event_ != target          # in its ninth digit
    expected = compose(encoder.dp_event_, target, pipe[-1].dp_event_)
    assert events_close(fitted_dp_event(pipe), expected)


@pytest.mark.parametrize("make, data", [
    (lambda d: DPSplineTransformer(feature_bounds=[(-1.0, 1.0)] * d), "numeric"),
    (lambda d: DPRobustScaler(), "numeric"),
    (lambda d: DPStandardScaler(feature_bounds=(-np.ones(d), np.ones(d))), "numeric"),
    (lambda d: DPStandardScaler(feature_bounds="auto"), "numeric"),
    (lambda d: DPOneHotEncoder(), "categorical"),
], ids=["spline", "robust", "standard", "standard-auto", "one-hot"])
def test_the_calibration_target_bounds_the_release_at_every_width(make, data):
    """What the pipeline and the plan compose behind a released width: an event that
    dominates the recorded one at every width (within the ninth digit of it)."""
    from skdp.accounting._events import privacy_profile_at_most

    rng = np.random.default_rng(0)
    targets = []
    for d in (1, 3, 12, 40):
        X = rng.uniform(-1, 1, size=(1000, d)) if data == "numeric" else \
            rng.integers(0, 4, size=(1000, d)).astype(str).astype(object)
        step = make(d).set_params(epsilon=0.7, delta=1e-6, random_state=0).fit(X)
        target = step._width_free_event()
        assert privacy_profile_at_most(step.dp_event_, target, rtol=0.0)
        assert same_privacy_profile(step.dp_event_, target, rtol=1e-8)
        targets.append(target)
    # one event whatever the width (audit: the scaler's auto bounds moved it)
    assert all(t == targets[0] for t in targets)


def test_a_search_hands_the_model_a_public_width():
    """The search sets auto_n_features to the placeholder width of the released basis:
    the model's exact event composes (no delta per fit), the returned model gets the
    user's None back and records the width its rules read."""
    X, y = _table(3)
    pipe = make_pipeline(
        make_column_transformer((DPSplineTransformer(feature_bounds=[(-4.0, 4.0)]), ["a"])),
        DPLogisticRegression(classes=[0, 1], data_norm=1.5))
    search = DPGridSearchCV(pipe, {"dplogisticregression__fit_intercept": [True, False]},
                            epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    model = search.best_estimator_
    assert model[-1].auto_n_features is None
    assert model[-1].auto_n_features_ == model[-1].n_features_in_
    assert events_close(fitted_dp_event(model), _exact(model))
    assert search.epsilon_ <= 2.0


def test_cross_validation_hands_the_model_a_public_width():
    X, y = _table(3)
    pipe = make_pipeline(
        make_column_transformer((DPSplineTransformer(feature_bounds=[(-4.0, 4.0)]), ["a"])),
        DPLogisticRegression(classes=[0, 1], data_norm=1.5))
    out = dp_cross_validate(pipe, X, y, epsilon=1.0, delta=1e-5, cv=3, random_state=0,
                            return_estimator=True)
    assert out["epsilon"] <= 1.0
    for model in out["estimator"]:
        assert model[-1].auto_n_features is None
        assert model[-1].auto_n_features_ == model[-1].n_features_in_
        assert events_close(fitted_dp_event(model), _exact(model))
