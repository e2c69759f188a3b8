"""numba kernels of the private SGD baseline (see :mod:`skdp._solvers._dpsgd`).

Three functions, all ``@kernel`` (``numba.njit``, cached) without ``fastmath`` (it would delete the
non-finite checks of the clipping):

* :func:`_sample_batch` -- one Poisson batch: ``B ~ Binomial(n, q)`` then ``B`` distinct
  uniform indices, ``O(B)`` expected time;
* :func:`_clipped_batch_gradient` -- the sum over a batch of per-example gradients, each
  clipped to L2 norm ``clip`` (non-finite ones dropped);
* :func:`_batch_gradient_in_parts` -- the same sum over a batch split into a fixed number
  of parts, each summed on its own (in parallel) and the parts' sums added in order;
* :func:`dpsgd_loop` -- the whole SGD loop (sample, clipped sum, Gaussian noise, step,
  projection), drawing every random number serially from the ``numpy.random.Generator``
  passed in, so the same seed gives bitwise the same iterates (whatever the thread count:
  the parts are fixed).

The per-row losses are those of :mod:`skdp._losses._kernels` (imported, not copied).
"""

import numpy as np
from numba import prange

from .._losses._kernels import (
    HUBER,
    LOGISTIC,
    TUKEY,
    _dot_row,
    _huber_row,
    _logistic_row,
    _multinomial_row,
    _robust_row,
)
from .._mechanisms._exact import grid_value
from .._numba_cache import ensure_cache_locator, kernel


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _sample_batch(rng, n, q, idx, perm, stamp, t):
    """Draw one Poisson(q) batch of ``{0..n-1}`` into ``idx[:B]``; returns ``B``.

    ``B ~ Binomial(n, q)`` (:func:`_batch_size`), then ``B`` distinct uniform indices
    (:func:`_fill_batch`), in ``O(B)`` expected time; ``q >= 1``: every row, in order.
    """
    if q >= 1.0:
        for i in range(n):
            idx[i] = i
        return n
    B = _batch_size(rng, n, q)
    _fill_batch(rng, n, B, idx, perm, stamp, t)
    return B


@kernel
def _batch_size(rng, n, q):
    """``B ~ Binomial(n, q)``: the size of a Poisson(q) batch of ``n`` rows."""
    return rng.binomial(n, q)


@kernel
def _fill_batch(rng, n, B, idx, perm, stamp, t):
    """``B`` distinct uniform indices of ``{0..n-1}`` into ``idx[:B]``:

    * ``2B <= n`` (the usual case): the first ``B`` distinct values of an i.i.d. uniform
      sequence on ``{0..n-1}`` (drawn in blocks with ``rng.integers(0, n, size)``;
      ``stamp[i] == t`` marks the values taken at step ``t``).  Each new value is uniform
      over the values not yet taken, so ``idx[:B]`` is a uniform ordered sample without
      replacement; expected draws ``sum_{j<B} n/(n-j) <= 2B``.
    * ``2B > n``: partial Fisher-Yates on the scratch permutation ``perm`` (position ``j``
      swapped with a uniform position in ``[j, n)``), whose first ``B`` entries are a
      uniform ordered sample of the values of ``perm`` whatever permutation it held
      (``perm`` is read in this case only).

    ``stamp`` must hold values ``!= t`` at the indices not yet taken (e.g. zeros with
    ``t >= 1``; or zeros and ``t = 1`` with the taken entries reset to 0 after every
    step, which needs one byte a row: :class:`skdp._solvers._dpsgd.BatchDraws`).
    """
    if 2 * B <= n:
        filled = 0
        while filled < B:
            draws = rng.integers(0, n, size=B - filled)
            for r in draws:
                if stamp[r] != t:
                    stamp[r] = t
                    idx[filled] = r
                    filled += 1
    else:
        for j in range(B):
            r = rng.integers(j, n)
            v = perm[j]
            perm[j] = perm[r]
            perm[r] = v
            idx[j] = perm[j]


