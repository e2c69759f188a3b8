r"""numba kernels of the private zeroth-order solver (see :mod:`skdp._solvers._zeroth_order`).

Linear model ``f(w; (a, y)) = l(a.w, y)`` on rows clipped to ``||a|| <= R`` (intercept
column included), ``p`` coordinates, smoothing radius ``delta``, ``m`` directions per row.

Per-row estimators (``u ~ Unif(S^{p-1})``, ``t = u.a_hat``,
``a_hat = a/||a||``):

* GRAD row: ``(1/m) sum_j c_j u_j``, ``c_j = (p/(2 delta)) (l(z + delta ||a|| t_j) -
  l(z - delta ||a|| t_j))`` with ``z = a.w`` (two evaluations per direction);
* DIFF row: ``c_j = (p/delta) (l(z_x + delta ||a|| t_j) - l(z_y + delta ||a|| t_j))``
  (one-point estimator at each end, shared direction).

Since ``f(w + delta u) = l(z + delta ||a|| t)``, only ``t_j`` enters the values.
**Linear fast path** (``fast = 1``): draw ``t_j`` directly, ``(t_j + 1)/2 ~
Beta((p-1)/2, (p-1)/2)`` (``t = +-1`` when ``p = 1``), and return
``(1/m)[(sum_j c_j t_j) a_hat + sqrt(sum_j c_j^2 (1 - t_j^2)) v]`` with ``v`` uniform on the
unit sphere of ``a_hat^perp``.  Writing ``u_j = t_j a_hat + sqrt(1 - t_j^2) e_j`` with
``e_j`` uniform in ``a_hat^perp`` and independent of ``t_j``, the exact estimator is
``(1/m)[(sum c_j t_j) a_hat + sum_j c_j sqrt(1 - t_j^2) e_j]``; given the ``t``'s its
second part has mean 0 and mean squared norm ``sum_j c_j^2 (1 - t_j^2)`` (``E e_j.e_k = 0``,
``j != k``), exactly as the fast path's: same mean, same second moment, cost
``O(m + p)`` instead of ``O(m p)``.  ``fast = 0`` draws the ``u_j`` explicitly
(normalised Gaussians).

Clipping (the sensitivity must hold even for a loss that is not ``Lip_l``-Lipschitz):

* finite differences: GRAD ``|Delta l| <= 2 Lip_l delta ||a|| |t_j|`` and DIFF
  ``|Delta l| <= Lip_l |z_x - z_y|`` (both no-ops for a ``Lip_l``-Lipschitz loss); a
  non-finite difference contributes 0;
* per-row guard: the row vector's norm is clipped to ``bound`` (the caller passes
  ``p Lip_l R`` for GRAD and ``p Lip_l R min(||x - y||, 2D)/delta`` for DIFF, times
  ``SAFE = 1 - 1e-9`` to absorb rounding).  Both estimators have norm
  ``<= (1/m) sum_j |c_j|`` (fast path: ``(sum c t)^2 + sum c^2 (1 - t^2) = sum c^2 +
  sum_{j != k} c_j c_k t_j t_k <= (sum |c_j|)^2``), which the difference clip already bounds
  by the guard, so the guard only absorbs rounding and non-Lipschitz user losses.

A replaced row changes one row vector by at most ``2 bound``: the batch mean moves by at
most ``2 bound / b`` (``s_1 = 2 p L/B1``, ``s_t = 4 p L D/(delta B2)``; ``L = Lip_l R``).

The loss is evaluated through :func:`_value` (built-in ids).  A user loss gets its own,
uncached copy of the kernels (:func:`specialise`): the same code objects with ``_value``
bound to the user's function (no function arguments into cached kernels).
"""

import math
import types

import numpy as np
from numba import njit

from .._losses._kernels import _robust_row
from .._mechanisms._clipping import clip_scalar
from .._mechanisms._exact import grid_value
from .._mechanisms._tree import tree_exact_release, tree_exact_reset, tree_float_release
from .._mechanisms._summation import TERM_SAFETY as SAFE
from .._numba_cache import KERNEL_OPTIONS, ensure_cache_locator, kernel


# float parameters of zo_run
F_DELTA, F_D, F_ETA, F_SIGMA, F_LIP, F_R, F_ALPHA = range(7)
N_FLOAT = 7
# integer parameters
I_T, I_K, I_B1, I_B2, I_M, I_FAST, I_NAIVE, I_ADAGRAD = range(8)
N_INT = 8
# stats written by zo_run
S_MAX_DELTA, S_MAX_STEP, S_FEVALS, S_ROWS = range(4)
N_STATS = 4

