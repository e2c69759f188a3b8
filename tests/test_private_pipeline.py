"""make_private_pipeline / PrivatePipeline: one budget for a raw table, composition through
ColumnTransformer and FeatureUnion, data_norm='auto', and neighbours that change nothing
public."""

import math
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

# these tests leave the schema to the dtypes on purpose (tests/test_privacy_plan.py checks
# the message that says so)
pytestmark = pytest.mark.filterwarnings(
    "ignore:make_private_pipeline inferred the public schema")

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.pipeline import make_pipeline, make_union  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from skdp import DPHuberRegressor, DPLogisticRegression, make_private_pipeline  # noqa: E402
from skdp._pipeline import PrivatePipeline  # noqa: E402
from skdp.accounting import compose, fitted_dp_event, get_epsilon  # noqa: E402
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer  # noqa: E402


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    job = rng.choice(["clerk", "nurse", "driver"], n).astype(object)
    income = rng.lognormal(10, 1, n)
    age[::40] = np.nan
    df = pd.DataFrame({"age": age, "job": job, "income": income})
    y = ((np.nan_to_num(age, nan=50) > 50) | (job == "nurse")).astype(int)
    return df, y


def test_one_budget_for_the_whole_pipeline():
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 random_state=0).fit(df, y)
    assert pipe.privacy_guaranteed_
    assert 0.99 <= pipe.epsilon_ <= 1.0
    assert pipe.delta_ == 1e-6
    steps = pipe.named_steps["columns"].named_transformers_
    events = [steps["numeric"].dp_event_, steps["categorical"].dp_event_,
              pipe.named_steps["model"].dp_event_]
    assert get_epsilon(compose(*events), 1e-6) == pipe.epsilon_
    split = pipe.budget_split_
    assert set(split) == {"columns__numeric", "columns__categorical", "model", "mu_shares"}
    # data_norm="auto" took the basis bound: 2 numeric + 1 categorical column
    assert pipe.named_steps["model"].data_norm_ == pytest.approx(math.sqrt(3))
    assert pipe.score(df, y) > 0.8


@pytest.mark.parametrize("bad", [
    {"age": 1e300, "job": "a new job", "income": -1e300},
    {"age": np.nan, "job": "", "income": np.nan},
    {"age": -np.inf, "job": None, "income": np.inf},
])
def test_extreme_row_changes_nothing_public(bad):
    df, y = _table()
    ref = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                random_state=0).fit(df, y)
    df2 = df.copy()
    df2.loc[7] = bad
    other = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                  random_state=0).fit(df2, 1 - y)
    a = ref.named_steps["columns"].named_transformers_
    b = other.named_steps["columns"].named_transformers_
    for name in ("numeric", "categorical"):
        for attr in ("epsilon_", "noise_scale_", "sensitivity_", "output_norm_bound_",
                     "dp_event_"):
            assert getattr(a[name], attr) == getattr(b[name], attr), (name, attr)
    assert b["categorical"].categories_ == [["clerk", "driver", "nurse"]]
    assert other.privacy_guaranteed_ and other.epsilon_ <= 1.0
    assert other.named_steps["model"].data_norm_ == ref.named_steps["model"].data_norm_


def test_regressor_and_public_categories():
    df, _ = _table(20000)
    target = np.nan_to_num(df["age"].to_numpy(), nan=50.0) / 90.0
    pipe = make_private_pipeline(DPHuberRegressor(y_bound=1.0), epsilon=2.0,
                                 categories=[["clerk", "nurse", "driver"]],
                                 random_state=0).fit(df, target)
    assert 0.99 * 2.0 <= pipe.epsilon_ <= 2.0
    assert "columns__categorical" not in pipe.budget_split_     # public list: free
    assert pipe.score(df, target) > 0.3      # the constant predictor has R^2 = 0


