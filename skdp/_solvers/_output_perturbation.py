r"""Output perturbation (Zhang, Zheng, Mou & Wang, IJCAI 2017, Algorithm 1).

Release ``w_priv = w(S) + z`` where ``w(S)`` is a *deterministic* approximate minimiser of

    F(w) = (1/n) sum_i l(x_i w, y_i) + (mu/2) ||w||^2,      mu = alpha,

computed on rows clipped to ``||x_i|| <= C = data_norm`` (intercept column included), and
``z`` is Gaussian noise (``delta > 0``) or norm-Laplace noise (``delta = 0``) calibrated to
the replace-one L2 sensitivity ``Delta = sup ||w(S) - w(S')||``.  Notation: ``L`` and
``beta_l`` are the Lipschitz and smoothness constants of the *unregularised* per-row loss
(see :mod:`skdp._losses`), ``p`` the number of released coordinates, ``n`` public.

Sensitivities (replace-one neighbours)
------------------------------------------------------
**Tight, mu > 0 (default).**  Let ``w_hat``, ``w_hat'`` minimise ``F``, ``F'`` on neighbours
differing in row ``n``.  Both are mu-strongly convex and
``F' = F + (l_n' - l_n)/n``; from the optimality of ``w_hat'`` and strong convexity of ``F``,
``mu ||w_hat - w_hat'||^2 <= <grad F(w_hat') - grad F(w_hat), w_hat' - w_hat>
= <(grad l_n(w_hat') - grad l_n'(w_hat'))/n, w_hat' - w_hat> <= (2L/n) ||w_hat' - w_hat||``,
so ``||w_hat - w_hat'|| <= 2L/(n mu)``.  The solver returns a point certified to satisfy
``||w(S) - w_hat(S)|| <= tau`` (:func:`~skdp._solvers._optimizers.certified_minimize`:
``||grad F(w)|| <= mu tau`` with a rigorous floating-point allowance, or a contraction
argument for its gradient-descent fallback), hence

    Delta = 2L/(n mu) + 2 tau,     tau = CERTIFICATE_SLACK * L/(n mu)  (Delta = 2.02 L/(n mu)).

This is the bound of the replace-one convention in the limit ``T -> infinity`` plus 1 %; it holds for
any path the optimiser takes, so its iteration count may depend on the data (it is a
timing side channel only, like every fit time, and is reported in ``n_gradient_evals_``).
The optimiser stops at the first point certified within ``min(tau, 0.01 sigma)`` of
``w_hat`` (``sigma`` the noise scale, calibrated beforehand from public quantities): more
precision would be invisible under the noise.

**Tight, mu = 0.**  Plain GD from 0, ``eta = 1/beta_l``, exactly ``T`` steps.  The shared
part of the update is non-expansive (``eta <= 2/beta_l``) and the replaced row moves the
iterate by at most ``2 eta L/n`` per step, so ``Delta_T = 2 eta L T/n``.

**Paper (Lemma 3), mu > 0.**  ``beta = beta_l + mu``, ``eta = 1/(mu + beta)``,
``D = min(L/mu, sqrt(2 f0/mu))`` (public bound on ``||w_hat||`` for every dataset,
``f0 = sup l(0; xi)``), ``L_paper = L + 2 mu D`` (Lipschitz constant of the regularised loss
on the ball ``||w|| <= 2D`` that GD is projected onto), ``Delta = 5 L_paper (mu + beta)/(n mu beta)``.
**Paper (Lemma 2), mu = 0.**  ``eta = 1/beta_l``, ``Delta = 3 L T eta / n``.

Iteration counts (public)
-------------------------
Paper mode, mu > 0: ``T = ceil((mu+beta)^2/(2 mu beta) ln(max(1, 10 D^2/E||z||^2)))``
(the linear rate of GD until its error is 10 times below the noise), capped by ``max_iter``.  mu = 0 (both modes): the minimiser of the explicit
bound of Theorem 3, ``T* = ceil((2 beta^2 D^2 n^2 / (p c^2 k^2 L^2))^(1/3))`` with the
paper's constants ``k = 3``, ``c^2 = 2 ln(2/delta)/epsilon^2`` (``(p+1)/epsilon^2`` when
``delta = 0``) in both modes -- tight mode then adds less noise to the same iterate -- and
``D = max_coef_norm`` (required), capped by ``max_iter``.

Noise
-----
``delta > 0``: tight: the analytic Gaussian mechanism (Balle & Wang 2018), exact;
paper: ``sigma = Delta sqrt(2 ln(2/delta))/epsilon`` (the paper's density), checked
against the analytic criterion.  ``delta = 0``: norm-Laplace with scale ``Delta/epsilon``.
"""

import math

import numpy as np