@kernel
def sgd_update(W, s, t, inv_m, sigma, alpha, step_coef, step_power_half, step_cap, radius,
               rng, secure, gamma, noise_row, w_sum, average_from):
    """Step ``t`` of :func:`dpsgd_loop` after the batch sum ``s`` (items 3-6 there), in
    place on ``W`` (and ``w_sum``): the noisy sum -- the exact grid release ``gamma
    (rint(s/gamma) + noise_row)`` (``secure``) or ``s + sigma xi`` with ``xi`` drawn from
    ``rng`` in row-major order of ``W`` -- over the expected batch size, the step, the
    projection and the running sum.  One function for the in-memory loop and the Dask
    steps (:func:`skdp._solvers._dpsgd.run_dask_steps`), so that the same sum gives the
    same bits."""
    d, K = W.shape
    if step_power_half:
        eta = step_coef / np.sqrt(t)
    else:
        eta = step_coef / t
    if eta > step_cap:
        eta = step_cap
    sq = 0.0
    for j in range(d):
        for k in range(K):
            if secure:
                noisy = grid_value(s[j, k], gamma, noise_row[j * K + k]) * inv_m
            else:
                noisy = (s[j, k] + sigma * rng.standard_normal()) * inv_m
            w = W[j, k] - eta * (noisy + alpha * W[j, k])
            W[j, k] = w
            sq += w * w
    if radius > 0.0:
        nrm = np.sqrt(sq)
        if nrm > radius:
            f = radius / nrm
            for j in range(d):
                for k in range(K):
                    W[j, k] *= f
    if w_sum.shape[0] > 0 and t >= average_from:
        for j in range(d):
            for k in range(K):
                w_sum[j, k] += W[j, k]


@kernel
def _example_derivative(z, yi, loss_id, param, g):
    """``g = dl/dz`` of one example at its margins ``z`` (length K); False (the example is
    dropped) when a multinomial label is not a valid class index."""
    K = g.shape[0]
    if loss_id == LOGISTIC:
        g[0] = _logistic_row(z[0], yi)[1]
    elif loss_id == HUBER:
        g[0] = _huber_row(z[0], yi, param)[1]
    elif loss_id >= TUKEY:  # nonconvex robust losses (TUKEY, WELSCH, CAUCHY)
        g[0] = _robust_row(z[0] - yi, loss_id, param)[1]
    else:
        # guard the write g[label] -= 1: only a valid class index is used
        if not (yi >= 0.0 and yi < K and yi == np.floor(yi)):
            return False
        _multinomial_row(z, int(yi), g)
    return True


@kernel
def _prefetch_rows(X, idx, B):
    """One load per cache line of every row ``idx[:B]`` of ``X``, in a short loop of
    independent loads so that the cache misses overlap (halves the time of a step on
    bank-sized data).  The sum is returned only so that the loads are not eliminated; it
    is private and never released."""
    d = X.shape[1]
    touched = 0.0
    if d > 0:
        for b in range(B):
            i = idx[b]
            for j in range(0, d, 8):
                touched += X[i, j]
            touched += X[i, d - 1]
    return touched


@kernel
def _clipped_derivative(z, yi, loss_id, param, g, xnorm_i, clip):
    """``g = min(1, clip/(||x_i|| ||dl/dz||)) dl/dz`` of one example
    (:func:`_example_derivative`, then the clip; ``g * 1.0`` is ``g``), so that its
    gradient ``x_i g^T`` has norm at most ``clip``.  False (the example is dropped, contributing zero) for an
    invalid multinomial label or a norm that is not finite (inf or NaN anywhere)."""
    if not _example_derivative(z, yi, loss_id, param, g):
        return False
    gsq = 0.0
    for k in range(g.shape[0]):
        gsq += g[k] * g[k]
    nrm = xnorm_i * np.sqrt(gsq)
    if not nrm < np.inf:
        return False
    f = clip / nrm if nrm > clip else 1.0
    for k in range(g.shape[0]):
        g[k] *= f
    return True