def test_hand_composed_pipeline_with_column_transformer_and_union():
    df, y = _table()
    pre = make_column_transformer(
        (make_union(DPSplineTransformer(n_knots=6), DPSplineTransformer(degree=0)),
         ["age", "income"]),
        (DPOneHotEncoder(), ["job"]))
    pipe = PrivatePipeline([("pre", pre), ("model", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", random_state=0))], epsilon=1.0).fit(df, y)
    # three DP transformers read the same rows: sequential composition of all of them
    assert len(pipe.budget_split_["mu_shares"]) == 3
    assert pipe.epsilon_ <= 1.0 and pipe.privacy_guaranteed_
    # the union's bound is the root of the sum of its blocks' squared bounds
    assert pipe.named_steps["model"].data_norm_ == pytest.approx(math.sqrt(2 + 2 + 1))


def test_non_private_step_voids_the_guarantee():
    df, y = _table()
    pre = make_column_transformer((StandardScaler(), ["income"]), (DPOneHotEncoder(), ["job"]))
    pre.fit(df, y)
    with pytest.raises(TypeError, match="StandardScaler"):
        fitted_dp_event(pre)


def test_public_one_hot_encoder_is_data_free():
    df, y = _table()
    public = OneHotEncoder(categories=[["clerk", "nurse", "driver"]], handle_unknown="ignore")
    # sparse_threshold=0: scikit-learn's 0.3 would pick the format from how many rows
    # hold a known category (test_privacy_plan: the density decides the format)
    pipe = make_pipeline(make_column_transformer((public, ["job"]), sparse_threshold=0),
                         DPLogisticRegression(classes=[0, 1], data_norm=1.0)).fit(df, y)
    assert fitted_dp_event(pipe) == pipe[-1].dp_event_      # the encoder adds nothing
    learnt = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["job"]),
                                     sparse_threshold=0)
    with pytest.raises(TypeError, match="OneHotEncoder"):
        fitted_dp_event(learnt.fit(df))
    raising = make_column_transformer((OneHotEncoder(categories=[["clerk"]]), ["job"]),
                                      sparse_threshold=0)
    with pytest.raises(TypeError):   # an unknown value would raise: not data-free
        fitted_dp_event(raising.fit(df[df.job == "clerk"]))


def test_data_norm_auto_needs_a_bound_from_the_previous_steps():
    df, y = _table()
    pre = make_column_transformer((DPOneHotEncoder(), ["job"]), remainder="passthrough")
    pipe = PrivatePipeline([("pre", pre), ("model", DPLogisticRegression(
        classes=[0, 1], data_norm="auto"))], epsilon=1.0)
    with pytest.raises(ValueError, match="no public output bound|have none"):
        pipe.fit(df.fillna(0.0).drop(columns="job").assign(job=df["job"]), y)
    assert not hasattr(pipe, "dp_event_") and not hasattr(pipe[-1], "coef_")


@pytest.mark.parametrize("rows", [0, 1])
def test_too_few_rows_are_refused_before_any_release(rows):
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        pipe.fit(df.iloc[:rows], y[:rows])
    assert not hasattr(pipe.named_steps["columns"], "transformers_")


BAD_EPSILONS = [0.0, -1.0, math.inf, math.nan, "1", True, None]
BAD_DELTAS = [0.0, 1.0, -1e-6, math.nan, "1e-6", True]


@pytest.mark.parametrize("eps", BAD_EPSILONS)
def test_bad_budget_is_refused(eps):
    """By the factory, whose rules read epsilon (a string used to reach them as a
    TypeError), and by the fit of a pipeline whose epsilon was set afterwards, before
    any row is read."""
    df, y = _table(200)
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=eps)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0)
    pipe.set_params(epsilon=eps)
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        pipe.fit(df, y)
    assert not hasattr(pipe.named_steps["columns"], "transformers_")


@pytest.mark.parametrize("delta", BAD_DELTAS)
def test_bad_delta_is_refused(delta):
    """A string delta used to be converted with float() and accepted; a bool is no
    delta either."""
    df, y = _table(200)
    with pytest.raises(ValueError, match=r"delta must be a number in \(0, 1\)"):
        make_private_pipeline(DPLogisticRegression(classes=[0, 1]), delta=delta)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), delta=1e-6)
    pipe.set_params(delta=delta)
    with pytest.raises(ValueError, match=r"delta must be a number in \(0, 1\)"):
        pipe.fit(df, y)
    assert not hasattr(pipe.named_steps["columns"], "transformers_")


