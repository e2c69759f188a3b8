"""numba kernels of the private SpiderBoost solver (see :mod:`skdp._solvers._spider`).

* :func:`oracle_refresh` -- O1 and O3 on one batch: ``(1/b) sum l'(r) a`` and the Hessian
  weights ``l''(r)/b`` (the Hessian is ``sum_r w_r a_r a_r^T``, never formed);
* :func:`oracle_difference` -- O2 and O4 on one batch: ``(1/b_t) sum (l'(r) - l'(r')) a`` and
  the weights ``(l''(r) - l''(r'))/b_t``;
* :func:`hessian_vector` -- ``H v = sum_r w_r a_r (a_r . v)`` over a range of the stream;
* :func:`escape_offset`, :func:`escape_direction`, :func:`descent_step`, :func:`left_ball`
  -- the steps of the escape subprocedure (Alg. 2 [paper]), exposed so that
  tests can drive them with an injected ``(g, H)`` oracle (tests 5-6);
* :func:`spider_loop` -- Algorithm 3 of Liu & Talwar (v2) with the escape subprocedure
  inlined through those kernels, drawing every random number serially from the
  Generator passed in.

Per-row clipping (the safety net of the replace-one convention).  Every per-row term is clipped to the
bound the privacy proof uses *before* it is averaged, so a leaf's replace-one sensitivity
is at most twice the clip over the batch size whatever the loss constants or the data:

* O1 row ``l'(r) a``:                     ``||.|| <= c1 = min(G, s_g b / 2)``
* O2 row ``(l'(r) - l'(r')) a``:          ``||.|| <= c2 = min(M D, s_g b_t / 2)``
* O3 row ``l''(r) a a^T``:                ``||.||_op = |w| ||a||^2 <= min(M, s_H b / 2)``
* O4 row ``(l''(r) - l''(r')) a a^T``:    ``||.||_op <= min(rho D, s_H b_t / 2)``

(with ``G = L1 R``, ``M = L2 R^2``, ``rho = L3 R^3`` the clips are no-ops up to rounding:
``|l'| <= L1``, ``|l'(r) - l'(r')| <= L2 |a.(x - x')| <= L2 R D``, and so on).  The clip is
multiplied by ``SAFE = 1 - 1e-9`` so the floating-point terms respect it.  A term that is not
finite contributes zero.  Replacing one row changes one term by at most twice its clip,
so ``||O1 - O1'|| <= 2 c1/b <= s_g``, ``||O2 - O2'|| <= 2 c2/b_t <= s_g`` and the Hessian
estimate moves by at most ``s_H`` in operator norm.
"""

import numpy as np

from .._losses._kernels import _robust_row
from .._mechanisms._clipping import clip_scalar
from .._mechanisms._exact import grid_value
from .._mechanisms._tree import tree_exact_release, tree_exact_reset, tree_float_release
from .._mechanisms._summation import TERM_SAFETY as SAFE
from .._numba_cache import ensure_cache_locator, kernel


# indices of the float parameter vector of spider_loop
F_ETA, F_ALPHA, F_G, F_M, F_RHO, F_SG, F_SH, F_KAPPA, F_XI, F_THR, F_SIGMA_TREE, \
    F_SIGMA_ESC, F_BT_COEF = range(13)
N_FLOAT = 13
# indices of the integer parameter vector
I_B, I_K, I_GAMMA, I_HORIZON, I_TMAX, I_M, I_ESCAPE, I_STRIDE = range(8)
N_INT = 8

# step flags of the log
FLAG_REFRESH = 1
FLAG_ESCAPE = 2
FLAG_ANCHOR = 4


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _dot(X, i, v):
    s = 0.0
    for j in range(X.shape[1]):
        s += X[i, j] * v[j]
    return s