_USER_FUNCTION = None  # bound by specialise()


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _value(z, y, loss_id, c):
    """``l(z, y)`` of the built-in residual losses (``l(z - y)``, :mod:`skdp._losses`)."""
    return _robust_row(z - y, loss_id, c)[0]


def _user_value_template(z, y, loss_id, c):
    """``l(z, y)`` of a user loss (compiled by :func:`specialise` with the function bound)."""
    return float(_USER_FUNCTION(z, y))


@kernel
def _draw_t(p, rng):
    """``t = u.a_hat`` for ``u ~ Unif(S^{p-1})``: ``(t + 1)/2 ~ Beta((p-1)/2, (p-1)/2)``."""
    if p == 1:
        return 1.0 if rng.random() < 0.5 else -1.0
    a = 0.5 * (p - 1)
    return 2.0 * rng.beta(a, a) - 1.0


@kernel
def _direction_coefficient(za, zb, h, yi, diff, p, delta_s, lip, loss_id, c):
    """Coefficient of the direction ``u`` in one row's zeroth-order estimate.

    ``h = delta_s ||a|| (u.a_hat)`` is the shift of the margin along ``u``.  GRAD
    (``diff=False``): ``(p/2 delta_s) clip(l(za + h) - l(za - h), 2 lip |h|)``; DIFF
    (``diff=True``): ``(p/delta_s) clip(l(za + h) - l(zb + h), lip |za - zb|)``.  The clip is
    the bound an ``lip``-Lipschitz loss satisfies, so the sensitivity proof never rests on
    the declared constant (non-finite differences count as 0).
    """
    if diff:
        df = clip_scalar(_value(za + h, yi, loss_id, c) - _value(zb + h, yi, loss_id, c),
                         lip * abs(za - zb))
        return p * df / delta_s
    df = clip_scalar(_value(za + h, yi, loss_id, c) - _value(za - h, yi, loss_id, c),
                     2.0 * lip * abs(h))
    return 0.5 * p * df / delta_s


@kernel
def row_estimate(X, i, yi, na, wa, wb, diff, delta_s, lip, bound, m, fast, loss_id, c, rng,
                 u, out):
    """One row's clipped GRAD (``diff = 0``, at ``wa``) or DIFF (``diff = 1``, ``wa`` minus
    ``wb``) contribution into ``out``; returns the number of loss evaluations (``2m``).

    Draws the same amount of randomness whatever the data (a zero row contributes 0).
    """
    p = X.shape[1]
    inv = 1.0 / na if na > 0.0 else 0.0
    za = 0.0
    zb = 0.0
    for q in range(p):
        za += X[i, q] * wa[q]
        zb += X[i, q] * wb[q]
    if diff == 0:
        zb = za
    for q in range(p):
        out[q] = 0.0
    if fast:
        A = 0.0
        S2 = 0.0
        for j in range(m):
            t = _draw_t(p, rng)
            h = delta_s * na * t
            cj = _direction_coefficient(za, zb, h, yi, diff, p, delta_s, lip, loss_id, c)
            A += cj * t
            S2 += cj * cj * max(0.0, 1.0 - t * t)
        # v: uniform unit vector orthogonal to a_hat (Gaussian, a_hat part removed)
        proj = 0.0
        for q in range(p):
            u[q] = rng.standard_normal()
            proj += u[q] * X[i, q] * inv
        nu = 0.0
        for q in range(p):
            u[q] -= proj * X[i, q] * inv
            nu += u[q] * u[q]
        nu = math.sqrt(nu)
        sv = math.sqrt(S2) / nu if nu > 0.0 else 0.0
        for q in range(p):
            out[q] = (A * X[i, q] * inv + sv * u[q]) / m
    else:
        for j in range(m):
            nu = 0.0
            for q in range(p):
                u[q] = rng.standard_normal()
                nu += u[q] * u[q]
            nu = math.sqrt(nu)
            t = 0.0
            for q in range(p):
                u[q] /= nu
                t += u[q] * X[i, q] * inv
            h = delta_s * na * t
            cj = _direction_coefficient(za, zb, h, yi, diff, p, delta_s, lip, loss_id, c)
            for q in range(p):
                out[q] += cj * u[q]
        for q in range(p):
            out[q] /= m
    # per-row guard
    nrm = 0.0
    for q in range(p):
        nrm += out[q] * out[q]
    nrm = math.sqrt(nrm)
    if not nrm < np.inf:
        for q in range(p):
            out[q] = 0.0
    elif nrm > bound:
        s = bound / nrm
        for q in range(p):
            out[q] *= s
    return 2 * m


