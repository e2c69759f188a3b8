"""Private search and cross-validation over private pipelines on raw frames: the pipeline
is one DP step (its plan splits what the search hands it), its planned event is accounted
exactly (DP-SGD's subsampled steps in Renyi DP under replace-one, the thresholds' delta
once per fit), and the total covers every candidate's transformers and model, the scores
and the choice.  These configurations used to raise (UnsupportedDpEventError, a budget
error, or an event mismatch because the placeholder lost the categorical schema)."""

import math
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from skdp import (DPHuberRegressor, DPLogisticRegression, PrivatePipeline,  # noqa: E402
                  make_private_pipeline)
from skdp.accounting import rdp_epsilon  # noqa: E402
from skdp.model_selection import DPGridSearchCV, dp_cross_validate  # noqa: E402
from skdp.model_selection._common import placeholder_data  # noqa: E402
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer  # noqa: E402

SCHEMA = dict(numeric=["age", "income"], categorical=["job"])


def _table(n=2000, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    job = rng.choice(["clerk", "nurse", "driver"], n).astype(object)
    job[::37] = None
    income = rng.lognormal(10, 1, n)
    age[::41] = np.nan
    df = pd.DataFrame({"age": age, "job": job, "income": income})
    a = np.nan_to_num(age, nan=50.0)
    if classes == 2:
        y = ((a > 50) | (job == "nurse")).astype(int)
    else:
        y = np.digitize(a, [40, 65])
    return df, y


@pytest.mark.parametrize("make, grid", [
    (lambda: DPLogisticRegression(classes=[0, 1]),                     # dpsgd below 5
     {"model__alpha": [1e-3, 1e-2]}),
    (lambda: DPLogisticRegression(classes=[0, 1], solver="output_perturbation"),
     {"columns__numeric__n_knots": [4, 8]}),
    (lambda: DPLogisticRegression(classes=[0, 1], solver="phased"),
     {"model__alpha": [1e-2]}),
])
def test_search_over_the_private_pipeline(make, grid):
    df, y = _table()
    pipe = make_private_pipeline(make(), epsilon=1.0, **SCHEMA)
    search = DPGridSearchCV(pipe, grid, epsilon=1.0, random_state=0).fit(df, y)
    assert search.privacy_guaranteed_
    assert search.epsilon_ <= 1.0
    assert search.epsilon_ == rdp_epsilon(search.dp_event_, 1e-6)
    assert search.best_params_ in [dict(zip(grid, v)) for v in
                                   __import__("itertools").product(*grid.values())]
    # the selected pipeline predicts raw rows (strings, NaN) and is itself accounted
    assert search.best_estimator_.privacy_guaranteed_
    assert search.score(df, y) > 0.6


def test_search_over_multinomial_and_huber_pipelines():
    df, y3 = _table(classes=3)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1, 2]), epsilon=1.0,
                                 **SCHEMA)
    search = DPGridSearchCV(pipe, {"model__alpha": [1e-3, 1e-2]}, epsilon=1.0,
                            random_state=1).fit(df, y3)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 1.0
    target = np.log(df["income"].to_numpy()) - 10.0
    scorer = _mae()
    pipe = make_private_pipeline(DPHuberRegressor(y_bound=4.0), epsilon=2.0, **SCHEMA)
    # alphas above objective perturbation's privacy floor at the candidates' budget
    search = DPGridSearchCV(pipe, {"model__alpha": [0.05, 0.2]}, epsilon=2.0,
                            scoring=scorer, random_state=2).fit(df, target)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 2.0


def test_cross_validation_of_the_private_pipeline():
    """It used to report epsilon = inf: every fold's thresholds took half of delta."""
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 **SCHEMA)
    res = dp_cross_validate(pipe, df, y, epsilon=1.0, cv=4, random_state=0)
    assert res["privacy_guaranteed"] and res["epsilon"] <= 1.0
    assert res["epsilon"] > 0.9            # the calibration leaves little unspent
    assert res["test_score"].shape == (4,) and np.all(res["test_score"] > 0.5)


def test_hand_built_pipeline_with_discovered_categories():
    df, y = _table()
    from sklearn.compose import ColumnTransformer

    ct = ColumnTransformer([("n", DPSplineTransformer(), ["age", "income"]),
                            ("c", DPOneHotEncoder(), ["job"])])
    pipe = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", solver="dpsgd"))], epsilon=1.0)
    search = DPGridSearchCV(pipe, {"m__alpha": [1e-3, 1e-2],
                                   "ct__n__n_knots": [4, 6]},
                            epsilon=1.0, random_state=0).fit(df, y)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 1.0


