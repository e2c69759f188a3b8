r"""numba kernels of the ReSQue estimator and of ``solver="resque"``.

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

GLM form: for ``f = l(<a, .>)`` only ``t = <a, xi>`` matters;
draw ``t = tbar + s Z`` with ``tbar = <a, xbar>``, ``s = rho ||a||``, and use
``log w = (t - tbar)(t_x - tbar)/s^2 - (t_x - tbar)^2/(2 s^2) = Z D/s - D^2/(2 s^2)``,
``D = t_x - tbar = <a, x - xbar>``; then ``w l'(t) a`` is unbiased for ``grad f_rho(x)`` and
``E w^2 = exp(D^2/s^2) <= exp(||x - xbar||^2/rho^2)``.

Privacy-critical part: the log-weight is capped (``LOGW_CAP``) before ``exp`` and every
per-example contribution ``w g`` is **clipped** to a public norm ``clip``; a non-finite
contribution counts as zero.  Hence each contribution has norm ``<= clip`` whatever the data,
the anchor, the iterate or the draws: the sensitivity is deterministic (the
paper's high-probability moment bound is not used).

All random numbers are drawn serially from the ``numpy.random.Generator`` passed in (same
seed, same bits), before any data pass of their block.

Cost layout of :func:`resque_loop` (measured, ``doc/solvers/resque.rst``).  A block's **oracle
round** gathers its rows once (a loop of independent loads, so the cache misses of the random
rows overlap) into a contiguous buffer ``Xb`` -- a row with a non-finite norm is stored as
zeros and flagged (its contribution is dropped), so the dense products below never see a
non-finite entry -- then computes ``tbar = Xb @ xbar`` over all its ``m`` batches and
``l'(tbar_j + rho ||a_j|| Z_j)``: these depend only on the anchor and the block's draws, so
the round runs serially (:func:`oracle_round`) or, when the caller asks for threads, on fixed
chunks in parallel (:func:`oracle_round_parallel`; one parallel region per block, not per
step).  Each step is ``t_x = Xb_s @ x`` (weighted steps only; at a block's first step
``x = xbar`` bitwise, the weight is exactly 1 and the product is skipped), one scalar pass
computing the clipped coefficients ``c_j`` (:func:`step_coefficients`, where the privacy clip
lives) and ``sum_j c_j a_j = c @ Xb_s``.  The products go to BLAS ``dgemv`` (numba's
``np.dot``), limited to one thread while a solver runs
(:func:`~skdp._solvers._threads.solver_threads`).  The serial path is the default: on the
shared 2-core machine a parallel region per block made whole fits 5-15x slower whenever
other processes competed for the cores (a region waits for its descheduled thread).
"""

import numpy as np
from numba import prange

from .._losses._smoothed import raw_margin_derivative
from .._mechanisms._exact import grid_value
from ._dpsgd_kernel import _sample_batch
from .._numba_cache import ensure_cache_locator, kernel

#: Cap on the log-weight before ``exp`` (no overflow; the clip bounds the contribution).
LOGW_CAP = 30.0


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def resque_logw_full(xi_minus_anchor, x_minus_anchor, rho):
    """``<xi - xbar, x - xbar>/rho^2 - ||x - xbar||^2/(2 rho^2)`` (general form)."""
    dot = 0.0
    sq = 0.0
    for j in range(xi_minus_anchor.shape[0]):
        dot += xi_minus_anchor[j] * x_minus_anchor[j]
        sq += x_minus_anchor[j] * x_minus_anchor[j]
    r2 = rho * rho
    return dot / r2 - 0.5 * sq / r2


@kernel
def resque_logw_glm(t, t_anchor, t_x, s):
    """``(t - tbar)(t_x - tbar)/s^2 - (t_x - tbar)^2/(2 s^2)`` (GLM form; 0 when s = 0)."""
    if not s > 0.0:
        return 0.0
    D = t_x - t_anchor
    return ((t - t_anchor) * D - 0.5 * D * D) / (s * s)


@kernel
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


@kernel
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


@kernel
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


@kernel
def oracle_chunk(X, y, xnorm, idx, lo, hi, Xb, yb, nb, anchor, rho, loss_id, param, Z, tbar,
                 gq):
    """Gather rows ``idx[lo:hi]`` and answer their oracle queries at the anchor ``xbar``.

    ``Xb[j] = X[idx[j]]``, ``yb[j] = y[idx[j]]``, ``nb[j] = xnorm[idx[j]]`` (a loop of
    independent loads, so the cache misses of the random rows overlap; the steps then read
    contiguous rows), then ``tbar[j] = <a_j, xbar>`` (one ``dgemv``) and
    ``gq[j] = l'(tbar[j] + rho ||a_j|| Z[j]; y_j)``.  A row whose norm is not finite is
    stored as zeros with ``nb[j] = NaN``: :func:`step_coefficients` then gives it the
    coefficient 0, and the products over ``Xb`` never meet ``0 * inf = NaN``.

    Nothing here depends on the iterates of the block's steps (the queries are
    ``xi_j ~ N(xbar, rho^2 I)``, summarised by ``t_j = <a_j, xi_j>`` in the GLM form), and
    rows are independent: chunks can run in any order or in parallel.
    """
    p = X.shape[1]
    for j in range(lo, hi):
        i = idx[j]
        nrm = xnorm[i]
        if nrm < np.inf:
            for k in range(p):
                Xb[j, k] = X[i, k]
            nb[j] = nrm
        else:  # NaN or inf: flagged, dropped by step_coefficients
            for k in range(p):
                Xb[j, k] = 0.0
            nb[j] = np.nan
        yb[j] = y[i]
    if hi > lo:
        tb = np.dot(Xb[lo:hi], anchor)
        for j in range(lo, hi):
            t0 = tb[j - lo]
            tbar[j] = t0
            gq[j] = raw_margin_derivative(t0 + rho * nb[j] * Z[j], yb[j], loss_id, param)


