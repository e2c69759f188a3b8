"""DPSplineTransformer: public output bound for any input, knots only through the release,
neighbour invariance of every public attribute."""

import math

import numpy as np
import pytest
from sklearn.preprocessing import SplineTransformer

from skdp.accounting import get_epsilon
from skdp.preprocessing import DPSplineTransformer

BAD_ROWS = [[np.nan, np.nan], [1e300, -1e300], [np.inf, -np.inf], [5e-324, 0.0]]
PUBLIC = ("output_norm_bound_", "epsilon_", "delta_", "dp_event_", "noise_scale_",
          "sensitivity_", "privacy_guaranteed_", "n_features_in_")


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(40, 12, n), rng.lognormal(10, 1, n)])
    X[::50, 0] = np.nan
    return X


@pytest.mark.parametrize("degree", [0, 1, 3])
def test_output_rows_are_bounded_for_any_input(degree):
    spl = DPSplineTransformer(degree=degree, epsilon=1.0, random_state=0).fit(_data())
    Z = spl.transform(np.vstack([_data(500, 1), BAD_ROWS]))
    assert np.all(np.isfinite(Z))
    assert np.linalg.norm(Z, axis=1).max() <= spl.output_norm_bound_ + 1e-12
    assert spl.output_norm_bound_ == pytest.approx(math.sqrt(2))
    assert Z.shape[1] == spl.n_features_out_ == len(spl.get_feature_names_out())


def test_missing_indicator_and_partition_of_unity():
    spl = DPSplineTransformer(epsilon=1.0, random_state=0).fit(_data())
    width0 = len(spl.knots_[0]) + 2
    Z = spl.transform([[np.nan, 1.0], [40.0, 1.0]])
    assert Z[0, :width0].sum() == 0.0 and Z[0, width0] == 1.0
    assert Z[1, :width0].sum() == pytest.approx(1.0) and Z[1, width0] == 0.0


def test_knots_close_to_the_nonprivate_quantile_knots():
    X = _data(20000)
    spl = DPSplineTransformer(n_knots=5, quantile_range=(0.1, 0.9), epsilon=1.0,
                              random_state=0).fit(X)
    exact = np.nanquantile(X, np.linspace(0.1, 0.9, 5), axis=0).T
    for released, ref, col in zip(spl.knots_, exact, X.T):
        col = np.sort(col[~np.isnan(col)])
        ranks = np.searchsorted(col, released) / col.size
        assert np.max(np.abs(ranks - np.searchsorted(col, ref) / col.size)) < 0.02


def test_guarantee_and_public_attributes_unchanged_on_neighbours():
    X = _data()
    ref = DPSplineTransformer(epsilon=0.7, random_state=0).fit(X)
    assert ref.privacy_guaranteed_ and ref.epsilon_ <= 0.7
    assert get_epsilon(ref.dp_event_, ref.delta_) == ref.epsilon_
    for bad in BAD_ROWS:
        X2 = X.copy()
        X2[3] = bad
        other = DPSplineTransformer(epsilon=0.7, random_state=0).fit(X2)
        for name in PUBLIC:
            assert getattr(other, name) == getattr(ref, name), name


def test_close_to_sklearn_quantile_splines_with_much_data():
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 10, (200000, 1))
    spl = DPSplineTransformer(n_knots=6, quantile_range=(0.01, 0.99), epsilon=2.0,
                              random_state=0).fit(X)
    np.testing.assert_allclose(spl.knots_[0], np.linspace(0.1, 9.9, 6), atol=0.05)
    ours = spl.transform(X[:100])[:, :-1]
    theirs = SplineTransformer(n_knots=6, knots=spl.knots_[0][:, None]).fit(X).transform(
        np.clip(X[:100], spl.knots_[0][0], spl.knots_[0][-1]))
    np.testing.assert_allclose(ours, theirs, atol=1e-10)


@pytest.mark.parametrize("kwargs, match", [
    ({"quantile_range": (0.0, 0.99)}, "quantile_range"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"delta": 0.0}, "delta"),
    ({"feature_bounds": [(0.0, 1.0)]}, "feature_bounds"),
])
def test_bad_parameters_are_refused_before_any_release(kwargs, match):
    spl = DPSplineTransformer(**kwargs)
    with pytest.raises(ValueError, match=match):
        spl.fit(_data(100))
    assert not hasattr(spl, "knots_")


def test_feature_bounds_make_the_grid_linear():
    rng = np.random.default_rng(6)
    X = rng.integers(1990, 2021, (20000, 1)).astype(float)   # one octave of the log grid
    log = DPSplineTransformer(n_knots=5, quantile_range=(0.1, 0.9), epsilon=2.0,
                              random_state=0).fit(X)
    lin = DPSplineTransformer(n_knots=5, quantile_range=(0.1, 0.9), epsilon=2.0,
                              feature_bounds=[(1900.0, 2100.0)], random_state=0).fit(X)
    exact = np.quantile(X, np.linspace(0.1, 0.9, 5))
    assert np.max(np.abs(lin.knots_[0] - exact)) < 2.0
    assert np.max(np.abs(lin.knots_[0] - exact)) < np.max(np.abs(log.knots_[0] - exact))


@pytest.mark.parametrize("degree", [1, 2, 3, 4])
def test_cox_de_boor_stencil_matches_scipy(degree):
    from scipy.interpolate import BSpline

    from skdp.preprocessing._spline import _extended_knots, bspline_basis

    rng = np.random.default_rng(degree)
    knots = np.sort(rng.normal(size=7))
    x = np.concatenate([rng.uniform(knots[0], knots[-1], 500), knots])
    ref = BSpline.design_matrix(x, _extended_knots(knots, degree), degree).toarray()
    np.testing.assert_allclose(bspline_basis(x, knots, degree), ref, atol=1e-14)


@pytest.mark.parametrize("degree", [0, 1, 3])
def test_csr_output_stores_no_zero_and_equals_the_dense_output(degree):
    """The CSR basis is the dense one, without the entries that are 0 (a present value's
    indicator, a missing value's stencil): what a Dask fit persists and every pass reads."""
    import scipy.sparse as sp

    rng = np.random.default_rng(11)
    X = np.column_stack([rng.lognormal(3, 1, 4000), rng.integers(0, 5, 4000).astype(float)])
    X[::9, 0] = np.nan
    kw = dict(degree=degree, epsilon=1.0, random_state=0, n_knots=6)
    dense = DPSplineTransformer(**kw).fit(X).transform(X)
    csr = DPSplineTransformer(sparse_output=True, **kw).fit(X).transform(X)
    assert sp.issparse(csr) and csr.has_canonical_format
    assert np.count_nonzero(csr.data == 0.0) == 0
    np.testing.assert_array_equal(csr.toarray(), dense)
