r"""Private zeroth-order optimisation of nonsmooth nonconvex losses (Zhang, Tran & Cutkosky 2024).

Finds a Goldstein-stationary point of ``F(w) = (1/n) sum_i l(a_i.w, y_i) + (alpha/2)||w||^2``
for a loss ``l`` that is only Lipschitz (capped absolute, absolute, truncated squared, the
smooth robust losses, or a user function), evaluating ``l`` only.  Normative description:
(with the errata listed below); kernels in
:mod:`skdp._solvers._zeroth_order_kernel`.

Setting.  Rows ``a = [x, intercept_scaling]`` clipped to ``||a|| <= R = data_norm``;
``Lip_l`` the Lipschitz constant of ``l`` in the prediction, ``L = Lip_l R`` that of
``f(.; a, y)`` in ``w``; ``p`` coordinates; smoothing radius ``delta_s`` (the hyperparameter
``smoothing_radius``).  The algorithm optimises the uniformly smoothed
``F_hat(w) = E_{v ~ Unif(ball)} F(w + delta_s v)`` (L-Lipschitz, ``|F_hat - F| <= L delta_s``,
``grad F_hat = E_u[(p/(2 delta_s))(F(w + delta_s u) - F(w - delta_s u)) u]``); a small
``||grad F_hat||`` at points within ``delta_s`` of ``w_bar`` bounds the Goldstein
``(2 delta_s)``-subdifferential of ``F`` (Cor. 2.3).

Algorithm.  A seeded permutation of the rows; ``K`` periods of ``T`` rounds;
period ``k`` uses ``B1`` fresh rows for ``GRAD`` at round 1 and ``B2`` fresh rows for
``DIFF`` at every later round (``M = K (B1 + (T-1) B2)`` rows, each read **once**):

* online learner (projected OSD, restarted each period): ``Delta_1 = 0``,
  ``Delta_t = Pi_D(Delta_{t-1} - eta g_tilde_{t-1})``, ``||Delta|| <= D = delta_s/T``;
* ``s_t ~ U[0, 1]``, ``w_t = x_t + s_t Delta_t``, ``x_{t+1} = x_t + Delta_t``;
* oracle: ``g_1 = GRAD(w_1)``, ``g_t = g_{t-1} + DIFF(w_t, w_{t-1})``;
  release ``g_tilde_t = g_t + TREE(t) + alpha w_t`` (tree mechanism of
  :mod:`skdp._mechanisms._tree`, one tree per period; ``alpha w_t`` is public), computed
  as the sum of the noisy node sums of ``NODE(t)`` (float or exact noise), so that the
  rounding of a node's sum depends on its own leaves only;
* output: ``"last"`` period average ``w_bar^K`` (default), ``"uniform"`` (the
  paper's rule) or ``"tail_mean"``.

Privacy (replace-one; sensitivity ``2G/b``).  Per-row clipping in the kernel makes every
GRAD row vector ``<= p L`` and every DIFF row vector ``<= p L min(||w_t - w_{t-1}||, 2D)/
delta_s`` in norm whatever the loss does, and ``||w_t - w_{t-1}|| <= (1 - s_{t-1})||Delta_{t-1}||
+ s_t ||Delta_t|| <= 2D`` deterministically (projection).  A replaced row changes one row
vector of one batch, so the leaf moves by at most ``s_1 = 2 p L/B1`` (round 1) or
``s_t = 4 p L D/(delta_s B2)`` (later rounds), for every history: all leaves have
sensitivity ``<= s = max(s_1, s_t)``.  The row sits in one leaf of one period's tree (single
pass over disjoint batches; the start of period ``k+1`` is post-processing of earlier
releases): the run is one tree, ``SelfComposed(gaussian_event(sigma, s), floor(log2 T) + 1)``
-- ``sqrt(floor(log2 T) + 1) s/sigma``-GDP, exactly (:func:`~skdp._mechanisms._tree.tree_dp_event`).
Everything else (``T, K, B1, B2, D, eta``, directions, ``s_t``, the permutation) is public.

Calibration.  ``"tight"`` (default): the smallest ``sigma`` whose tree event is
``(epsilon, delta)``-DP (:func:`~skdp._mechanisms._tree.tree_sigma_tight`).  ``"paper"``:
the paper's RDP statement, ``sigma = sqrt(c_T) s/rho`` with
``rho = sqrt(2 ln(1/delta) + 2 epsilon) - sqrt(2 ln(1/delta))`` (inverse of
``epsilon = rho^2/2 + rho sqrt(2 ln(1/delta))``) and ``c_T = max(2 ln T, floor(log2 T) + 1)``
(the paper's ``2 ln T`` undercounts the nodes for ``T in {1, 2, 4}`` and
gives ``sigma = 0`` at ``T = 1``; ``c_T >= 2 ln T`` so this is never below the paper's
noise).  Either way the event is checked against the target before any data is read.

Parameters (Theorem 4.9 with the errata listed below): ``B1 = T + 1``, ``B2 = 1``,
``D = delta_s/T``, ``T = max(T1, T2)`` (the paper prints ``min``; erratum, the bound
``aT + b/sqrt T + c/T`` is minimised near the larger balance point), ``T1 = (sqrt(p) L
delta_s M/(F* + L delta_s))^{2/3}`` (the ``sqrt`` was lost in the dump), ``T2 = (p^{3/2} L
delta_s M/((F* + L delta_s) rho))^{1/2}``, clamped to ``[1, floor(M/2)]`` and ``max_iter``;
``K = floor(M/(2T))``; ``m = p`` directions per row; OSD step ``eta = D/(G sqrt T)`` with
``G^2 = 3(16 p L^2/B1 + 64 p L^2/(B2 T)) + 3 L^2 + 3 (floor(log2 T) + 1) p sigma^2``;
``F* = sup_loss_at_zero(y_bound)`` (``F(0) - inf F``; ``L`` when unbounded).  All utility
constants: privacy holds for any of them because ``sigma`` uses the ``T, D`` actually run.

Naive baseline (``solver="zeroth_order_naive"``): same O2NC, but every round
reads ``B`` fresh rows (default 1) with one direction each and adds fresh
``N(0, sigma^2 I)``: sensitivity ``2 p L/B`` per release, each row in one release, so the
run is one Gaussian mechanism (``"tight"``: analytic Gaussian; ``"paper"``:
``sigma = s/rho``); ``T = max{(sqrt p L delta_s M/(F* + L delta_s))^{2/3}, (p^{3/2} L
delta_s M/((F* + L delta_s) rho))^{2/3}}`` (max for min, as above).
"""