@kernel
def oracle_round(X, y, xnorm, idx, total, Xb, yb, nb, anchor, rho, loss_id, param, Z, tbar,
                 gq):
    """The block's batched oracle round, serially: :func:`oracle_chunk` on all ``total``
    queried rows at once."""
    oracle_chunk(X, y, xnorm, idx, np.int64(0), total, Xb, yb, nb, anchor, rho, loss_id,
                 param, Z, tbar, gq)


#: Fixed number of chunks of the parallel oracle round: the chunking, hence every rounding,
#: does not depend on the number of threads.
N_CHUNKS = 8
#: Block size (``total * p`` entries) from which ``solve_resque(n_jobs > 1)`` runs a block's
#: oracle round on the threads.  Measured on 2 cores (``doc/solvers/resque.rst``): a
#: parallel region per block costs 15-80 us, so smaller rounds (all blocks at n <= 10^5,
#: p <= 11, and at n = 10^4, p = 101) ran 1.5-2x slower threaded than serially.
PARALLEL_ROUND_WORK = 500_000


@kernel(parallel=True)
def oracle_round_parallel(X, y, xnorm, idx, total, Xb, yb, nb, anchor, rho, loss_id, param,
                          Z, tbar, gq):
    """The block's batched oracle round on the numba threads: :func:`oracle_chunk` on
    ``N_CHUNKS`` fixed chunks (the answers equal the serial round's up to the rounding of
    the chunked ``dgemv``; bitwise the same for any number of threads)."""
    for c in prange(N_CHUNKS):
        oracle_chunk(X, y, xnorm, idx, c * total // N_CHUNKS, (c + 1) * total // N_CHUNKS,
                     Xb, yb, nb, anchor, rho, loss_id, param, Z, tbar, gq)


@kernel
def step_coefficients(gq, tbar, nb, Z, lo, hi, rho, tx, weighted, C, coef):
    """``coef[j - lo] = c_j`` for ``j`` in ``[lo, hi)`` such that row ``j`` contributes
    ``c_j a_j = clip_C(w_j l'_j a_j)``, with ``w_j`` the GLM ReSQue weight from the anchor to
    the iterate (``log w_j = Z_j D_j/s_j - D_j^2/(2 s_j^2)``, ``D_j = tx[j - lo] - tbar[j]``,
    ``s_j = rho ||a_j||``; ``w_j = 1`` if not weighted).

    Privacy: ``|c_j| ||a_j|| <= C`` for every input (:func:`clipped_weight_scale`); anything
    non-finite (the derivative, the weight, the flagged norm of a non-finite row) gives
    ``c_j = 0``.  So each row's contribution has norm ``<= C`` whatever the data.
    """
    for j in range(lo, hi):
        g = gq[j]
        if weighted:
            s = rho * nb[j]
            logw = resque_logw_glm(tbar[j] + s * Z[j], tbar[j], tx[j - lo], s)
        else:
            logw = 0.0
        c = clipped_weight_scale(logw, abs(g) * nb[j], C, LOGW_CAP)
        coef[j - lo] = c * g if c > 0.0 else 0.0  # c = 0: zero gradient or non-finite


@kernel
def step_sum(Xb, nb, lo, hi, gq, tbar, Z, rho, x, weighted, C, coef, out):
    """``out = sum_{j in [lo, hi)} clip_C(w_j l'_j a_j)`` on the block's gathered rows:
    ``t_x = Xb[lo:hi] @ x`` (weighted steps only), :func:`step_coefficients`, then
    ``out = coef @ Xb[lo:hi]`` (both ``dgemv``).  Replacing one row changes ``out`` by at
    most ``2 C`` (up to rounding, absorbed by the caller's safety factor on ``C``)."""
    B = hi - lo
    if B == 0:
        out[:] = 0.0
        return
    A = Xb[lo:hi]
    tx = np.dot(A, x) if weighted else tbar[lo:hi]  # unweighted: tx is not read
    step_coefficients(gq, tbar, nb, Z, lo, hi, rho, tx, weighted, C, coef)
    # into ``out`` directly: the same dgemv as ``out[:] = np.dot(coef[:B], A)``, without
    # the slice assignment, whose shape-mismatch message compiles numba's whole string
    # machinery (~1.5 s of a cold first resque fit)
    np.dot(coef[:B], A, out)


