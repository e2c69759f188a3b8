"""Row clipping: the step that makes the public bound ``data_norm`` true.

Every solver works on the array returned here and never on the user's ``X``, so no code
path can see an unclipped row.  The estimators' ``data_norm`` bounds the *features* (as
users and diffprivlib mean it); with an intercept the row is augmented with the constant
``b = intercept_scaling`` afterwards, so the augmented row obeys the **row bound**

    R = row_bound(data_norm, fit_intercept, b) = sqrt(data_norm^2 + b^2)

(rounded up by one ulp), which is the constant every sensitivity proof uses.  The solvers
receive ``R`` (their ``data_norm`` argument is the bound on the augmented row) and clip

    x_i <- x_i * min(1, r / ||x_i||_2),   r = sqrt(R^2 - b^2) * (1 - 1e-12),

so ``||[x_i, b]||_2 <= R`` while the intercept column stays exactly ``b``, and
``r <= data_norm`` (the round trip through ``R`` errs by about ``1e-16 b^2/data_norm``,
below the ``1e-12 data_norm`` margin unless ``data_norm < 1e-2 b``; privacy rests on ``R``
alone, which always holds).  The factor
``1 - 1e-12`` absorbs the rounding of the norm and of the product, so the bound holds for
the floating-point result too.  Norms are computed with max-abs scaling, so huge finite
entries cannot overflow to ``inf`` and zero the wrong row.
"""

import numpy as np

SAFETY = 1.0 - 1e-12

#: the numba kernels, re-exported lazily (:func:`__getattr__`): importing this module (every
#: estimator does) must not import numba, which the numpy paths below never call
_KERNELS = frozenset({"clip_rows", "clip_scalar", "_row_norm", "_row_norms_kernel"})