import math
import warnings

import numpy as np

from .._losses._nonsmooth import USER_LOSS, prediction_lipschitz
from .._mechanisms import clip_and_augment
from .._mechanisms._exact import MAX_EXACT_DRAWS, exact_gaussian_noise
from .._mechanisms._tree import (
    tree_dp_event,
    tree_height,
    tree_node_sensitivity,
    tree_sigma_tight,
)
from ..accounting import calibrate_gaussian_sigma, gaussian_event, get_delta
from .._mechanisms._clipping import row_norms
from .._numba_cache import with_defaults
from ._result import SolverResult, split_intercept
from ._validation import check_gaussian_solver_args
from ._zeroth_order_kernel import (
    F_ALPHA,
    F_D,
    F_DELTA,
    F_ETA,
    F_LIP,
    F_R,
    F_SIGMA,
    I_B1,
    I_B2,
    I_FAST,
    I_K,
    I_M,
    I_ADAGRAD,
    I_NAIVE,
    I_T,
    N_FLOAT,
    N_INT,
    N_STATS,
    S_FEVALS,
    S_MAX_DELTA,
    S_MAX_STEP,
    S_ROWS,
    specialise,
    zo_run,
)
from .._stacklevel import user_stacklevel

__all__ = ["zeroth_order_plan", "solve_zeroth_order", "solve_zeroth_order_naive",
           "rho_from_epsilon_delta", "MIN_ROWS"]

