r"""numba kernels of the ReSQue estimator and of ``solver="resque"`` (spec §2, §5.2, §5.8).

ReSQue (reweighted stochastic query, Carmon et al. 2023, Def. 2).  Fix an anchor ``xbar`` and
a radius ``rho > 0``; draw ``xi ~ N(xbar, rho^2 I)`` and query a subgradient ``g(xi)``.  For
*any* ``x``

    g_hat(x) = w_x(xi) g(xi),   log w_x(xi) = <xi - xbar, x - xbar>/rho^2 - ||x - xbar||^2/(2 rho^2)

(the ratio of the ``N(x, rho^2 I)`` and ``N(xbar, rho^2 I)`` densities at ``xi``), so
``E g_hat(x) = E_{xi ~ N(x, rho^2 I)} g(xi) = grad f_rho(x)``: unbiased for the gradient of the
Gaussian convolution at every ``x``, while ``xi`` does not depend on ``x`` -- the queries of
many future steps can be made in one parallel round before the iterates are known.
``E w_x^2 = exp(||x - xbar||^2/rho^2)`` (log-normal weight), so
``E||g_hat||^2 <= L^2 exp(||x - xbar||^2/rho^2)`` (equality when ``||g|| = L``).

GLM form (spec §2.5, Rao-Blackwellised): for ``f = l(<a, .>)`` only ``t = <a, xi>`` matters;
draw ``t = tbar + s Z`` with ``tbar = <a, xbar>``, ``s = rho ||a||``, and use
``log w = (t - tbar)(t_x - tbar)/s^2 - (t_x - tbar)^2/(2 s^2) = Z D/s - D^2/(2 s^2)``,
``D = t_x - tbar = <a, x - xbar>``; then ``w l'(t) a`` is unbiased for ``grad f_rho(x)`` and
``E w^2 = exp(D^2/s^2) <= exp(||x - xbar||^2/rho^2)``.

Privacy-critical part: the log-weight is capped (``LOGW_CAP``) before ``exp`` and every
per-example contribution ``w g`` is **clipped** to a public norm ``clip``; a non-finite
contribution counts as zero.  Hence each contribution has norm ``<= clip`` whatever the data,
the anchor, the iterate or the draws: the sensitivity is deterministic (spec §4.1; the
paper's high-probability moment bound is not used).

All random numbers are drawn serially from the ``numpy.random.Generator`` passed in (same
seed, same bits), before any data pass of their block.

Cost layout of :func:`resque_loop` (measured, ``doc/solvers/resque.rst``).  A block gathers its
rows once (a loop of independent loads, so the cache misses of the random rows overlap) into
a contiguous buffer.  The oracle answers ``l'(<a_j, xbar> + rho ||a_j|| Z_j)`` depend only on
the anchor and the block's draws, so they are computed either in one batched parallel round
(:func:`oracle_round`, fixed chunks: independent of the thread count) for large blocks, or
lazily inside each step's pass (:func:`_step_fused`), where ``<a_j, xbar>`` and ``<a_j, x>``
come from one read of the row -- the same expressions in the same order, so both paths give
bitwise the same model (tested).  At a block's first step ``x = xbar`` bitwise, the weight is
exactly 1 and its dot product is skipped.  On the shared 2-core machine parallel regions per
block (or per step) made a fit 5-6x slower when other processes competed for the cores, so
the fused serial pass is the default below ``BATCHED_WORK`` entries per block.
"""

import numpy as np
from numba import njit, prange

from .._losses._kernels import _dot_row
from .._losses._smoothed import raw_margin_derivative
from ._dpsgd_kernel import _sample_batch

#: Cap on the log-weight before ``exp`` (no overflow; the clip bounds the contribution).
LOGW_CAP = 30.0


@njit(cache=True)
def resque_logw_full(xi_minus_anchor, x_minus_anchor, rho):
    """``<xi - xbar, x - xbar>/rho^2 - ||x - xbar||^2/(2 rho^2)`` (general form)."""
    dot = 0.0
    sq = 0.0
    for j in range(xi_minus_anchor.shape[0]):
        dot += xi_minus_anchor[j] * x_minus_anchor[j]
        sq += x_minus_anchor[j] * x_minus_anchor[j]
    r2 = rho * rho
    return dot / r2 - 0.5 * sq / r2


@njit(cache=True)
def resque_logw_glm(t, t_anchor, t_x, s):
    """``(t - tbar)(t_x - tbar)/s^2 - (t_x - tbar)^2/(2 s^2)`` (GLM form; 0 when s = 0)."""
    if not s > 0.0:
        return 0.0
    D = t_x - t_anchor
    return ((t - t_anchor) * D - 0.5 * D * D) / (s * s)


