"""Row clipping: the public bound holds for any finite input, intercept included."""

import numpy as np
import pytest

from skdp._mechanisms import clip_and_augment, max_row_norm, row_bound
from skdp._mechanisms._clipping import SAFETY


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_clipped_rows_never_exceed_the_bound(fit_intercept):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 6)) * rng.choice([1e-3, 1, 1e3, 1e150, 1e300], size=(500, 1))
    X[0] = 0.0
    X[1, :] = 1.7976931348623157e308  # largest finite double: norm overflows naively
    out = clip_and_augment(X, 2.0, fit_intercept, 0.5)
    norms = np.sqrt(np.sum((out / 2.0) ** 2, axis=1)) * 2.0
    assert np.all(np.isfinite(out))
    assert np.all(norms <= 2.0)
    if fit_intercept:
        assert out.shape == (500, 7) and np.all(out[:, -1] == 0.5)
    # rows inside the ball are untouched, rows outside keep their direction
    with np.errstate(over="ignore"):
        inside = np.linalg.norm(X, axis=1) < 1.0
    np.testing.assert_array_equal(out[inside, :6], X[inside])
    big = 4
    cos = out[big, :6] @ X[big] / (np.linalg.norm(out[big, :6]) * np.linalg.norm(X[big]))
    assert cos == pytest.approx(1.0)


def test_intercept_counts_towards_the_bound():
    X = np.array([[3.0, 4.0]])
    out = clip_and_augment(X, 5.0, True, 3.0)
    assert np.linalg.norm(out[0]) <= 5.0
    assert out[0, 2] == 3.0
    np.testing.assert_allclose(out[0, :2], [3.0 * 4 / 5, 4.0 * 4 / 5], rtol=1e-11)
    with pytest.raises(ValueError, match="intercept_scaling"):
        clip_and_augment(X, 1.0, True, 1.0)


def test_max_row_norm_reads_the_feature_rows():
    X = np.array([[3.0, 4.0], [0.0, 1.0]])
    assert max_row_norm(X) == pytest.approx(5.0)


@pytest.mark.parametrize("data_norm,b", [(1.0, 1.0), (3.0, 1.0), (0.02, 1.0), (5.0, 0.1)])
def test_row_bound_covers_clipped_augmented_rows(data_norm, b):
    """data_norm bounds the features; R = sqrt(data_norm^2 + b^2), never rounded down,
    bounds the augmented row, and the features are clipped to at most data_norm."""
    R = row_bound(data_norm, True, b)
    assert R >= np.hypot(data_norm, b) and row_bound(data_norm, False, b) == data_norm
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4)) * rng.choice([1e-3, 1.0, 1e3], size=(300, 1)) * data_norm
    out = clip_and_augment(X, R, True, b)
    assert np.all(np.linalg.norm(out, axis=1) <= R)
    assert np.all(np.linalg.norm(out[:, :-1], axis=1) <= data_norm)


def test_numpy_clip_is_bitwise_the_kernel():
    """Small designs are clipped in numpy (no compilation); the result must be the
    kernel's, bit for bit -- rows of every magnitude (overflowing and subnormal sums take
    the rescaled path), zero rows, with and without the intercept column."""
    from skdp._mechanisms._clipping import _clip_rows_numpy, clip_rows
    from skdp._mechanisms._clipping import _row_norms_kernel as row_norms
    from skdp._mechanisms._clipping import _row_norms_numpy as row_norms_numpy

    rng = np.random.default_rng(0)
    for trial in range(120):
        n, d = int(rng.integers(1, 50)), int(rng.integers(0, 30))
        scale = (10.0 ** rng.integers(-200, 200, size=(n, 1)) if trial % 3 == 0
                 else rng.uniform(0, 3, (n, 1)))
        X = np.ascontiguousarray(rng.standard_normal((n, d)) * scale)
        if n > 2:
            X[1] = 0.0
            X[2] = 1e-160
        if n > 4 and d:                  # non-finite entries (solver-level callers)
            X[3, 0] = np.inf
            X[4, -1] = np.nan
        for extra in (0, 1):
            a = np.empty((n, d + extra))
            b = np.empty((n, d + extra))
            clip_rows(X, 1.3 * SAFETY, 0.7, a)
            _clip_rows_numpy(X, 1.3 * SAFETY, 0.7, b)
            assert np.array_equal(a, b, equal_nan=True)
            assert np.array_equal(np.signbit(a), np.signbit(b))
            finite = np.all(np.isfinite(X), axis=1)
            if d:
                assert np.all(np.linalg.norm(b[finite, :d], axis=1) <= 1.3)
        norms = np.empty(n)
        row_norms(X, norms)
        assert np.array_equal(norms, row_norms_numpy(X), equal_nan=True)


