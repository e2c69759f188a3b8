"""numba kernels of the per-row losses, written as functions of the margin.

A model has ``K`` outputs (``K = 1`` for binary logistic and Huber, ``K = n_classes`` for
multinomial logistic) and coefficients ``W`` of shape ``(d, K)``; the margins of all rows
are ``Z = X W`` (computed by BLAS in the solvers).  The kernels here do the per-row work on
``Z``.  Each loss is dispatched by an integer id so that cached kernels never take Python
functions as arguments (that defeats numba's cache).

Losses (``y`` is the encoded target, ``param`` the loss's scalar parameter):

* ``LOGISTIC`` (K = 1, y in {-1, +1}):  l(z) = log(1 + exp(-y z)),
  l'(z) = -y sigmoid(-y z),  l''(z) = sigmoid(z) sigmoid(-z) <= 1/4.
* ``MULTINOMIAL`` (K >= 2, y in {0..K-1}): l(z) = logsumexp(z) - z_y,
  dl/dz = p - e_y with p = softmax(z); Hessian diag(p) - p p^T.
* ``HUBER`` (K = 1, real y, threshold h = param > 0): r = z - y,
  l = r^2/2 if |r| <= h else h(|r| - h/2);  l' = clip(r, -h, h);  l'' = 1{|r| <= h}.
* Nonconvex robust losses (K = 1, real y, scale c = param > 0), r = z - y, u = r/c:

  - ``TUKEY`` (biweight): l = (c^2/6)(1 - (1 - u^2)^3) for |u| <= 1, else c^2/6;
    l' = r (1 - u^2)^2,  l'' = (1 - u^2)(1 - 5u^2),  l''' = (20u^3 - 12u)/c  (0 for |u| > 1).
  - ``WELSCH``: l = (c^2/2)(1 - e^{-u^2});  l' = r e^{-u^2},  l'' = (1 - 2u^2) e^{-u^2},
    l''' = (4u^3 - 6u) e^{-u^2}/c.
  - ``CAUCHY``: l = (c^2/2) ln(1 + u^2);  l' = r/(1 + u^2),  l'' = (1 - u^2)/(1 + u^2)^2,
    l''' = (2u^3 - 6u)/(c (1 + u^2)^3).

  ``_robust_row`` returns all four; the constants the proofs need (sup|l'|, sup|l''|,
  sup|l'''|) are derived in :mod:`skdp._losses`.
* Nonsmooth losses (K = 1, real y, ``tau = param``), r = z - y, dispatched by
  ``_robust_row`` too (value, a subgradient, 0, 0): ``CAPPED_ABSOLUTE`` min(|r|, tau),
  ``ABSOLUTE`` |r|, ``TRUNCATED_SQUARED`` min(r^2, tau^2); see :mod:`skdp._losses._nonsmooth`.

The row passes are split into ``N_CHUNKS`` fixed chunks run with ``prange``; reductions
add the chunk results in a fixed order, so results are bitwise identical whatever the
number of threads.  Within a chunk, gradient sums are accumulated in blocks of ``BLOCK``
rows, which bounds their rounding error by ``(BLOCK + n/BLOCK + N_CHUNKS) u sum|terms|``
(used by the certified solver, see ``skdp._solvers._objective``).
"""

import numpy as np
from numba import prange

from .._numba_cache import ensure_cache_locator, kernel

from ._ids import (  # noqa: F401  (re-exported: the kernels' ids and chunking)
    ABSOLUTE,
    BLOCK,
    CAPPED_ABSOLUTE,
    CAUCHY,
    HUBER,
    LOGISTIC,
    MULTINOMIAL,
    N_CHUNKS,
    TRUNCATED_SQUARED,
    TUKEY,
    WELSCH,
)
from .._parallel import chunk_pool as _pool, current_threads


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _logistic_row(z, y):
    """(loss, dloss/dz) of log(1 + exp(-y z)), stable for any finite z."""
    t = -y * z
    e = np.exp(-abs(t))
    lp = np.log1p(e)
    # Selects, not branches (the sign of t is a coin flip on real data, and a mispredicted
    # branch cost 4-11 % of a DP-SGD step); the same expressions, so the same bits.
    pos = t > 0.0
    num = 1.0 if pos else e
    return (t + lp if pos else lp), -y * num / (1.0 + e)


@kernel
def _huber_row(z, y, h):
    r = z - y
    if r > h:
        return h * (r - 0.5 * h), h
    if r < -h:
        return h * (-r - 0.5 * h), -h
    return 0.5 * r * r, r


