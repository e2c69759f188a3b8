"""Looking inside a private pipeline with scikit-learn's own tools: feature names through
``pipe[:-1]``, pandas output (a dense design, the same released model and plan), and
partial dependence."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import sklearn  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402

from skdp import (DPLogisticRegression, DPStandardScaler, PrivatePipeline,  # noqa: E402
                  make_private_pipeline)
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler,  # noqa: E402
                                DPSplineTransformer, FrameToPandas,
                                RowwiseFunctionTransformer)

N = 2500
_rng = np.random.default_rng(0)
DF = pd.DataFrame({
    "age": _rng.integers(18, 90, N),                     # int64, as load_adult's
    "hours": _rng.lognormal(3.5, 0.4, N),
    "score": _rng.uniform(-1, 1, N),
    "job": _rng.choice(["clerk", "nurse", "driver"], N).astype(object),
})
DF.loc[::17, "hours"] = np.nan
Y = ((DF["age"] > 45) ^ (DF["job"] == "nurse")).astype(int).to_numpy()


def _auto(**kw):
    return make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=2.0,
                                 numeric=["age", "hours", "score"], categorical=["job"],
                                 random_state=0, **kw)


def _hand_built():
    return PrivatePipeline([
        ("frame", FrameToPandas()),
        ("columns", ColumnTransformer([
            ("tanh", Pipeline([("tanh", RowwiseFunctionTransformer(np.tanh)),
                               ("spline", DPSplineTransformer(n_knots=5, degree=1,
                                                              sparse_output=True))]),
             ["score"]),
            ("robust", DPRobustScaler(), ["hours"]),
            ("standard", DPStandardScaler(feature_bounds=(18.0, 90.0)), ["age"]),
            ("onehot", DPOneHotEncoder(sparse_output=True), ["job"]),
        ], sparse_threshold=1.0)),
        ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto"))],
        epsilon=2.0, random_state=0)


@pytest.mark.parametrize("make", [_auto, _hand_built], ids=["make_private", "hand_built"])
def test_feature_names_out_through_the_transformers(make):
    pipe = make().fit(DF, Y)
    names = pipe[:-1].get_feature_names_out()
    design = pipe[:-1].transform(DF)
    assert len(names) == design.shape[1] == pipe[-1].n_features_in_
    assert len(set(names)) == len(names)
    for column in DF.columns:
        assert any(column in n for n in names) or column == "score"
    assert any(n.endswith("job_missing") for n in names)
    assert any(n.endswith("job_other") for n in names)


def test_every_skdp_transformer_names_its_outputs_like_sklearn():
    X = pd.DataFrame({"a": [0.1, 0.5, 0.9, 0.3] * 100, "b": [1.0, 2.0, 3.0, 4.0] * 100})
    for t in (DPSplineTransformer(n_knots=3, random_state=0), DPRobustScaler(random_state=0),
              DPStandardScaler(feature_bounds=(0.0, 5.0), random_state=0),
              RowwiseFunctionTransformer(), RowwiseFunctionTransformer(np.sum),
              FrameToPandas(), DPOneHotEncoder(categories=[[0.1, 0.5], [1, 2]])):
        t.fit(X)
        names = t.get_feature_names_out()
        assert len(names) == np.asarray(t.transform(X)).shape[1], type(t).__name__
        # scikit-learn's convention: given names must be the fitted ones
        with pytest.raises(ValueError):
            t.get_feature_names_out(["other", "names"])
        # without fitted names: "x0", "x1", ... or the names given
        t.fit(X.to_numpy())
        if t.func is not None if isinstance(t, RowwiseFunctionTransformer) else False:
            continue
        assert str(t.get_feature_names_out()[0]).startswith("x0")
        assert str(t.get_feature_names_out(["p", "q"])[0]).startswith("p")
    assert list(RowwiseFunctionTransformer(np.sum).fit(X).get_feature_names_out()) == [
        "rowwisefunctiontransformer0"]

    def needs_positive(row):
        if not (row > 0).all():
            raise ArithmeticError("positive values only")
        return np.log(row)

    with pytest.raises(ValueError, match="give feature_names_out"):
        RowwiseFunctionTransformer(needs_positive).fit(X).get_feature_names_out()
    assert list(DPOneHotEncoder(categories=[[1, 2]]).fit(X[["b"]])
                .get_feature_names_out()) == ["b_1", "b_2", "b_other", "b_missing"]


@pytest.mark.parametrize("make", [_auto, _hand_built], ids=["make_private", "hand_built"])
def test_pandas_output_gives_a_dense_design_and_the_same_release(make):
    plain = make().fit(DF, Y)
    framed = make().set_output(transform="pandas").fit(DF, Y)
    design = framed[:-1].transform(DF)
    assert isinstance(design, pd.DataFrame)
    assert list(design.columns) == list(framed[:-1].get_feature_names_out())
    sparse = plain[:-1].transform(DF)
    np.testing.assert_array_equal(design.to_numpy(), sparse.toarray())
    # the same release: plan, every step's event and parameters, the model bit for bit
    assert str(framed.privacy_plan_) == str(plain.privacy_plan_)
    assert framed.dp_event_ == plain.dp_event_ and framed.epsilon_ == plain.epsilon_
    assert framed.budget_split_ == plain.budget_split_
    np.testing.assert_array_equal(framed[-1].coef_, plain[-1].coef_)
    np.testing.assert_array_equal(framed[-1].intercept_, plain[-1].intercept_)
    # scores: a dense against a sparse product, equal up to the order of the sums
    np.testing.assert_allclose(framed.decision_function(DF), plain.decision_function(DF),
                               rtol=1e-12, atol=1e-12)
    # the global configuration does the same
    with sklearn.config_context(transform_output="pandas"):
        configured = make().fit(DF, Y)
        assert isinstance(configured[:-1].transform(DF.head()), pd.DataFrame)
    np.testing.assert_array_equal(configured[-1].coef_, plain[-1].coef_)


def test_sparse_transformers_go_dense_only_when_a_frame_is_asked_for():
    import scipy.sparse as sp

    spline = DPSplineTransformer(n_knots=4, sparse_output=True, random_state=0).fit(DF[["score"]])
    enc = DPOneHotEncoder(sparse_output=True, random_state=0).fit(DF[["job"]])
    for t, X in ((spline, DF[["score"]]), (enc, DF[["job"]])):
        assert sp.issparse(t.transform(X))
        out = t.set_output(transform="pandas").transform(X)
        assert isinstance(out, pd.DataFrame)
        np.testing.assert_array_equal(out.to_numpy(),
                                      t.set_output(transform="default").transform(X).toarray())


def test_partial_dependence_of_a_private_pipeline():
    """scikit-learn refuses integer columns in partial dependence for every estimator (it
    would round its grid); a float column works, and for the additive model the partial
    dependence of the score is the shape function up to a constant."""
    from sklearn.inspection import partial_dependence

    from skdp.inspection import contributions

    pipe = _auto().fit(DF, Y)
    with pytest.raises(ValueError, match="integer data"):
        partial_dependence(pipe, DF, ["age"], response_method="decision_function")
    X = DF.astype({"age": "float64"})
    pdp = partial_dependence(pipe, X, ["age"], response_method="decision_function",
                             grid_resolution=15)
    grid = pdp["grid_values"][0]
    rows = X.iloc[np.zeros(grid.size, dtype=int)].reset_index(drop=True).assign(age=grid)
    shape = contributions(pipe, rows)["age"].to_numpy()
    gap = pdp["average"][0] - shape
    np.testing.assert_allclose(gap, gap[0], rtol=0, atol=1e-10)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from sklearn.inspection import PartialDependenceDisplay

    disp = PartialDependenceDisplay.from_estimator(pipe, X, ["age", "job"],
                                                   categorical_features=["job"],
                                                   grid_resolution=10)
    assert disp.axes_.shape == (1, 2)
    import matplotlib.pyplot as plt

    plt.close("all")