@njit(cache=True)
def clipped_weight_scale(logw, gnorm, clip, logw_cap):
    """Factor ``c`` such that ``c g = clip_{clip}(exp(min(logw, cap)) g)`` for ``||g|| = gnorm``.

    Returns 0 when anything is not finite, so ``c gnorm <= clip`` always holds.
    """
    if logw > logw_cap:
        logw = logw_cap
    w = np.exp(logw)
    nrm = w * gnorm
    if not nrm < np.inf or not w < np.inf:  # NaN or inf anywhere: drop
        return 0.0
    if nrm > clip:
        return clip / gnorm  # = w clip/(w gnorm): the clipped factor, one rounding
    return w


@njit(cache=True)
def resque_estimates_full(G, Xi, anchor, x, rho, clip, logw_cap, out):
    """General-form estimates ``out[j] = clip(w_x(Xi[j]) G[j])`` for M queries.

    ``Xi[j] ~ N(anchor, rho^2 I)`` are the query points, ``G[j]`` the subgradients there.
    ``clip = inf`` and ``logw_cap = inf`` give the raw (unbiased) estimator.
    """
    M, p = G.shape
    dx = x - anchor
    dxi = np.empty(p)
    for j in range(M):
        gsq = 0.0
        for k in range(p):
            dxi[k] = Xi[j, k] - anchor[k]
            gsq += G[j, k] * G[j, k]
        c = clipped_weight_scale(resque_logw_full(dxi, dx, rho), np.sqrt(gsq), clip, logw_cap)
        for k in range(p):
            out[j, k] = c * G[j, k] if c > 0.0 else 0.0


@njit(cache=True)
def resque_estimates_glm(a, y, loss_id, param, anchor, x, rho, Z, clip, logw_cap, out):
    """GLM-form estimates ``out[j] = clip(w_j l'(t_j; y) a)``, ``t_j = <a, anchor> + s Z[j]``."""
    p = a.shape[0]
    tbar = 0.0
    tx = 0.0
    anorm = 0.0
    for k in range(p):
        tbar += a[k] * anchor[k]
        tx += a[k] * x[k]
        anorm += a[k] * a[k]
    anorm = np.sqrt(anorm)
    s = rho * anorm
    for j in range(Z.shape[0]):
        t = tbar + s * Z[j]
        g = raw_margin_derivative(t, y, loss_id, param)
        c = clipped_weight_scale(resque_logw_glm(t, tbar, tx, s), abs(g) * anorm, clip,
                                 logw_cap)
        cg = c * g if c > 0.0 else 0.0  # c = 0 flags a non-finite value: contributes 0
        for k in range(p):
            out[j, k] = cg * a[k]


#: Work (entries touched) above which a step's sum runs on ``N_CHUNKS`` fixed chunks (in
#: parallel on the batched path, serially on the fused path).  The choices depend on public
#: sizes only, chunk results are added in a fixed order, and the two oracle paths compute the same
#: numbers in the same order, so the output does not depend on the path or on the number
#: of threads (bitwise).
PARALLEL_WORK = 200_000
N_CHUNKS = 8
#: Default block work (``total * p`` entries) from which ``solve_resque`` runs the batched
#: parallel oracle round (with more than one numba thread).  Measured on the shared 2-core
#: machine (``doc/solvers/resque.rst``): below about this size a parallel region per block
#: costs more than it saves when other processes compete for the cores, while the fused
#: serial pass reads every gathered row once per step.
BATCHED_WORK = 2_000_000


@njit(cache=True)
def _gather_range(X, y, xnorm, idx, lo, hi, Xb, yb, nb):
    """``Xb[j] = X[idx[j]]``, ``yb[j] = y[idx[j]]``, ``nb[j] = xnorm[idx[j]]`` for ``j`` in
    ``[lo, hi)``: a loop of independent loads, so the cache misses of the random rows
    overlap; the block's steps then read contiguous, cache-resident rows."""
    p = X.shape[1]
    for j in range(lo, hi):
        i = idx[j]
        for k in range(p):
            Xb[j, k] = X[i, k]
        yb[j] = y[i]
        nb[j] = xnorm[i]


