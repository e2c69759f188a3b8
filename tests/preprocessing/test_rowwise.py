"""Data-free means verified: a user function is data-free only when it is applied one row at
a time (RowwiseFunctionTransformer), never as scikit-learn's FunctionTransformer, whose
function sees the whole batch; FrameToPandas, the first step of make_private_pipeline."""

import math
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline
from skdp.accounting import fitted_dp_event, fitted_privacy_guaranteed
from skdp.preprocessing import FrameToPandas, RowwiseFunctionTransformer


def _by_largest(A):
    return A / np.abs(A).max()


def _signs(n=400, seed=0):
    """Rows of +-1 (norm sqrt 2), the canary setting of the finding."""
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], (n, 2))
    return X, (X[:, 0] > 0).astype(int)


def _model():
    return DPLogisticRegression(classes=[0, 1], data_norm=1.0, fit_intercept=False,
                                solver="output_perturbation", random_state=0)


# ------------------------------------------------------------- the finding (batch function)


def test_function_transformer_is_refused_by_private_pipeline():
    # The batch function rescales every row by the largest value: one row of 1e4 shrinks
    # all the others.  It used to be accepted as data-free (privacy_guaranteed_ True,
    # epsilon_ 1.0) although a canary audit measured epsilon >= 5.2.
    X, y = _signs()
    pipe = PrivatePipeline([("ft", FunctionTransformer(_by_largest)), ("m", _model())],
                           epsilon=1.0, delta=1e-5)
    with pytest.raises(TypeError, match=r"step 'ft' \(FunctionTransformer\)") as info:
        pipe.fit(X, y)
    message = str(info.value)
    assert "RowwiseFunctionTransformer(func)" in message and "DP transformer" in message
    assert "one row at a time" in message
    assert not hasattr(pipe, "dp_event_") and not hasattr(pipe, "epsilon_")


def test_function_transformer_with_check_inverse_is_refused_too():
    X, y = _signs()
    ft = FunctionTransformer(_by_largest, inverse_func=lambda A: A, check_inverse=True)
    pipe = PrivatePipeline([("ft", ft), ("m", _model())], epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # sklearn's inverse check warns, from the data
        with pytest.raises(TypeError, match=r"step 'ft' \(FunctionTransformer\)"):
            pipe.fit(X, y)


# ---------------------------------------------------------------- RowwiseFunctionTransformer


def _row_scaled(row):
    return row / np.abs(row).max()


def test_output_row_depends_on_its_input_row_only():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (50, 3))
    X2 = X.copy()
    X2[7] = 1e4
    t = RowwiseFunctionTransformer(_row_scaled)
    out, out2 = t.fit(X).transform(X), t.fit(X2).transform(X2)
    others = np.arange(50) != 7
    assert np.array_equal(out[others], out2[others])        # bitwise
    assert not np.array_equal(out[7], out2[7])
    # the batch version moves every row: the contrast the finding is about
    batch = FunctionTransformer(_by_largest)
    assert not np.array_equal(batch.fit_transform(X)[others], batch.fit_transform(X2)[others])


def test_func_receives_one_row_and_never_the_batch():
    X = np.random.default_rng(2).normal(size=(20, 3))
    seen = []

    def one_row(row):
        assert isinstance(row, np.ndarray) and row.ndim == 1 and row.shape == (3,)
        assert row.base is None          # a copy: no view through which the batch is visible
        assert row.dtype == np.float64
        seen.append(row.copy())
        row[:] = 0.0                     # mutating its row changes neither X nor other rows
        return np.ones(2)

    t = RowwiseFunctionTransformer(one_row).fit(X)
    assert seen == []                    # fit never calls func (it learns the schema only)
    X_before = X.copy()
    out = t.transform(X)
    assert out.shape == (20, 2) and out.dtype == np.float64
    assert len(seen) == 20 and all(np.array_equal(s, x) for s, x in zip(seen, X))
    assert np.array_equal(X, X_before)


def test_fit_learns_the_schema_only_and_has_no_event():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, -1.0, 4.0]})

    def fails(row):
        raise AssertionError("fit must not call func")

    t = RowwiseFunctionTransformer(fails).fit(df)
    fitted = sorted(k for k in vars(t) if k.endswith("_") and not k.startswith("_"))
    assert fitted == ["feature_names_in_", "n_features_in_"]
    assert list(t.feature_names_in_) == ["a", "b"] and t.n_features_in_ == 2
    assert not hasattr(t, "dp_event_")


