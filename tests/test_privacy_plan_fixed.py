"""model_plan="fixed": the model's width-dependent ``auto`` choices are pinned at the plan's
nominal width, so the whole pipeline's event is fixed before any row (what a private
search or cross-validation accounts)."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from sklearn.base import clone  # noqa: E402

from skdp import (DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor,  # noqa: E402
                  make_private_pipeline)
from skdp.linear_model._budget import model_planned_event  # noqa: E402
from skdp.accounting._events import events_close as same_release  # noqa: E402

MODELS = {
    "binary": lambda s: DPLogisticRegression(classes=[0, 1], solver=s),
    "multinomial": lambda s: DPLogisticRegression(classes=[0, 1, 2], solver=s),
    "huber": lambda s: DPHuberRegressor(y_bound=1.0, solver=s),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("solver", ["auto", "dpsgd", "objective_perturbation",
                                    "output_perturbation", "phased"])
@pytest.mark.parametrize("n, epsilon", [(500, 0.3), (30000, 2.0)])
def test_the_rules_width_makes_the_event_width_free(name, solver, n, epsilon):
    """With auto_n_features the auto rules read that width, not the design's: the event is
    the same at every design width, and it is the unpinned model's at that width."""
    model = MODELS[name](solver)
    pinned = clone(model).set_params(auto_n_features=17)
    events = [model_planned_event(pinned, n, p, epsilon, 1e-7, data_norm=2.0)
              for p in (1, 5, 17, 400, 3000)]
    # equal up to the last bits (a width enters some float sums)
    assert same_release(events[2], model_planned_event(model, n, 17, epsilon, 1e-7,
                                                       data_norm=2.0))
    assert all(same_release(e, events[0]) for e in events)


def test_the_width_matters_without_the_rules_width():
    """The test above can fail: without auto_n_features the events follow the width."""
    model = DPLogisticRegression(classes=[0, 1], solver="objective_perturbation")
    events = {repr(model_planned_event(model, 2000, p, 1.0, 1e-7, data_norm=2.0))
              for p in (1, 17, 400)}
    assert len(events) > 1


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    job = rng.choice(["clerk", "nurse", "driver"], n).astype(object)
    df = pd.DataFrame({"age": age, "job": job, "income": rng.lognormal(10, 1, n)})
    return df, ((age > 50) | (job == "nurse")).astype(int)


@pytest.mark.parametrize("solver", ["dpsgd", "objective_perturbation"])
def test_a_fixed_pipeline_releases_its_plan(solver):
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1], solver=solver),
                                 epsilon=1.0, numeric=["age", "income"],
                                 categorical=["job"], random_state=0)
    pipe.set_params(model_plan="fixed")
    plan = pipe.plan(df)
    assert plan.planned_event is not None and plan.model_width is not None
    pipe.fit(df, y)
    assert same_release(pipe.dp_event_, plan.planned_event)
    assert pipe.epsilon_ <= 1.0
    assert pipe[-1].alpha == "auto"                   # the user's parameter is back
    # the rule at the plan's public width
    probe = clone(pipe[-1]).set_params(epsilon=plan.step("model").epsilon,
                                       auto_n_features=plan.model_width,
                                       data_norm=pipe[-1].data_norm_)
    assert pipe[-1].alpha_ == probe._fit_plan(len(y), 999, *probe._planning_loss(),
                                              pipe[-1].row_bound_).alpha


def test_a_width_following_model_cannot_be_fixed():
    df, _ = _table()
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=1.0, solver="zeroth_order",
                                                      calibration="paper"),
                                 numeric=["age", "income"], categorical=["job"])
    pipe.set_params(model_plan="fixed")
    with pytest.raises(ValueError, match="depends on the width"):
        pipe.plan(df)
    pipe.set_params(model_plan="adaptive")
    plan = pipe.plan(df)
    assert plan.step("model").dominated and plan.planned_event is not None
    assert any("follows the released width" in note for note in plan.notes)


