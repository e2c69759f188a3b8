r"""Phased SGD on the exactly smoothed loss (Feldman, Koren & Talwar, STOC 2020, Alg. 2).

``solver="phased"``: the linear-time, optimal-rate private solver for the convex linear
models.  Losses: ``LOGISTIC`` and ``MULTINOMIAL``
(smooth, used as they are), ``HUBER`` and the absolute loss (``ABSOLUTE``,
``huber_threshold=0``), which are replaced by their exact Gaussian smoothing
``f_rho(w) = E f(w + N(0, rho^2 I))`` (closed forms in :mod:`skdp._losses._smoothed`:
``grad f_rho = l_s'(a.w) a`` with margin noise ``s = rho ||a||``).  Objective

    F(W) = (1/n) sum_i f_rho(W; x_i, y_i) + (alpha/2) ||W||_F^2   on  ||W||_F <= R.

Notation: ``n`` rows (public), ``p`` coordinates, ``C = data_norm``, ``L`` the Lipschitz
constant of the per-row loss (unchanged by smoothing), ``beta`` the smoothness of the
(smoothed) per-row loss, ``mu = alpha``.

Algorithm
---------
1. A uniformly random permutation of the rows (drawn from ``rng``, independent of the data)
   is cut into ``k = ceil(log2 n)`` consecutive, **disjoint** blocks of sizes
   ``n_i = floor(n 2^-i)`` (``i < k``) and the remainder (``i = k``): every row is used
   exactly once.  (On a Dask design the permutation is of the partitions, each read in a
   random permutation of its rows -- still public randomness, independent of the data --
   so that a phase streams through whole partitions on their workers.)
2. From ``x_0 = 0``, phase ``i`` runs one pass of projected SGD over its block with step
   ``eta_i = 4^-i eta``: ``w <- Pi_R(w - eta_i (clip(grad f_rho(w; row)) + mu w))``,
   starting at ``x_{i-1}`` projected onto the ball (``Pi_R``, post-processing), averages
   its iterates (``w_bar_i``) and releases ``x_i = w_bar_i + N(0, sigma_i^2 I)``.  The
   output is ``Pi_R(x_k)``.

Privacy (replace-one neighbours; derivation)
--------------------------------------------
*Sensitivity of a phase.*  Fix the phase input ``x_{i-1}``.  With ``eta_i (beta + mu) <= 2``
the shared update ``u(w) = Pi_R(w - eta_i (grad f(w) + mu w))`` is non-expansive (a
gradient step on a convex ``(beta + mu)``-smooth function with step ``<= 2/(beta + mu)``
is 1-Lipschitz, Hardt, Recht & Singer 2016, Lemma 3.7; the projection onto a convex set is
1-Lipschitz).  For the scalar-margin losses the clip of the per-example gradient
``l'(m) a`` to norm ``L'`` clamps ``l'`` to ``[-L'/||a||, L'/||a||]``, which is still the
derivative of a convex function with no larger curvature, so the clipped step is also
non-expansive (it is a no-op whenever ``L' >= L``, which holds up to the rounding margin).
Two runs on neighbouring blocks coincide until the replaced row; its step differs by
``eta_i ||g - g'|| <= 2 eta_i L``; every later step is the same non-expansive map.  Hence
every iterate, and the average, moves by at most ``Delta_i = 2 eta_i L``.
*Parallel composition over disjoint phases.*  A replaced row lies in exactly one block
``i*`` (the partition is by position, independent of the data).  Phases before ``i*`` are
the same Markov kernels on both datasets, so ``x_{i*-1}`` has the same law; phase ``i*`` is
the Gaussian mechanism with sensitivity ``Delta_{i*}`` and noise ``sigma_{i*}``; phases after
``i*`` are the same kernels applied to ``x_{i*}`` (post-processing).  The sequence
``(x_1, ..., x_k)`` is therefore exactly as private as *one* Gaussian mechanism with
``mu_GDP = Delta_i / sigma_i``, and we calibrate every phase to the same ratio.  The
dp-accounting event is ``gaussian_event(sigma_i, Delta_i)`` (one Gaussian event, not a
composition): composing the ``k`` phases sequentially would over-count by ``sqrt(k)``.

*Floating-point rounding of the iteration.*  The argument above is about exact
arithmetic; the program releases float64 averages, and rounding is data-dependent.  Let
``T`` be the exact step map of a row (with the row's computed norm and margin-noise scale,
per-row constants shared by both runs) and ``T^`` the computed one.  If
``||T^(W) - T(W)||_F <= E`` for every iterate ``W`` (all have ``||W||_F <= R_+ = R (1 +
gamma_{p+4})``: each phase starts from the previous release projected onto the ball -- a
public post-processing -- and every step ends with the computed projection), then the
computed iterates of two neighbours satisfy ``D_{t+1} <= D_t + 2E`` on shared rows (``T`` is
non-expansive) and ``D_{t+1} <= D_t + 2 eta_i L + 2E`` on the replaced one, so after a
phase of ``m_i`` rows every iterate differs by at most ``2 eta_i L + 2 m_i E_i``.  The
computed average (a recursive sum of ``m_i`` iterates, divided by ``m_i``; on Dask, segment
averages re-multiplied and summed) is within ``gamma_{2 m_i + 4} R_+`` of the exact average
of the computed iterates (Higham 2002, eq. (4.4)).  Hence the phase's float64 release has
sensitivity at most

    Delta_i = 2 eta_i L + 2 m_i E_i + 2 gamma_{2 m_i + 4} R_+,

and ``E_i`` is bounded term by term (:func:`phase_rounding_allowance`; ``u = 2^-53``,
``gamma_k = k u/(1 - k u)``, ``d = p/K`` coordinates per margin):

* margin ``z = x.W`` (``d`` products): ``|z^ - z| <= gamma_d ||x|| ||W||``, i.e. the
  gradient of the row's loss at ``W~`` with ``||W~ - W||_F <= gamma_d R_+``; the gradient is
  ``beta``-Lipschitz: ``eta_i beta gamma_d R_+``;
* the loss derivative's own evaluation: ``|l'^ - l'| <= c u (L_l + 2 tau + 41 s + K)``
  (``c = 64``, :data:`DERIVATIVE_ULPS`; ``L_l = L/C``, ``tau`` the Huber threshold, ``s``
  the margin noise): the closed forms add at most a dozen terms of magnitude
  ``<= L_l + tau + s`` with libm ``exp``/``erfc``/``log1p`` accurate to a few ulp (glibc
  documents <= 5); smoothed Huber saturates to ``+-tau`` exactly beyond ``|r| > tau + 40 s``
  (where the exact value differs from ``+-tau`` by less than ``tau e^-800``), so ``|r|``
  never enters; the softmax adds ``(K + 4) u``.  Times ``eta_i C``;
* the clamp to the computed norm: ``4 u L eta_i``;
* the update ``W - eta (x g + alpha W)`` (four roundings per coordinate) and the computed
  projection (a norm of ``p`` squares, a square root, a division and a product):
  ``gamma_{p+8} (R_+ (1 + eta_i alpha) + eta_i L)``.

The step must stay admissible for the computed margin-noise scale ``s^ = rho ||x||^``
(``>= rho ||x|| (1 - gamma_{d+2})``): the plan caps ``eta_1 (beta (1 + gamma_{p+4}) +
alpha) <= 2``.  The allowance is tiny at ordinary sizes (``2e-6`` of ``2 eta_1 L`` at
``n = 10^6``), but the late phases have ``eta_k = eta_1 4^-k ~ eta_1/n^2`` while the iterates
keep their size, so there the rounding of ``W`` (``~u R``) is of the order of ``2 eta_k L``
from ``n ~ 10^6`` on (and at any ``n`` with a tiny ``step_scale``): without it a computed
release could differ by more than the sensitivity it is calibrated for
(``tests/_solvers/test_phased.py`` finds such a pair).  Every phase is calibrated to the
same ratio ``sigma_i/Delta_i``, so the event is unchanged.

Noise calibration: ``calibration="tight"``: ``sigma_i`` from the analytic Gaussian
mechanism for ``Delta_i`` (Balle & Wang 2018).  ``"paper"``: FKT20's printed
``sigma_i = 4 L eta_i sqrt(ln(1/delta))/epsilon``, certified by the analytic criterion
(ValueError if it is not ``(epsilon, delta)``-DP).

Step size and smoothing (public)
--------------------------------
``eta = step_scale (R/L) min(4/sqrt(n), epsilon/sqrt(p ln(1/delta)))`` (FKT20 Thm 4.4;
``step_scale = 1`` is the theory step).  The first phase needs
``eta_1 (beta_rho + mu) <= 2``:

* logistic/multinomial: ``eta_1 <- min(eta_1, 2/(beta + mu))``;
* Huber/absolute with ``smoothing=None``: no smoothing if ``eta_1 (beta + mu) <= 2``
  (Huber with a large threshold), else the smallest radius that admits ``eta_1``,
  ``rho = sqrt(2/pi) L / (2/eta_1 - mu)`` (``beta_rho = sqrt(2/pi) L / rho``; the smoothing
  bias is ``0 <= f_rho - f <= sqrt(2/pi) L rho``), after capping ``eta_1 <= 1/mu``;
* a given ``smoothing = rho``: ``eta_1 <- min(eta_1, 2/(beta_rho + mu))``.

``R = max_coef_norm`` or, for ``alpha > 0``, ``min(L/alpha, sqrt(2 f0/alpha))`` (a public
bound on the minimiser's norm, as for ``dpsgd``); ``alpha = 0`` needs ``max_coef_norm``.

Reported: ``noise_scale = sigma_1`` and ``sensitivity = Delta_1`` (the first, largest
phase; all phases have the same ratio); ``n_iter = k`` phases; ``n_gradient_evals = n``.
Sequential oracle rounds: ``n`` (one example per step).  Noise is drawn serially from
``rng`` (same seed, same model); with a ``noise_source`` every phase is released on a
power-of-two grid with exact discrete Gaussian noise (:mod:`skdp._mechanisms._exact`), which
closes the floating-point precision leak of a float sum.
"""