@kernel
def _robust_row(r, loss_id, c):
    """(l, l', l'', l''') of the nonconvex robust loss ``loss_id`` at residual r, scale c.

    Finite for every finite ``r``: huge residuals give the limits (first and second
    derivatives 0 for Tukey and Welsch, the asymptotic forms for Cauchy), never NaN.
    """
    u = r / c
    if loss_id == TUKEY:
        if abs(u) >= 1.0:
            return c * c / 6.0, 0.0, 0.0, 0.0
        s = 1.0 - u * u
        return ((c * c / 6.0) * (1.0 - s * s * s), r * s * s, s * (1.0 - 5.0 * u * u),
                (20.0 * u * u * u - 12.0 * u) / c)
    if loss_id == WELSCH:
        u2 = u * u
        if u2 > 700.0:
            # e^{-u^2} < 1e-304: return the limits instead of subnormal numbers (which make
            # every later product orders of magnitude slower); |error| < 1e-290.
            return 0.5 * c * c, 0.0, 0.0, 0.0
        e = np.exp(-u2)
        return 0.5 * c * c * (1.0 - e), r * e, (1.0 - 2.0 * u2) * e, (4.0 * u2 - 6.0) * u * e / c
    if loss_id >= CAPPED_ABSOLUTE:
        # nonsmooth losses: value, a subgradient (0 at the kinks r = 0 and |r| = tau),
        # second and third derivatives 0 almost everywhere (skdp._losses._nonsmooth)
        a = abs(r)
        sg = 0.0 if r == 0.0 else (1.0 if r > 0.0 else -1.0)
        if loss_id == ABSOLUTE:
            return a, sg, 0.0, 0.0
        if a >= c:
            return (c if loss_id == CAPPED_ABSOLUTE else c * c), 0.0, 0.0, 0.0
        if loss_id == CAPPED_ABSOLUTE:
            return a, sg, 0.0, 0.0
        return r * r, 2.0 * r, 0.0, 0.0
    # CAUCHY
    if abs(u) > 1e150:
        return c * c * np.log(abs(u)), c / u, -1.0 / (u * u), 2.0 / (c * u * u * u)
    u2 = u * u
    q = 1.0 + u2
    return (0.5 * c * c * np.log1p(u2), r / q, (1.0 - u2) / (q * q),
            (2.0 * u2 - 6.0) * u / (c * q * q * q))


@kernel
def _multinomial_row(z, label, g):
    """loss = logsumexp(z) - z_label; writes softmax(z) - e_label into g."""
    K = z.shape[0]
    zmax = z[0]
    for k in range(1, K):
        if z[k] > zmax:
            zmax = z[k]
    s = 0.0
    for k in range(K):
        g[k] = np.exp(z[k] - zmax)
        s += g[k]
    for k in range(K):
        g[k] /= s
    g[label] -= 1.0
    return zmax + np.log(s) - z[label]


@kernel
def _row_derivatives(Z, y, loss_id, param, G):
    """Serial pass: G[i] = dl(Z[i], y[i])/dz; returns sum_i l(Z[i], y[i])."""
    acc = 0.0
    for i in range(Z.shape[0]):
        if loss_id == LOGISTIC:
            v, g = _logistic_row(Z[i, 0], y[i])
            G[i, 0] = g
        elif loss_id == HUBER:
            v, g = _huber_row(Z[i, 0], y[i], param)
            G[i, 0] = g
        elif loss_id >= TUKEY:
            v, g, _, _ = _robust_row(Z[i, 0] - y[i], loss_id, param)
            G[i, 0] = g
        else:
            v = _multinomial_row(Z[i], int(y[i]), G[i])
        acc += v
    return acc


@kernel(parallel=True)
def margin_derivatives(Z, y, loss_id, param, G):
    """Per-row loss derivatives: G[i] = dl(Z[i], y[i])/dz.  Returns sum_i l(Z[i], y[i])."""
    n, K = Z.shape
    n_chunks = max(1, min(N_CHUNKS, n))
    partial = np.zeros(n_chunks)
    for c in prange(n_chunks):
        start = c * n // n_chunks
        stop = (c + 1) * n // n_chunks
        partial[c] = _row_derivatives(Z[start:stop], y[start:stop], loss_id, param,
                                      G[start:stop])
    total = 0.0
    for c in range(n_chunks):
        total += partial[c]
    return total


