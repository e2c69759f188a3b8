"""The B-spline stencils of a column, one numba pass: every value's missing flag, the
index of its first non-zero basis function and the ``degree + 1`` values
(:func:`skdp.preprocessing._spline.bspline_stencil` documents the recursion).

numpy's clamp and vectorised recursion allocated ``3 (degree + 1)`` arrays of ``n`` and took
43 ms per 10^6 values at degree 1 (one thread, warm); this pass writes only its outputs and
took 17-21 ms.  The operations and
their order are the vectorised recursion's, value by value (no fast-math, no contraction),
so the bits are the same (a test compares them with the numpy recursion)."""

import numpy as np

from .._numba_cache import ensure_cache_locator, kernel

__all__ = ["column_stencils"]

ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel(inline="always")
def clamped(x, knots):
    """``x`` (not NaN) clamped to ``[knots[0], knots[-1]]`` (``np.clip``'s comparisons)."""
    lo, hi = knots[0], knots[knots.shape[0] - 1]
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    return x


@kernel(inline="always")
def knot_span(x, knots):
    """``searchsorted(knots, x, side="right")`` of a clamped ``x``."""
    a, b = 0, knots.shape[0]
    while a < b:
        mid = (a + b) // 2
        if knots[mid] <= x:
            a = mid + 1
        else:
            b = mid
    return a


@kernel(inline="always")
def span_stencil(x, a, m, extended, degree, left, right, out):
    """The stencil of a clamped ``x`` whose :func:`knot_span` in ``m`` knots is ``a``: the
    Cox-de Boor recursion on the ``extended`` knot vector, its ``degree + 1`` values written
    to ``out`` (degree 0: the bin index and ``1.0``).  Returns the index of the first
    non-zero basis function.  ``left``/``right``: scratch of ``degree + 1``."""
    out[0] = 1.0
    if degree == 0:
        return a
    span = degree + min(a - 1, m - 2)
    for j in range(1, degree + 1):
        left[j] = x - extended[span + 1 - j]
        right[j] = extended[span + j] - x
        saved = 0.0
        for r in range(j):
            temp = out[r] / (right[r + 1] + left[j - r])
            out[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        out[j] = saved
    return span - degree


@kernel(inline="always")
def stencil_at(x, knots, extended, degree, left, right, out):
    """The stencil of one value ``x`` (not NaN): :func:`clamped`, :func:`knot_span`,
    :func:`span_stencil`.  The one recursion of :func:`column_stencils` and of the compact
    basis's expansion (:mod:`skdp.preprocessing._compact_basis`, which keeps the span), so
    both give the same bits."""
    x = clamped(x, knots)
    return span_stencil(x, knot_span(x, knots), knots.shape[0], extended, degree, left,
                        right, out)


@kernel
def column_stencils(column, knots, extended, degree, missing, first, values):
    """For each ``column[i]``: ``missing[i]`` (NaN; its stencil is that of ``knots[0]``)
    and the stencil -- ``first[i]`` and ``values[:, i]`` -- of :func:`stencil_at`."""
    n = column.shape[0]
    n_values = values.shape[0]
    left = np.zeros(degree + 1)
    right = np.zeros(degree + 1)
    out = np.zeros(degree + 1)
    for i in range(n):
        x = column[i]
        missing[i] = x != x
        if x != x:
            x = knots[0]
        first[i] = stencil_at(x, knots, extended, degree, left, right, out)
        for r in range(n_values):
            values[r, i] = out[r]