@njit(cache=True)
def _oracle_range(Xb, yb, nb, lo, hi, W, rho, loss_id, param, Z, tbar, gq):
    """``tbar[j] = <a_j, xbar>``, ``gq[j] = l'(tbar[j] + rho ||a_j|| Z[j]; y_j)`` on gathered
    rows (``W`` = the anchor as a column)."""
    for j in range(lo, hi):
        tb = _dot_row(Xb, j, W, 0)
        tbar[j] = tb
        gq[j] = raw_margin_derivative(tb + rho * nb[j] * Z[j], yb[j], loss_id, param)


@njit(cache=True, parallel=True)
def _oracle_parallel(X, y, xnorm, idx, total, W, rho, loss_id, param, Z, tbar, gq, Xb, yb,
                     nb):
    for c in prange(N_CHUNKS):
        lo = c * total // N_CHUNKS
        hi = (c + 1) * total // N_CHUNKS
        _gather_range(X, y, xnorm, idx, lo, hi, Xb, yb, nb)
        _oracle_range(Xb, yb, nb, lo, hi, W, rho, loss_id, param, Z, tbar, gq)


@njit(cache=True)
def oracle_round(X, y, xnorm, idx, total, anchor, rho, loss_id, param, Z, tbar, gq, Xb, yb,
                 nb):
    """One batched oracle round: for every queried example ``j < total`` (row ``idx[j]``),
    gather the row, label and norm into ``Xb[j]``, ``yb[j]``, ``nb[j]`` and set
    ``tbar[j] = <a, anchor>``, ``gq[j] = l'(tbar[j] + rho ||a|| Z[j]; y)``.

    Independent per example, run as one parallel pass over ``N_CHUNKS`` fixed chunks: the
    result does not depend on the thread count.
    """
    W = anchor.reshape((anchor.shape[0], 1))
    _oracle_parallel(X, y, xnorm, idx, total, W, rho, loss_id, param, Z, tbar, gq, Xb, yb,
                     nb)


@njit(cache=True)
def _step_range(Xb, nb, lo, hi, gq, tbar, Z, rho, Wx, weighted, C, out):
    """``out += sum_{j in [lo, hi)} clip_C(w_j l'_j a_j)`` (``w_j = 1`` if not weighted),
    on the block's gathered rows ``Xb`` (norms ``nb``), from the oracle answers ``gq`` and
    ``tbar`` of a batched round (:func:`oracle_round`)."""
    p = Xb.shape[1]
    for jj in range(lo, hi):
        g = gq[jj]
        if weighted:
            logw = resque_logw_glm(tbar[jj] + rho * nb[jj] * Z[jj], tbar[jj],
                                   _dot_row(Xb, jj, Wx, 0), rho * nb[jj])
        else:
            logw = 0.0
        c = clipped_weight_scale(logw, abs(g) * nb[jj], C, LOGW_CAP)
        if c > 0.0:  # c = 0: zero gradient, or a non-finite value (contributes 0)
            c *= g
            for k in range(p):
                out[k] += c * Xb[jj, k]


@njit(cache=True, parallel=True)
def _step_parallel(Xb, nb, lo, hi, gq, tbar, Z, rho, Wx, weighted, C, partial):
    cnt = hi - lo
    for c in prange(N_CHUNKS):
        for k in range(partial.shape[1]):
            partial[c, k] = 0.0
        _step_range(Xb, nb, lo + c * cnt // N_CHUNKS, lo + (c + 1) * cnt // N_CHUNKS, gq,
                    tbar, Z, rho, Wx, weighted, C, partial[c])