def test_numpy_norms_across_row_blocks_are_bitwise_the_kernel():
    """The numpy norms transpose blocks of ``NORM_BLOCK_ROWS`` rows: across block
    boundaries (and a short last block) they are still the kernel's, bit for bit, and the
    numpy clip keeps every finite row within the bound."""
    from skdp._mechanisms import _clipping
    from skdp._mechanisms._clipping_kernels import _row_norms_kernel, clip_rows

    rng = np.random.default_rng(1)
    n = 2 * _clipping.NORM_BLOCK_ROWS + 37
    X = rng.standard_normal((n, 9)) * 10.0 ** rng.integers(-200, 200, size=(n, 1))
    X[_clipping.NORM_BLOCK_ROWS - 1] = 0.0
    X[_clipping.NORM_BLOCK_ROWS, 0] = np.inf
    kernel = np.empty(n)
    _row_norms_kernel(X, kernel)
    assert np.array_equal(_clipping._row_norms_numpy(X), kernel, equal_nan=True)
    a, b = np.empty((n, 10)), np.empty((n, 10))
    clip_rows(X, 1.3 * SAFETY, 0.7, a)
    _clipping._clip_rows_numpy(X, 1.3 * SAFETY, 0.7, b)
    assert np.array_equal(a, b, equal_nan=True)
    finite = np.all(np.isfinite(X), axis=1)
    assert np.all(np.linalg.norm(b[finite, :9], axis=1) <= 1.3)


@pytest.mark.parametrize("order", ["C", "F"])
def test_numpy_norms_one_row_blocks_and_fortran_input(order):
    """A block of one row (numpy would add its squares pairwise) and Fortran-ordered or
    float32 input (whose transposed block may be the user's memory): the kernel's bits,
    and the input left as it was."""
    from skdp._mechanisms import _clipping
    from skdp._mechanisms._clipping_kernels import _row_norms_kernel

    rng = np.random.default_rng(4)
    for n in (1, 2, _clipping.MIN_BLOCK_ROWS + 1, 16 * _clipping.NORM_BLOCK_ROWS + 1):
        for dtype in (np.float64, np.float32):
            X = np.asarray(rng.standard_normal((n, 37)) * rng.uniform(0, 3, (n, 1)),
                           dtype=dtype, order=order)
            before = X.copy()
            kernel = np.empty(n)
            _row_norms_kernel(X, kernel)
            assert np.array_equal(_clipping._row_norms_numpy(X), kernel)
            assert np.array_equal(X, before)


def test_max_row_norm_overflow_fallback():
    """Rows whose squared norm overflows take the rescaled norms (the kernel's, bit for
    bit): the largest is found, finite."""
    from skdp._mechanisms._clipping import max_row_norm
    from skdp._mechanisms._clipping_kernels import _row_norm

    X = np.array([[1.0, 0.0], [3e200, 4e200]])
    assert max_row_norm(X) == _row_norm(X, 1)
    assert abs(max_row_norm(X) / 5e200 - 1.0) < 1e-15