def test_objective_perturbation_pipeline_is_pinned_and_searched():
    """Its event depends on the basis width through alpha="auto": the search fixes the
    pipeline's plan (model_plan="fixed"), whose model reads its rules at the nominal
    width (auto_n_features)."""
    df, y = _table()
    pipe = make_private_pipeline(
        DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
        epsilon=1.0, **SCHEMA)
    search = DPGridSearchCV(pipe, {"columns__numeric__n_knots": [4, 8]}, epsilon=1.0,
                            random_state=0).fit(df, y)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 1.0
    assert search.best_estimator_.model_plan == "fixed"
    pins = search.best_estimator_.privacy_plan_.step("model").params
    assert set(pins) == {"auto_n_features"}
    assert pins["auto_n_features"] == search.best_estimator_.privacy_plan_.model_width
    # the user's pipeline is untouched
    assert pipe.model_plan == "adaptive" and pipe[-1].alpha == "auto"


def test_a_model_whose_event_follows_the_width_is_refused_before_any_fit():
    from skdp import DPNonconvexRegressor

    df, _ = _table()
    target = np.log(df["income"].to_numpy()) - 10.0
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=4.0, solver="zeroth_order",
                                                      calibration="paper"),
                                 epsilon=1.0, **SCHEMA)
    with pytest.raises(ValueError, match="depends on the width"):
        dp_cross_validate(pipe, df, target, epsilon=1.0, cv=3, random_state=0,
                          scoring=_mae())


def _mae():
    from skdp.model_selection import make_private_scorer

    return make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=4.0,
                               greater_is_better=False)


def test_the_search_owns_the_pipelines_budget():
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), **SCHEMA)
    with pytest.raises(ValueError, match="epsilon"):
        DPGridSearchCV(pipe, {"epsilon": [0.5, 1.0]}, epsilon=1.0).fit(df, y)


def test_the_placeholder_keeps_the_schema():
    df, y = _table(50)
    Xd, _ = placeholder_data(df, y, 10, np.array([0, 1]))
    assert list(Xd.columns) == list(df.columns)
    assert list(Xd.dtypes) == list(df.dtypes)       # the object column stays an object
    assert Xd["job"].map(type).eq(str).all()


def test_the_searched_total_is_the_composition_of_what_ran():
    """Lower the search's budget: it still never reports more than it was given, and a
    candidate's pipeline got the per-fit budget the split says."""
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), **SCHEMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DPGridSearchCV(pipe, {"model__alpha": [1e-2]}, epsilon=0.5,
                                random_state=3).fit(df, y)
    assert search.epsilon_ <= 0.5 and math.isfinite(search.epsilon_)
    fit_eps = search.budget_split_["fit_epsilon_at_delta"]
    assert fit_eps < 0.5


def _every_solver():
    cases = []
    for s in ["auto", "dpsgd", "output_perturbation", "objective_perturbation", "phased",
              "resque"]:
        cases.append(("binary", s))
        cases.append(("huber", s))
        if s not in ("objective_perturbation", "resque"):   # binary-only solvers
            cases.append(("multinomial", s))
    cases.append(("nonconvex", "rrpsgd"))
    return cases


@pytest.mark.parametrize("kind, solver", _every_solver())
def test_cross_validation_over_the_pipeline_for_every_solver(kind, solver):
    """Every solver of the three estimators that fits in a pipeline is cross-validated
    within the total; multinomial objective perturbation and resque do not exist, and the
    nonconvex solvers whose event follows the width are refused (next test)."""
    from skdp import DPNonconvexRegressor

    df, y = _table(1500, classes=3 if kind == "multinomial" else 2)
    target = np.log(df["income"].to_numpy()) - 10.0
    make = {"binary": lambda: DPLogisticRegression(classes=[0, 1], solver=solver),
            "multinomial": lambda: DPLogisticRegression(classes=[0, 1, 2], solver=solver),
            "huber": lambda: DPHuberRegressor(y_bound=4.0, solver=solver),
            "nonconvex": lambda: DPNonconvexRegressor(y_bound=4.0, solver=solver)}[kind]
    regression = kind in ("huber", "nonconvex")
    res = dp_cross_validate(make_private_pipeline(make(), epsilon=1.0, **SCHEMA), df,
                            target if regression else y, epsilon=1.0, cv=3, random_state=0,
                            scoring=_mae() if regression else None)
    assert res["privacy_guaranteed"] and 0.9 < res["epsilon"] <= 1.0


@pytest.mark.parametrize("solver, match", [("zeroth_order", "follow the width"),
                                           ("spider", "training rows")])
def test_nonconvex_solvers_that_cannot_be_planned_say_why(solver, match):
    from skdp import DPNonconvexRegressor

    df, _ = _table(3000)      # zeroth-order's schedule follows the width from ~2000 rows
    target = np.log(df["income"].to_numpy()) - 10.0
    # at calibration="paper" zeroth-order's printed noise follows the width
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=4.0, solver=solver,
                                                      calibration="paper"),
                                 epsilon=1.0, **SCHEMA)
    with pytest.raises(ValueError, match=match):
        dp_cross_validate(pipe, df, target, epsilon=1.0, cv=3, random_state=0,
                          scoring=_mae())