@kernel
def batch_estimate(X, y, rows, start, stop, norms, wa, wb, diff, delta_s, lip, bound, m, fast,
                   loss_id, c, rng, u, row, out, reads):
    """``out <- (1/b) sum_{k in [start, stop)} row_estimate(rows[k])``; counts reads per
    row; returns the loss evaluations."""
    p = X.shape[1]
    for q in range(p):
        out[q] = 0.0
    ev = 0
    for k in range(start, stop):
        i = rows[k]
        reads[i] += 1
        ev += row_estimate(X, i, y[i], norms[i], wa, wb, diff, delta_s, lip, bound, m, fast,
                           loss_id, c, rng, u, row)
        for q in range(p):
            out[q] += row[q]
    b = stop - start
    for q in range(p):
        out[q] /= b
    return ev


@kernel
def zo_run(X, y, rows, loss_id, c, norms, fpar, ipar, rng, period_avgs, reads, stats, x_out,
           trace, noise_int=np.zeros((0, 0), dtype=np.int64), gamma=0.0):
    """O2NC with projected OSD (Algorithm 3) and the private oracle (Algorithm 4, or the
    naive oracle of Algorithm 6 when ``ipar[I_NAIVE]``) on the stream ``rows``.

    Rows are consumed in order, each exactly once: per period ``B1`` rows for GRAD and
    ``B2`` per later round (naive: ``B1`` rows every round, one direction each).  The tree
    restarts every period and releases its node sums
    (:func:`~skdp._mechanisms._tree.tree_float_release`: each node plus ``N(0, sigma^2
    I)``; the caller scales ``sigma`` for the rounding of the computed node sums); the
    naive oracle draws fresh ``N(0, sigma^2 I)`` per round.  Writes the period averages
    ``w_bar^k`` into ``period_avgs``, the last ``x`` into ``x_out`` and into ``stats`` the
    largest ``||Delta_t||``, the largest ``||w_t - w_{t-1}||``, the loss evaluations and
    the rows read.  When ``trace`` has ``K T`` rows it receives every released
    ``g_tilde_t`` (public; for tests), otherwise (0 rows) nothing.

    Exact noise: with a non-empty ``noise_int`` (``K T`` rows of ``p`` int64) and the grid
    ``gamma``, every release is a grid release instead of a float sum plus normal noise:
    the tree's nodes on the grid (:func:`~skdp._mechanisms._tree.tree_exact_release`), the
    naive oracle's batch mean on the grid.
    """
    exact = noise_int.shape[0] > 0
    zi = 0  # next row of noise_int
    p = X.shape[1]
    delta_s = fpar[F_DELTA]
    D = fpar[F_D]
    eta = fpar[F_ETA]
    sigma = fpar[F_SIGMA]
    lip = fpar[F_LIP]
    R = fpar[F_R]
    alpha = fpar[F_ALPHA]
    T = ipar[I_T]
    K = ipar[I_K]
    B1 = ipar[I_B1]
    B2 = ipar[I_B2]
    m = ipar[I_M]
    fast = ipar[I_FAST]
    naive = ipar[I_NAIVE]
    adagrad = ipar[I_ADAGRAD]
    D_proj = D * (1.0 - 1e-12)
    G_row = p * lip * R * SAFE  # GRAD per-row guard

    levels = 1  # floor(log2 T) + 1: tree levels
    while (T >> levels) > 0:
        levels += 1
    acc = np.zeros((levels, p))       # the leaves of each level's current interval
    released = np.zeros((levels, p))  # the last released node of each level
    noise = np.zeros(p)
    x = np.zeros(p)
    w = np.zeros(p)
    w_prev = np.zeros(p)
    Dl = np.zeros(p)
    g_run = np.zeros(p)
    g_tilde = np.zeros(p)
    est = np.zeros(p)
    wbar = np.zeros(p)
    u = np.zeros(p)
    row = np.zeros(p)
    ptr = np.int64(0)
    # int64, not literals: numba would compile batch_estimate once per literal value
    grad_kind = np.int64(0)
    diff_kind = np.int64(1)
    fevals = 0
    max_delta = 0.0
    max_step = 0.0
    for k in range(K):
        tree_exact_reset(acc, released)
        sumsq = 0.0
        for q in range(p):
            wbar[q] = 0.0
        for t in range(1, T + 1):
            if t == 1:
                for q in range(p):
                    Dl[q] = 0.0
            else:
                step = eta
                if adagrad:  # AdaGrad-norm: D / sqrt(sum_{s<t} ||g_tilde_s||^2)
                    for q in range(p):
                        sumsq += g_tilde[q] * g_tilde[q]
                    step = D / math.sqrt(sumsq) if sumsq > 0.0 else 0.0
                nd = 0.0
                for q in range(p):
                    Dl[q] -= step * g_tilde[q]
                    nd += Dl[q] * Dl[q]
                nd = math.sqrt(nd)
                if nd > D_proj:
                    sc = D_proj / nd
                    for q in range(p):
                        Dl[q] *= sc
            s = rng.random()
            nd = 0.0
            st = 0.0
            for q in range(p):
                w[q] = x[q] + s * Dl[q]
                x[q] += Dl[q]
                nd += Dl[q] * Dl[q]
                st += (w[q] - w_prev[q]) ** 2
            max_delta = max(max_delta, math.sqrt(nd))
            if t > 1:
                max_step = max(max_step, math.sqrt(st))
            if naive:
                fevals += batch_estimate(X, y, rows, ptr, ptr + B1, norms, w, w, grad_kind, delta_s,
                                         lip, G_row, m, fast, loss_id, c, rng, u, row, g_run,
                                         reads)
                ptr += B1
                if exact:   # the released batch mean, on the grid
                    for q in range(p):
                        noise[q] = grid_value(g_run[q], gamma, noise_int[zi, q])
                    zi += 1
                else:
                    for q in range(p):
                        noise[q] = sigma * rng.standard_normal()
            else:
                if t == 1:
                    fevals += batch_estimate(X, y, rows, ptr, ptr + B1, norms, w, w, grad_kind,
                                             delta_s, lip, G_row, m, fast, loss_id, c, rng, u,
                                             row, g_run, reads)
                    ptr += B1
                else:
                    bound = p * lip * R * min(math.sqrt(st), 2.0 * D) / delta_s * SAFE
                    fevals += batch_estimate(X, y, rows, ptr, ptr + B2, norms, w, w_prev, diff_kind,
                                             delta_s, lip, bound, m, fast, loss_id, c, rng, u,
                                             row, est, reads)
                    ptr += B2
                # the leaf of round t: the GRAD batch mean (t = 1) or the difference
                # estimate; ``noise`` receives the whole release (the released nodes)
                if exact:
                    tree_exact_release(t, g_run if t == 1 else est, acc, released, gamma,
                                       noise_int[zi], noise)
                    zi += 1
                else:
                    tree_float_release(t, g_run if t == 1 else est, acc, released, sigma,
                                       rng, noise)
            for q in range(p):
                # the tree's ``noise`` holds the whole release (never added to g_run)
                priv = g_run[q] + noise[q] if naive and not exact else noise[q]
                g_tilde[q] = priv + alpha * w[q]
                wbar[q] += w[q]
                w_prev[q] = w[q]
            if trace.shape[0] > 0:
                for q in range(p):
                    trace[k * T + t - 1, q] = g_tilde[q]
        for q in range(p):
            period_avgs[k, q] = wbar[q] / T
    for q in range(p):
        x_out[q] = x[q]
    stats[S_MAX_DELTA] = max_delta
    stats[S_MAX_STEP] = max_step
    stats[S_FEVALS] = fevals
    stats[S_ROWS] = ptr