def test_in_private_pipeline_it_is_data_free():
    X, y = _signs()
    pipe = PrivatePipeline([("rw", RowwiseFunctionTransformer(_row_scaled)),
                            ("m", _model())], epsilon=1.0, delta=1e-5).fit(X, y)
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= 1.0
    assert pipe.dp_event_ == pipe[-1].dp_event_       # the transformer adds no event
    assert set(pipe.budget_split_) == {"m", "mu_shares"}
    plain = make_pipeline(RowwiseFunctionTransformer(_row_scaled), _model()).fit(X, y)
    assert fitted_privacy_guaranteed(plain)
    assert fitted_dp_event(plain) == plain[-1].dp_event_


def test_a_subclass_is_not_verified():
    class Batchy(RowwiseFunctionTransformer):
        def transform(self, X):
            return np.asarray(X) / np.abs(X).max()

    X, y = _signs()
    pipe = make_pipeline(Batchy(), _model()).fit(X, y)
    assert not fitted_privacy_guaranteed(pipe)
    with pytest.raises(TypeError, match=r"step 'batchy' \(Batchy\)"):
        fitted_dp_event(pipe)


def test_inconsistent_output_lengths_are_a_clear_error_without_values():
    X = np.array([[1.25, 2.0], [-3.5, 4.0], [5.75, 6.0]])

    def width_varies(row):
        return row if row[0] > 0 else row[:1]

    with pytest.raises(ValueError, match="different lengths") as info:
        RowwiseFunctionTransformer(width_varies).fit_transform(X)
    message = str(info.value)
    assert not any(s in message for s in ("1.25", "3.5", "5.75", "row 1", "[1]"))
    with pytest.raises(ValueError, match="one-dimensional"):
        RowwiseFunctionTransformer(lambda r: np.outer(r, r)).fit_transform(X)
    with pytest.raises(ValueError, match="one-to-one"):
        RowwiseFunctionTransformer(np.sum, feature_names_out="one-to-one").fit_transform(X)


