"""A private pipeline's basis kept as compact rows and expanded per pass
(:mod:`skdp.preprocessing._compact_basis`): the expansion is the fitted prefix's own CSR,
bit for bit, on adversarial values; prefixes it cannot describe are left alone; a Dask fit
keeps the compact rows, not the basis, and expands a partition on every pass."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

pd = pytest.importorskip("pandas")

from skdp import DPLogisticRegression, make_private_pipeline  # noqa: E402
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler,  # noqa: E402
                                DPSplineTransformer)
from skdp.preprocessing._compact_basis import CompactBasis  # noqa: E402
from skdp.preprocessing._csr_assembly import SparseColumnTransformer  # noqa: E402

from .._raw_tables import CATEGORICAL, NUMERIC, raw_table  # noqa: E402


def _table(n=4000, seed=0):
    df, y = raw_table(n, seed)
    return df, y.to_numpy()


def _adversarial(prefix, df):
    """Rows whose values sit on every knot, outside them, at +-inf, NaN, +-1e300, a
    subnormal, and unseen categories and None."""
    spline = next(s for _, s, _ in prefix[-1].transformers_
                  if isinstance(s, DPSplineTransformer))
    rows = []
    for j, name in enumerate(NUMERIC):
        specials = list(spline.knots_[j]) + [np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324,
                                             spline.knots_[j][0] - 1, spline.knots_[j][-1] + 1]
        for v in specials:
            row = df.iloc[len(rows) % len(df)].copy()
            row[name] = v
            rows.append(row)
    frame = pd.DataFrame(rows).reset_index(drop=True)
    frame.loc[::3, "job"] = "never-seen"
    frame.loc[1::5, "edu"] = None
    return pd.concat([df, frame], ignore_index=True).astype(df.dtypes.to_dict())


def _assert_same_csr(a, b):
    assert a.shape == b.shape
    assert a.indptr.dtype == b.indptr.dtype and a.indices.dtype == b.indices.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    # bits, not values: -0.0 and 0.0, every rounding
    np.testing.assert_array_equal(a.data.view(np.int64), b.data.view(np.int64))
    assert a.has_sorted_indices


@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_expansion_is_the_transform_bit_for_bit(degree):
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=2.0,
                                 numeric=NUMERIC, categorical=CATEGORICAL, random_state=0)
    pipe.set_params(columns__numeric__degree=degree).fit(df, y)
    prefix = pipe[:-1]
    recipe = CompactBasis.of(prefix)
    assert recipe is not None
    X = _adversarial(prefix, df)
    _assert_same_csr(recipe.expand(recipe.encode(X)), prefix.transform(X))


def test_blocks_in_any_order_with_dropped_columns():
    """The categorical block first, a column dropped: the segments follow the output's
    column order, whatever the transformers' order."""
    df, y = _table(seed=1)
    df["skip"] = 1.0
    ct = SparseColumnTransformer([
        ("cat", DPOneHotEncoder(sparse_output=True, epsilon=1.0, random_state=0),
         CATEGORICAL),
        ("num", DPSplineTransformer(sparse_output=True, epsilon=1.0, degree=2,
                                    random_state=0), NUMERIC)],
        remainder="drop", sparse_threshold=1.0)
    ct.fit(df)
    recipe = CompactBasis.of(Pipeline([("columns", ct)]))
    assert recipe is not None and recipe.n_features_out == ct.transform(df).shape[1]
    _assert_same_csr(recipe.expand(recipe.encode(df)), ct.transform(df))
    # one transformer alone is not a prefix it describes
    assert CompactBasis.of(ct.named_transformers_["num"]) is None


def test_other_prefixes_are_not_described():
    df, _ = _table(seed=2)
    spline = DPSplineTransformer(sparse_output=True, epsilon=1.0, random_state=0)

    def fitted(ct):
        return Pipeline([("columns", ct.fit(df[NUMERIC]))])

    passthrough = SparseColumnTransformer([("num", spline, NUMERIC[:2])],
                                          remainder="passthrough", sparse_threshold=1.0)
    scaler = SparseColumnTransformer([("num", spline, NUMERIC[:2]),
                                      ("other", DPRobustScaler(random_state=0),
                                       NUMERIC[2:])], sparse_threshold=1.0)
    dense = ColumnTransformer([("num", DPSplineTransformer(epsilon=1.0, random_state=0),
                                NUMERIC)], sparse_threshold=0.0)
    assert CompactBasis.of(fitted(passthrough)) is None
    assert CompactBasis.of(fitted(scaler)) is None
    assert CompactBasis.of(fitted(dense)) is None
    framed = SparseColumnTransformer([("num", DPSplineTransformer(
        sparse_output=True, epsilon=1.0, random_state=0), NUMERIC)], sparse_threshold=1.0)
    framed.set_output(transform="pandas")
    assert CompactBasis.of(fitted(framed)) is None