@kernel(parallel=True)
def margin_curvatures(z, y, loss_id, param, out):
    """out[i] = l''(z[i]) for the scalar-margin losses (K = 1); used in tests and
    Hessian-vector products."""
    n = z.shape[0]
    for i in prange(n):
        if loss_id == LOGISTIC:
            e = np.exp(-abs(z[i]))
            out[i] = e / ((1.0 + e) * (1.0 + e))
        elif loss_id >= TUKEY:
            out[i] = _robust_row(z[i] - y[i], loss_id, param)[2]
        else:
            r = z[i] - y[i]
            out[i] = 1.0 if -param <= r <= param else 0.0


@kernel
def robust_derivatives(r, loss_id, param, out):
    """out[i, :] = value and first three derivatives at r[i] (nonconvex robust losses)."""
    for i in range(r.shape[0]):
        v, d1, d2, d3 = _robust_row(r[i], loss_id, param)
        out[i, 0] = v
        out[i, 1] = d1
        out[i, 2] = d2
        out[i, 3] = d3


@kernel
def _dot_row(X, i, W, k):
    """x_i . W[:, k] with four accumulators (no fastmath needed for ILP)."""
    d = X.shape[1]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= d:
        a0 += X[i, j] * W[j, k]
        a1 += X[i, j + 1] * W[j + 1, k]
        a2 += X[i, j + 2] * W[j + 2, k]
        a3 += X[i, j + 3] * W[j + 3, k]
        j += 4
    while j < d:
        a0 += X[i, j] * W[j, k]
        j += 1
    return (a0 + a1) + (a2 + a3)


@kernel
def _clipped_row(X, scale, intercept, i, row):
    """Write row ``i`` of the clipped, augmented design into ``row`` (shape ``(1, p)``):
    ``fl(float64(x_ij) s_i)`` for ``j < d``, then ``intercept`` if ``p = d + 1`` -- the
    entries of :func:`skdp._mechanisms.clip_and_augment`'s copy, bit for bit
    (:mod:`skdp._mechanisms._clipped_rows`)."""
    d = X.shape[1]
    si = scale[i]
    for j in range(d):
        row[0, j] = np.float64(X[i, j]) * si
    if row.shape[1] > d:
        row[0, d] = intercept


@kernel(parallel=True)
def design_value_grad(X, scale, intercept, y, W, loss_id, param, alpha, grad):
    """F(W) = (1/n) sum_i l(x_i' W, y_i) + (alpha/2)||W||_F^2 and its gradient, in one pass
    over the rows ``x_i' = [s_i x_i, intercept]`` (:func:`_clipped_row`; ``W`` has one row
    more than ``X`` has columns when the design is augmented).

    Writes dF/dW into ``grad`` (shape (p, K)) and returns F(W).  Chunks of rows run in
    parallel; each sums its rows in blocks of ``BLOCK`` into the chunk total; the chunk
    totals are added in a fixed order.
    """
    n = X.shape[0]
    p, K = W.shape
    n_chunks = max(1, min(N_CHUNKS, n))
    chunk_grad = np.zeros((n_chunks, p, K))
    chunk_val = np.zeros(n_chunks)
    for c in prange(n_chunks):
        start = c * n // n_chunks
        stop = (c + 1) * n // n_chunks
        z = np.empty((1, K))
        g = np.empty((1, K))
        yy = np.empty(1)
        row = np.empty((1, p))
        block = np.zeros((p, K))
        total = chunk_grad[c]
        val = 0.0
        for b0 in range(start, stop, BLOCK):
            b1 = min(b0 + BLOCK, stop)
            for i in range(b0, b1):
                _clipped_row(X, scale, intercept, i, row)
                for k in range(K):
                    z[0, k] = _dot_row(row, 0, W, k)
                yy[0] = y[i]
                val += _row_derivatives(z, yy, loss_id, param, g)
                if K == 1:
                    g0 = g[0, 0]
                    for j in range(p):
                        block[j, 0] += row[0, j] * g0
                else:
                    for j in range(p):
                        xij = row[0, j]
                        for k in range(K):
                            block[j, k] += xij * g[0, k]
            for j in range(p):
                for k in range(K):
                    total[j, k] += block[j, k]
                    block[j, k] = 0.0
        chunk_val[c] = val
    value = 0.0
    for j in range(p):
        for k in range(K):
            grad[j, k] = 0.0
    for c in range(n_chunks):
        value += chunk_val[c]
        for j in range(p):
            for k in range(K):
                grad[j, k] += chunk_grad[c, j, k]
    sq = 0.0
    for j in range(p):
        for k in range(K):
            grad[j, k] = grad[j, k] / n + alpha * W[j, k]
            sq += W[j, k] * W[j, k]
    return value / n + 0.5 * alpha * sq