def test_pipeline_with_data_free_steps_only_and_fit_params():
    df, y = _table()
    public = make_column_transformer(
        (OneHotEncoder(categories=[["clerk", "nurse", "driver"]], handle_unknown="ignore",
                       sparse_output=False), ["job"]))
    pipe = PrivatePipeline([("pre", public), ("model", DPLogisticRegression(
        classes=[0, 1], data_norm=1.0, random_state=0))], epsilon=1.0).fit(df, y)
    assert pipe.epsilon_ <= 1.0 and pipe.budget_split_["model"][0] == 1.0
    with pytest.raises(TypeError, match="fit parameters"):
        pipe.fit(df, y, model__sample_weight=np.ones(len(y)))


def test_polars_table():
    pl = pytest.importorskip("polars")
    df, y = _table()
    frame = pl.from_pandas(df)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 random_state=0).fit(frame, y)
    ref = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                random_state=0).fit(df, y)
    np.testing.assert_array_equal(pipe.predict(frame), ref.predict(df))
    assert pipe.budget_split_ == ref.budget_split_


def test_regressor_releasing_its_target_bound_inside_the_budget():
    df, _ = _table(20000)
    target = np.nan_to_num(df["age"].to_numpy(), nan=50.0) * 10.0
    target[0] = 1e300                                  # clipped to the released y_bound_
    pipe = make_private_pipeline(DPHuberRegressor(y_bound="auto", huber_threshold=50.0),
                                 epsilon=1.0, random_state=0).fit(df, target)
    model = pipe.named_steps["model"]
    assert 0.99 <= pipe.epsilon_ <= 1.0 and pipe.privacy_guaranteed_
    assert set(pipe.budget_split_) >= {"model", "model bounds", "columns__numeric"}
    assert 300.0 < model.y_bound_ < 1000.0               # a high quantile of |y| (18..89 x 10)
    assert len(pipe.dp_event_.events) >= 4                # knots, categories, bound, model
    assert pipe.score(df[1:], target[1:]) > 0.3


def test_a_final_search_is_refused_before_anything_is_fitted():
    """It used to spend its own budget on top of the pipeline's, with a warning after the
    releases; the plan refuses it first (its selection cannot be split by the plan)."""
    from skdp.model_selection import DPGridSearchCV

    df, y = _table(4000)
    pre = make_column_transformer((DPSplineTransformer(), ["age", "income"]),
                                  (DPOneHotEncoder(), ["job"]))
    search = DPGridSearchCV(DPLogisticRegression(classes=[0, 1], data_norm=2.0),
                            {"alpha": [0.01, 0.1]}, epsilon=1.0, random_state=0)
    pipe = PrivatePipeline([("pre", pre), ("search", search)], epsilon=1.0)
    with pytest.raises(TypeError, match="put the pipeline inside the search|Put the pipeline"):
        pipe.fit(df, y)
    assert not hasattr(pre, "transformers_")      # nothing was fitted
    assert not hasattr(search, "best_index_")


@pytest.mark.parametrize("make, epsilon", [
    (lambda: DPLogisticRegression(classes=[0, 1]), 1.0),      # dpsgd in a pipeline below 5
    (lambda: DPLogisticRegression(classes=[0, 1]), 8.0),      # objective perturbation
    (lambda: DPHuberRegressor(y_bound=3.0), 2.0),
])
def test_sparse_design_fits_the_dense_design_bit_for_bit(make, epsilon):
    """The default pipeline hands these models a CSR design (spline basis built sparse,
    one-hot block stacked on it): the same released model, bit for bit, as the dense
    design, and the same public bound."""
    import scipy.sparse as sp

    df, y = _table(3000)
    target = y if isinstance(make(), DPLogisticRegression) else \
        np.log(df["income"].to_numpy()) - 10.0 + y
    fits = {}
    for sparse in ("auto", False):
        pipe = make_private_pipeline(make(), epsilon=epsilon, sparse_design=sparse,
                                     random_state=4).fit(df, target)
        fits[sparse] = pipe
    assert sp.issparse(fits["auto"][:-1].transform(df.iloc[:10]))
    assert not sp.issparse(fits[False][:-1].transform(df.iloc[:10]))
    a, b = fits["auto"][-1], fits[False][-1]
    assert a.solver_ == b.solver_
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert a.data_norm_ == b.data_norm_ and fits["auto"].epsilon_ == fits[False].epsilon_


