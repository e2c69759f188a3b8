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
from numba import njit, prange

from .._numba_cache import ensure_cache_locator

SAFETY = 1.0 - 1e-12


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@njit(cache=True)
def _row_norm(X, i):
    """||X[i]||_2 without spurious overflow or underflow.

    The plain sum of squares is used when it is a normal finite number (the usual case,
    one pass); otherwise the row is rescaled by its largest entry first.
    """
    d = X.shape[1]
    s = 0.0
    for j in range(d):
        s += X[i, j] * X[i, j]
    if s < np.inf and (s > 1e-280 or s == 0.0):
        return np.sqrt(s)
    m = 0.0
    for j in range(d):
        a = abs(X[i, j])
        if a > m:
            m = a
    if m == 0.0:
        return 0.0
    inv = 1.0 / m
    s = 0.0
    for j in range(d):
        t = X[i, j] * inv
        s += t * t
    return m * np.sqrt(s)


@njit(cache=True)
def clip_scalar(v, bound):
    """``v`` clipped to ``[-bound, bound]``; a non-finite ``v`` becomes 0.

    The per-row scalar clip of the kernels (a derivative, a finite difference): whatever
    the loss returns, the clipped value has ``|v| <= bound``, so a sensitivity proved for
    ``bound`` holds even for a loss that is not as Lipschitz as declared.
    """
    if not abs(v) < np.inf:
        return 0.0
    if v > bound:
        return bound
    if v < -bound:
        return -bound
    return v


@njit(cache=True, parallel=True)
def clip_rows(X, radius, intercept_scaling, out):
    """Write the clipped (and, if ``out`` has one more column, augmented) rows into ``out``.

    ``radius`` is the bound on the feature part (``sqrt(C^2 - b^2)`` with an intercept).
    Returns nothing; ``out`` is ``(n, d)`` or ``(n, d + 1)``.
    """
    n, d = X.shape
    augmented = out.shape[1] == d + 1
    r = radius * SAFETY
    for i in prange(n):
        nrm = _row_norm(X, i)
        scale = 1.0
        if nrm > r:
            scale = r / nrm
        for j in range(d):
            out[i, j] = X[i, j] * scale
        if augmented:
            out[i, d] = intercept_scaling


#: up to this many entries rows are clipped (and their norms computed) in numpy, with the
#: same bits as the kernels and without compiling them: a fit on a small design pays no
#: compilation
NUMPY_CLIP_MAX = 1 << 22


@njit(cache=True)
def _row_norms_kernel(X, out):
    for i in range(X.shape[0]):
        out[i] = _row_norm(X, i)


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
        cols = np.ascontiguousarray(X.T)       # one column per pass: the kernel's j loop
        s = cols[0] * cols[0]
        for j in range(1, d):
            s += cols[j] * cols[j]
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
    clip = _clip_rows_numpy if X.size <= NUMPY_CLIP_MAX else clip_rows
    clip(X, radius, float(intercept_scaling), out)
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
        m = float(max(_row_norm(X, i) for i in range(X.shape[0])))
    return m
