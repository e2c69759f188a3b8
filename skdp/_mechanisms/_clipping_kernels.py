"""numba kernels of :mod:`skdp._mechanisms._clipping` (its docstring has the rule and the
proof): the per-row norm, the scalar clip of the per-step kernels and the parallel row clip.
Apart from the numpy paths so that small fits import no numba."""

import numpy as np
from numba import prange

from .._numba_cache import ensure_cache_locator, kernel

__all__ = ["clip_rows", "clip_scalar"]


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _row_norm(X, i):
    """||X[i]||_2 without spurious overflow or underflow.

    The plain sum of squares is used when it is a normal finite number (the usual case,
    one pass); otherwise the row is rescaled by its largest entry first.
    """
    d = X.shape[1]
    s = 0.0
    for j in range(d):
        v = np.float64(X[i, j])     # float32 input: squared in float64, as its copy would be
        s += v * v
    if s < np.inf and (s > 1e-280 or s == 0.0):
        return np.sqrt(s)
    m = 0.0
    for j in range(d):
        a = abs(np.float64(X[i, j]))
        if a > m:
            m = a
    if m == 0.0:
        return 0.0
    inv = 1.0 / m
    s = 0.0
    for j in range(d):
        t = np.float64(X[i, j]) * inv
        s += t * t
    return m * np.sqrt(s)


@kernel
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


@kernel(parallel=True)
def clip_rows(X, r, intercept_scaling, out):
    """Write the clipped (and, if ``out`` has one more column, augmented) rows into ``out``.

    ``r`` is the clip radius of the feature part, safety factor included
    (``sqrt(C^2 - b^2) clip_safety(d)`` with an intercept).
    Returns nothing; ``out`` is ``(n, d)`` or ``(n, d + 1)``.
    """
    n, d = X.shape
    augmented = out.shape[1] == d + 1
    for i in prange(n):
        nrm = _row_norm(X, i)
        scale = 1.0
        if nrm > r:
            scale = r / nrm
        for j in range(d):
            out[i, j] = X[i, j] * scale
        if augmented:
            out[i, d] = intercept_scaling


@kernel
def _row_norms_kernel(X, out):
    for i in range(X.shape[0]):
        out[i] = _row_norm(X, i)