def test_zeroth_order_is_cross_validated_on_one_privacy_profile():
    """At calibration="tight" its Gaussian steps' number follows the width but their total
    Gaussian-DP mu does not: one privacy profile at every width, which the search and the
    plan compare (it was refused as following the width)."""
    from skdp import DPNonconvexRegressor

    df, _ = _table(3000)
    target = np.log(df["income"].to_numpy()) - 10.0
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=4.0, solver="zeroth_order"),
                                 epsilon=1.0, **SCHEMA)
    res = dp_cross_validate(pipe, df, target, epsilon=1.0, cv=3, random_state=0,
                            scoring=_mae())
    assert res["privacy_guaranteed"] and 0.9 < res["epsilon"] <= 1.0


def test_the_default_nonconvex_pipeline_is_cross_validated():
    """warm_gd's event followed the width (its warm start's alpha rule and its skip rule
    read it) and was refused here; with its rules read at the plan's width it is fixed."""
    from skdp import DPNonconvexRegressor

    df, _ = _table(3000)
    target = np.log(df["income"].to_numpy()) - 10.0
    pipe = make_private_pipeline(DPNonconvexRegressor(y_bound=4.0), epsilon=1.0, **SCHEMA)
    res = dp_cross_validate(pipe, df, target, epsilon=1.0, cv=3, random_state=0,
                            scoring=_mae())
    assert res["privacy_guaranteed"] and 0.9 < res["epsilon"] <= 1.0


# ---- audit F1: a returned pipeline carried its fit's seed and derived keys -------------


def _fitted_seeds(pipe):
    """Every random_state in ``pipe``'s parameters and in the ColumnTransformer's fitted
    blocks (clones fitted with the keys of the fit), and the keys of its privacy_plan_."""
    from sklearn.compose import ColumnTransformer

    def seeds_of(obj):
        return [v for k, v in obj.get_params(deep=True).items()
                if k == "random_state" or k.endswith("__random_state")]

    seeds = seeds_of(pipe)
    for _, step in pipe.steps:
        if isinstance(step, ColumnTransformer):
            seeds += [s for _, block, _ in step.transformers_ if hasattr(block, "get_params")
                      for s in seeds_of(block)]
    return seeds, [s.key for s in pipe.privacy_plan_.steps]


def _raw_neighbour(df, y):
    dfp, yp = df.copy(), y.copy()
    dfp.loc[0, "age"] = 80.0
    yp[0] = 1 - y[0]
    return dfp, yp


def test_a_returned_pipeline_does_not_reproduce_its_release():
    """The audit's attack on a pipeline candidate: the released pipeline's random_state
    (and the keys of its privacy_plan_) reproduced its release when refitted on D.  With
    random_state=None every step keys its noise from the OS: the pipeline carries the
    user's None and no key, and a refit does not reproduce it."""
    from sklearn.base import clone

    df, y = _table(1000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1],
                                                      solver="output_perturbation"),
                                 **SCHEMA)
    search = DPGridSearchCV(pipe, {"model__alpha": [0.01, 0.1]}, epsilon=2.0,
                            random_state=None).fit(df, y)
    best = search.best_estimator_
    seeds, keys = _fitted_seeds(best)
    assert seeds == [None] * len(seeds) and keys == [None] * len(keys)
    for rows in [(df, y), _raw_neighbour(df, y)]:
        assert not np.array_equal(clone(best).fit(*rows)[-1].coef_, best[-1].coef_)


def test_a_seeded_search_withholds_the_derived_keys():
    """random_state=int: the pipeline is given back its user's parameters, and the keys
    its plan derived from the search's seed are withheld from privacy_plan_ (a model
    handed on without the search would otherwise carry the keys of its noise)."""
    from skdp.model_selection._common import WITHHELD_KEY

    df, y = _table(1000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1],
                                                      solver="output_perturbation"),
                                 **SCHEMA)
    runs = [DPGridSearchCV(pipe, {"model__alpha": [0.01, 0.1]}, epsilon=2.0,
                           random_state=4).fit(df, y) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].best_estimator_[-1].coef_,
                                  runs[1].best_estimator_[-1].coef_)
    seeds, keys = _fitted_seeds(runs[0].best_estimator_)
    assert seeds == [None] * len(seeds)
    plan = runs[0].best_estimator_.privacy_plan_
    assert [s.key for s in plan.releases] == [WITHHELD_KEY] * len(plan.releases)
    assert "key=derived" in str(plan)