MIN_ROWS = 4
"""Rows needed for one period of two rounds (``B1 + B2 = 3 + 1``)."""

DEFAULT_SMOOTHING = 0.2


class ZerothOrderParameters(dict):
    """The public parameters of one run (a dict with attribute access)."""

    __getattr__ = dict.__getitem__


def rho_from_epsilon_delta(epsilon, delta):
    """The paper's ``rho`` with ``rho^2/2 + rho sqrt(2 ln(1/delta)) = epsilon``.

    Examples
    --------
    >>> from skdp._solvers._zeroth_order import rho_from_epsilon_delta
    >>> [round(rho_from_epsilon_delta(e, 1e-6), 3) for e in (0.5, 1, 2, 8)]
    [0.094, 0.187, 0.368, 1.349]
    """
    l2 = 2.0 * math.log(1.0 / float(delta))
    return math.sqrt(l2 + 2.0 * float(epsilon)) - math.sqrt(l2)


def default_smoothing_radius(data_norm, y_bound, loss):
    """``0.2 * scale / R`` (0.2 did better than 0.1 on synthetic data), ``scale =
    y_bound`` if given, else ``2 loss_scale``
    for the capped/truncated losses (``tau = B_y/2``), else 1.  Public; utility only."""
    if y_bound is not None:
        scale = float(y_bound)
    elif getattr(loss, "param", 0.0) > 0.0:
        scale = 2.0 * float(loss.param)
    else:
        scale = 1.0
    return DEFAULT_SMOOTHING * scale / float(data_norm)


def _check_common(n, epsilon, delta, calibration, alpha, solver):
    check_gaussian_solver_args(epsilon, delta, alpha, calibration, solver)
    if n < MIN_ROWS:
        raise ValueError(
            f"solver={solver!r} needs at least n = {MIN_ROWS} rows (one period of two rounds "
            f"reads B1 + B2 = 4 fresh rows); got n = {n}"
        )