@kernel
def oracle_refresh(X, y, rows, start, stop, x, loss_id, c, row_norm, gclip, hclip, grad,
                   weights):
    """O1 and O3 on the rows ``rows[start:stop]`` at ``x``.

    ``grad <- (1/b) sum clip_{gclip}(l'(r) a)``; ``weights[k] <- clip_{hclip}(l''(r))/b`` for
    stream position ``k`` (the Hessian term ``w a a^T`` with ``|w| ||a||^2 <= hclip``).
    """
    p = X.shape[1]
    b = stop - start
    for j in range(p):
        grad[j] = 0.0
    for k in range(start, stop):
        i = rows[k]
        na = row_norm[i]
        if not (0.0 < na < np.inf):  # zero row: no contribution; non-finite: dropped
            weights[k] = 0.0
            continue
        r = _dot(X, i, x) - y[i]
        _, d1, d2, _ = _robust_row(r, loss_id, c)
        d1 = clip_scalar(d1, gclip * SAFE / na)
        d2 = clip_scalar(d2, hclip * SAFE / (na * na))
        for j in range(p):
            grad[j] += d1 * X[i, j]
        weights[k] = d2 / b
    for j in range(p):
        grad[j] /= b


@kernel
def oracle_difference(X, y, rows, start, stop, x, x_prev, loss_id, c, row_norm, gclip, hclip,
                      diff, weights):
    """O2 and O4 on the rows ``rows[start:stop]`` between ``x_prev`` and ``x``.

    ``diff <- (1/b_t) sum clip_{gclip}((l'(r) - l'(r')) a)``,
    ``weights[k] <- clip_{hclip}(l''(r) - l''(r'))/b_t`` (operator-norm clip of the row term).
    """
    p = X.shape[1]
    bt = stop - start
    for j in range(p):
        diff[j] = 0.0
    for k in range(start, stop):
        i = rows[k]
        na = row_norm[i]
        if not (0.0 < na < np.inf):
            weights[k] = 0.0
            continue
        r1 = _dot(X, i, x) - y[i]
        r0 = _dot(X, i, x_prev) - y[i]
        _, g1, h1, _ = _robust_row(r1, loss_id, c)
        _, g0, h0, _ = _robust_row(r0, loss_id, c)
        dg = clip_scalar(g1 - g0, gclip * SAFE / na)
        dh = clip_scalar(h1 - h0, hclip * SAFE / (na * na))
        for j in range(p):
            diff[j] += dg * X[i, j]
        weights[k] = dh / bt
    for j in range(p):
        diff[j] /= bt


@kernel
def hessian_vector(X, rows, weights, start, stop, v, out):
    """``out <- sum_{k in [start, stop)} weights[k] a_k (a_k . v)``, ``a_k = X[rows[k]]``."""
    p = X.shape[1]
    for j in range(p):
        out[j] = 0.0
    for k in range(start, stop):
        i = rows[k]
        s = weights[k] * _dot(X, i, v)
        if s != 0.0:
            for j in range(p):
                out[j] += s * X[i, j]


@kernel
def _norm(v):
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return np.sqrt(s)


@kernel
def escape_offset(x, xa, Xi, v):
    """``v <- x - x_a``, rescaled to norm ``<= Xi`` (a no-op inside the escape ball; it makes
    the escape release's sensitivity ``s_H Xi`` hold by construction)."""
    for q in range(x.shape[0]):
        v[q] = x[q] - xa[q]
    nv = _norm(v)
    if nv > Xi:
        for q in range(x.shape[0]):
            v[q] *= Xi / nv


@kernel
def escape_direction(ga, hv, sigma_esc, rng, g):
    """Escape release ``g <- g_a + H_a v + xi``, ``xi ~ N(0, sigma_esc^2 I)`` drawn serially
    (``hv = H_a v`` computed by the caller: :func:`hessian_vector` in the solver, any
    oracle in tests)."""
    for q in range(g.shape[0]):
        g[q] = ga[q] + hv[q] + sigma_esc * rng.standard_normal()


