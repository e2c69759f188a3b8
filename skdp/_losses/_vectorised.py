r"""NumPy/BLAS evaluation of the full-batch sums: nothing to compile.

Evaluated here instead of by the numba kernels of :mod:`skdp._losses._kernels`:

* the value and gradient of the binary logistic risk on designs of at most
  ``LOGISTIC_NUMPY_MAX_WORK`` entries, and of the Huber risk on at most
  ``NUMPY_MAX_WORK`` (``n p``, e.g. Adult: 32,561 x 105)
  (:func:`binary_value_grad`, used by :class:`skdp._solvers._objective.Objective`, hence by
  objective and output perturbation and ``warm_gd``'s warm start; the rule is
  :func:`skdp._solvers._objective.uses_vectorised`);
* the clipped mean gradient of the smooth robust losses on designs of at most
  ``NUMPY_MAX_WORK`` entries (:func:`sum_clipped_gradients`, ``warm_gd``'s refinement);
* the logistic curvature of Newton's steps (:func:`logistic_curvature`).

Why: compiling the fused kernel costs 0.8-1.3 s in a fresh environment (numba's first
compile also initialises LLVM), more than the whole fit on such data, and a user's first
fit pays it.  On one thread the numpy pass is also the faster one for the logistic loss
(the kernel calls ``exp`` and ``log1p`` row by row, numpy vectorised: 4.4 against 7.1 ms
per evaluation at 10^5 x 51, 18-21 against 47 ms at 10^6 x 21), but a dense numpy pass
runs on one thread and the kernels on all of them: above these sizes the kernels, whose
compilation is then small next to the fit and once per environment, take over
(:func:`skdp._solvers._objective.uses_vectorised`).  The choice reads the public sizes and
loss only.

Determinism.  The rows are cut into the same ``N_CHUNKS`` fixed chunks as the kernels'
(fewer chunks would save a few BLAS calls, ~4 us each, but lengthen the summation depth
below, which the certificate's rounding allowance pays); each chunk's sums are computed
independently (a sparse design's chunks run on the kernels' thread pool, a dense one's on
the calling thread, ``DENSE_NUMPY_THREADS``; BLAS is limited to one thread by
:func:`skdp._solvers._threads.solver_threads`), and the chunk
totals are added in chunk order from ``0.0``.  So the result does not depend on the number
of threads.  It is *not* the kernels' bits (BLAS's summation order and numpy's vectorised
``exp`` differ from the kernel's loops and libm), and it can differ between machines whose
BLAS or numpy dispatch different SIMD code; on one machine a ``random_state`` gives the
same fit every time.

Rounding (what the certified solvers and the sensitivity bounds use).  In each gradient
entry ``sum_i x_ij g_i`` of a dense pass a term goes through one product (fused or
rounded), at most ``B - 1`` additions inside its BLAS product (BLAS's order, any binary
tree over a sub-block of ``B <= SUM_BLOCK_ROWS`` rows of its chunk), at most ``m - 1``
additions of its chunk's ``m`` sub-block totals, and at most ``N - 1`` additions of chunk
totals: :func:`blocked_sum_depth` counts the roundings on its path (``ceil(n/N) + N - 1``,
:func:`chunked_sum_depth`, while a chunk of ``ceil(n/N)`` rows is one sub-block; a CSR
pass adds each sub-block's rows in order and has that depth too), so the computed entry is within
``gamma_depth sum_i |x_ij g_i|`` of the exact one (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2002, §3.1 and §4.2).  Either is at most the depth ``n - 1`` (plus
the product) of recursive summation, for every ``n >= 1``, so a clip computed for
recursive summation (:func:`skdp._mechanisms._summation.summation_clip`) covers these sums
too.  The margins ``z_i = x_i . w`` are BLAS dot products of ``d`` terms:
``|z^ - z| <= gamma_d ||x_i|| ||w||``, as in the kernels.  numpy's ``exp`` is not correctly
rounded; the derivative of a row is allowed ``DERIVATIVE_ULPS`` ulps of its bound
(``tests/_losses/test_vectorised.py`` measures numpy's ``exp`` against mpmath on this
machine: a few ulps at most).
"""

import numpy as np

from .._mechanisms._clipping import matmul_in_blocks
from .._parallel import chunk_pool as _pool
from ._ids import BLOCK, CAUCHY, HUBER, LOGISTIC, N_CHUNKS, TUKEY, WELSCH