import functools
import math

import numpy as np

from .._losses._kernels import HUBER, LOGISTIC, MULTINOMIAL, _dot_row, _multinomial_row
from .._losses._smoothed import ABSOLUTE, HINGE, SQRT_2_OVER_PI, smoothed_margin_loss
from .._losses._smoothed import smoothing_smoothness
from .._mechanisms import clip_and_augment, release_gaussian
from ..accounting import calibrate_gaussian_sigma, gaussian_delta, gaussian_event
from ._dask_objective import DaskDesign, clipped_design, partition_blocks
from ._dpsgd import _clip_bound
from .._mechanisms._clipping import row_norms, row_norms_at
from .._mechanisms._summation import UNIT_ROUNDOFF, gamma_k
from ._result import SolverResult, split_intercept
from ._threads import solver_threads
from ._validation import check_gaussian_solver_args
from .._numba_cache import ensure_cache_locator, kernel

__all__ = ["solve_phased", "phased_plan", "plan_phased_event", "public_radius",
           "phase_rounding_allowance"]

SMOOTHABLE = (HUBER, ABSOLUTE, HINGE)
SUPPORTED = (LOGISTIC, MULTINOMIAL, HUBER, ABSOLUTE, HINGE)
#: ulps allowed for the evaluation of a loss derivative (module docstring)
DERIVATIVE_ULPS = 64.0