def __getattr__(name):
    if name in _KERNELS:
        from . import _clipping_kernels

        return getattr(_clipping_kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: up to this many entries rows are clipped (and their norms computed) in numpy, with the
#: same bits as the kernels and without compiling them: a fit on a small design pays no
#: compilation
NUMPY_CLIP_MAX = 1 << 22
#: rows per block of :func:`_row_norms_numpy` (a block's transpose stays in cache)
NORM_BLOCK_ROWS = 2048


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def _row_norms_numpy(X):
    """``[_row_norm(X, i) for i]`` in numpy, bitwise: the squares of a row are added one
    column at a time from the first, exactly the kernel's loop (no pairwise summation; the
    fallback's ``cumsum`` along a row is sequential too), and the rescaled fallback runs on
    the rows that need it.  Overflow, underflow and non-finite entries give the kernel's
    IEEE results, without warnings."""
    n, d = X.shape
    s = np.zeros(n)
    if d:
        # one column per pass (the kernel's j loop), on blocks of rows transposed in cache:
        # no n x d temporary (its page faults cost more than the arithmetic on a first fit)
        for a in range(0, n, NORM_BLOCK_ROWS):
            cols = np.ascontiguousarray(X[a:a + NORM_BLOCK_ROWS].T)
            sb = s[a:a + NORM_BLOCK_ROWS]
            np.multiply(cols[0], cols[0], out=sb)
            for j in range(1, d):
                sb += cols[j] * cols[j]
    nrm = np.sqrt(s)
    odd = ~((s < np.inf) & ((s > 1e-280) | (s == 0.0)))
    if odd.any():
        rows = X[odd]
        m = np.fmax.reduce(np.abs(rows), axis=1, initial=0.0)   # NaN skipped, as there
        safe = np.where(m == 0.0, 1.0, m)
        t = rows * (1.0 / safe)[:, None]
        nrm[odd] = np.where(m == 0.0, 0.0, m * np.sqrt(np.cumsum(t * t, axis=1)[:, -1]))
    return nrm


def row_norms(X, out):
    """``out[i] = ||X[i]||_2`` (overflow-safe, C-contiguous float64 ``X``): numpy up to
    ``NUMPY_CLIP_MAX`` entries, the compiled kernel beyond; the same bits either way."""
    if X.size <= NUMPY_CLIP_MAX:
        out[:] = _row_norms_numpy(X)
    else:
        from ._clipping_kernels import _row_norms_kernel

        _row_norms_kernel(X, out)


def row_norms_at(X, rows):
    """A length-``n`` vector holding ``||X[i]||_2`` at the given ``rows`` (zeros elsewhere):
    the norms a kernel reads when it visits those rows only, bitwise those of
    :func:`row_norms` (each row's norm is computed alone)."""
    out = np.zeros(X.shape[0])
    if len(rows):
        sampled = np.empty(len(rows))
        row_norms(np.ascontiguousarray(X[rows]), sampled)
        out[rows] = sampled
    return out


@np.errstate(invalid="ignore")
def _clip_rows_numpy(X, radius, intercept_scaling, out):
    """:func:`clip_rows` in numpy, bitwise identical (norms by :func:`_row_norms_numpy`;
    a non-finite row's ``inf * 0`` is the kernel's NaN, without a warning)."""
    n, d = X.shape
    r = radius * SAFETY
    nrm = _row_norms_numpy(X)
    scale = np.ones(n)
    big = nrm > r
    scale[big] = r / nrm[big]
    np.multiply(X, scale[:, None], out=out[:, :d])
    if out.shape[1] == d + 1:
        out[:, d] = intercept_scaling


def clip_and_augment(X, data_norm, fit_intercept, intercept_scaling):
    """Return a new C-contiguous float64 array of clipped rows, ``||row||_2 <= data_norm``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
    data_norm : float
        Public bound ``R`` on the L2 norm of each *augmented* row (intercept column
        included): :func:`row_bound` of the estimators' feature bound.
    fit_intercept : bool
        Append the constant column ``intercept_scaling`` (counted in the norm).
    intercept_scaling : float
        Must satisfy ``intercept_scaling < data_norm`` when ``fit_intercept``.
    """
    n, d = X.shape
    if fit_intercept:
        if not intercept_scaling < data_norm:
            raise ValueError(
                f"intercept_scaling={intercept_scaling} must be < data_norm={data_norm}: the "
                "intercept column counts towards the row-norm bound"
            )
        radius = float(np.sqrt(data_norm**2 - intercept_scaling**2))
        out = np.empty((n, d + 1))
    else:
        radius = float(data_norm)
        out = np.empty((n, d))
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.size <= NUMPY_CLIP_MAX:
        _clip_rows_numpy(X, radius, float(intercept_scaling), out)
    else:
        from ._clipping_kernels import clip_rows

        clip_rows(X, radius, float(intercept_scaling), out)
    return out


def row_bound(data_norm, fit_intercept, intercept_scaling):
    """The bound ``R`` on the augmented row ``[x, intercept_scaling]`` given the feature
    bound ``data_norm``: ``sqrt(data_norm^2 + intercept_scaling^2)`` (``data_norm`` without
    an intercept), rounded up by one ulp so that it is never below the exact value.

    >>> row_bound(1.0, True, 1.0) > 2 ** 0.5, row_bound(3.0, False, 1.0)
    (True, 3.0)
    """
    data_norm = float(data_norm)
    if not fit_intercept:
        return data_norm
    return float(np.nextafter(np.hypot(data_norm, float(intercept_scaling)), np.inf))


def max_row_norm(X):
    """Largest feature-row norm of ``X`` -- reads the private data; used only when the user
    gives no ``data_norm`` (the fit is then flagged as not differentially private)."""
    sq = np.einsum("ij,ij->i", X, X)
    m = float(np.sqrt(sq.max())) if X.shape[0] else 0.0
    if not np.isfinite(m):
        m = float(_row_norms_numpy(X).max())      # overflow-safe, bitwise the kernel
    return m