@pytest.mark.parametrize("n_jobs", [3, 9])
def test_a_width_following_model_is_composed_as_its_dominating_pair(n_jobs):
    """zeroth_order's own plan reads the width: it used to be calibrated after the
    release at the released width, against its exact event (a composition the budget does
    not cover).  Now its (epsilon_m, delta_m) share is fixed before any row, it certifies
    it at whatever width was released, and the pipeline composes the pair that dominates
    every (epsilon_m, delta_m)-DP release: one planned total for every width."""
    from skdp.accounting import DeltaDpEvent, compose, fitted_dp_event, pure_dp_event

    df, y = _jobs_table(n_jobs)
    target = np.clip(np.log(df["income"].to_numpy()) - 10.0, -1.0, 1.0)
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=1.0, solver="zeroth_order",
                                                      calibration="paper"),
                                 epsilon=1.0, numeric=["age", "income"],
                                 categorical=["job"], random_state=0)
    plan = pipe.plan(df)
    step = plan.step("model")
    # half the delta the category discovery's threshold leaves
    assert step.dominated and step.delta == pytest.approx(0.5 * (1e-6 - 5e-7))
    assert same_release(step.event, compose(pure_dp_event(step.epsilon),
                                            DeltaDpEvent(step.delta)))
    pipe.fit(df, target)
    model = pipe[-1]
    assert model.epsilon_ <= step.epsilon * (1 + 1e-9) and model.privacy_guaranteed_
    assert pipe.budget_split_["model"] == (step.epsilon, step.delta)
    assert same_release(fitted_dp_event(pipe), plan.planned_event)
    assert same_release(pipe.dp_event_, plan.planned_event)
    assert pipe.epsilon_ <= 1.0 and model.delta == 1e-6         # the user's delta is back
    # any view of the fitted steps composes the pair (it was read from the top-level plan
    # only: a slice composed the model's own event)
    from sklearn.pipeline import Pipeline

    for view in (pipe[:], Pipeline(pipe.steps), Pipeline([("inner", pipe)])):
        assert same_release(fitted_dp_event(view), plan.planned_event)
    # a refit of the model alone releases its own event again
    basis = pipe[:-1].transform(df)
    model.fit(basis, target)
    assert not same_release(fitted_dp_event(model), step.event)


def test_the_fixed_plan_is_the_same_every_time():
    """The nominal width comes from placeholder fits with a public seed: a plan that
    varied with their noise would not match the fit it plans (the fit plans again)."""
    df, _ = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1],
                                                      solver="objective_perturbation"),
                                 epsilon=0.5, numeric=["age", "income"],
                                 categorical=["job"]).set_params(model_plan="fixed")
    plans = [str(pipe.plan(df)) + repr(pipe.plan(df).planned_event) for _ in range(3)]
    assert plans[0] == plans[1] == plans[2]


def test_placeholder_fits_are_reused_only_for_the_same_probe(monkeypatch):
    """A repeated fit plans without refitting its placeholders (they cost as much as the
    transformers' own noise draws); any change of a parameter, the schema or n refits."""
    import skdp._plan as plan_module
    from skdp.preprocessing import DPSplineTransformer

    df, _ = _table()
    calls = []
    original = DPSplineTransformer.fit

    def counting_fit(self, X, y=None):
        calls.append(X.shape)
        return original(self, X, y)

    monkeypatch.setattr(DPSplineTransformer, "fit", counting_fit)
    monkeypatch.setattr(plan_module, "_PROBES", {})
    # the placeholder path (transformers without planned_event/planned_output take it)
    monkeypatch.setattr(plan_module, "analytic_prefix", lambda *args: None)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=0.7,
                                 numeric=["age", "income"], categorical=["job"])
    first = pipe.plan(df)
    n_first = len(calls)
    assert n_first >= 2                   # the events' and the width's placeholders
    assert str(pipe.plan(df)) == str(first) and len(calls) == n_first
    pipe.set_params(columns__numeric__n_knots=5)
    pipe.plan(df)
    assert len(calls) > n_first           # another parameter: another probe
    n_second = len(calls)
    pipe.plan(df.iloc[:2000])
    assert len(calls) > n_second          # another n


def _jobs_table(n_jobs, n=3000, seed=0):
    """``n`` rows whose ``job`` column has ``n_jobs`` common categories: a category
    discovery then releases a width that follows the rows."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    job = rng.choice([f"job{k}" for k in range(n_jobs)], n).astype(object)
    df = pd.DataFrame({"age": age, "job": job, "income": rng.lognormal(10, 1, n)})
    return df, ((age > 50) | (job == "job0")).astype(int)


@pytest.mark.parametrize("model", [
    DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
    DPLogisticRegression(classes=[0, 1], solver="dpsgd"),
    DPHuberRegressor(y_bound=1.0)])
def test_the_default_plan_fixes_the_models_event_before_any_row(model):
    """Under the default model_plan="adaptive" the model's event used to be calibrated
    after the release, at the released width: two tables whose discoveries released 3 and
    9 categories got models of different events (objective perturbation's alpha rule
    reads the width), each calibrated on its own -- a composition the budget does not
    cover (skdp.linear_model._budget.width_rule_pins).  Now the plan fixes it before any row,
    and both fits release the planned event."""
    released = []
    for n_jobs in (3, 9):
        df, y = _jobs_table(n_jobs)
        target = y if isinstance(model, DPLogisticRegression) else 2.0 * y - 1.0
        pipe = make_private_pipeline(clone(model), epsilon=1.0, numeric=["age", "income"],
                                     categorical=["job"], random_state=0)
        plan = pipe.plan(df)
        assert plan.planned_event is not None and plan.step("model").epsilon is not None
        pipe.fit(df, target)
        assert same_release(pipe[-1].dp_event_, plan.step("model").event)
        assert pipe.epsilon_ <= 1.0
        released.append((pipe[-1].dp_event_, pipe.budget_split_["model"],
                         pipe[-1].coef_.ravel()))
    assert len(released[0][2]) < len(released[1][2])     # the released widths differ
    assert same_release(released[0][0], released[1][0])
    assert released[0][1] == released[1][1]


def test_the_rules_read_the_planning_width_and_the_users_parameter_is_restored():
    """Under either plan the model's auto rules read the plan's public width
    (auto_n_features), not the released one; the user's parameter is back after the fit."""
    df, y = _jobs_table(9)
    for model_plan in ("adaptive", "fixed"):
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1], solver="dpsgd"),
                                     epsilon=1.0, numeric=["age", "income"],
                                     categorical=["job"], random_state=0)
        pipe.set_params(model_plan=model_plan).fit(df, y)
        plan = pipe.privacy_plan_
        assert plan.step("model").params["auto_n_features"] == plan.model_width
        assert pipe[-1].auto_n_features is None and pipe[-1].alpha == "auto"
        assert len(pipe[-1].coef_.ravel()) > plan.model_width     # 9 categories released


