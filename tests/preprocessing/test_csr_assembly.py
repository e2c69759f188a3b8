"""The numba CSR assemblies are the matrices scipy builds, bit for bit: the spline basis
(stencils + indicators, no stored zero) and a ColumnTransformer's stacked sparse output."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer
from skdp.preprocessing._csr_assembly import SparseColumnTransformer, hstack_csr


def _csr_differences(a, b):
    """The parts in which two CSR matrices differ: shape, row pointers, column indices,
    or the bits of a stored value (0.0 and -0.0, every rounding); [] when equal."""
    if a.shape != b.shape:
        return ["shape"]
    parts = [("indptr", a.indptr, b.indptr), ("indices", a.indices, b.indices),
             ("data", a.data.view(np.int64), b.data.view(np.int64))]
    return [name for name, u, v in parts if not np.array_equal(u, v)]


def _table(n, seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.lognormal(3, 1, n), rng.integers(0, 5, n).astype(float),
                         np.where(rng.random(n) < 0.9, 0.0, rng.pareto(1.2, n) * 3e3)])
    X[::7, 0] = np.nan
    X[3::11, 2] = np.nan
    X[:4] = [[np.inf, -np.inf, 1e300], [-1e300, np.nan, -np.inf], [5e-324, 0.0, 0.0],
             [np.nan, np.nan, np.nan]]
    return X


@pytest.mark.parametrize("degree", [0, 1, 2, 3])
@pytest.mark.parametrize("tail_knots", [False, True])
def test_spline_csr_is_the_dense_basis_without_zeros(degree, tail_knots):
    """Values on the knots (a stencil end of exactly 0), missing and infinite values,
    integer columns: the CSR is csr_matrix(dense) -- its structure and every bit."""
    X = _table(3000, degree)
    kw = dict(degree=degree, epsilon=1.0, random_state=0, n_knots=6,
              tail_knots=tail_knots)
    spline = DPSplineTransformer(sparse_output=True, **kw).fit(X)
    Z = np.vstack([X, np.concatenate(spline.knots_[:1] * 3).reshape(-1, 3)[:6]])
    dense = DPSplineTransformer(**kw).fit(X).transform(Z)
    expected = sp.csr_matrix(dense)
    expected.eliminate_zeros()
    got = spline.transform(Z)
    assert got.has_sorted_indices and got.has_canonical_format
    assert not _csr_differences(got, expected)


def _random_csr(rng, n, width, density):
    M = sp.random(n, width, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.normal(size=k))
    M.sort_indices()
    return M


@pytest.mark.parametrize("widths", [(5,), (3, 1, 7), (4, 0, 2), (1, 1)])
def test_hstack_csr_is_scipy_hstack(widths):
    rng = np.random.default_rng(len(widths))
    n = 257
    blocks = [_random_csr(rng, n, w, 0.3) for w in widths]
    keep = np.ones(n)
    keep[5] = 0.0                        # an empty row
    blocks[0] = sp.csr_matrix(sp.diags(keep) @ blocks[0])
    blocks[0].eliminate_zeros()
    assert not _csr_differences(hstack_csr(blocks), sp.hstack(blocks).tocsr())


def test_hstack_csr_of_empty_blocks_and_rows():
    blocks = [sp.csr_matrix((0, 3)), sp.csr_matrix((0, 2))]
    out = hstack_csr(blocks)
    assert out.shape == (0, 5) and out.nnz == 0
    blocks = [sp.csr_matrix((4, 3)), sp.csr_matrix(np.eye(4, 2))]
    assert not _csr_differences(hstack_csr(blocks), sp.hstack(blocks).tocsr())


def _frame(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.normal(40, 12, n), "hours": rng.integers(1, 80, n),
                       "job": rng.choice(["a", "b", "c", None], n),
                       "city": rng.choice(["x", "y"], n)})
    df.loc[::13, "age"] = np.nan
    return df


def test_sparse_column_transformer_output_is_column_transformers():
    df = _frame()
    blocks = [("n", DPSplineTransformer(sparse_output=True, random_state=0), ["age", "hours"]),
              ("c", DPOneHotEncoder(sparse_output=True, random_state=1), ["job", "city"])]
    ours = SparseColumnTransformer(blocks, sparse_threshold=1.0).fit(df)
    # the same fitted object (its leaves' releases are random), stacked by scikit-learn
    theirs = ColumnTransformer.__new__(ColumnTransformer)
    theirs.__dict__.update(ours.__dict__)
    assert not _csr_differences(ours.transform(df), theirs.transform(df))


def test_sparse_column_transformer_falls_back_for_other_outputs():
    """A dense block, or a dense output: ColumnTransformer's own stacking."""
    df = _frame()
    blocks = [("n", StandardScaler(), ["age", "hours"]),
              ("c", OneHotEncoder(), ["job", "city"])]
    df = df.fillna({"age": 0.0, "job": "none"})
    for threshold in (1.0, 0.0):
        ours = SparseColumnTransformer(blocks, sparse_threshold=threshold).fit_transform(df)
        theirs = ColumnTransformer(blocks, sparse_threshold=threshold).fit_transform(df)
        assert sp.issparse(ours) == sp.issparse(theirs)
        np.testing.assert_array_equal(ours.toarray() if sp.issparse(ours) else ours,
                                      theirs.toarray() if sp.issparse(theirs) else theirs)