def test_no_data_dependent_checks_or_warnings():
    assert set(RowwiseFunctionTransformer().get_params()) == {"func", "kw_args",
                                                              "feature_names_out"}
    X = np.random.default_rng(3).normal(size=(30, 2))
    X[0, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = RowwiseFunctionTransformer(np.nan_to_num).fit_transform(X)
    assert np.isfinite(out).all()


def test_scalar_results_kw_args_and_feature_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    t = RowwiseFunctionTransformer(lambda r, p: np.linalg.norm(r, ord=p), kw_args={"p": 1})
    assert np.array_equal(t.fit_transform(df), [[4.0], [6.0]])
    # no names given: scikit-learn's class-name prefix, one per value func returns
    assert list(t.get_feature_names_out()) == ["rowwisefunctiontransformer0"]
    assert list(RowwiseFunctionTransformer().fit(df).get_feature_names_out()) == ["a", "b"]
    one = RowwiseFunctionTransformer(np.abs, feature_names_out="one-to-one").fit(df)
    assert list(one.get_feature_names_out()) == ["a", "b"]
    named = RowwiseFunctionTransformer(
        np.sum, feature_names_out=lambda self, names: ["total"]).fit(df)
    assert list(named.get_feature_names_out()) == ["total"]
    framed = RowwiseFunctionTransformer(np.abs, feature_names_out="one-to-one")
    framed.set_output(transform="pandas")
    out = framed.fit_transform(-df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["a", "b"]
    assert np.array_equal(out.to_numpy(), df.to_numpy())
    with pytest.raises(ValueError):
        RowwiseFunctionTransformer().fit(df.assign(c=["x", "y"]))   # numeric input only


class _AppendSum:
    """``row -> [row, k * sum(row)]``, with a stable repr (test ids must not hold an
    address: pytest-xdist compares them between workers)."""

    def __call__(self, row, k):
        return np.r_[row, k * row.sum()]

    def __repr__(self):
        return "_AppendSum()"


@parametrize_with_checks([
    RowwiseFunctionTransformer(),
    RowwiseFunctionTransformer(np.abs, feature_names_out="one-to-one"),
    RowwiseFunctionTransformer(_AppendSum(), kw_args={"k": 2.0}),
    FrameToPandas(),
])   # no expected failures
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- FrameToPandas


def _table(n=2000, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                       "job": rng.choice(["clerk", "nurse", "driver"], n)})
    return df, ((df["age"] > 50) | (df["job"] == "nurse")).astype(int).to_numpy()


def test_frame_to_pandas_converts_polars_and_keeps_everything_else():
    pl = pytest.importorskip("polars")
    df, _ = _table(10)
    frame = pl.from_pandas(df)
    t = FrameToPandas().fit(frame)
    out = t.transform(frame)
    assert type(out).__module__.split(".")[0] == "pandas"
    assert list(out.columns) == ["age", "job"]
    assert out["age"].dtype == np.float64 and out["job"].tolist() == df["job"].tolist()
    assert list(t.get_feature_names_out()) == ["age", "job"]
    assert FrameToPandas().fit(df).transform(df) is df
    X = np.ones((3, 2))
    assert FrameToPandas().fit(X).transform(X) is X
    assert not hasattr(t, "dp_event_")


def test_frame_to_pandas_before_a_column_transformer_with_pandas_output():
    pl = pytest.importorskip("polars")
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import Binarizer

    df, _ = _table(10)
    pipe = make_pipeline(FrameToPandas(),
                         make_column_transformer((Binarizer(threshold=50.0), ["age"])))
    pipe.set_output(transform="pandas")
    out = pipe.fit_transform(pl.from_pandas(df))
    assert list(out.columns) == ["binarizer__age"]
    assert np.array_equal(out.to_numpy().ravel(), (df["age"] > 50).astype(float))


@pytest.mark.filterwarnings("ignore:make_private_pipeline inferred the public schema")
@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_make_private_pipeline_uses_the_verified_converter(kind):
    df, y = _table()
    if kind == "polars":
        df = pytest.importorskip("polars").from_pandas(df)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 random_state=0)
    assert type(pipe.named_steps["frame"]) is FrameToPandas
    pipe.fit(df, y)
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= 1.0 and math.isfinite(pipe.epsilon_)
    assert pipe.score(df, y) > 0.8


# ------------------------------------- the audit's finding: a null row and integers > 2**53

_BIG_ID = 2**53 + 1      # not a float64: rounds to 2**53 if the column becomes float


def _neighbouring_id_frames(pl):
    """Replace-one neighbours: 200 rows of ``2**53 + 1`` and 200 of 7, then the last row
    replaced by a null.  The null used to turn the whole Int64 column into float64,
    rounding the other 200 rows to ``2**53``."""
    rows = [_BIG_ID] * 200 + [7] * 200
    return [pl.DataFrame({"account": r, "flag": [True] * len(r)},
                         schema={"account": pl.Int64, "flag": pl.Boolean})
            for r in (rows, rows[:-1] + [None])]


def test_frame_to_pandas_keeps_every_value_whatever_the_other_rows():
    pl = pytest.importorskip("polars")
    converted = [FrameToPandas().fit(f).transform(f) for f in _neighbouring_id_frames(pl)]
    full, with_null = converted
    # the dtypes follow the schema, not the rows
    assert list(full.dtypes) == list(with_null.dtypes)
    assert full["account"].iloc[0] == with_null["account"].iloc[0] == _BIG_ID
    assert full["account"].tolist()[:399] == with_null["account"].tolist()[:399]
    assert with_null["account"].isna().tolist() == [False] * 399 + [True]
    big = pl.DataFrame({"u": [2**64 - 1, None]}, schema={"u": pl.UInt64})
    assert FrameToPandas().fit(big).transform(big)["u"].iloc[0] == 2**64 - 1


def test_frame_to_pandas_then_one_hot_releases_the_same_category_on_neighbours():
    pl = pytest.importorskip("polars")
    from skdp.preprocessing import DPOneHotEncoder

    for seed in range(3):
        released = [DPOneHotEncoder(random_state=seed).fit(
            FrameToPandas().fit(f).transform(f)[["account"]]).categories_
            for f in _neighbouring_id_frames(pl)]
        assert released[0] == released[1] == [[7, _BIG_ID]]