def test_a_fixed_plan_of_a_model_releasing_its_own_bound_meets_the_budget():
    """The fixed plan searched the model's share with its alpha rule resolved at the
    model's inner share, then pinned the alpha of the outer share (smaller: its objective
    perturbation costs more); the pipeline composed to 1.0001 > 1 and refused after its
    releases.  The share is now checked with the pins set."""
    df, _ = _table(20000)
    target = np.nan_to_num(df["age"].to_numpy(), nan=50.0) * 10.0
    pipe = make_private_pipeline(DPHuberRegressor(y_bound="auto", huber_threshold=50.0),
                                 epsilon=1.0, numeric=["age", "income"],
                                 categorical=["job"], random_state=0)
    pipe.set_params(model_plan="fixed").fit(df, target)
    assert 0.99 <= pipe.epsilon_ <= 1.0 and pipe.privacy_guaranteed_


def _configured_leaf(pipe, plan, estimator):
    """The unfitted step of class ``estimator`` with the share the plan gives it."""
    step = next(s for s in plan.steps if s.estimator == estimator)
    leaf = clone(pipe.get_params(deep=True)[step.path])
    return leaf.set_params(epsilon=step.epsilon, delta=step.delta)


@pytest.mark.parametrize("model", [
    DPNonconvexRegressor(y_bound=1.0),
    DPLogisticRegression(classes=[0, 1], solver="dpsgd")])
def test_the_planning_width_counts_the_public_estimate_of_categories(model, monkeypatch):
    """The planning width counts, per discovering column, the encoder's public estimate of
    its categories (planned_categories: a rule of n and its threshold), not zero -- and
    reads no row: two tables of one schema and n whose job column holds 2 and 40 values
    get one planning width and one planned event, which each fit releases, although the
    released widths differ.  The placeholder path plans the same width."""
    import skdp._plan as plan_module
    from skdp.linear_model._auto import planned_categories

    n = 20000
    plans, released = [], []
    for n_jobs in (2, 40):
        df, y = _jobs_table(n_jobs, n=n)
        target = y if isinstance(model, DPLogisticRegression) else 2.0 * y - 1.0
        pipe = make_private_pipeline(clone(model), epsilon=2.0, numeric=["age", "income"],
                                     categorical=["job"], random_state=0)
        plan = pipe.plan(df)
        encoder = _configured_leaf(pipe, plan, "DPOneHotEncoder")
        k = encoder.planned_categories(n, 1)
        assert k == planned_categories(n, encoder._calibration(n, 1)[4]) and k >= 2
        spline = _configured_leaf(pipe, plan, "DPSplineTransformer").planned_output(n, 2)
        assert plan.model_width == spline[1] + k + 2
        assert plan.step("model").params["auto_n_features"] == plan.model_width
        with monkeypatch.context() as m:             # the placeholder fits plan the same
            m.setattr(plan_module, "analytic_prefix", lambda *args: None)
            m.setattr(plan_module, "_PROBES", {})
            assert pipe.plan(df).model_width == plan.model_width
        pipe.fit(df, target)
        assert same_release(pipe[-1].dp_event_, plan.step("model").event)
        assert same_release(pipe.privacy_plan_.planned_event, plan.planned_event)
        plans.append(plan)
        released.append(len(pipe[-1].coef_.ravel()))
    assert plans[0].model_width == plans[1].model_width
    assert same_release(plans[0].planned_event, plans[1].planned_event)
    assert released[0] < released[1]