@kernel
def resque_loop(X, y, xnorm, loss_id, param, q, batch_size, noise_mult, lipschitz, w_max,
                rho, kappa, alpha, radius, phase_steps, phase_eta, phase_block,
                phase_radius, rng, stats, parallel_work,
                noise_int=np.zeros((0, 0), dtype=np.int64), phase_gamma=np.zeros(0)):
    """The whole PR-1 run on the clipped design ``X`` (rows ``||a|| <= C``).

    For each phase ``i`` (center ``c``, radius ``r_i = phase_radius[i]``, ``T_i`` steps of size
    ``eta_i``, block ``m_i``): from ``x = c``, repeat blocks of ``m = min(m_i, steps left)``:

    1. sample ``m`` Poisson(q) batches (:func:`_sample_batch`) and one ``Z ~ N(0, 1)`` per
       (step, example) pair, serially from ``rng``; set the anchor ``xbar = x``;
    2. the oracle round at the anchor: gather the block's rows and answer ``l'`` at
       ``t = <a, xbar> + s Z`` for every queried example (:func:`oracle_round`, or
       :func:`oracle_round_parallel` on the numba threads when the block has at least
       ``parallel_work`` entries ``total * p``: a public size, so the path -- and every
       rounding -- is fixed before the data is read);
    3. for each of the ``m`` steps (:func:`step_sum`): contributions
       ``v_j = clip_C(w_j l'_j a_j)`` with
       ``C = lipschitz`` and ``w_j = 1`` when ``m_i = 1`` (anchor = iterate), else
       ``C = w_max lipschitz`` and the GLM weight at the current ``x`` (at the block's first
       step ``x = xbar`` bitwise, so ``D_j = 0``, ``log w_j = 0`` exactly and the product
       is skipped);
       ``g = (sum_j v_j + N(0, (noise_mult C)^2 I))/batch_size + alpha x``;
       ``x <- Pi_{B_R(0)} Pi_{B_r(c)} Pi_{B_{kappa rho}(xbar)} (x - eta g)`` (inner projection
       only when ``m_i > 1``); accumulate ``x`` into the phase average.

    The new center is the phase average.  Returns the final center; ``stats`` receives
    ``(total oracle queries, oracle rounds, steps)`` (all data-independent).

    Exact noise: with a non-empty ``noise_int`` of shape ``(total steps, p)`` (int64) and the grid
    ``phase_gamma[i]`` of each phase, step ``t``'s noisy sum is the grid release
    ``gamma (rint(v/gamma) + noise_int[t])`` (:func:`~skdp._mechanisms._exact.grid_value`)
    instead of ``v + N(0, (noise_mult C)^2 I)``; no normal is drawn.
    """
    exact = noise_int.shape[0] > 0
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
    stamp_t = np.int64(1)   # int64, not a literal: one compiled specialisation
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
    coef = np.empty(cap)
    origin = np.zeros(0)
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
            total = np.int64(0)
            for s in range(m):
                B = _sample_batch(rng, n, q, tmp, perm, stamp, stamp_t)
                stamp_t += 1
                if total + B > cap:
                    while total + B > cap:
                        cap *= 2
                    idx2 = np.empty(cap, dtype=np.int64)
                    for jj in range(total):  # a loop, not a slice assignment (see
                        idx2[jj] = idx[jj]   # step_sum: ~1.5 s of compilation)
                    idx = idx2
                    Zb = np.empty(cap)
                    tbar = np.empty(cap)
                    gq = np.empty(cap)
                    Xb = np.empty((cap, p))
                    yb = np.empty(cap)
                    nb = np.empty(cap)
                    coef = np.empty(cap)
                starts[s] = total
                for jj in range(B):
                    idx[total + jj] = tmp[jj]
                total += B
            starts[m] = total
            for jj in range(total):
                Zb[jj] = rng.standard_normal()
            for k in range(p):
                anchor[k] = x[k]
            # 2. the block's oracle round at the anchor, on its gathered rows
            if total * p >= parallel_work:
                oracle_round_parallel(X, y, xnorm, idx, total, Xb, yb, nb, anchor, rho,
                                      loss_id, param, Zb, tbar, gq)
            else:
                oracle_round(X, y, xnorm, idx, total, Xb, yb, nb, anchor, rho, loss_id, param,
                             Zb, tbar, gq)
            rounds += 1
            queries += total
            # 3. the block's m noisy steps
            for s in range(m):
                w_s = weighted and s > 0  # s = 0: x == xbar, log w = 0 exactly
                step_sum(Xb, nb, starts[s], starts[s + 1], gq, tbar, Zb, rho, x, w_s, C, coef,
                         v)
                if exact:
                    gam = phase_gamma[ph]
                    for k in range(p):
                        gk = grid_value(v[k], gam, noise_int[steps, k]) * inv_b + alpha * x[k]
                        x[k] -= eta * gk
                else:
                    for k in range(p):
                        gk = (v[k] + noise_mult * C * rng.standard_normal()) * inv_b \
                            + alpha * x[k]
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


@kernel
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