__all__ = ["NUMPY_MAX_WORK", "LOGISTIC_NUMPY_MAX_WORK", "DERIVATIVE_ULPS", "uses_numpy",
           "chunk_layout", "map_chunks", "iter_chunks", "chunked_sum_depth", "blocked_sum_depth",
           "binary_value_grad", "sparse_value_grad", "prepare_clipped_rows",
           "sum_clipped_gradients", "logistic_curvature", "curvature_weights",
           "robust_derivative"]

#: Huber objectives and robust sums on designs of at most this many entries (``n x p``,
#: intercept column included) use numpy
NUMPY_MAX_WORK = 1 << 22
#: ... and logistic objectives on at most this many
#: (:func:`skdp._solvers._objective.uses_vectorised`: why)
LOGISTIC_NUMPY_MAX_WORK = 1 << 23
#: fewest entries (``n x p``; non-zeros on a sparse design) of a pass that is spread over
#: the thread pool; below it the submit/collect cost (~50 us) exceeds the work, and the
#: chunks run on the calling thread (the result is the same: the chunks do not depend on
#: the threads)
MIN_THREADED_WORK = 1 << 18
#: threads of a *dense* numpy pass: one.  Its chunks are a dozen small numpy calls each,
#: which hold the GIL between their BLAS calls; on 2 cores whole default fits measured
#: slower threaded at every size this path takes (at most ``NUMPY_MAX_WORK`` entries; the
#: numba kernels above it run in parallel without the GIL), median of 5, one run,
#: logistic / Huber, ms: 10^4 x 50 24.8 -> 18.0 / 20.5 -> 12.5; 10^5 x 20 53.4 -> 42.8 /
#: 32.2 -> 32.5; 5 * 10^4 x 50 86.4 -> 59.1 / 72.0 -> 44.0; 2 * 10^5 x 20 100.0 -> 73.8 /
#: 73.2 -> 51.0; 3 * 10^4 x 100 110.6 -> 95.7 / 74.9 -> 69.0.  Logistic designs above
#: ``NUMPY_MAX_WORK``, one evaluation on two threads against one (one run): 10^5 x 51 6.6
#: against 4.6 ms, 10^6 x 21 21.5 against 20.9, float32 37 against 19, 10^6 x 51 50
#: against 57 (memory-bound passes on 2 vCPUs; above ``LOGISTIC_NUMPY_MAX_WORK`` the
#: kernels run).  Sparse passes (CSR kernels, which release the GIL) keep the pool.
DENSE_NUMPY_THREADS = 1
#: rows from which a pass over a dense design runs chunk by chunk from margin to gradient
#: (:func:`_scaled_value_grad_fused`; the same bits as the whole-array form below it)
FUSED_MIN_ROWS = 1 << 15
#: rows of one BLAS product in a dense pass's gradient sum (the kernels' ``BLOCK``): a
#: chunk of more rows is summed in sub-blocks of this many, their totals added in order
#: (:func:`_gradient_part`), so a term's summation depth is about the kernels' at every
#: size (:func:`blocked_sum_depth`: 4,263 at 10^7 rows, where a chunk is 625,000 rows)
SUM_BLOCK_ROWS = BLOCK
#: ulps of ``sup |l'|`` allowed for the vectorised evaluation of one row's derivative
DERIVATIVE_ULPS = 64
#: the losses whose first derivative :func:`robust_derivative` evaluates
SMOOTH_ROBUST = (TUKEY, WELSCH, CAUCHY)


def uses_numpy(n_rows, n_cols, max_work=None):
    """Whether a full-batch pass over an ``n_rows x n_cols`` design runs here: at most
    ``max_work`` entries (default ``NUMPY_MAX_WORK``; public sizes only)."""
    limit = NUMPY_MAX_WORK if max_work is None else max_work
    return int(n_rows) * int(n_cols) <= limit