def test_compact_rows_are_a_third_of_the_basis():
    """What a worker keeps: 8 bytes a spline value and 1 of its span, 2 a one-hot code --
    against 12 bytes a stored entry (value and int32 index) and the row pointers."""
    df, y = _table(20_000, seed=3)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=2.0,
                                 numeric=NUMERIC, categorical=CATEGORICAL,
                                 random_state=0).fit(df, y)
    recipe = CompactBasis.of(pipe[:-1])
    rows = recipe.encode(df)
    assert rows.nbytes == len(df) * (9 * len(NUMERIC) + 2 * len(CATEGORICAL))
    sizeof = pytest.importorskip("dask.sizeof").sizeof
    assert sizeof(rows) >= rows.nbytes        # Dask's memory manager sees what is kept
    B = pipe[:-1].transform(df)
    basis_bytes = B.data.nbytes + B.indices.nbytes + B.indptr.nbytes
    assert rows.nbytes < 0.5 * basis_bytes


def test_dask_fit_expands_each_partition_on_every_pass(monkeypatch):
    """A Dask fit keeps the compact rows (each partition encoded once) and rebuilds the
    basis for every pass of the solver: the expansions outnumber the partitions by the
    passes, and the model is the in-memory one (``test_raw_dask_pipeline``)."""
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from skdp import _dask_pipeline
    from skdp._dask import keep_rows, rebuilt_per_pass

    counts = {"encode": 0, "expand": 0, "expand task": 0}
    encode, expand = _dask_pipeline._encode_block, _dask_pipeline._expand_block

    def counted(name, fn):
        def call(*args):
            counts[name] += 1
            return fn(*args)
        return call

    monkeypatch.setattr(_dask_pipeline, "_encode_block", counted("encode", encode))
    monkeypatch.setattr(_dask_pipeline, "_expand_block", counted("expand task", expand))
    monkeypatch.setattr(CompactBasis, "expand", counted("expand", CompactBasis.expand))
    df, y = _table(6000, seed=5)
    with dask.config.set(scheduler="threads"):
        pipe = make_private_pipeline(
            DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
            epsilon=1.0, numeric=NUMERIC, categorical=CATEGORICAL, random_state=3)
        lazy = pipe.fit(dd.from_pandas(df, npartitions=3),
                        dd.from_pandas(pd.Series(y), npartitions=3))
        assert counts["encode"] == 3
        assert counts["expand"] >= 3 * 10             # at least ten passes, all rebuilt
        # every pass expands a block inside the task that reads it (block_tasks): a
        # worker holds the basis of one partition at a time, never a separate expansion
        assert counts["expand task"] == 0
        mem = make_private_pipeline(
            DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
            epsilon=1.0, numeric=NUMERIC, categorical=CATEGORICAL, random_state=3
        ).fit(df, y)
        scale = np.abs(mem[-1].coef_).max()
        assert np.abs(lazy[-1].coef_ - mem[-1].coef_).max() <= 1e-6 * scale

        from skdp._dask_pipeline import inspect_frame, rebuilt_basis

        ddf = dd.from_pandas(df, npartitions=3)
        rows = inspect_frame(ddf)
        Xt = rebuilt_basis(Pipeline(lazy.steps[:-1]), rows.pinned(), rows)
        assert rebuilt_per_pass(Xt) and keep_rows(Xt) is Xt
        assert not rebuilt_per_pass(Xt.persist())
        assert sp.issparse(Xt._meta) and Xt.chunks[0] == rows.lengths
        block = Xt.blocks[2].compute()
        start = sum(rows.lengths[:2])
        _assert_same_csr(block, lazy[:-1].transform(df.iloc[start:]))


def test_dpsgd_keeps_the_built_basis(monkeypatch):
    """DP-SGD samples every partition at each of its steps: its Dask fit keeps the basis
    as built, and encodes no compact rows (``dask_basis_compact``)."""
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from skdp import _dask_pipeline
    from skdp.linear_model._auto import dask_basis_compact

    assert dask_basis_compact("objective_perturbation") and dask_basis_compact("auto")
    assert not dask_basis_compact("dpsgd")
    calls = []
    encode = _dask_pipeline._encode_block
    monkeypatch.setattr(_dask_pipeline, "_encode_block",
                        lambda *a: calls.append(1) or encode(*a))
    df, y = _table(4000, seed=6)
    with dask.config.set(scheduler="threads"):
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                     numeric=NUMERIC, categorical=CATEGORICAL,
                                     random_state=3)
        pipe.fit(dd.from_pandas(df, npartitions=2),
                 dd.from_pandas(pd.Series(y), npartitions=2))
    assert pipe[-1].solver_ == "dpsgd" and calls == []