def test_sparse_design_rule_is_public():
    from skdp.linear_model._auto import pipeline_sparse_design
    from skdp import DPNonconvexRegressor

    assert pipeline_sparse_design(DPLogisticRegression(classes=[0, 1]))
    assert pipeline_sparse_design(DPHuberRegressor())
    assert not pipeline_sparse_design(DPHuberRegressor(huber_threshold=0.0))   # phased
    assert not pipeline_sparse_design(DPLogisticRegression(solver="phased"))
    assert not pipeline_sparse_design(DPNonconvexRegressor())
    with pytest.raises(ValueError, match="sparse_design"):
        make_private_pipeline(DPHuberRegressor(), sparse_design="yes")


def test_one_hot_encoder_sparse_output_is_the_dense_output():
    import scipy.sparse as sp

    df, _ = _table(500)
    df = df[["job"]].copy()
    df.loc[::7, "job"] = None
    dense = DPOneHotEncoder(categories=[["clerk", "nurse"]]).fit(df)
    sparse = DPOneHotEncoder(categories=[["clerk", "nurse"]], sparse_output=True).fit(df)
    S = sparse.transform(df)
    assert sp.isspmatrix_csr(S) and S.has_canonical_format and S.nnz == len(df)
    assert np.array_equal(S.toarray(), dense.transform(df))


def test_polars_null_row_does_not_change_other_rows_categories():
    """The audit's finding: one null in a polars Int64 column made FrameToPandas turn the
    column into float64, rounding 1000 other rows' ``2**53 + 1`` to ``2**53``: the
    released category changed with certainty.  Both neighbours now release it exactly."""
    pl = pytest.importorskip("polars")
    big = 2**53 + 1
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=2000).tolist(), (rng.random(2000) < 0.5).astype(int)
    accounts = [big] * 1000 + [7] * 1000
    released = []
    for column in (accounts, accounts[:-1] + [None]):
        frame = pl.DataFrame({"account": column, "x": x},
                             schema={"account": pl.Int64, "x": pl.Float64})
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=2.0,
                                     numeric=["x"], categorical=["account"],
                                     random_state=0).fit(frame, y)
        released.append(pipe.named_steps["columns"].named_transformers_["categorical"]
                        .categories_)
    assert released[0] == released[1] == [[7, big]]


def test_a_refit_checks_the_keys_of_its_own_plan_before_fitting(monkeypatch):
    """Audit finding (F6), second line of defence: with one encoder object at two paths
    (the plan's refusal of it switched off here) the steps' keys read back from the
    configured pipeline differ from the plan's.  The accounting used to read the previous
    fit's plan: after a fit with keys from the OS, the seeded refit was accepted, both
    blocks drawing one noise.  The refit is now refused before any noise stream is opened,
    and the previous fit is kept."""
    from tests._noise_keys import record_keys
    from tests.test_privacy_plan import _one_encoder_in_two_blocks

    import skdp._plan

    monkeypatch.setattr(skdp._plan, "_refuse_aliased_steps", lambda leaves, kinds: None,
                        raising=False)
    pipe, _, df, y = _one_encoder_in_two_blocks()
    pipe.set_params(random_state=None).fit(df, y)
    before = pipe.privacy_plan_
    keys = record_keys(monkeypatch)
    with pytest.raises(ValueError, match="'ct__a' .*key"):
        pipe.set_params(random_state=0).fit(df, y)
    assert keys == []
    assert pipe.privacy_plan_ is before