def test_private_pipeline_uses_it_and_is_a_column_transformer():
    df, y = _frame(), np.arange(2000) % 2
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 numeric=["age", "hours"], categorical=["job", "city"],
                                 random_state=0).fit(df, y)
    columns = pipe.named_steps["columns"]
    assert isinstance(columns, SparseColumnTransformer)
    assert isinstance(columns, ColumnTransformer)
    B = pipe[:-1].transform(df)
    assert sp.issparse(B) and B.has_canonical_format
    parts = [est.transform(df[cols]) for _, est, cols in columns.transformers_
             if not isinstance(est, str)]
    assert not _csr_differences(B, sp.hstack(parts).tocsr())


def _numpy_stencil(x, knots, degree):
    """The vectorised Cox-de Boor recursion (the reference the numba pass must equal)."""
    from skdp.preprocessing._spline import _extended_knots

    t = _extended_knots(knots, degree)
    m = knots.shape[0]
    span = degree + np.minimum(np.searchsorted(knots, x, side="right") - 1, m - 2)
    values = np.zeros((degree + 1, x.shape[0]))
    values[0] = 1.0
    left = np.empty((degree + 1, x.shape[0]))
    right = np.empty((degree + 1, x.shape[0]))
    for j in range(1, degree + 1):
        left[j] = x - t[span + 1 - j]
        right[j] = t[span + j] - x
        saved = np.zeros(x.shape[0])
        for r in range(j):
            temp = values[r] / (right[r + 1] + left[j - r])
            values[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        values[j] = saved
    return span - degree, values


@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_stencils_are_the_vectorised_recursion_bit_for_bit(degree):
    from skdp.preprocessing._spline import bspline_stencil, column_stencils

    rng = np.random.default_rng(degree)
    knots = np.unique(np.concatenate([np.sort(rng.lognormal(0, 2, 9)), [0.0]]))
    raw = np.concatenate([rng.uniform(-1, knots[-1] * 1.2, 5000), knots, -knots,
                          [np.nan, np.inf, -np.inf, -0.0, 5e-324]])
    missing = np.isnan(raw)
    x = np.clip(np.where(missing, knots[0], raw), knots[0], knots[-1])
    first_ref, values_ref = _numpy_stencil(x, knots, degree)
    first, values = bspline_stencil(x, knots, degree)
    np.testing.assert_array_equal(first, first_ref)
    np.testing.assert_array_equal(values.view(np.int64), values_ref.view(np.int64))
    first, values, got_missing = column_stencils(raw, knots, degree)
    np.testing.assert_array_equal(got_missing, missing)
    np.testing.assert_array_equal(first, first_ref)
    np.testing.assert_array_equal(values.view(np.int64), values_ref.view(np.int64))