def zeroth_order_plan(n, p, loss, *, epsilon, delta, data_norm, y_bound=None,
                      calibration="tight", alpha=0.0, max_iter=None, smoothing_radius=None,
                      naive=False, batch_size=1, warn=False):
    """Everything public about a run on ``n`` rows of ``p`` coordinates, before any data.

    Returns ``(P, event)``: a :class:`ZerothOrderParameters` (``T, K, B1, B2, m, D,
    delta_s, eta, sigma, s, s1, s2, rho, L, lip, F_star, rows_used, levels``) and the
    dp-accounting event of the run.  Used by the solver and by the estimator's planner.

    Examples
    --------
    >>> from skdp._losses._nonsmooth import CappedAbsoluteLoss
    >>> from skdp._solvers._zeroth_order import zeroth_order_plan
    >>> P, event = zeroth_order_plan(10**5, 21, CappedAbsoluteLoss(1.0), epsilon=1.0,
    ...                              delta=1e-6, data_norm=1.0, smoothing_radius=0.3)
    >>> P.B1 == P.T + 1 and P.rows_used == 2 * P.K * P.T <= 10**5
    True
    >>> from skdp.accounting import get_epsilon
    >>> get_epsilon(event, 1e-6) <= 1.0 + 1e-9
    True
    """
    solver = "zeroth_order_naive" if naive else "zeroth_order"
    n, p = int(n), int(p)
    epsilon, delta, alpha = float(epsilon), float(delta), float(alpha)
    _check_common(n, epsilon, delta, calibration, alpha, solver)
    lip = prediction_lipschitz(loss)
    if not (lip > 0.0 and math.isfinite(lip)):
        raise ValueError(f"the loss's Lipschitz constant must be finite and > 0, got {lip!r}")
    R = float(data_norm)
    L = lip * R
    if smoothing_radius is None:
        delta_s = default_smoothing_radius(R, y_bound, loss)
    else:
        delta_s = float(smoothing_radius)
    if not (delta_s > 0.0 and math.isfinite(delta_s)):
        raise ValueError(f"smoothing_radius must be finite and > 0, got {smoothing_radius!r}")
    F_star = float(loss.sup_loss_at_zero(y_bound))
    if not math.isfinite(F_star):
        F_star = lip * float(y_bound) if y_bound is not None else L
    rho = rho_from_epsilon_delta(epsilon, delta)
    M = n
    base = L * delta_s * M / (F_star + L * delta_s)
    if naive:
        B = int(batch_size)
        if not 1 <= B <= n // 2:
            raise ValueError(f"batch_size must be in [1, n/2], got {batch_size!r}")
        T = max((math.sqrt(p) * base) ** (2.0 / 3.0), (p**1.5 * base / rho) ** (2.0 / 3.0))
        T = int(min(max(1, round(T)), M // B))
        if max_iter is not None:
            T = min(T, int(max_iter))
        K = M // (B * T)
        B1, B2, m = B, B, 1
        s = s1 = s2 = 2.0 * p * L / B
        levels = 1
        if calibration == "tight":
            sigma = calibrate_gaussian_sigma(epsilon, delta, s)
        else:
            sigma = s / rho
        event = gaussian_event(sigma, s)
        rows_used = K * T * B
        G2 = 3.0 * 16.0 * p * L * L / B + 3.0 * L * L + 3.0 * p * sigma * sigma
    else:
        T = max((math.sqrt(p) * base) ** (2.0 / 3.0), (p**1.5 * base / rho) ** 0.5)
        T = int(min(max(2, round(T)), M // 2))
        if max_iter is not None:
            T = max(2, min(T, int(max_iter)))
        K = M // (2 * T)
        B1, B2, m = T + 1, 1, p
        D = delta_s / T
        s1 = 2.0 * p * L / B1
        s2 = 4.0 * p * L * D / (delta_s * B2)
        s = max(s1, s2)
        levels = tree_height(T)
        if calibration == "tight":
            sigma = tree_sigma_tight(epsilon, delta, s, T)
        else:
            c_T = max(2.0 * math.log(T), float(levels))
            sigma = math.sqrt(c_T) * s / rho
        event = tree_dp_event(sigma, s, T)
        rows_used = K * (B1 + (T - 1) * B2)
        G2 = (3.0 * (16.0 * p * L * L / B1 + 64.0 * p * L * L / (B2 * T)) + 3.0 * L * L
              + 3.0 * levels * p * sigma * sigma)
    D = delta_s / T
    eta = D / (math.sqrt(G2) * math.sqrt(T))
    if get_delta(event, epsilon) > delta:
        raise ValueError(  # never reached with the calibrations above; a guard
            f"the calibrated run is not ({epsilon}, {delta})-DP")
    if warn:
        bound = ((F_star + L * delta_s) * p * L * L / (delta_s * M)) ** (1.0 / 3.0) + \
            ((F_star + L * delta_s) * p**1.5 * L / (rho * delta_s * M)) ** 0.5
        reasons = []
        if K < 2:
            reasons.append(f"only K = {K} period of T = {T} rounds (the output averages "
                           "periods)")
        if bound >= L:
            reasons.append(f"the Theorem 4.9 stationarity bound ({bound:.3g}, up to "
                           f"constants) is >= the Lipschitz constant L = {L:.3g}")
        if reasons:
            warnings.warn(
                f"solver={solver!r} on n = {n} rows: {'; '.join(reasons)}; the fit may barely "
                "move. Use more data, a larger epsilon or fewer features.",
                UserWarning, stacklevel=user_stacklevel(),
            )
    P = ZerothOrderParameters(
        T=int(T), K=int(K), B1=int(B1), B2=int(B2), m=int(m), D=D, delta_s=delta_s, eta=eta,
        sigma=float(sigma), s=s, s1=s1, s2=s2, rho=rho, L=L, lip=lip, F_star=F_star,
        rows_used=int(rows_used), levels=int(levels), naive=bool(naive), p=p,
        calibration=calibration,
    )
    return P, event


def exact_sensitivity(P):
    """The leaf sensitivity the grid releases are calibrated for, rounding included
    (:func:`~skdp._mechanisms._tree.tree_node_sensitivity`).

    A leaf is a computed mean of ``B`` clipped per-row estimates of norm ``<= c``
    (``B = B1``, ``c = p L`` for GRAD; ``B = B2``, ``c <= s_2 B2/2`` for the differences),
    so its norm is at most ``s B1/2``; a released node sums at most ``T`` leaves (the naive
    oracle: a single batch mean, no node sum)."""
    B = max(P.B1, P.B2)
    if P.naive:
        return tree_node_sensitivity(P.s, B, 0.0, 0)
    return tree_node_sensitivity(P.s, B, P.s * B / 2.0, P.T)


def _exact_noise(P, data_norm, p, source):
    """``(noise_int, gamma)`` of :func:`zo_run`'s exact path: ``K T`` releases of ``p``
    coordinates (one node per round, or one batch mean per round for the naive oracle),
    each a grid release at least as private as ``N(0, sigma^2)`` on the sensitivity ``s``
    the event records: the grid is calibrated for ``exact_sensitivity(P)`` with the noise
    scaled by the same factor, so its multiplier stays ``>= sigma/s``."""
    count = P.K * P.T * p
    if count > MAX_EXACT_DRAWS:
        raise ValueError(
            f"secure_noise: solver='zeroth_order' would pre-draw {count} exact noise integers "
            f"(limit {MAX_EXACT_DRAWS}); use fewer rounds (max_iter) or secure_noise=False")
    s_eff = exact_sensitivity(P)
    # a public bound on every released coordinate: a node sums <= T leaves of norm
    # <= p L max(1, 2D/delta_s) (the estimates' clips)
    leaf = p * P.lip * float(data_norm) * max(1.0, 2.0 * P.D / P.delta_s)
    gamma, z, _ = exact_gaussian_noise(source, P.sigma * s_eff / P.s, s_eff, p,
                                       P.T * leaf, count)
    return np.ascontiguousarray(z.reshape(P.K * P.T, p)), float(gamma)


def kernel_parameters(P, data_norm, alpha=0.0, directions="linear", step="fixed"):
    """``(fpar, ipar)``: the parameter vectors of ``zo_run`` for the plan ``P``."""
    fpar = np.zeros(N_FLOAT)
    fpar[F_DELTA], fpar[F_D], fpar[F_ETA], fpar[F_SIGMA] = P.delta_s, P.D, P.eta, P.sigma
    fpar[F_LIP], fpar[F_R], fpar[F_ALPHA] = P.lip, float(data_norm), float(alpha)
    ipar = np.zeros(N_INT, dtype=np.int64)
    ipar[I_T], ipar[I_K], ipar[I_B1], ipar[I_B2], ipar[I_M] = P.T, P.K, P.B1, P.B2, P.m
    ipar[I_FAST], ipar[I_NAIVE] = int(directions == "linear"), int(P.naive)
    ipar[I_ADAGRAD] = int(step == "adagrad")
    return fpar, ipar


def _solve(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs, fit_intercept,
           intercept_scaling, y_bound, calibration, max_iter, rng, smoothing_radius, output,
           directions, naive, batch_size, read_counter, trace=None, step="fixed",
           noise_source=None):
    solver = "zeroth_order_naive" if naive else "zeroth_order"
    n, d = X.shape
    p = d + int(bool(fit_intercept))
    if int(n_outputs) != 1:
        raise ValueError(f"solver={solver!r} fits a single-output regression")
    if output not in ("last", "uniform", "tail_mean"):
        raise ValueError(f"output must be 'last', 'uniform' or 'tail_mean', got {output!r}")
    if step not in ("fixed", "adagrad"):
        raise ValueError(f"step must be 'fixed' or 'adagrad', got {step!r}")
    if directions not in ("linear", "sphere"):
        raise ValueError(f"directions must be 'linear' or 'sphere', got {directions!r}")
    # 1. Public parameters and event (no data read).
    P, event = zeroth_order_plan(
        n, p, loss, epsilon=epsilon, delta=delta, data_norm=data_norm, y_bound=y_bound,
        calibration=calibration, alpha=alpha, max_iter=max_iter,
        smoothing_radius=smoothing_radius, naive=naive, batch_size=batch_size, warn=True)
    kernel = zo_run if loss.loss_id != USER_LOSS else specialise(loss.function)

    # 2. The run, on clipped rows only.
    Xc = clip_and_augment(X, data_norm, fit_intercept, intercept_scaling)
    yc = np.ascontiguousarray(y, dtype=np.float64)
    if y_bound is not None:
        yc = np.clip(yc, -float(y_bound), float(y_bound))
    norms = np.empty(n)
    row_norms(Xc, norms)
    order = rng.permutation(n).astype(np.int64)
    fpar, ipar = kernel_parameters(P, data_norm, alpha, directions, step)
    if noise_source is None:
        # float noise: the same rounding-inclusive sensitivity as the grid releases, the
        # noise scaled by the same factor (the multiplier sigma/s the event records holds)
        fpar[F_SIGMA] = float(np.nextafter(P.sigma * (exact_sensitivity(P) / P.s), np.inf))
    period_avgs = np.zeros((P.K, p))
    reads = np.zeros(n, dtype=np.int64) if read_counter is None else read_counter
    stats = np.zeros(N_STATS)
    x_last = np.zeros(p)
    trace = np.zeros((0, p)) if trace is None else trace
    exact = () if noise_source is None else _exact_noise(P, data_norm, p, noise_source)
    exact = with_defaults(exact, (np.zeros((0, 0), dtype=np.int64), 0.0))
    kernel(Xc, yc, order, int(loss.loss_id), float(loss.param), norms, fpar, ipar, rng,
           period_avgs, reads, stats, x_last, trace, *exact)

    # 3. Output rule (post-processing of the period averages).
    if output == "last":
        w = period_avgs[-1].copy()
    elif output == "uniform":
        w = period_avgs[int(rng.integers(P.K))].copy()
    else:
        w = period_avgs[-max(1, int(round(P.K / 4))):].mean(axis=0)
    coef, intercept = split_intercept(w, fit_intercept, intercept_scaling)
    details = {
        **dict(P),
        "output": output,
        "directions": directions,
        "period_averages": period_avgs,
        "max_delta_norm": float(stats[S_MAX_DELTA]),
        "max_iterate_step": float(stats[S_MAX_STEP]),
        "n_function_evals": int(stats[S_FEVALS]),
        "rows_read": int(stats[S_ROWS]),
        "n_iter": int(P.K * P.T),
    }
    return SolverResult(
        coef=np.ascontiguousarray(coef).reshape(-1, 1),
        intercept=intercept,
        n_iter=int(P.K * P.T),
        n_gradient_evals=int(stats[S_ROWS]),
        noise_scale=float(P.sigma),
        sensitivity=float(P.s),
        dp_event=event,
        data_norm=float(data_norm),
        details=details,
    )


def solve_zeroth_order(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1,
                       fit_intercept=True, intercept_scaling=1.0, y_bound=None,
                       calibration="tight", max_iter=None, max_coef_norm=None, rng,
                       smoothing_radius=None, output="last", directions="linear",
                       read_counter=None, step="fixed", noise_source=None):
    """Private variance-reduced zeroth-order O2NC (module docstring).  Returns a
    :class:`SolverResult`.

    ``loss``: a residual loss spec (capped absolute, absolute, truncated squared, Tukey,
    Welsch, Cauchy) or a :class:`~skdp._losses._nonsmooth.UserLoss`; ``max_coef_norm`` is
    ignored (every iterate is within ``K delta_s`` of 0); ``max_iter`` caps ``T`` (public);
    ``directions="sphere"`` draws explicit directions instead of the linear fast path;
    ``read_counter`` (int64, length n) receives the number of reads of every row (tests);
    ``step="adagrad"`` replaces the OSD step ``eta`` by AdaGrad-norm
    ``D/sqrt(sum_{s<t} ||g_tilde_s||^2)`` (post-processing of the releases, same
    privacy; better without noise, not better in the private regimes we measured).
    ``n_gradient_evals`` counts the per-example oracle evaluations (rows read, each once);
    ``details["n_function_evals"]`` the loss evaluations (``2 m`` per row).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._losses._nonsmooth import CappedAbsoluteLoss
    >>> from skdp._solvers._zeroth_order import solve_zeroth_order
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20_000, 2)); y = X @ [1.0, -1.0]
    >>> res = solve_zeroth_order(X, y, CappedAbsoluteLoss(1.0), epsilon=8.0, delta=1e-6,
    ...                          alpha=0.0, data_norm=2.0, smoothing_radius=0.5, rng=rng)
    >>> res.details["rows_read"] == res.details["rows_used"] <= 20_000
    True
    """
    return _solve(X, y, loss, epsilon=epsilon, delta=delta, alpha=alpha, data_norm=data_norm,
                  n_outputs=n_outputs, fit_intercept=fit_intercept,
                  intercept_scaling=intercept_scaling, y_bound=y_bound,
                  calibration=calibration, max_iter=max_iter, rng=rng,
                  smoothing_radius=smoothing_radius, output=output, directions=directions,
                  naive=False, batch_size=1, read_counter=read_counter, step=step,
                  noise_source=noise_source)


def solve_zeroth_order_naive(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1,
                             fit_intercept=True, intercept_scaling=1.0, y_bound=None,
                             calibration="tight", max_iter=None, max_coef_norm=None, rng,
                             smoothing_radius=None, output="last", directions="linear",
                             batch_size=1, read_counter=None, step="fixed",
                             noise_source=None):
    """Naive private zeroth-order O2NC (ablation baseline of
    :func:`solve_zeroth_order`): fresh ``batch_size`` rows and fresh Gaussian noise every
    round, one direction per row.  Returns a :class:`SolverResult`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._losses._nonsmooth import CappedAbsoluteLoss
    >>> from skdp._solvers._zeroth_order import solve_zeroth_order_naive
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2_000, 2)); y = X @ [1.0, -1.0]
    >>> res = solve_zeroth_order_naive(X, y, CappedAbsoluteLoss(1.0), epsilon=1.0,
    ...                                delta=1e-6, alpha=0.0, data_norm=2.0, rng=rng)
    >>> res.details["m"], res.details["rows_read"] <= 2_000
    (1, True)
    """
    return _solve(X, y, loss, epsilon=epsilon, delta=delta, alpha=alpha, data_norm=data_norm,
                  n_outputs=n_outputs, fit_intercept=fit_intercept,
                  intercept_scaling=intercept_scaling, y_bound=y_bound,
                  calibration=calibration, max_iter=max_iter, rng=rng,
                  smoothing_radius=smoothing_radius, output=output, directions=directions,
                  naive=True, batch_size=batch_size, read_counter=read_counter, step=step,
                  noise_source=noise_source)