@kernel
def _clipped_batch_gradient(X, y, W, idx, B, loss_id, param, clip, xnorm, out, z, g):
    """out = sum_{b < B} clip(grad_W l(x_i W, y_i)), i = idx[b], over the rows of a clipped,
    augmented copy ``X``.

    The per-example gradient is ``x_i (dl/dz)^T`` (shape (d, K)), with Frobenius norm
    ``||x_i|| * ||dl/dz||``.  It is scaled by ``min(1, clip / norm)``; if the norm (or the
    margin, the derivative, the row) is not finite, or a multinomial label is not a valid
    class index, the example contributes zero.  Hence every contribution has norm at most
    ``clip`` (up to the rounding absorbed by the caller's safety factor on ``clip``) and
    replacing one example changes ``out`` by at most ``2 clip``.  ``z`` and ``g`` are
    scratch vectors of length K.  Returns ``(number of examples dropped as non-finite,
    prefetch checksum)``; both are private and must not be released.
    """
    d = X.shape[1]
    K = W.shape[1]
    out[:, :] = 0.0
    touched = _prefetch_rows(X, idx, B)
    dropped = 0
    for b in range(B):
        i = idx[b]
        for k in range(K):
            z[k] = _dot_row(X, i, W, k)
        if not _clipped_derivative(z, y[i], loss_id, param, g, xnorm[i], clip):
            dropped += 1
            continue
        if K == 1:
            c = g[0]
            for j in range(d):
                out[j, 0] += X[i, j] * c
        else:
            for j in range(d):
                xij = X[i, j]
                for k in range(K):
                    out[j, k] += xij * g[k]
    return dropped, touched