def objective_value_grad(X, y, W, loss_id, param, alpha, grad):
    """:func:`design_value_grad` on an already clipped (and augmented) ``X``: factors 1,
    no extra column."""
    return design_value_grad(X, np.ones(X.shape[0]), 0.0, y, W, loss_id, param, alpha, grad)


@kernel(nogil=True)
def binary_chunks_value_grad(X, scale, intercept, y, W, loss_id, param, n_chunks, c0, c1,
                             chunk_grad, chunk_val):
    """Chunks ``c0 .. c1 - 1`` of :func:`design_value_grad` for the two convex
    scalar-margin losses (``K = 1``, ``LOGISTIC`` or ``HUBER``): chunk ``c``'s gradient sum
    goes to ``chunk_grad[c]`` (zeros on entry) and its loss sum to ``chunk_val[c]``.

    The same rows, blocks, accumulation order and per-row expressions as the generic
    kernel, so :func:`binary_value_grad` returns its bits.  Serial and ``nogil``: it
    compiles in a fraction of the generic parallel kernel's time (which covers every loss
    and ``K``), and threads run chunk groups side by side."""
    n = X.shape[0]
    p = W.shape[0]
    block = np.zeros(p)
    row = np.empty((1, p))
    for c in range(c0, c1):
        start = c * n // n_chunks
        stop = (c + 1) * n // n_chunks
        total = chunk_grad[c]
        val = 0.0
        for b0 in range(start, stop, BLOCK):
            b1 = min(b0 + BLOCK, stop)
            for i in range(b0, b1):
                _clipped_row(X, scale, intercept, i, row)
                z = _dot_row(row, 0, W, 0)
                if loss_id == LOGISTIC:
                    v, g0 = _logistic_row(z, y[i])
                else:
                    v, g0 = _huber_row(z, y[i], param)
                val += v
                for j in range(p):
                    block[j] += row[0, j] * g0
            for j in range(p):
                total[j] += block[j]
                block[j] = 0.0
        chunk_val[c] = val


def binary_sums(X, y, W, loss_id, param, threads=1, scale=None, intercept=0.0):
    """``(sum_i l_i, sum_i x_i' l'_i)`` of ``LOGISTIC``/``HUBER`` (``K = 1``) over the rows
    ``x_i' = [s_i x_i, intercept]`` (``scale=None``: ``X`` is already clipped), in
    :func:`design_value_grad`'s chunks and order (chunk totals added from 0.0), the chunk
    groups on ``threads`` Python threads (the kernel releases the GIL)."""
    n = X.shape[0]
    p = W.shape[0]
    if scale is None:
        scale = np.ones(n)
    n_chunks = max(1, min(N_CHUNKS, n))
    chunk_grad = np.zeros((n_chunks, p))
    chunk_val = np.zeros(n_chunks)
    threads = min(int(threads), n_chunks)
    args = (X, scale, float(intercept), y, W, loss_id, param, n_chunks)
    if threads > 1:
        bounds = [g * n_chunks // threads for g in range(threads + 1)]
        futures = [_pool().submit(binary_chunks_value_grad, *args, bounds[g], bounds[g + 1],
                                  chunk_grad, chunk_val)
                   for g in range(threads)]
        for f in futures:
            f.result()
    elif n:
        binary_chunks_value_grad(*args, 0, n_chunks, chunk_grad, chunk_val)
    total = np.zeros(p)
    value = 0.0
    for c in range(n_chunks):
        total += chunk_grad[c]
        value += float(chunk_val[c])
    return value, total


def binary_value_grad(X, y, W, loss_id, param, alpha, grad, scale=None, intercept=0.0):
    """:func:`design_value_grad` for ``LOGISTIC``/``HUBER`` with ``K = 1``, bit for bit:
    :func:`binary_sums` on :func:`skdp._parallel.current_threads` threads, then
    ``grad = sum/n + alpha W`` and ``F = value/n + (alpha/2)||W||^2`` with the same floating-point
    operations."""
    n = X.shape[0]
    value, total = binary_sums(X, y, W, loss_id, param, current_threads(), scale, intercept)
    w = W[:, 0]
    grad[:, 0] = total / n + alpha * w
    sq = 0.0
    for wj in w.tolist():
        sq += wj * wj
    return value / n + 0.5 * alpha * sq
