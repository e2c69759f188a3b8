"""numba passes over the rows of a CSR design (:mod:`skdp._mechanisms._clipped_rows`),
on its ``data``, ``indices`` and ``indptr`` arrays: no scipy matrix is built per chunk
(scipy copies the non-zeros of a row slice, a third of the data per pass on two threads).

Every pass adds in a fixed order, so their rounding is that of
:func:`skdp._losses._vectorised._sparse_chunk`'s analysis: a margin adds a row's
non-zeros in order (at most ``d`` terms), a gradient entry adds the chunk's rows in order.
Serial and ``nogil``: the chunks run on the solvers' thread pool."""

import numpy as np

from .._numba_cache import ensure_cache_locator, kernel

__all__ = ["csr_margins", "csr_accumulate", "csr_gram_product", "csr_squared_accumulate",
           "csr_weighted_gram", "csr_row_norms", "csr_clipped_row_norms"]


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel(nogil=True)
def csr_margins(data, indices, indptr, start, stop, W, scale, out):
    """``out[i - start, k] = scale[i] (sum_t data[t] W[indices[t], k])`` for the rows
    ``start <= i < stop`` (the sum over the row's non-zeros, in order, then one product)."""
    K = W.shape[1]
    for i in range(start, stop):
        for k in range(K):
            acc = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                acc += np.float64(data[t]) * W[indices[t], k]
            out[i - start, k] = acc * scale[i]


@kernel(nogil=True)
def csr_accumulate(data, indices, indptr, start, stop, G, out):
    """``out[j, k] += sum_i x_ij G[i - start, k]`` over the rows ``start <= i < stop``, the
    rows added in order (``out`` zero on entry for a chunk's own sum).  One output has a
    loop of its own (the same additions): 45 -> 34 ms on a 10^6 x 10^4 one-hot design
    (20 non-zeros a row, one thread)."""
    K = G.shape[1]
    for i in range(start, stop):
        if K == 1:
            gi = G[i - start, 0]
            for t in range(indptr[i], indptr[i + 1]):
                out[indices[t], 0] += np.float64(data[t]) * gi
            continue
        for t in range(indptr[i], indptr[i + 1]):
            x = np.float64(data[t])
            j = indices[t]
            for k in range(K):
                out[j, k] += x * G[i - start, k]


@kernel(nogil=True)
def csr_gram_product(data, indices, indptr, start, stop, v, scale, shift, augmented, curv,
                     g, out):
    """One read of the rows ``start <= i < stop`` for a Hessian-vector product
    ``X'^T diag(curv) X' v``: each row's margin ``z_i = fl(s_i (sum_t data[t]
    v[indices[t]])) (+ shift)`` (:func:`csr_margins`' order, then ``shift = fl(b v_d)``
    when ``augmented``), ``g[i - start] = curv[i] z_i``, and ``out[j] += x_ij fl(s_i
    g_i)`` with the rows added in order (:func:`csr_accumulate`'s).  The same operations
    in the same order as those two kernels apart, so the same bits, but each row's
    non-zeros are read once while they are in cache: on a 10^6 x 10^4 one-hot design
    (20 non-zeros a row, one thread) 58 ms, against 33 + 48 ms for the two passes."""
    for i in range(start, stop):
        lo = indptr[i]
        hi = indptr[i + 1]
        acc = 0.0
        for t in range(lo, hi):
            acc += np.float64(data[t]) * v[indices[t]]
        z = acc * scale[i]
        if augmented:
            z += shift
        gi = curv[i] * z
        g[i - start] = gi
        weight = scale[i] * gi
        for t in range(lo, hi):
            out[indices[t]] += np.float64(data[t]) * weight


@kernel(nogil=True)
def csr_weighted_gram(data, indices, indptr, start, stop, c, out):
    """``out[j, k] += sum_i c[i] x_ij x_ik`` over the rows ``start <= i < stop`` and the
    pairs of each row's non-zeros (``out`` dense, ``d x d``): ``nnz_i^2`` products a row,
    where scipy's ``X^T diag(c) X`` builds a sparse product: 10^6 x 191 rows of ~19
    non-zeros (a pipeline's basis), 0.55 s on one thread against 2.04 s for scipy's
    (single-threaded) product; 0.28 s on two.  Newton steps only: the Hessian is never
    trusted by a certificate."""
    for i in range(start, stop):
        ci = c[i]
        for t in range(indptr[i], indptr[i + 1]):
            xt = np.float64(data[t])
            j = indices[t]
            for u in range(indptr[i], indptr[i + 1]):
                # c_i (x_t x_u): the same bits for (j, k) and (k, j), so the sum is symmetric
                out[j, indices[u]] += ci * (xt * np.float64(data[u]))


@kernel(nogil=True)
def csr_squared_accumulate(data, indices, indptr, c, out):
    """``out[j] += sum_i x_ij^2 c[i]`` over all rows (the diagonal of ``X^T diag(c) X``)."""
    for i in range(indptr.shape[0] - 1):
        for t in range(indptr[i], indptr[i + 1]):
            x = np.float64(data[t])
            out[indices[t]] += x * x * c[i]


def csr_row_norms(data, indices, indptr, out):
    """``out[i] = ||x_i||_2`` from a row's non-zeros, the rule of
    :func:`skdp._mechanisms._clipping_kernels._row_norm` (the plain sum of squares when it
    is a normal finite number, else the row rescaled by its largest entry first):
    :func:`csr_clipped_row_norms` with every factor 1 and no extra column (``x * 1.0`` is
    ``x``, so the bits are the same)."""
    del indices   # a norm does not depend on where the non-zeros are
    csr_clipped_row_norms(data, indptr, np.ones(indptr.shape[0] - 1), 0.0, False, out)


@kernel(nogil=True)
def csr_clipped_row_norms(data, indptr, scale, intercept, augmented, out):
    """``out[i] = ||x_i'||_2`` of the clipped, augmented rows ``x_i' = [s_i x_i,
    intercept]`` without forming them: bitwise what
    :func:`skdp._mechanisms._clipping_kernels._row_norm` gives on the densified row (its
    zeros add ``+0`` to the sums and never win the maximum), the same two-pass rule."""
    for i in range(indptr.shape[0] - 1):
        si = scale[i]
        s = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[t]) * si
            s += v * v
        if augmented:
            s += intercept * intercept
        if s < np.inf and (s > 1e-280 or s == 0.0):
            out[i] = np.sqrt(s)
            continue
        m = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            a = abs(np.float64(data[t]) * si)
            if a > m:
                m = a
        if augmented and abs(intercept) > m:
            m = abs(intercept)
        if m == 0.0:
            out[i] = 0.0
            continue
        inv = 1.0 / m
        s = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            v = (np.float64(data[t]) * si) * inv
            s += v * v
        if augmented:
            v = intercept * inv
            s += v * v
        out[i] = m * np.sqrt(s)