from ..accounting import calibrate_gaussian_sigma, gaussian_delta, gaussian_event, pure_dp_event
from .._losses import HUBER
from .._mechanisms import release_gaussian, release_laplace
from .._mechanisms._clipped_rows import ClippedRows
from ._objective import Objective
from ._dask_objective import DaskDesign, DaskObjective
from ._optimizers import certified_minimize, gradient_descent
from ._result import SolverResult, split_intercept
from ._threads import solver_threads

CERTIFICATE_SLACK = 0.01
PAPER_T_KAPPA = 10.0
LBFGS_MAX_ITER = 10_000
STOP_NOISE_FRACTION = 0.01


def _noise_ratio_sq(epsilon, delta, calibration, p):
    """``c^2 = E||z||^2 / (p Delta^2)``, which does not depend on Delta."""
    if delta == 0.0:
        return (p + 1.0) / epsilon**2
    if calibration == "paper":
        return 2.0 * math.log(2.0 / delta) / epsilon**2
    return (calibrate_gaussian_sigma(epsilon, delta, 1.0)) ** 2


def _iterations_convex(*, beta, L, n, p, epsilon, delta, calibration, max_coef_norm, max_iter):
    """Number of GD steps at mu = 0: T* of Theorem 3's explicit bound, paper constants.

    ``T* = ceil((2 beta^2 D^2 n^2 / (p c^2 k^2 L^2))^(1/3))`` minimises the bound
    ``2 beta D^2 / T + (beta/2) p c^2 (k L T / (beta n))^2`` with the paper's constants
    ``k = 3`` (Lemma 2) and ``c^2 = 2 ln(2/delta)/epsilon^2`` (its Gaussian), for *both*
    calibrations.  ``calibration="tight"`` then releases the same ``w_T`` with the tight
    ``Delta = 2 L T eta / n`` and the analytic-Gaussian sigma, i.e. strictly less noise than
    paper mode on the same iterate -- never worse.  (Minimising the bound with the tight
    constants instead gives a ~1.3-2.2x larger T: the bound's optimisation term
    ``2 beta D^2/T`` is pessimistic by orders of magnitude on real data, so those extra steps
    bought little and their larger Delta cost more; measured in benchmarks/table3.py.)
    T depends on public quantities only.
    """
    if max_coef_norm is None:
        raise ValueError(
            "alpha=0 needs a public bound max_coef_norm on the norm of the minimiser to fix "
            "the number of gradient steps (the sensitivity grows with it); set "
            "max_coef_norm, or use alpha > 0"
        )
    k = 3.0
    c2 = _noise_ratio_sq(epsilon, delta, "paper", p)
    T = math.ceil((2.0 * beta**2 * max_coef_norm**2 * n**2 / (p * c2 * k**2 * L**2)) ** (1 / 3))
    return int(min(max(T, 1), max_iter))


def solve_output_perturbation(X, y, loss, **kwargs):
    """Private minimiser of the regularised risk by output perturbation.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
        Raw features; rows are clipped here (every path goes through the clip).
    y : ndarray of shape (n,), float64
        Encoded targets (±1 for logistic, class index for multinomial, real for Huber,
        already clipped to ``y_bound`` if one is given).
    loss : loss spec (:mod:`skdp._losses`)
    epsilon, delta : float
        Privacy target; ``delta = 0`` selects pure ε-DP (norm-Laplace noise).
    alpha : float
        L2 strength ``mu >= 0``.
    data_norm : float
        Public bound on ``||[x, intercept_scaling]||_2``, enforced by clipping.
    n_outputs : int, default=1
        Columns of the coefficient matrix (1, or the number of classes).
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    y_bound : float or None
        Public target bound (tightens the public bound on ``||w_hat||`` for Huber).
    calibration : {"tight", "paper"}, default="tight"
    max_iter : int, default=10000
        Cap on gradient steps (GD paths) and on L-BFGS iterations.
    max_coef_norm : float or None
        Public bound on ``||w_hat||`` (required when ``alpha == 0``).
    rng : numpy.random.Generator
        Source of the noise.
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source (:func:`skdp._mechanisms.new_word_source`): the release is
        floating-point safe (exact discrete noise on a power-of-two grid,
        :mod:`skdp._mechanisms._exact`); None: float noise from ``rng``.

    Returns
    -------
    SolverResult
    """
    with solver_threads(X.shape[0], X.shape[1] + 1):
        return _solve(X, y, loss, **kwargs)