def test_a_public_encoder_before_objective_perturbation_stays_within_the_budget():
    """Audit finding (F5b): with a public-category encoder as the only other step, the
    plan gives the model the whole epsilon (nothing is released before it) and the model
    certifies exactly epsilon, but the pipeline counted the encoder's ``NoOpDpEvent`` as
    a second release and composed the model's looser zCDP record: BudgetExceededError
    (1.154 > 1) after the fit.  It counts one release now."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.choice(list("pqr"), 3000)})
    y = (X["c"].eq("p") ^ (rng.random(3000) < 0.2)).astype(int).to_numpy()
    pipe = PrivatePipeline(
        [("enc", DPOneHotEncoder(categories=[list("pqr")], sparse_output=False)),
         ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto",
                                        solver="objective_perturbation"))],
        epsilon=1.0, delta=1e-6, random_state=0).fit(X, y)
    assert pipe.epsilon_ <= 1.0
    assert pipe.epsilon_ == pipe[-1].epsilon_
    assert pipe.dp_event_ is pipe[-1].dp_event_


def test_a_slice_is_a_view_that_keeps_the_budget_and_refuses_fit(tmp_path):
    """``pipe[:-1]`` used to be ``PrivatePipeline(epsilon=1.0, privacy_ledger=None)`` over
    the parent's step objects: its fit refitted them at the default budget, charged no
    ledger, and left the parent reporting its earlier fit (audit, failed before).  A
    slice now carries the parent's budget and ledger, transforms as before, refuses
    ``fit``; a clone of it is planned and charged like any pipeline."""
    from sklearn.base import clone

    from skdp.accounting import PrivacyLedger

    df, y = _table(2000)
    ledger = PrivacyLedger(epsilon=3.0, delta=1e-5, path=str(tmp_path / "ledger"))
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=0.5,
                                 delta=1e-7, random_state=0)
    pipe.set_params(privacy_ledger=ledger).fit(df, y)
    head = pipe[:-1]
    assert isinstance(head, PrivatePipeline)
    params = head.get_params(deep=False)
    assert (params["epsilon"], params["delta"], params["privacy_ledger"]) == (
        0.5, 1e-7, ledger)
    assert params["random_state"] is None
    def dense(Z):
        return Z.toarray() if hasattr(Z, "toarray") else np.asarray(Z)

    np.testing.assert_array_equal(dense(head.transform(df)),
                                  dense(pipe.named_steps["columns"].transform(df)))
    for fit in (head.fit, head.fit_transform):
        with pytest.raises(TypeError, match="slice of another one"):
            fit(df, y)
    assert len(ledger) == 1 and pipe[-1] is pipe.steps[-1][1]
    copy = clone(head).fit(df, y)
    assert copy.epsilon_ <= 0.5 * (1 + 1e-9) and len(ledger) == 2
    ledger.close()


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("extreme", [0.5, 1e200])
def test_a_data_free_step_overflowing_on_one_row_reports_nothing(extreme, n_jobs):
    """``PolynomialFeatures`` squares a finite 1e200 to inf: numpy reported "overflow
    encountered in multiply" on that dataset only -- an exception under
    ``simplefilter("error")`` (audit, failed before).  A private pipeline, a private
    search and cross-validation over one now fit it silently (the DP spline maps the inf
    into its basis), exactly as the neighbour with an ordinary row."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from skdp.model_selection import DPGridSearchCV, dp_cross_validate

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 2))
    y = (X[:, 0] > 0).astype(int)
    X[-1, 0] = extreme

    def steps():
        # n_jobs=2: joblib's workers do not inherit the fit's numpy state (review; the
        # container's blocks now run on the calling thread during a private fit)
        poly = make_union(PolynomialFeatures(2), n_jobs=n_jobs)
        return [("poly", poly),
                ("spline", DPSplineTransformer(feature_bounds=[(-2, 2)] * 6)),
                ("model", DPLogisticRegression(classes=[0, 1], data_norm=3.0))]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe = PrivatePipeline(steps(), epsilon=1.0, random_state=0).fit(X, y)
        assert pipe.privacy_guaranteed_ and pipe[0].n_jobs == n_jobs   # restored
        search = DPGridSearchCV(Pipeline(steps()),
                                {"model__alpha": [0.01, 0.1]}, epsilon=1.0,
                                random_state=0).fit(X, y)
        assert search.privacy_guaranteed_
        res = dp_cross_validate(Pipeline(steps()), X, y, epsilon=1.0,
                                cv=2, random_state=0)
        assert res["privacy_guaranteed"]