def test_equal_keys_across_fits_are_refused(monkeypatch):
    """Keys each fit's plan derives are distinct within the fit; across the fits of one
    search they are compared too, and a repeated key is refused before any release."""
    import hashlib

    import skdp._plan as plan_module

    def path_only(pipeline_seed, step_seed, path):      # ignores the per-fit seed
        return None if pipeline_seed is None else \
            int.from_bytes(hashlib.sha256(path.encode()).digest()[:4], "little")

    monkeypatch.setattr(plan_module, "derive_key", path_only)
    df, y = _table(600)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1],
                                                      solver="output_perturbation"),
                                 **SCHEMA)
    search = DPGridSearchCV(pipe, {"model__alpha": [0.01]}, epsilon=2.0, random_state=0)
    with pytest.raises(ValueError, match="same noise key"):
        search.fit(df, y)
    assert not hasattr(search, "best_params_")


def test_search_over_a_pipeline_with_public_categories():
    """Audit finding (F5a): with public category lists the fitted pipeline's event held
    the encoder's ``NoOpDpEvent`` and the plan's did not; the search compared the trees
    and stopped with 'its noise depends on the data (a privacy bug)'.  A NoOp releases
    nothing and is not compared."""
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 categories={"job": ["clerk", "nurse", "driver"]},
                                 random_state=0, **SCHEMA)
    search = DPGridSearchCV(pipe, {"model__alpha": [0.01, 0.1]}, epsilon=2.0,
                            delta=1e-6, random_state=0).fit(df, y)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 2.0


def test_a_plain_pipeline_whose_thresholds_exceed_delta_is_refused_clearly():
    """A discovering DPOneHotEncoder in a scikit-learn Pipeline takes the whole per-fit
    delta, and its threshold's delta adds up over the fits: no per-fit budget fits, and
    the search lowered it until a step's epsilon was 0.0, then failed in the encoder's
    parameter validation (InvalidParameterError); now a BudgetExceededError that says
    why, before any fit."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp.exceptions import BudgetExceededError

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"job": rng.choice(["a", "b", "c"], 3000).astype(object),
                       "x": rng.uniform(-1, 1, 3000)})
    y = ((df["job"] == "b") ^ (df["x"] > 0)).astype(int).to_numpy()
    encoder = DPOneHotEncoder(epsilon=0.3, random_state=1)
    pipe = Pipeline([("ct", ColumnTransformer([("ohe", encoder, ["job"]),
                                               ("num", "passthrough", ["x"])])),
                     ("m", DPLogisticRegression(classes=[0, 1], epsilon=0.8, data_norm=2.0,
                                                random_state=2))])
    search = DPGridSearchCV(pipe, {"m__alpha": ["auto"]}, epsilon=2.0, cv=2,
                            random_state=0)
    with pytest.raises(BudgetExceededError, match="delta"):
        search.fit(df, y)
    assert not hasattr(search, "best_index_") and not hasattr(encoder, "categories_")


def _row_reading_selector(seen):
    """The audit's selector (F1): column "a" if some value of "a" exceeds 10, else "b";
    ``seen`` records whether a frame it was called with held a private row (the
    placeholders hold zeros)."""
    def select(df):
        seen.append(bool((df["a"] != 0).any()))
        return ["a"] if (df["a"] > 10).any() else ["b"]
    return select


@pytest.mark.parametrize("procedure", ["search", "cross_validate"])
def test_a_selector_that_can_read_rows_is_refused_before_any_fit(procedure):
    """Audit finding (F1): DPGridSearchCV over a scikit-learn Pipeline whose
    ColumnTransformer routed a column with a function of the rows accepted it and
    returned privacy_guaranteed_=True (the routing followed one row, no noise).  The
    search's probe reads the placeholder fit with fitted_dp_event, which now refuses an
    unverified selector: the function never sees a private row, nothing is fitted."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 3000), rng.uniform(0, 1, 3000)
    a[-1] = 100.0
    X, y = pd.DataFrame({"a": a, "b": b}), (a > 0.5).astype(int)
    seen = []
    scaler = DPStandardScaler(feature_bounds=(0.0, 1.0))
    pipe = Pipeline([("ct", ColumnTransformer([("num", scaler, _row_reading_selector(seen))],
                                              sparse_threshold=0)),
                     ("model", DPLogisticRegression(classes=[0, 1], data_norm=1.0))])
    with pytest.raises(TypeError, match="selects the columns of block 'num' with"):
        if procedure == "search":
            DPGridSearchCV(pipe, {"model__alpha": [0.01, 0.1]}, epsilon=2.0,
                           random_state=0).fit(X, y)
        else:
            dp_cross_validate(pipe, X, y, epsilon=2.0, cv=2, random_state=0)
    assert seen and not any(seen)