@njit(cache=True)
def _dot2(Xb, j, u, v):
    """``(<Xb[j], u>, <Xb[j], v>)`` in one pass over the row, each with the accumulation
    order of :func:`~skdp._losses._kernels._dot_row` (so the values are bitwise equal)."""
    d = Xb.shape[1]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    b3 = 0.0
    k = 0
    while k + 4 <= d:
        x0 = Xb[j, k]
        x1 = Xb[j, k + 1]
        x2 = Xb[j, k + 2]
        x3 = Xb[j, k + 3]
        a0 += x0 * u[k]
        a1 += x1 * u[k + 1]
        a2 += x2 * u[k + 2]
        a3 += x3 * u[k + 3]
        b0 += x0 * v[k]
        b1 += x1 * v[k + 1]
        b2 += x2 * v[k + 2]
        b3 += x3 * v[k + 3]
        k += 4
    while k < d:
        a0 += Xb[j, k] * u[k]
        b0 += Xb[j, k] * v[k]
        k += 1
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@njit(cache=True)
def _step_fused(Xb, yb, nb, Z, lo, hi, anchor, x, rho, loss_id, param, weighted, C, out):
    """The oracle answers and the step contributions in one pass over each gathered row:
    ``tbar_j = <a_j, xbar>``, ``t_j = tbar_j + rho ||a_j|| Z_j``, ``l'_j = l'(t_j; y_j)``,
    then ``out += clip_C(w_j l'_j a_j)`` with ``w_j`` the GLM weight at ``x``
    (``<a_j, x>`` computed in the same pass; ``w_j = 1`` if not weighted).

    The oracle answers depend only on the anchor and the block's draws, so evaluating them
    here, lazily, gives the same numbers as the batched round (:func:`oracle_round` +
    :func:`_step_range`, bitwise: same expressions, same accumulation order) while reading
    each row once per step instead of twice per block.  Privacy: the same clip
    (:func:`clipped_weight_scale`), so ``||contribution|| <= C`` for every row.
    """
    p = Xb.shape[1]
    W = anchor.reshape((p, 1))
    for jj in range(lo, hi):
        if weighted:
            tb, tx = _dot2(Xb, jj, anchor, x)
        else:
            tb = _dot_row(Xb, jj, W, 0)
            tx = 0.0
        s = rho * nb[jj]
        t = tb + s * Z[jj]
        g = raw_margin_derivative(t, yb[jj], loss_id, param)
        logw = resque_logw_glm(t, tb, tx, s) if weighted else 0.0
        c = clipped_weight_scale(logw, abs(g) * nb[jj], C, LOGW_CAP)
        if c > 0.0:  # c = 0: zero gradient, or a non-finite value (contributes 0)
            c *= g
            for k in range(p):
                out[k] += c * Xb[jj, k]