def _chunks(n):
    n_chunks = max(1, min(N_CHUNKS, n))
    return [(c * n // n_chunks, (c + 1) * n // n_chunks) for c in range(n_chunks)]


def chunk_layout(n):
    """``(N, n_c)``: the number of chunks ``N = min(N_CHUNKS, n)`` of a pass over ``n >= 1``
    rows and the most rows in one, ``n_c = ceil(n/N)`` (chunk ``c`` holds rows
    ``c n // N`` to ``(c + 1) n // N``, here and in the kernels)."""
    n = max(int(n), 1)
    n_chunks = min(N_CHUNKS, n)
    return n_chunks, -(-n // n_chunks)


def chunked_sum_depth(n):
    """Roundings on a term's path through a chunked sum of ``n`` products (module
    docstring): one product, ``n_c - 1`` additions in its chunk, ``N - 1`` additions of the
    chunk totals (the first, to ``0.0``, is exact): ``ceil(n/N) + N - 1`` with
    ``N = min(N_CHUNKS, n)``.  At most ``n``, the depth ``n - 1`` of recursive summation
    plus the product (``n <= 16``: ``1 + n - 1``; ``n > 16``: ``ceil(n/16) + 15 <= n``)."""
    n_chunks, rows = chunk_layout(n)
    return rows + n_chunks - 1


def blocked_sum_depth(n):
    """Roundings on a term's path through a dense pass's gradient sum over ``n`` rows
    (:func:`_gradient_part`): one product and at most ``B - 1`` additions in its BLAS
    product (``B = min(n_c, SUM_BLOCK_ROWS)`` rows, any order), ``m - 1`` additions of its
    chunk's ``m = ceil(n_c/SUM_BLOCK_ROWS)`` sub-block totals and ``N - 1`` of the chunk
    totals: ``B + m + N - 2``, with ``(N, n_c)`` = :func:`chunk_layout`.  It is
    :func:`chunked_sum_depth` while a chunk is one sub-block (``n <= N SUM_BLOCK_ROWS``), and
    at most ``n`` always."""
    n_chunks, rows = chunk_layout(n)
    return min(rows, SUM_BLOCK_ROWS) + -(-rows // SUM_BLOCK_ROWS) + n_chunks - 2


def iter_chunks(fn, n, threads, work):
    """``fn(start, stop)`` of each chunk, yielded in chunk order (a reduction adds them as
    they come, so the sum is the same whatever the threads).  Threaded as
    :func:`map_chunks`, but with at most ``threads`` chunks in flight: the next chunk is
    submitted when the oldest is taken, so only a few results are held at a time, not one
    per chunk (on a 10^5-column sparse design each is a vector of 10^5 numbers)."""
    chunks = _chunks(n)
    threads = min(int(threads), len(chunks))
    if threads <= 1 or work < MIN_THREADED_WORK:
        for a, b in chunks:
            yield fn(a, b)
        return
    from collections import deque

    pool = _pool()
    pending = deque(pool.submit(fn, a, b) for a, b in chunks[:threads])
    upcoming = iter(chunks[threads:])
    try:
        while pending:
            result = pending.popleft().result()
            nxt = next(upcoming, None)
            if nxt is not None:
                pending.append(pool.submit(fn, *nxt))
            yield result
    finally:
        for f in pending:          # an error (or an abandoned reduction): drain, not leak
            f.cancel()
        for f in pending:
            if not f.cancelled():
                f.exception()


def map_chunks(fn, n, threads, work):
    """``[fn(start, stop) for each chunk]`` in chunk order, on ``threads`` threads when
    the pass touches at least ``MIN_THREADED_WORK`` entries (``work``), else on this one."""
    chunks = _chunks(n)
    threads = min(int(threads), len(chunks))
    if threads <= 1 or work < MIN_THREADED_WORK:
        return [fn(a, b) for a, b in chunks]
    groups = [chunks[g * len(chunks) // threads:(g + 1) * len(chunks) // threads]
              for g in range(threads)]
    futures = [_pool().submit(lambda grp: [fn(a, b) for a, b in grp], grp) for grp in groups]
    return [out for f in futures for out in f.result()]


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def binary_losses(z, y, loss_id, param):
    """``(l(z_i, y_i), l'(z_i, y_i))`` of ``LOGISTIC`` (``y = +-1``) or ``HUBER``
    (threshold ``param``), elementwise: the kernels' expressions
    (:func:`skdp._losses._kernels._logistic_row`, ``_huber_row``) vectorised.

    Logistic, with ``t = -y z`` and ``e = exp(-|t|)``: ``l = max(t, 0) + log1p(e)`` and
    ``l' = -y q/(1 + e)``, ``q = 1`` where ``t > 0`` and ``e`` elsewhere.  Huber, with
    ``r = z - y``: ``l = r^2/2`` where ``|r| <= h``, ``h (|r| - h/2)`` elsewhere, and
    ``l' = clip(r, -h, h)``.  Computed in place in a few arrays of ``n``: on 10^5 rows the
    form with a new temporary per operation took 3.5x the time (one run).  (Adding ``0.0``,
    multiplying by ``y = +-1`` and negating are exact, so these are the bits of the
    temporaries' form.)"""
    if loss_id == LOGISTIC:
        t = np.multiply(y, z)
        np.negative(t, out=t)
        e = np.abs(t)
        np.negative(e, out=e)
        np.exp(e, out=e)
        value = np.log1p(e)
        value += np.maximum(t, 0.0)
        q = np.where(t > 0.0, 1.0, e)
        e += 1.0
        q /= e
        q *= y
        return value, np.negative(q, out=q)
    if loss_id == HUBER:
        h = float(param)
        r = np.subtract(z, y)
        a = np.abs(r)
        inside = a <= h
        a -= 0.5 * h
        a *= h                                    # h (|r| - h/2)
        value = np.multiply(r, 0.5)
        value *= r                                # (r/2) r, the kernel's order
        value = np.where(inside, value, a)
        return value, np.clip(r, -h, h, out=r)
    raise ValueError(f"loss id {loss_id} has no vectorised binary form")


def binary_value_grad(X, y, W, loss_id, param, alpha, grad, threads=1):
    """``F(W) = (1/n) sum_i l(x_i W, y_i) + (alpha/2)||W||^2``; writes ``grad F`` into
    ``grad`` (shape ``(p, 1)``).  The interface of
    :func:`skdp._losses._kernels.binary_value_grad`; chunked as the module docstring says.

    ``X`` is a clipped array or a :class:`~skdp._mechanisms._clipped_rows.ClippedRows`:
    dense, each chunk's rows are formed in a chunk-sized buffer (the copy's bits, so the
    copy's sums); sparse, see :func:`_sparse_chunk`.
    """
    n, d = X.shape
    w = np.ascontiguousarray(W[:, 0])

    if getattr(X, "sparse", False):
        return sparse_value_grad(X, y, W, loss_id, param, alpha, grad, threads)
    if hasattr(X, "rows"):
        return _scaled_value_grad(X, y, w, loss_id, param, alpha, grad, threads)

    def chunk(a, b):
        z = np.empty(b - a)
        _margins_into(X, w, a, b, z)
        value, g = binary_losses(z, y[a:b], loss_id, param)
        return float(np.sum(value)), _gradient_part(X, a, b, g)[0]

    total = np.zeros(d)
    value = 0.0
    if n:
        for v, s in iter_chunks(chunk, n, min(threads, DENSE_NUMPY_THREADS), n * d):
            total += s
            value += v
    grad[:, 0] = total / n + alpha * w
    sq = 0.0
    for wj in w.tolist():
        sq += wj * wj
    return value / n + 0.5 * alpha * sq


def _scaled_value_grad(design, y, w, loss_id, param, alpha, grad, threads):
    """:func:`binary_value_grad` over a dense
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows`, without forming its rows: the
    margins ``z_i = fl(s_i fl(x_i . w_f)) + fl(b w_b)`` (BLAS per chunk), the losses of all
    rows in one call, then per chunk ``X_c^T fl(s g)`` and ``b fl(sum g)``.  The rounding is
    that of :func:`_sparse_chunk` (two more roundings on a margin, one more on a gradient
    term: :func:`skdp._solvers._objective.gradient_rounding_allowance` with
    ``scaled=True``); the Python work per chunk is two BLAS calls, where forming each
    chunk's clipped rows cost ~50-75 us a chunk (16 chunks a pass on a 10^4-row design)."""
    X, s = design.X, design.scale
    n = X.shape[0]
    d = design.n_features_in
    wf = np.ascontiguousarray(w[:d])
    if n >= FUSED_MIN_ROWS:
        return _scaled_value_grad_fused(design, y, w, wf, loss_id, param, alpha, grad,
                                        threads)
    z = np.empty(n)
    threads = min(threads, DENSE_NUMPY_THREADS)
    map_chunks(lambda a, b: _margins_into(X, wf, a, b, z[a:b]), n, threads, n * d)
    z *= s
    if design.augmented:
        z += design.intercept * w[d]
    values, g = binary_losses(z, y, loss_id, param)
    g_scaled = g * s

    def gradient(a, b):
        return _gradient_part(X, a, b, g_scaled[a:b], g[a:b])

    total = np.zeros(design.shape[1])
    gsum = 0.0
    if n:
        for part, gs in iter_chunks(gradient, n, threads, n * d):
            total[:d] += part
            gsum += gs
    if design.augmented:
        total[d] = design.intercept * gsum
    grad[:, 0] = total / n + alpha * w
    value = 0.0
    for a, b in _chunks(n) if n else ():
        value += float(np.sum(values[a:b]))
    sq = 0.0
    for wj in w.tolist():
        sq += wj * wj
    return value / n + 0.5 * alpha * sq


def _scaled_value_grad_fused(design, y, w, wf, loss_id, param, alpha, grad, threads):
    """:func:`_scaled_value_grad` with every step of a chunk done before the next chunk
    (its rows converted to float64 once, margins, losses, gradient part and the sums of
    ``l`` and ``l'``): the same operations on the same chunks, so the same bits, but the
    temporaries are a chunk's (``~n/16`` numbers), not six vectors of ``n`` (on a 10^5 x 20
    float32 design those were 0.6x the size of ``X``).  About 15 numpy calls a chunk: used
    from ``FUSED_MIN_ROWS`` rows."""
    X, s = design.X, design.scale
    n = X.shape[0]
    d = design.n_features_in
    shift = design.intercept * w[d] if design.augmented else None

    def chunk(a, b):
        z = np.empty(b - a)
        _margins_into(X, wf, a, b, z)
        z *= s[a:b]
        if shift is not None:
            z += shift
        values, g = binary_losses(z, y[a:b], loss_id, param)
        part, gsum = _gradient_part(X, a, b, g * s[a:b], g)
        return part, gsum, float(np.sum(values))

    total = np.zeros(design.shape[1])
    gsum = value = 0.0
    for part, gs, vs in iter_chunks(chunk, n, min(threads, DENSE_NUMPY_THREADS), n * d):
        total[:d] += part
        gsum += gs
        value += vs
    if design.augmented:
        total[d] = design.intercept * gsum
    grad[:, 0] = total / n + alpha * w
    sq = 0.0
    for wj in w.tolist():
        sq += wj * wj
    return value / n + 0.5 * alpha * sq


def _margins_into(X, w, a, b, out):
    """``out = X[a:b] @ w`` in float64 (BLAS, one dot product per row); rows of another
    dtype (float32) are converted a sub-block of ``SUM_BLOCK_ROWS`` at a time, so no
    chunk-sized float64 copy is made (the conversion is exact)."""
    if X.dtype == np.float64:
        np.matmul(X[a:b], w, out=out)
    else:
        matmul_in_blocks(X[a:b], w, out, SUM_BLOCK_ROWS)


def _gradient_part(X, a, b, weights, counted=None):
    """``(sum_i x_i weights_i, sum_i counted_i)`` over the rows ``a:b`` of a dense ``X``
    (``weights`` and ``counted``: the chunk's ``b - a`` values; no ``counted``: the second
    sum is 0), summed in sub-blocks of
    ``SUM_BLOCK_ROWS`` rows: one BLAS product (and one ``np.sum``) per sub-block, its rows
    converted to float64 there, and the sub-block totals added in order, the first to
    nothing.  A term thus meets at most ``min(b - a, SUM_BLOCK_ROWS)`` roundings in its
    sub-block and ``m - 1`` additions of the ``m`` sub-block totals
    (:func:`blocked_sum_depth`).  A chunk of at most ``SUM_BLOCK_ROWS`` rows is one
    product: the bits of ``X[a:b].T @ weights``."""
    part = None
    total = 0.0
    for s0 in range(a, b, SUM_BLOCK_ROWS):
        s1 = min(s0 + SUM_BLOCK_ROWS, b)
        block = np.asarray(X[s0:s1], dtype=np.float64).T @ weights[s0 - a:s1 - a]
        if part is None:
            part = block
        else:
            part += block
        if counted is not None:
            total += float(np.sum(counted[s0 - a:s1 - a]))
    return part, total


def _sparse_chunk(design, y, W, a, b, loss_id, param, margins=None):
    """``(sum l_i, sum_i x_i'^T l'_i)`` over rows ``a:b`` of a sparse
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows`, on its CSR arrays (no row is
    densified); ``W`` of shape ``(p, K)``, the gradient sum returned as ``(p, K)``.

    Margin ``z_ik = fl(s_i fl(x_i . w_k)) + fl(b w_dk)``: the CSR kernel adds a row's
    non-zeros in order (at most ``d`` terms), then two products and one addition more, so
    ``|z^ - z| <= gamma_{p+2} (s_i ||x_i|| ||w_k|| + b |w_dk|) <= gamma_{p+2} C ||w_k||``.
    Gradient entry ``j < d``: ``sum_i x_ij fl(s_i g_ik)``, the kernel adding the rows of
    each sub-block of ``SUM_BLOCK_ROWS`` rows in order from zero, the sub-block totals
    added in order (a dense pass's layout); entry ``d``: ``b fl(sum_i g_ik)`` (numpy's
    pairwise sum, shallower).  Either way a term meets one rounding more than in a dense
    chunk: the depth is ``blocked_sum_depth(n) + 1``
    (:func:`skdp._solvers._objective.gradient_rounding_allowance` with ``sparse=True``).
    The derivatives are :func:`binary_losses` (logistic, Huber) or the kernels' own
    (:func:`skdp._losses._kernels._row_derivatives`: multinomial, robust losses).
    ``margins`` (one output): the chunk's ``n``-slice receives the margins ``z_i``, the
    bits of :meth:`ClippedRows.matvec` (the same kernel, then the same addition).
    """
    from .._mechanisms._sparse_kernels import csr_accumulate, csr_margins

    X = design.X
    d = design.n_features_in
    Z = np.empty((b - a, W.shape[1]))
    csr_margins(X.data, X.indices, X.indptr, a, b, W, design.scale, Z)
    if design.augmented:
        Z += design.intercept * W[d][None, :]
    if margins is not None:
        margins[:] = Z[:, 0]
    if W.shape[1] == 1 and loss_id in (LOGISTIC, HUBER):
        values, g = binary_losses(Z[:, 0], y[a:b], loss_id, param)
        value, G = float(np.sum(values)), g[:, None]
    else:
        from ._kernels import _row_derivatives

        G = np.empty_like(Z)
        value = float(_row_derivatives(Z, np.ascontiguousarray(y[a:b], dtype=np.float64),
                                       loss_id, float(param), G))
    out = np.zeros((design.shape[1], W.shape[1]))
    SG = design.scale[a:b, None] * G
    if b - a <= SUM_BLOCK_ROWS:
        csr_accumulate(X.data, X.indices, X.indptr, a, b, SG, out)
    else:
        # sub-blocks of SUM_BLOCK_ROWS rows, each added in order from zero, their totals
        # added in order: the dense pass's depth (blocked_sum_depth), not the chunk's
        # ceil(n/N) rows in one recursive sum (625,015 roundings at n = 10^7)
        part = np.empty_like(out)
        for a2 in range(a, b, SUM_BLOCK_ROWS):
            b2 = min(a2 + SUM_BLOCK_ROWS, b)
            part[:] = 0.0
            csr_accumulate(X.data, X.indices, X.indptr, a2, b2, SG[a2 - a:b2 - a], part)
            out += part
    if design.augmented:
        out[d] = design.intercept * np.sum(G, axis=0)
    return value, out


def sparse_sums(design, y, W, loss_id, param, threads=1, margins=None):
    """``(sum_i l(x_i' W, y_i), sum_i x_i'^T l'_i)`` over a sparse
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows`: the chunks of
    :func:`_sparse_chunk` added in chunk order, from zero (the order
    :func:`blocked_sum_depth` bounds, plus one; a Dask partition's sums are these over its
    rows)."""
    total = np.zeros(W.shape)
    value = 0.0

    def chunk(a, b):
        return _sparse_chunk(design, y, W, a, b, loss_id, param,
                             None if margins is None else margins[a:b])

    if design.shape[0]:
        for v, part in iter_chunks(chunk, design.shape[0], threads,
                                   design.X.nnz * W.shape[1]):
            total += part
            value += v
    return value, total


def sparse_value_grad(design, y, W, loss_id, param, alpha, grad, threads=1, margins=None):
    """``F(W) = (1/n) sum_i l(x_i' W, y_i) + (alpha/2)||W||_F^2`` over a sparse
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows` (any loss, any ``K``); writes
    ``grad F`` into ``grad``, and with one output the margins ``x_i' W`` into
    ``margins`` if given (an array of ``n``).  Chunked as the module docstring says, each
    chunk by :func:`_sparse_chunk`."""
    n = design.shape[0]
    value, total = sparse_sums(design, y, W, loss_id, param, threads, margins)
    grad[:] = total / n + alpha * W
    sq = 0.0
    for wj in W.ravel().tolist():
        sq += wj * wj
    return value / n + 0.5 * alpha * sq


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def robust_derivative(r, loss_id, c):
    """``l'(r)`` of the smooth robust losses (Tukey, Welsch, Cauchy; scale ``c``),
    elementwise: the first derivative of :func:`skdp._losses._kernels._robust_row`, with
    its limits for huge residuals."""
    u = r / c
    if loss_id == TUKEY:
        s = 1.0 - u * u
        return np.where(np.abs(u) >= 1.0, 0.0, r * s * s)
    if loss_id == WELSCH:
        u2 = u * u
        return np.where(u2 > 700.0, 0.0, r * np.exp(-np.minimum(u2, 700.0)))
    if loss_id == CAUCHY:
        return np.where(np.abs(u) > 1e150, c / u, r / (1.0 + u * u))
    raise ValueError(f"loss id {loss_id} has no vectorised robust derivative")


def prepare_clipped_rows(X, row_norm, gclip, safe):
    """``(X', bound)`` for :func:`sum_clipped_gradients`, computed once per fit (the rows
    and their norms do not change between steps): ``bound[i] = gclip safe/||x_i||``, and
    0 with the row zeroed in ``X'`` when ``||x_i||`` is 0 or not finite (such rows are
    skipped, as by the kernel; ``X'`` is a copy only when there are any)."""
    ok = (row_norm > 0.0) & (row_norm < np.inf)
    if not ok.all():  # their entries may be inf or NaN
        X = np.where(ok[:, None], X, 0.0)
    with np.errstate(divide="ignore"):
        bound = np.where(ok, float(gclip) * float(safe) / np.where(ok, row_norm, 1.0), 0.0)
    return X, bound


def sum_clipped_gradients(X, y, w, loss_id, c, bound, threads=1):
    """``sum_i clip(l'(x_i w - y_i), bound_i) x_i`` (non-finite derivatives contribute
    zero) over rows prepared by :func:`prepare_clipped_rows`: the gradient part of
    :func:`skdp._solvers._spider_kernel.oracle_refresh` (times the row count), vectorised;
    each term has norm
    ``<= gclip safe (1 + u)`` whatever the data, and the sum's rounding is that of the
    module docstring (depth at most ``n``)."""
    n, p = X.shape

    def chunk(a, b):
        Xc = X[a:b]
        with np.errstate(invalid="ignore", over="ignore"):
            d1 = robust_derivative(Xc @ w - y[a:b], loss_id, c)
        d1 = np.where(np.isfinite(d1), d1, 0.0)
        d1 = np.clip(d1, -bound[a:b], bound[a:b])
        return Xc.T @ d1

    total = np.zeros(p)
    if n:
        for s in iter_chunks(chunk, n, min(threads, DENSE_NUMPY_THREADS), n * p):
            total += s
    return total


def logistic_curvature(z):
    """``l''(z) = e/(1 + e)^2`` with ``e = exp(-|z|)`` (Newton steps only: the certificate
    never trusts the Hessian)."""
    e = np.abs(z)                  # in place from here: no temporaries of n numbers
    np.negative(e, out=e)
    np.exp(e, out=e)
    denom = np.add(e, 1.0)
    np.multiply(denom, denom, out=denom)
    return np.divide(e, denom, out=e)


def curvature_weights(z, y, loss_id, param):
    """``l''(z_i)`` of the scalar-margin losses (Newton steps): Huber's ``1{|z - y| <= h}``
    elementwise in numpy (the kernel's comparison, NaN residuals give 0 as there; no
    compilation), the others by :func:`margin_curvatures`."""
    if loss_id == HUBER:
        r = np.subtract(z, y)
        inside = np.abs(r, out=r) <= param        # NaN residuals compare False, as there
        return np.copyto(r, inside) or r
    from ._kernels import margin_curvatures  # numba, for the other losses only

    out = np.empty(z.shape[0])
    margin_curvatures(np.ascontiguousarray(z), y, loss_id, param, out)
    return out