_CHAIN = ("_direction_coefficient", "row_estimate", "batch_estimate", "zo_run")
_SPECIALISED = {}


def _rebuild(py_func, overrides):
    """A fresh, uncached ``njit`` of ``py_func``'s code with some globals replaced."""
    glob = dict(py_func.__globals__)
    glob.update(overrides)
    fn = types.FunctionType(py_func.__code__, glob, py_func.__name__, py_func.__defaults__,
                            py_func.__closure__)
    return njit(**dict(KERNEL_OPTIONS, cache=False))(fn)


def specialise(function):
    """The ``zo_run`` kernel with the loss evaluated by ``function(z, y)`` (uncached).

    ``function`` is an ``@njit`` dispatcher (a plain Python function is compiled with
    ``njit``).  The result is kept per function object, so refitting with the same loss
    does not recompile.
    """
    key = id(function)
    hit = _SPECIALISED.get(key)
    if hit is not None and hit[0] is function:
        return hit[1]
    fn = function if hasattr(function, "py_func") else njit(cache=False)(function)
    value = _rebuild(_user_value_template, {"_USER_FUNCTION": fn})
    glob = {"_value": value}
    for name in _CHAIN:
        glob[name] = _rebuild(globals()[name].py_func, glob)
    _SPECIALISED[key] = (function, glob["zo_run"], glob)
    return glob["zo_run"]


def specialised_kernels(function):
    """All user-loss kernels by name (``row_estimate``, ``batch_estimate``, ``zo_run``),
    compiled lazily on first call (for tests of the sensitivity with a user loss)."""
    specialise(function)
    return _SPECIALISED[id(function)][2]