@njit(cache=True)
def resque_loop(X, y, xnorm, loss_id, param, q, batch_size, noise_mult, lipschitz, w_max,
                rho, kappa, alpha, radius, phase_steps, phase_eta, phase_block,
                phase_radius, rng, stats, batched_work):
    """The whole PR-1 run (spec §5.2) on the clipped design ``X`` (rows ``||a|| <= C``).

    For each phase ``i`` (center ``c``, radius ``r_i = phase_radius[i]``, ``T_i`` steps of size
    ``eta_i``, block ``m_i``): from ``x = c``, repeat blocks of ``m = min(m_i, steps left)``:

    1. sample ``m`` Poisson(q) batches (:func:`_sample_batch`) and one ``Z ~ N(0, 1)`` per
       (step, example) pair, serially from ``rng``; set the anchor ``xbar = x``; gather the
       block's rows;
    2. the oracle answers ``l'`` at ``t = <a, xbar> + s Z``: one batched parallel round
       (:func:`oracle_round`) when the block has ``total * p >= batched_work`` entries,
       else evaluated lazily inside each step's pass (:func:`_step_fused`) -- the same
       numbers either way;
    3. for each of the ``m`` steps: contributions ``v_j = clip_C(w_j l'_j a_j)`` with
       ``C = lipschitz`` and ``w_j = 1`` when ``m_i = 1`` (anchor = iterate), else
       ``C = w_max lipschitz`` and the GLM weight at the current ``x`` (at the block's first
       step ``x = xbar`` bitwise, so ``D_j = 0``, ``log w_j = 0`` exactly and the dot is
       skipped);
       ``g = (sum_j v_j + N(0, (noise_mult C)^2 I))/batch_size + alpha x``;
       ``x <- Pi_{B_R(0)} Pi_{B_r(c)} Pi_{B_{kappa rho}(xbar)} (x - eta g)`` (inner projection
       only when ``m_i > 1``); accumulate ``x`` into the phase average.

    The new center is the phase average.  Returns the final center; ``stats`` receives
    ``(total oracle queries, oracle rounds, steps)`` (all data-independent).
    """
    n, p = X.shape
    K = phase_steps.shape[0]
    cap = 1024
    idx = np.empty(cap, dtype=np.int64)
    Zb = np.empty(cap)
    tbar = np.empty(cap)
    gq = np.empty(cap)
    Xb = np.empty((cap, p))
    yb = np.empty(cap)
    nb = np.empty(cap)
    tmp = np.empty(n, dtype=np.int64)
    perm = np.arange(n)
    stamp = np.zeros(n, dtype=np.int64)
    stamp_t = 1
    max_block = 1
    for i in range(K):
        if phase_block[i] > max_block:
            max_block = phase_block[i]
    starts = np.empty(max_block + 1, dtype=np.int64)
    center = np.zeros(p)
    x = np.zeros(p)
    anchor = np.zeros(p)
    avg = np.zeros(p)
    v = np.zeros(p)
    partial = np.zeros((N_CHUNKS, p))
    origin = np.zeros(0)
    Wx = x.reshape((p, 1))
    inv_b = 1.0 / batch_size
    queries = 0
    rounds = 0
    steps = 0
    for ph in range(K):
        Ti = phase_steps[ph]
        eta = phase_eta[ph]
        m_i = phase_block[ph]
        r = phase_radius[ph]
        weighted = m_i > 1
        C = lipschitz * w_max if weighted else lipschitz
        for k in range(p):
            x[k] = center[k]
            avg[k] = 0.0
        done = 0
        while done < Ti:
            m = min(m_i, Ti - done)
            # 1. the block's batches and query draws (data-independent), serially
            total = 0
            for s in range(m):
                B = _sample_batch(rng, n, q, tmp, perm, stamp, stamp_t)
                stamp_t += 1
                if total + B > cap:
                    while total + B > cap:
                        cap *= 2
                    idx2 = np.empty(cap, dtype=np.int64)
                    idx2[:total] = idx[:total]
                    idx = idx2
                    Zb = np.empty(cap)
                    tbar = np.empty(cap)
                    gq = np.empty(cap)
                    Xb = np.empty((cap, p))
                    yb = np.empty(cap)
                    nb = np.empty(cap)
                starts[s] = total
                for jj in range(B):
                    idx[total + jj] = tmp[jj]
                total += B
            starts[m] = total
            for jj in range(total):
                Zb[jj] = rng.standard_normal()
            for k in range(p):
                anchor[k] = x[k]
            # 2. the oracle round at the anchor: batched (parallel) for large blocks, else
            #    fused into the steps' passes after one gather of the block's rows
            batched = total * p >= batched_work
            if batched:
                oracle_round(X, y, xnorm, idx, total, anchor, rho, loss_id, param, Zb, tbar,
                             gq, Xb, yb, nb)
            else:
                _gather_range(X, y, xnorm, idx, 0, total, Xb, yb, nb)
            rounds += 1
            queries += total
            # 3. the block's m noisy steps
            for s in range(m):
                for k in range(p):
                    v[k] = 0.0
                lo = starts[s]
                hi = starts[s + 1]
                w_s = weighted and s > 0  # s = 0: x == xbar, log w = 0 exactly
                if (hi - lo) * p >= PARALLEL_WORK:
                    if batched:
                        _step_parallel(Xb, nb, lo, hi, gq, tbar, Zb, rho, Wx, w_s, C,
                                       partial)
                    else:  # the same chunks, serially (no parallel region per step)
                        cnt = hi - lo
                        for c in range(N_CHUNKS):
                            for k in range(p):
                                partial[c, k] = 0.0
                            _step_fused(Xb, yb, nb, Zb, lo + c * cnt // N_CHUNKS,
                                        lo + (c + 1) * cnt // N_CHUNKS, anchor, x, rho,
                                        loss_id, param, w_s, C, partial[c])
                    for c in range(N_CHUNKS):
                        for k in range(p):
                            v[k] += partial[c, k]
                elif batched:
                    _step_range(Xb, nb, lo, hi, gq, tbar, Zb, rho, Wx, w_s, C, v)
                else:
                    _step_fused(Xb, yb, nb, Zb, lo, hi, anchor, x, rho, loss_id, param, w_s,
                                C, v)
                for k in range(p):
                    gk = (v[k] + noise_mult * C * rng.standard_normal()) * inv_b + alpha * x[k]
                    x[k] -= eta * gk
                # projections (post-processing of the released noisy sum)
                if weighted:
                    _project(x, anchor, kappa * rho)
                _project(x, center, r)
                _project(x, origin, radius)
                for k in range(p):
                    avg[k] += x[k]
                steps += 1
            done += m
        for k in range(p):
            center[k] = avg[k] / Ti
    stats[0] = queries
    stats[1] = rounds
    stats[2] = steps
    return center


@njit(cache=True)
def _project(x, c, r):
    """``x <- Pi_{B_r(c)}(x)`` in place (``c`` empty: the origin)."""
    p = x.shape[0]
    origin = c.shape[0] == 0
    sq = 0.0
    for k in range(p):
        dk = x[k] if origin else x[k] - c[k]
        sq += dk * dk
    if sq > r * r:
        f = r / np.sqrt(sq)
        for k in range(p):
            if origin:
                x[k] *= f
            else:
                x[k] = c[k] + (x[k] - c[k]) * f