@kernel
def _dot_scaled_row(X, i, si, intercept, W, k):
    """:func:`_dot_row` of the clipped, augmented row ``[fl(x_ij s_i), intercept]`` (the
    copy's entries), formed entry by entry: the same four accumulators in the same order,
    the intercept column (if ``W`` has one row more than ``X`` has columns) at index
    ``d``."""
    d = X.shape[1]
    p = W.shape[0]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= d:
        a0 += (np.float64(X[i, j]) * si) * W[j, k]
        a1 += (np.float64(X[i, j + 1]) * si) * W[j + 1, k]
        a2 += (np.float64(X[i, j + 2]) * si) * W[j + 2, k]
        a3 += (np.float64(X[i, j + 3]) * si) * W[j + 3, k]
        j += 4
    if p > d:
        # the copy's row has p = d + 1 entries: entries j .. d - 1 and the intercept at d
        # complete a block of four (to a0..a3 by position) or fall in the tail (to a0)
        full = 4 * (p // 4)
        while j < d:
            v = (np.float64(X[i, j]) * si) * W[j, k]
            if j < full:
                r = j % 4
                if r == 0:
                    a0 += v
                elif r == 1:
                    a1 += v
                elif r == 2:
                    a2 += v
                else:
                    a3 += v
            else:
                a0 += v
            j += 1
        v = intercept * W[d, k]
        if d < full:
            a3 += v                      # d = full - 1 when p = full: the block's last
        else:
            a0 += v
    else:
        while j < d:
            a0 += (np.float64(X[i, j]) * si) * W[j, k]
            j += 1
    return (a0 + a1) + (a2 + a3)


@kernel
def _scaled_batch_gradient(X, scale, intercept, y, W, idx, B, loss_id, param, clip, xnorm,
                           out, z, g):
    """:func:`_clipped_batch_gradient` on the rows ``x_i' = [s_i x_i, intercept]`` of the
    user's ``X`` (any float dtype and memory order), each entry ``fl(x_ij s_i)`` formed
    when it is read (:func:`_dot_scaled_row`, then the accumulation): the entries of the
    clipped copy bit for bit, hence the copy's sums, without the copy."""
    d = X.shape[1]
    p, K = W.shape
    out[:, :] = 0.0
    touched = _prefetch_rows(X, idx, B)
    dropped = 0
    for b in range(B):
        i = idx[b]
        si = scale[i]
        for k in range(K):
            z[k] = _dot_scaled_row(X, i, si, intercept, W, k)
        if not _clipped_derivative(z, y[i], loss_id, param, g, xnorm[i], clip):
            dropped += 1
            continue
        if K == 1:
            c = g[0]
            for j in range(d):
                out[j, 0] += (np.float64(X[i, j]) * si) * c
            if p > d:
                out[d, 0] += intercept * c
        else:
            for j in range(d):
                xij = np.float64(X[i, j]) * si
                for k in range(K):
                    out[j, k] += xij * g[k]
            if p > d:
                for k in range(K):
                    out[d, k] += intercept * g[k]
    return dropped, touched


@kernel
def _csr_dot_row(data, indices, indptr, si, intercept, augmented, i, W, k):
    """:func:`_dot_row` of the clipped, augmented row ``[s_i x_i, intercept]`` of a CSR
    matrix (sorted column indices), over its non-zeros: entry ``j`` goes to accumulator
    ``j % 4`` below ``4 floor(p/4)`` and to the first one after, in increasing ``j``, as
    there; the zeros' products (``+-0``) change no sum, so the bits are the dense row's."""
    p = W.shape[0]
    full = 4 * (p // 4)
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    for t in range(indptr[i], indptr[i + 1]):
        j = indices[t]
        v = (np.float64(data[t]) * si) * W[j, k]
        r = j % 4 if j < full else 0
        if r == 0:
            a0 += v
        elif r == 1:
            a1 += v
        elif r == 2:
            a2 += v
        else:
            a3 += v
    if augmented:
        j = p - 1
        v = intercept * W[j, k]
        r = j % 4 if j < full else 0
        if r == 0:
            a0 += v
        elif r == 1:
            a1 += v
        elif r == 2:
            a2 += v
        else:
            a3 += v
    return (a0 + a1) + (a2 + a3)


@kernel
def _csr_batch_gradient(data, indices, indptr, scale, intercept, augmented, y, W, idx, B,
                        loss_id, param, clip, xnorm, out, z, g):
    """:func:`_clipped_batch_gradient` on the clipped, augmented rows of a CSR matrix,
    over their non-zeros only: the densified copy's sums bit for bit (a zero entry adds
    ``+-0`` to a sum that is never ``-0``), in ``O(non-zeros)`` per example."""
    p, K = W.shape
    out[:, :] = 0.0
    dropped = 0
    for b in range(B):
        i = idx[b]
        si = scale[i]
        for k in range(K):
            z[k] = _csr_dot_row(data, indices, indptr, si, intercept, augmented, i, W, k)
        if not _clipped_derivative(z, y[i], loss_id, param, g, xnorm[i], clip):
            dropped += 1
            continue
        for t in range(indptr[i], indptr[i + 1]):
            xij = np.float64(data[t]) * si
            j = indices[t]
            for k in range(K):
                out[j, k] += xij * g[k]
        if augmented:
            for k in range(K):
                out[p - 1, k] += intercept * g[k]
    return dropped, 0.0


@kernel
def _sub_batch_gradient(X, y, W, idx, B, loss_id, param, clip, xnorm, out, z, g, scale,
                        intercept, csr_data, csr_indices, csr_indptr):
    """The clipped sum over the rows ``idx[:B]`` by the kernel of the rows' form (as
    :func:`dpsgd_loop` chooses it): CSR arrays, the user's rows with clip factors, or a
    clipped copy."""
    if csr_indptr.shape[0] > 0:
        return _csr_batch_gradient(csr_data, csr_indices, csr_indptr, scale, intercept,
                                   W.shape[0] > X.shape[1], y, W, idx, B, loss_id, param,
                                   clip, xnorm, out, z, g)
    if scale.shape[0] > 0:
        return _scaled_batch_gradient(X, scale, intercept, y, W, idx, B, loss_id, param,
                                      clip, xnorm, out, z, g)
    return _clipped_batch_gradient(X, y, W, idx, B, loss_id, param, clip, xnorm, out, z, g)


@kernel(parallel=True)
def _batch_gradient_in_parts(X, y, W, idx, B, loss_id, param, clip, xnorm, out, parts,
                             scale, intercept, csr_data, csr_indices, csr_indptr):
    """``out`` = the clipped sum over the rows ``idx[:B]``, in ``P = parts.shape[0]`` parts:
    part ``r`` sums the rows ``idx[r B // P : (r + 1) B // P]`` in order into ``parts[r]``
    (:func:`_sub_batch_gradient`, the parts side by side on numba's threads), then
    ``out = (...((parts[0] + parts[1]) + parts[2]) ...) + parts[P - 1]``.  ``P`` is fixed
    by the caller, so the additions and their order do not depend on the thread count.
    Each part has its own scratch margins and derivatives (shared ones, in one cache line,
    took the threads' time in false sharing).

    Privacy: the terms, their clip and their norm bound are those of the serial sum; only
    the tree of additions differs.  The rounding analysis of
    :mod:`skdp._mechanisms._summation` holds for any tree of depth at most ``n - 1``, and
    this one's depth is at most ``ceil(B/P) - 1 + P - 1 <= B - 1 <= n - 1`` (``P <= B``
    whenever a part is non-empty; empty parts add ``+0``), so the clip shrunk for depth
    ``n`` still bounds the computed sum's replace-one sensitivity by ``2L``.  Returns
    ``(rows dropped as non-finite, prefetch checksum)``, both private, as the serial
    kernels."""
    P = parts.shape[0]
    dropped = np.zeros(P, dtype=np.int64)
    touched = np.zeros(P)
    for r in prange(P):
        a = r * B // P
        b = (r + 1) * B // P
        nd, tc = _sub_batch_gradient(X, y, W, idx[a:b], b - a, loss_id, param, clip, xnorm,
                                     parts[r], np.empty(W.shape[1]), np.empty(W.shape[1]),
                                     scale, intercept, csr_data, csr_indices, csr_indptr)
        dropped[r] = nd
        touched[r] = tc
    out[:, :] = parts[0]
    for r in range(1, P):
        for j in range(out.shape[0]):
            for k in range(out.shape[1]):
                out[j, k] += parts[r, j, k]
    nd_total = 0
    tc_total = 0.0
    for r in range(P):
        nd_total += dropped[r]
        tc_total += touched[r]
    return nd_total, tc_total


@kernel(nogil=True)
def dpsgd_loop(X, y, loss_id, param, clip, xnorm, W, n_steps, q, batch_size, sigma, alpha,
               step_coef, step_power_half, step_cap, radius, rng, t_start=1,
               noise_int=np.zeros((0, 0), dtype=np.int64), gamma=0.0,
               w_sum=np.zeros((0, 0)), average_from=0, scale=np.zeros(0), intercept=0.0,
               csr_data=np.zeros(0), csr_indices=np.zeros(0, dtype=np.int32),
               csr_indptr=np.zeros(0, dtype=np.int64), parts=None):
    """Run ``n_steps`` steps of projected noisy SGD in place on ``W``.

    Steps are numbered ``t = t_start .. t_start + n_steps - 1`` (the step size depends on
    ``t``; a run may be split in chunks).  With ``noise_int`` of shape ``(n_steps, d K)``
    the noisy sum of step ``t`` is the exact grid release ``gamma (rint(s/gamma) +
    noise_int[t - t_start])`` (:mod:`skdp._mechanisms._exact`; ``|s/gamma|`` clamped to
    ``2^50``) instead of ``s + sigma xi``.

    Step ``t``:

    1. ``B, idx[:B]`` <- :func:`_sample_batch` (Poisson rate ``q``);
    2. ``s = sum_{i in batch} clip(grad l_i(W))`` (:func:`_clipped_batch_gradient`);
    3. ``g = (s + sigma * xi) / batch_size + alpha W``, ``xi ~ N(0, I)`` drawn serially in
       row-major order of ``W`` (``batch_size`` is the *expected* batch size, public);
    4. ``W <- W - eta_t g`` with ``eta_t = min(step_cap, step_coef / t)``
       (``step_power_half`` false) or ``min(step_cap, step_coef / sqrt(t))`` (true);
    5. if ``radius > 0``: ``W <- W * min(1, radius / ||W||_F)``;
    6. with a non-empty ``w_sum`` (same shape as ``W``) and ``t >= average_from``:
       ``w_sum += W`` (the caller divides by the number of steps summed: suffix
       averaging, post-processing of the iterates).

    The rows: ``X`` itself, a clipped and augmented copy (``scale`` empty); or, with the
    clipping factors ``scale`` (``s_i``) and the ``intercept`` column value, the rows
    ``[s_i x_i, intercept]`` of the user's ``X`` (:func:`_scaled_batch_gradient`: no copy)
    or, with ``csr_indptr`` non-empty, of the CSR arrays ``csr_*`` (``X`` then an empty
    ``(0, d)`` array giving ``d``; :func:`_csr_batch_gradient`).  The design is augmented
    when ``W`` has one row more than ``X`` has columns.  All three give the copy's bits.
    ``parts``: None, each step's batch summed serially; or a ``(P, d, K)`` scratch array,
    each batch summed in its ``P`` parts (:func:`_batch_gradient_in_parts`; the caller
    fixes ``P`` from public sizes).  numba prunes the branch a ``None`` argument rules out
    before compiling, so the serial loop never compiles the parallel kernel (3-4 s on an
    empty cache).

    Returns ``(total number of per-example gradients, number dropped as non-finite,
    prefetch checksum)``; only the first is public (it does not depend on the data).
    """
    n = csr_indptr.shape[0] - 1 if csr_indptr.shape[0] > 0 else X.shape[0]
    d, K = W.shape                        # d: coefficients (augmented), as in the copy
    idx = np.empty(n, dtype=np.int64)
    perm = np.arange(n)
    stamp = np.zeros(n, dtype=np.int64)   # values < t_start <= t: valid for any chunk
    s = np.empty((d, K))
    z = np.empty(K)
    g = np.empty(K)
    inv_m = 1.0 / batch_size
    total = 0
    dropped = 0
    checksum = 0.0
    secure = noise_int.shape[0] > 0
    no_row = np.zeros(0, dtype=noise_int.dtype)
    for t in range(t_start, t_start + n_steps):
        B = _sample_batch(rng, n, q, idx, perm, stamp, t)
        total += B
        if parts is None:
            nd, touched = _sub_batch_gradient(X, y, W, idx, B, loss_id, param, clip, xnorm,
                                              s, z, g, scale, intercept, csr_data,
                                              csr_indices, csr_indptr)
        else:
            nd, touched = _batch_gradient_in_parts(X, y, W, idx, B, loss_id, param, clip,
                                                   xnorm, s, parts, scale, intercept,
                                                   csr_data, csr_indices, csr_indptr)
        dropped += nd
        checksum += touched
        sgd_update(W, s, t, inv_m, sigma, alpha, step_coef, step_power_half, step_cap,
                   radius, rng, secure, gamma, noise_int[t - t_start] if secure else no_row,
                   w_sum, average_from)
    return total, dropped, checksum