def phase_rounding_allowance(m, eta, *, alpha, lipschitz, smoothness, row_bound, radius,
                             rho, loss, p, n_outputs=1):
    """``2 m E + 2 gamma_{2m+4} R_+``: what the float64 rounding of a phase of ``m`` steps of
    size ``eta`` can add to the change of its computed average between two neighbours
    (module docstring, *Floating-point rounding of the iteration*).

    Public quantities only: the phase size and step, ``alpha``, the loss constants ``L``
    and ``beta`` (of the smoothed per-row loss), the row bound ``C``, the ball radius ``R``,
    the smoothing radius ``rho``, the number ``p`` of coordinates and ``K`` of outputs.

    >>> from skdp._losses import LogisticLoss
    >>> a = phase_rounding_allowance(1000, 0.1, alpha=0.01, lipschitz=1.0,
    ...     smoothness=0.25, row_bound=1.0, radius=100.0, rho=0.0, loss=LogisticLoss(), p=10)
    >>> 0.0 < a < 1e-9 * 2 * 0.1 * 1.0 * 1e3
    True
    """
    u = UNIT_ROUNDOFF
    m, p, K = max(int(m), 1), max(int(p), 1), max(int(n_outputs), 1)
    d = max(p // K, 1)
    R_plus = float(radius) * (1.0 + gamma_k(p + 4))
    L, C = float(lipschitz), float(row_bound)
    L_scalar = L / C if C > 0.0 else 0.0
    tau = float(loss.param) if loss.loss_id == HUBER else 0.0
    s_max = float(rho) * C * (1.0 + gamma_k(p + 4))
    derivative_error = DERIVATIVE_ULPS * u * (L_scalar + 2.0 * tau + 41.0 * s_max + K)
    gradient_error = (float(smoothness) * (1.0 + gamma_k(p + 4)) * gamma_k(d) * R_plus
                      + C * derivative_error + 4.0 * u * L)
    step_error = (eta * gradient_error
                  + gamma_k(p + 8) * (R_plus * (1.0 + eta * float(alpha)) + eta * L))
    return 2.0 * m * step_error + 2.0 * gamma_k(2 * m + 4) * R_plus


def public_radius(loss, *, data_norm, alpha, max_coef_norm, y_bound, solver):
    """Public radius ``R`` of the ball the iterates are projected onto (as for ``dpsgd``).

    ``max_coef_norm`` if given; else, for ``alpha > 0``, ``min(L/alpha, sqrt(2 f0/alpha))``
    with ``f0 = sup_y l(0; y)`` -- a bound on the regularised minimiser's norm valid for every
    dataset, so the projection never excludes it.  ``alpha = 0`` without ``max_coef_norm``
    is refused.
    """
    if max_coef_norm is not None:
        R = float(max_coef_norm)
        if not (R > 0.0 and math.isfinite(R)):
            raise ValueError(f"max_coef_norm must be finite and > 0, got {max_coef_norm!r}")
        return R
    if alpha > 0.0:
        L = float(loss.lipschitz(data_norm))
        f0 = float(loss.sup_loss_at_zero(y_bound))
        return min(L / alpha, math.sqrt(2.0 * f0 / alpha)) if math.isfinite(f0) else L / alpha
    raise ValueError(
        f"solver={solver!r} with alpha=0 needs a public bound max_coef_norm (the radius of "
        "the ball the iterates are projected onto, which fixes the step size); set "
        "max_coef_norm, or use alpha > 0"
    )


def _noise_ratio(epsilon, delta, calibration):
    """``sigma_i / Delta_i`` (the same for every phase); kept at module level so tests can
    replace it (e.g. by an under-noised variant in the privacy audit)."""
    if calibration == "paper":
        ratio = 2.0 * math.sqrt(math.log(1.0 / delta)) / epsilon  # 4 L eta sqrt(.)/eps / (2 L eta)
        if gaussian_delta(epsilon, 1.0 / ratio) > delta:
            raise ValueError(
                f"FKT20's printed noise (sigma/Delta = {ratio:.4g}) is not ({epsilon}, "
                f"{delta})-DP by the analytic Gaussian criterion; use calibration='tight'"
            )
        return ratio
    return _analytic_ratio(epsilon, delta)


@functools.lru_cache(maxsize=256)
def _analytic_ratio(epsilon, delta):
    """``sigma/Delta`` of the analytic Gaussian mechanism (cached: a root search)."""
    return calibrate_gaussian_sigma(epsilon, delta, 1.0)


def phased_plan(n, p, loss, *, epsilon, delta, alpha, data_norm, y_bound=None,
                calibration="tight", max_coef_norm=None, smoothing=None, step_scale=None,
                n_outputs=1):
    """Everything public about a phased run on ``n`` rows of ``p`` coordinates.

    Returns a dict with the phase sizes, steps ``eta_i``, smoothing radius ``rho``, noise
    ``sigma_i``, sensitivities ``Delta_i = 2 eta_i L + rounding_i`` (the float64 rounding
    allowance of :func:`phase_rounding_allowance`, also returned as ``"rounding"``) and the
    dp-accounting ``event``.  ``p`` counts all coordinates (``n_outputs`` columns).  The
    solver and the estimators' ledger planner call this same function.

    Examples
    --------
    >>> from skdp._losses import LogisticLoss
    >>> from skdp._solvers._phased import phased_plan
    >>> plan = phased_plan(1000, 3, LogisticLoss(), epsilon=1.0, delta=1e-6, alpha=0.01,
    ...                    data_norm=1.0)
    >>> len(plan["sizes"]), sum(plan["sizes"]), plan["rho"]
    (10, 1000, 0.0)
    """
    epsilon, delta, alpha = check_gaussian_solver_args(
        epsilon, delta, alpha, calibration, "phased", pure_dp_solver="output_perturbation")
    if loss.loss_id not in SUPPORTED:
        raise ValueError(f"solver='phased' does not support {type(loss).__name__}")
    n = int(n)
    if n < 2:
        raise ValueError(f"solver='phased' needs at least 2 samples, got n={n}")
    step_scale = 1.0 if step_scale is None else float(step_scale)
    if not (step_scale > 0.0 and math.isfinite(step_scale)):
        raise ValueError(f"step_scale must be finite and > 0, got {step_scale!r}")
    L = float(loss.lipschitz(data_norm))
    if not (L > 0.0 and math.isfinite(L)):
        raise ValueError(f"solver='phased' needs a finite positive Lipschitz constant, got {L}")
    R = public_radius(loss, data_norm=data_norm, alpha=alpha, max_coef_norm=max_coef_norm,
                      y_bound=y_bound, solver="phased")
    k = max(1, math.ceil(math.log2(n)))
    sizes = [n >> i for i in range(1, k)]
    sizes.append(n - sum(sizes))
    eta = step_scale * (R / L) * min(4.0 / math.sqrt(n),
                                     epsilon / math.sqrt(p * math.log(1.0 / delta)))
    eta1 = eta / 4.0
    smoothable = loss.loss_id in SMOOTHABLE
    if smoothing is not None:
        rho = float(smoothing)
        if not (rho >= 0.0 and math.isfinite(rho)):
            raise ValueError(f"smoothing must be finite and >= 0, got {smoothing!r}")
        if not smoothable:
            rho = 0.0  # logistic/multinomial: already smooth, never smoothed
        beta = smoothing_smoothness(loss, data_norm, rho)
        if not math.isfinite(beta):
            raise ValueError(
                f"{type(loss).__name__} is nonsmooth: solver='phased' needs smoothing > 0 "
                "(or smoothing=None for the automatic radius)"
            )
        eta1 = min(eta1, 2.0 / (beta + alpha))
    else:
        beta = float(loss.smoothness(data_norm))
        if eta1 * (beta + alpha) <= 2.0:
            rho = 0.0
        elif smoothable:
            if alpha > 0.0:
                eta1 = min(eta1, 1.0 / alpha)
            rho = SQRT_2_OVER_PI * L / (2.0 / eta1 - alpha)
            beta = smoothing_smoothness(loss, data_norm, rho)
            # guard the rounding of the formula: keep eta_1 admissible exactly
            eta1 = min(eta1, 2.0 / (beta + alpha))
        else:
            rho = 0.0
            eta1 = 2.0 / (beta + alpha)
    # admissible for the computed margin-noise scales too (module docstring)
    eta1 = min(eta1, 2.0 / (beta * (1.0 + gamma_k(int(p) + 4)) + alpha))
    etas = [eta1 / 4.0**i for i in range(k)]
    ratio = float(_noise_ratio(epsilon, delta, calibration))
    rounding = [phase_rounding_allowance(
        m, e, alpha=alpha, lipschitz=L, smoothness=beta, row_bound=data_norm, radius=R,
        rho=rho, loss=loss, p=p, n_outputs=n_outputs) for m, e in zip(sizes, etas)]
    deltas = [2.0 * e * L + a for e, a in zip(etas, rounding)]
    sigmas = [ratio * D for D in deltas]
    # every phase has sigma_i / Delta_i = ratio: one Gaussian event (parallel composition)
    event = gaussian_event(ratio, 1.0)
    return {
        "sizes": sizes, "etas": etas, "rho": rho, "sigmas": sigmas, "sensitivities": deltas,
        "rounding": rounding, "event": event, "coef_bound": R, "lipschitz": L,
        "smoothness": beta,
        "noise_over_sensitivity": ratio, "step_scale": step_scale,
        "theory_step": eta / step_scale,
    }


def plan_phased_event(est, n_samples):
    """Ledger planner: the event of a phased fit from public quantities only.

    ``gaussian_event(sigma_i, Delta_i)`` depends on ``(epsilon, delta, calibration)`` only
    (every phase has ``sigma_i / Delta_i = _noise_ratio(...)``); the estimator's other
    parameters are validated by the solver.
    """
    epsilon, delta, _ = check_gaussian_solver_args(
        est.epsilon, est.delta, getattr(est, "alpha", 0.0), est.calibration, "phased")
    if int(n_samples) < 2:
        raise ValueError("solver='phased' needs at least 2 samples")
    return gaussian_event(_noise_ratio(epsilon, delta, est.calibration), 1.0)


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def phased_phase(X, y, order, start, stop, loss_id, param, rho, xnorm, clip, W, eta, alpha,
                 radius, avg):
    """One phase: a pass of projected SGD over ``order[start:stop]`` from ``W`` (in place);
    writes the average of the iterates into ``avg``.

    Per row ``i``: margin(s) ``z = x_i W``; scalar losses: ``g = l_s'(z; y_i)`` with
    ``s = rho ||x_i||`` (smoothed closed form; raw derivative for ``s = 0``/logistic),
    clamped so that ``|g| ||x_i|| <= clip``; multinomial: ``g = softmax(z) - e_y`` scaled to
    ``||x_i|| ||g|| <= clip``; a non-finite gradient contributes zero.  Then
    ``W <- Pi_radius(W - eta (x_i g^T + alpha W))`` and ``avg += W``.
    """
    d = X.shape[1]
    K = W.shape[1]
    z = np.empty(K)
    g = np.empty(K)
    for j in range(d):
        for k in range(K):
            avg[j, k] = 0.0
    for t in range(start, stop):
        i = order[t]
        for k in range(K):
            z[k] = _dot_row(X, i, W, k)
        if K == 1:
            g[0] = smoothed_margin_loss(z[0], y[i], loss_id, param, rho * xnorm[i])[1]
        else:
            yi = y[i]
            if yi >= 0.0 and yi < K and yi == np.floor(yi):
                _multinomial_row(z, int(yi), g)
            else:
                for k in range(K):
                    g[k] = 0.0
        gsq = 0.0
        for k in range(K):
            gsq += g[k] * g[k]
        nrm = xnorm[i] * np.sqrt(gsq)
        # A non-finite row or gradient (NaN/inf in x_i, y_i or l') contributes nothing:
        # NaN * 0 is NaN, so the row term is skipped, not scaled; the regulariser step,
        # the projection and the average still run, so the step count is data-independent.
        use_row = nrm < np.inf
        if use_row and nrm > clip:
            scale = clip / nrm
            for k in range(K):
                g[k] *= scale
        sq = 0.0
        for j in range(d):
            xij = X[i, j] if use_row else 0.0
            for k in range(K):
                gk = g[k] if use_row else 0.0
                w = W[j, k] - eta * (xij * gk + alpha * W[j, k])
                W[j, k] = w
                sq += w * w
        if sq > radius * radius:
            f = radius / np.sqrt(sq)
            for j in range(d):
                for k in range(K):
                    W[j, k] *= f
        for j in range(d):
            for k in range(K):
                avg[j, k] += W[j, k]
    cnt = stop - start
    if cnt > 0:
        for j in range(d):
            for k in range(K):
                avg[j, k] /= cnt


def _in_memory_phases(Xc, y, loss, rho, clip, R, rng):
    """``run_phase(W, size, eta, alpha) -> average``: the phases over a uniformly random
    permutation of the rows (drawn from ``rng`` first), consecutive blocks of it; ``W`` is
    updated in place."""
    n = Xc.shape[0]
    order = rng.permutation(n).astype(np.int64)
    yc = np.ascontiguousarray(y, dtype=np.float64)
    xnorm = np.empty(n)
    row_norms(Xc, xnorm)
    cursor = [0]

    def run_phase(W, size, eta, alpha):
        avg = np.empty_like(W)
        start = cursor[0]
        phased_phase(Xc, yc, order, start, start + size, int(loss.loss_id),
                     float(loss.param), float(rho), xnorm, clip, W, eta, alpha, float(R), avg)
        cursor[0] = start + size
        return avg

    return run_phase


def _phase_segment(X, y, seed, start, stop, loss_id, param, rho, clip, W, eta, alpha, radius):
    """On a partition's worker: the phase's steps over positions ``start:stop`` of the
    partition's public row permutation (from ``seed``); ``(W after, sum of the iterates)``."""
    m = X.shape[0]
    order = np.random.default_rng(seed).permutation(m).astype(np.int64)
    W = np.array(W, dtype=np.float64, order="C")
    avg = np.empty_like(W)
    phased_phase(X, np.ascontiguousarray(y, dtype=np.float64), order, start, stop, loss_id,
                 param, rho, row_norms_at(X, order[start:stop]), clip, W, eta, alpha, radius,
                 avg)
    return W, avg * (stop - start)


def _dask_phases(design, loss, rho, clip, R, rng):
    """``run_phase`` over a clipped :class:`DaskDesign`: the public row order is a random
    permutation of the partitions, each read in a random permutation of its rows (drawn
    from ``rng`` first: one partition order and one seed per partition).  A phase's block
    of consecutive positions is a run of partition segments; each segment is one task on
    the partition's worker, which receives ``W`` (``p`` numbers) and returns ``W`` and the
    sum of its iterates.  The privacy argument is unchanged: the blocks are disjoint and
    fixed by public randomness, every row is used once (module docstring)."""
    import dask

    sizes = [int(c) for c in design.X.chunks[0]]
    partitions = [int(k) for k in rng.permutation(len(sizes))]
    seeds = rng.integers(0, 2 ** 63 - 1, size=len(sizes))
    cursor = {"part": 0, "row": 0}

    def run_phase(W, size, eta, alpha):
        blocks = partition_blocks(design)     # (the closure keeps the persisted design)
        total = np.zeros_like(W)
        remaining = size
        while remaining > 0:
            k = partitions[cursor["part"]]
            take = min(remaining, sizes[k] - cursor["row"])
            if take > 0:
                x, y = blocks[k]
                start = cursor["row"]
                W_after, part = dask.compute(dask.delayed(_phase_segment)(
                    x, y, int(seeds[k]), start, start + take, int(loss.loss_id),
                    float(loss.param), float(rho), clip, W.copy(), eta, alpha, float(R)))[0]
                W[...] = W_after
                total += part
                cursor["row"] += take
                remaining -= take
            if cursor["row"] == sizes[k]:
                cursor["part"] += 1
                cursor["row"] = 0
        return total / size

    return run_phase


def solve_phased(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1,
                 fit_intercept=True, intercept_scaling=1.0, y_bound=None,
                 calibration="tight", max_iter=10_000, max_coef_norm=None, rng,
                 smoothing=None, step_scale=None, noise_source=None):
    """Phased SGD of Feldman, Koren & Talwar (2020) on the exactly smoothed loss.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite, or DaskDesign
        Raw features; rows are clipped here (on the workers for a Dask design, whose
        partitions are then streamed in a public random order: ``_dask_phases``).
    y : ndarray of shape (n,)
        Encoded targets (±1 logistic, class index multinomial, real Huber/absolute).
    loss : loss spec (``LogisticLoss``, ``MultinomialLoss``, ``HuberLoss``,
        ``AbsoluteLoss``)
    epsilon, delta : float
        Privacy target, ``delta`` in (0, 1).
    alpha : float
        L2 strength ``mu >= 0``.
    data_norm : float
        Public bound on ``||[x, intercept_scaling]||``, enforced by clipping.
    n_outputs, fit_intercept, intercept_scaling, y_bound, calibration
        As for the other solvers.
    max_iter : int
        Ignored (the run is one pass; the number of steps fixes the calibration).
    max_coef_norm : float or None
        Radius ``R`` of the public ball (required when ``alpha == 0``).
    rng : numpy.random.Generator
        Source of the permutation and the noise.
    smoothing : float or None
        Smoothing radius ``rho`` (None: automatic, module docstring).
    step_scale : float or None
        Multiplier of FKT20's step (None: 1).
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source: every phase's average is released on a power-of-two grid
        with exact discrete Gaussian noise (:mod:`skdp._mechanisms._exact`); None: float.

    Returns
    -------
    SolverResult
    """
    with solver_threads(X.shape[0], X.shape[1] + 1):
        return _solve(X, y, loss, epsilon=epsilon, delta=delta, alpha=alpha,
                      data_norm=data_norm, n_outputs=n_outputs, fit_intercept=fit_intercept,
                      intercept_scaling=intercept_scaling, y_bound=y_bound,
                      calibration=calibration, max_iter=max_iter,
                      max_coef_norm=max_coef_norm, rng=rng, smoothing=smoothing,
                      step_scale=step_scale, noise_source=noise_source)


def _project_onto_ball(W, R):
    """``W <- Pi_R(W)`` in place (the public ball of radius ``R``)."""
    nrm = float(np.linalg.norm(W))
    if nrm > R:
        W *= R / nrm


def _solve(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs, fit_intercept,
           intercept_scaling, y_bound, calibration, max_iter, max_coef_norm, rng, smoothing,
           step_scale, noise_source=None):
    n = X.shape[0]
    p_in = X.shape[1] + int(bool(fit_intercept))
    K = int(n_outputs)
    plan = phased_plan(n, p_in * K, loss, epsilon=epsilon, delta=delta, alpha=alpha,
                       data_norm=data_norm, y_bound=y_bound, calibration=calibration,
                       max_coef_norm=max_coef_norm, smoothing=smoothing,
                       step_scale=step_scale, n_outputs=K)
    L, R, rho = plan["lipschitz"], plan["coef_bound"], plan["rho"]
    clip = _clip_bound(L, p_in * K)
    if isinstance(X, DaskDesign):
        run_phase = _dask_phases(clipped_design(X, data_norm, fit_intercept,
                                                intercept_scaling), loss, rho, clip, R, rng)
    else:
        run_phase = _in_memory_phases(
            clip_and_augment(X, data_norm, fit_intercept, intercept_scaling), y, loss, rho,
            clip, R, rng)
    W = np.zeros((p_in, K))
    for size, eta, sigma, sens in zip(plan["sizes"], plan["etas"], plan["sigmas"],
                                      plan["sensitivities"]):
        # each phase starts inside the public ball (post-processing of the last release),
        # so every iterate has norm <= R (1 + gamma_{p+4}), as the rounding allowance needs
        _project_onto_ball(W, R)
        avg = run_phase(W, size, float(eta), float(alpha))
        # each phase's average is released (exact grid noise with a noise_source)
        W, _ = release_gaussian(avg, sigma, sens, rng, noise_source, bound=R)
    _project_onto_ball(W, R)  # post-processing: the output lies in the public ball
    coef, intercept = split_intercept(W, fit_intercept, intercept_scaling)
    details = {k: v for k, v in plan.items() if k != "event"}
    details.update(n_phases=len(plan["sizes"]), sequential_rounds=n, clip_bound=clip,
                   max_iter_ignored=int(max_iter), calibration=calibration)
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(K),
        n_iter=len(plan["sizes"]),
        n_gradient_evals=int(n),
        noise_scale=float(plan["sigmas"][0]),
        sensitivity=float(plan["sensitivities"][0]),
        dp_event=plan["event"],
        data_norm=float(data_norm),
        details=details,
    )