@kernel
def descent_step(x, x_prev, g, eta, alpha):
    """``g <- g + alpha x``; ``x_prev <- x``; ``x <- x - eta g``.  Returns ``||g||``."""
    gn = 0.0
    for q in range(x.shape[0]):
        g[q] += alpha * x[q]
        gn += g[q] * g[q]
        x_prev[q] = x[q]
        x[q] = x[q] - eta * g[q]
    return np.sqrt(gn)


@kernel
def left_ball(x, xa, Xi):
    """Whether ``||x - x_a|| >= Xi`` (the escape phase's exit test)."""
    dist = 0.0
    for q in range(x.shape[0]):
        dist += (x[q] - xa[q]) ** 2
    return np.sqrt(dist) >= Xi


@kernel
def spider_loop(X, y, rows, loss_id, c, row_norm, fpar, ipar, rng, traj, log_bt, log_D,
                log_flag, log_ptr, x_out, noise_tree=np.zeros((0, 0), dtype=np.int64),
                gamma_tree=0.0, noise_esc=np.zeros((0, 0), dtype=np.int64), gamma_esc=0.0):
    """Run Algorithm 3 on the stream ``rows`` (a random order of the training
    rows, drawn by the caller); every row is used at most once.

    Returns ``(t, ptr, n_escapes, n_refreshes, n_evals, n_stored)``: steps taken, rows
    consumed, escape phases, refreshes (epochs), per-example derivative evaluations (O1: 1
    per row; O2: 2 per row; a Hessian-vector product: 1 per buffered row) and iterates
    stored in ``traj`` (every ``stride``-th).  The logs hold, per step, the batch size,
    the displacement ``D_t = ||x_t - x_{t-1}||`` it was sized for, the flags and the stream
    position after the step: all functions of the released outputs (public).

    The tree releases its node sums, and the private gradient is the sum of the released
    nodes of ``NODE(j)``: each node plus ``N(0, sigma_tree^2 I)``
    (:func:`~skdp._mechanisms._tree.tree_float_release`; the caller scales ``sigma_tree``
    for the rounding of the computed node sums) or, with exact noise (a non-empty
    ``noise_tree``, ``T_max`` rows of ``p`` int64, and its grid ``gamma_tree``), on the grid
    (:func:`~skdp._mechanisms._tree.tree_exact_release`); with ``noise_esc`` and ``gamma_esc`` each
    escape release is ``g_a + gamma_esc (rint(H_a v/gamma_esc) + Z)`` (``g_a`` is an earlier
    release).
    """
    exact = noise_tree.shape[0] > 0
    zt = 0
    ze = 0
    n_stream = rows.shape[0]
    p = X.shape[1]
    eta = fpar[F_ETA]
    alpha = fpar[F_ALPHA]
    G = fpar[F_G]
    M = fpar[F_M]
    rho = fpar[F_RHO]
    s_g = fpar[F_SG]
    s_H = fpar[F_SH]
    kappa = fpar[F_KAPPA]
    Xi = fpar[F_XI]
    thr = fpar[F_THR]
    sigma_tree = fpar[F_SIGMA_TREE]
    sigma_esc = fpar[F_SIGMA_ESC]
    bt_coef = fpar[F_BT_COEF]
    b = ipar[I_B]
    K = ipar[I_K]
    Gamma = ipar[I_GAMMA]
    horizon = ipar[I_HORIZON]
    T_max = ipar[I_TMAX]
    m = ipar[I_M]
    escape_on = ipar[I_ESCAPE] != 0
    stride = ipar[I_STRIDE]

    x = np.zeros(p)
    x_prev = np.zeros(p)
    grad = np.zeros(p)       # the refresh's mean gradient: the first leaf of a tree
    step = np.zeros(p)
    gt = np.zeros(p)         # private gradient
    g = np.zeros(p)
    ga = np.zeros(p)
    xa = np.zeros(p)
    v = np.zeros(p)
    hv = np.zeros(p)
    weights = np.zeros(n_stream)  # Hessian weights by stream position
    acc = np.zeros((m, p))        # the leaves of each level's current interval
    released = np.zeros((m, p))   # the last released node of each level

    drift = kappa
    frozen = 1
    count = 0
    escape = False
    j = 0
    t = 0
    ptr = np.int64(0)   # int64, not a literal: one compiled specialisation per callee
    epoch_start = np.int64(0)
    hs = np.int64(0)
    he = np.int64(0)
    n_escapes = 0
    n_refreshes = 0
    n_evals = 0
    n_stored = 0
    while t < T_max:
        flag = 0
        if drift >= kappa or count >= K or j >= horizon:
            if n_stream - ptr < b:
                break
            gclip = min(G, 0.5 * s_g * b)
            hclip = min(M, 0.5 * s_H * b)
            oracle_refresh(X, y, rows, ptr, ptr + b, x, loss_id, c, row_norm, gclip, hclip,
                           grad, weights)
            epoch_start = ptr
            ptr += b
            n_evals += b
            tree_exact_reset(acc, released)
            j = 1
            drift = 0.0
            count = 0
            n_refreshes += 1
            bt = b
            D = 0.0
            flag |= FLAG_REFRESH
        else:
            D = 0.0
            for q in range(p):
                D += (x[q] - x_prev[q]) ** 2
            D = np.sqrt(D)
            btf = np.ceil(bt_coef * D)
            if not btf <= n_stream - ptr:  # also catches inf / NaN
                break
            bt = max(1, int(btf))
            gclip = min(M * D, 0.5 * s_g * bt)
            hclip = min(rho * D, 0.5 * s_H * bt)
            oracle_difference(X, y, rows, ptr, ptr + bt, x, x_prev, loss_id, c, row_norm,
                              gclip, hclip, step, weights)
            ptr += bt
            n_evals += 2 * bt
            j += 1
        if exact:
            # the leaf of step j: the refresh's mean gradient (j = 1) or the difference
            tree_exact_release(j, grad if j == 1 else step, acc, released, gamma_tree,
                               noise_tree[zt], gt)
            zt += 1
        else:
            tree_float_release(j, grad if j == 1 else step, acc, released, sigma_tree, rng,
                               gt)
        if escape_on and (not escape) and frozen <= 0 and _norm(gt) <= thr:
            escape = True
            frozen = Gamma
            for q in range(p):
                ga[q] = gt[q]
                xa[q] = x[q]
            hs = epoch_start
            he = ptr
            count += 1
            n_escapes += 1
            flag |= FLAG_ANCHOR
        if escape:
            # v = x - x_a has norm < Xi here (the phase ends once it reaches Xi); the
            # rescaling is a no-op kept so the release's sensitivity s_H Xi holds by
            # construction.
            escape_offset(x, xa, Xi, v)
            hessian_vector(X, rows, weights, hs, he, v, hv)
            n_evals += he - hs
            if exact:
                for q in range(p):
                    g[q] = ga[q] + grid_value(hv[q], gamma_esc, noise_esc[ze, q])
                ze += 1
            else:
                escape_direction(ga, hv, sigma_esc, rng, g)
            flag |= FLAG_ESCAPE
        else:
            for q in range(p):
                g[q] = gt[q]
        drift += descent_step(x, x_prev, g, eta, alpha)
        frozen -= 1
        log_bt[t] = bt
        log_D[t] = D
        log_flag[t] = flag
        log_ptr[t] = ptr
        t += 1
        if t % stride == 0 and n_stored < traj.shape[0]:
            for q in range(p):
                traj[n_stored, q] = x[q]
            n_stored += 1
        if escape:
            if left_ball(x, xa, Xi) or frozen <= 0:
                escape = False
    for q in range(p):
        x_out[q] = x[q]
    return t, ptr, n_escapes, n_refreshes, n_evals, n_stored