def _solve(
    X,
    y,
    loss,
    *,
    epsilon,
    delta,
    alpha,
    data_norm,
    n_outputs=1,
    fit_intercept=True,
    intercept_scaling=1.0,
    y_bound=None,
    calibration="tight",
    max_iter=10_000,
    max_coef_norm=None,
    rng,
    noise_source=None,
):
    n = X.shape[0]
    p = (X.shape[1] + int(bool(fit_intercept))) * n_outputs
    mu = float(alpha)
    L = loss.lipschitz(data_norm)
    beta_l = loss.smoothness(data_norm)
    details = {"lipschitz": L, "smoothness": beta_l, "calibration": calibration}

    # 1. Plan from public quantities only: method, step, iterations, sensitivity.
    if mu > 0.0:
        f0 = loss.sup_loss_at_zero(y_bound)
        D = min(L / mu, math.sqrt(2.0 * f0 / mu)) if math.isfinite(f0) else L / mu
        details["coef_bound"] = D
        if calibration == "tight":
            method = "certified"
            tau = CERTIFICATE_SLACK * L / (n * mu)
            sensitivity = 2.0 * L / (n * mu) + 2.0 * tau
            details["tau"] = tau
        else:
            if n < 2:
                raise ValueError("calibration='paper' (Lemma 3) needs n >= 2")
            method = "projected_gd"
            beta = beta_l + mu
            step = 1.0 / (mu + beta)
            L_paper = L + 2.0 * mu * D
            sensitivity = 5.0 * L_paper * (mu + beta) / (n * mu * beta)
            noise_sq = p * _noise_ratio_sq(epsilon, delta, calibration, p) * sensitivity**2
            T = math.ceil(
                (mu + beta) ** 2 / (2.0 * mu * beta)
                * math.log(max(1.0, PAPER_T_KAPPA * D**2 / noise_sq))
            )
            n_iter = int(min(max(T, 1), max_iter))
            details.update(step=step, lipschitz_paper=L_paper)
    else:
        method = "gd"
        step = 1.0 / beta_l
        n_iter = _iterations_convex(
            beta=beta_l, L=L, n=n, p=p, epsilon=epsilon, delta=delta,
            calibration=calibration, max_coef_norm=max_coef_norm, max_iter=max_iter,
        )
        sensitivity = (3.0 if calibration == "paper" else 2.0) * L * n_iter * step / n
        details.update(step=step)

    # 2. Calibrate the noise before the data is touched.
    if delta == 0.0:
        noise_scale = sensitivity / epsilon
        dp_event = pure_dp_event(epsilon)
    elif calibration == "paper":
        noise_scale = sensitivity * math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon
        if gaussian_delta(epsilon, sensitivity / noise_scale) > delta:
            raise ValueError(
                "the paper's Gaussian noise does not give the requested (epsilon, delta); "
                "use calibration='tight'"
            )
        dp_event = gaussian_event(noise_scale, sensitivity)
    else:
        noise_scale = calibrate_gaussian_sigma(epsilon, delta, sensitivity)
        dp_event = gaussian_event(noise_scale, sensitivity)

    # 3. The noise-free solution, on clipped rows (and targets: D above assumes them).
    if isinstance(X, DaskDesign):
        # rows clipped on the workers; the estimator clipped the targets there too
        objective = DaskObjective(X, loss, mu, data_norm, fit_intercept, intercept_scaling)
    else:
        Xc = ClippedRows(X, data_norm, fit_intercept, intercept_scaling)   # no copy of X
        if y_bound is not None and loss.loss_id == HUBER:
            y = np.clip(y, -y_bound, y_bound)
        objective = Objective(Xc, y, loss, mu, n_outputs, data_norm)
    if method == "certified":
        # Stop as soon as ||w - w_hat|| is certified below tau and below 1 % of the noise
        # per coordinate: further precision is invisible under the noise (utility only).
        tau_stop = min(tau, STOP_NOISE_FRACTION * noise_scale)
        W, info = certified_minimize(
            objective, mu, tau, beta_l, D, min(max_iter, LBFGS_MAX_ITER), tau_stop=tau_stop
        )
        details.update(info)
        n_iter = info["n_iter"]
    elif method == "projected_gd":
        W = gradient_descent(objective, step, n_iter, radius=2.0 * D)
    else:
        W = gradient_descent(objective, step, n_iter)

    # 4. Release (exact grid noise with a noise_source; the recorded event stays valid).
    #    Public bound on |W| for the grid: D, or what n_iter gradient steps can reach.
    bound = details.get("coef_bound", n_iter * step * L if method == "gd" else None)
    if delta == 0.0:
        W_priv, noise_scale = release_laplace(W, sensitivity, epsilon, rng, noise_source,
                                              bound)
    else:
        W_priv, noise_scale = release_gaussian(W, noise_scale, sensitivity, rng, noise_source,
                                               bound)
    details["secure_noise"] = noise_source is not None
    coef, intercept = split_intercept(W_priv, fit_intercept, intercept_scaling)
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(n_outputs),
        n_iter=int(n_iter),
        n_gradient_evals=int(objective.n_example_gradients),
        noise_scale=float(noise_scale),
        sensitivity=float(sensitivity),
        dp_event=dp_event,
        data_norm=float(data_norm),
        details=details,
    )
