r"""Random-round private SGD (Zhang, Zheng, Mou & Wang, IJCAI 2017, Algorithm 2, "RRPSGD").

The solver of :class:`~skdp.DPNonconvexRegressor` for smooth nonconvex losses
(Zhang et al. 2017).  It runs noisy (mini-batch) SGD with a constant
step and outputs the iterate at a round ``R`` drawn uniformly at random *before* the data
is read; the random round turns the stochastic-gradient convergence bound of Ghadimi & Lan
into a bound on ``E ||grad F(w_R)||^2`` (paper Theorem 5).  Losses: the robust losses
``TUKEY``, ``WELSCH``, ``CAUCHY`` of :mod:`skdp._losses` (any loss with a finite Lipschitz
constant ``L`` and smoothness ``beta`` works; the proof needs no convexity).

Notation: ``n`` rows (public), ``p`` coordinates (features + intercept column),
``m = batch_size`` (expected batch size), ``q = m/n``, ``T`` rounds, ``L =
loss.lipschitz(data_norm)``, ``beta = loss.smoothness(data_norm) + alpha``.

Algorithm
---------
Rows are clipped and augmented with the intercept column by
:func:`~skdp._mechanisms.clip_and_augment`.  Before the data is touched:

1. ``z`` (noise multiplier), the step ``eta`` and ``R ~ Uniform{1..T}`` are fixed from
   public quantities (``R`` with the ``rng``; the paper's law ``P(R = k+1) ∝ 2 eta_k -
   beta eta_k^2`` is uniform for a constant step).

Then, from ``w_0 = 0``, for ``t = 1..R`` (the kernel :func:`~skdp._solvers._dpsgd_kernel.
dpsgd_loop` of the DP-SGD baseline, reused unchanged: no projection, constant step):

2. Poisson batch ``S_t`` (every row independently with probability ``q``);
3. ``s_t = sum_{i in S_t} clip_L(grad l(x_i . w_{t-1} - y_i))`` -- per-example gradients
   clipped inside the kernel to ``L' = L (1 - 1e-12 - 4 (p + 8) 2^-53) / (1 + n gamma_n)``
   (non-finite ones dropped), so every contribution has norm ``<= L`` whatever the data and
   the computed float64 sum has replace-one sensitivity ``<= 2L`` (the summation margin of
   :mod:`skdp._mechanisms._summation`);
4. ``w_t = w_{t-1} - eta ((s_t + N(0, (z L)^2 I_p)) / m + alpha w_{t-1})``;
5. output ``w_R``.

Deviation from the printed algorithm: the paper samples one row uniformly *with
replacement* per round (``m = 1``) for ``T = n^2`` rounds.  skdp uses Poisson sampling with
expected batch ``m`` (``batch_size=1`` is the one-row form) because under replace-one
neighbours its privacy has an exact accountant (dp-accounting's PLD,
:mod:`skdp.accounting._sampled`); the default ``T = ceil(n^2/m^2)`` keeps the paper's
``q sqrt(T) = 1``.  ``batch_size = n`` gives full-batch noisy gradient descent (``q = 1``).

Sensitivity (replace-one)
---------------------------------------
Fix neighbours ``S, S'`` differing in row ``i`` and condition on the previous iterate
(released, hence public in the composition).  Row ``i``'s inclusion coin is independent of
its content, and when it is included its clipped contribution changes from ``c_i`` to
``c_i'`` with ``||c_i||, ||c_i'|| <= L'  <= L``, so ``||s_t - s_t'|| <= 2L``: the
replace-one sensitivity of a round's sum is ``2L`` (the regulariser ``alpha w_{t-1}`` is a
function of the public iterate and costs nothing).  With noise ``z L`` this is exactly
skdp's ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` (noise over the per-record bound,
:mod:`skdp.accounting._events`); at ``q = 1`` it is ``GaussianDpEvent(z)``, a
``mu = 2/z`` Gaussian-DP release.

Privacy: the random round
-------------------------
The ``T`` rounds compose adaptively: the trajectory ``(w_1, ..., w_T)`` is a post-processing
of the ``T`` noisy sums, hence ``SelfComposedDpEvent(PoissonSampledDpEvent(q,
GaussianDpEvent(z)), T)``-private (``SelfComposedDpEvent(GaussianDpEvent(z), T)`` at
``q = 1``, i.e. ``2 sqrt(T)/z``-GDP).  For each fixed ``r <= T``, ``w_r`` is a post-processing
of the trajectory, so it has (at least) that privacy profile; ``R`` is independent of the data,
so the output ``w_R`` -- and even the pair ``(R, w_R)`` -- is a mixture over ``r`` of
mechanisms each with that profile, and by the joint convexity of the hockey-stick divergence
``H_{e^eps}`` it has the same profile: ``delta(eps)`` of the composed event bounds it at every
``eps``.  **The reported event is this full composition** (what releasing the whole
trajectory costs, accounted exactly by the PLD / GDP accountant).  The random stopping may
well amplify privacy (the adversary does not know ``R``, and ``R < T`` rounds are not run),
but skdp does not claim it: no amplification-by-random-stopping result is accounted by
dp-accounting, so the random round here is for **utility only**.  ``R`` itself is reported
(``n_iter``), which is safe because it is data-independent.

Calibration
-----------
``calibration="tight"`` (default): ``z`` = the smallest multiplier the accountant certifies
``(epsilon, delta)``-DP for the composed event: :func:`skdp.accounting.
calibrate_poisson_gaussian` (PLD, the discretisation :func:`skdp.accounting.get_epsilon`
reports with) for ``q < 1``; the exact GDP closed form ``z = 2 sqrt(T) / mu*(epsilon,
delta)`` for ``q = 1``.

``calibration="paper"``: the paper's printed noise ``z_t ~ N(0, sigma_z^2 I)`` added to a
single gradient, ``sigma_z^2 = 4 L^2 ln(3n/delta) ln(2/delta)/epsilon^2`` (Thm 4; step 6 of
Algorithm 2), i.e. ``z = sigma_z / L = 2 sqrt(ln(3n/delta) ln(2/delta))/epsilon`` per-record
bounds, kept on the mini-batch sum.  Erratum: the paper's chain (per-step
Gaussian bound, amplification by sampling, advanced composition over ``n^2`` steps) does not
close with the printed constants, so the printed noise is **certified by the accountant** for
the mechanism actually run; a ``ValueError`` is raised if it is not (never observed: at
``n = 1000, m = 1, T = n^2, delta = 1e-3, epsilon = 1`` the PLD gives epsilon = 0.20).  As in
the paper, ``"paper"`` requires ``epsilon <= 1``.

Step size (utility, public)
---------------------------
Constant ``eta = min(1/beta, D_F / (sigma_g sqrt(T)))`` (Thm 5 with its constant-step
choice), where ``D_F = sqrt(2 f0 / beta)``, ``f0 = loss.sup_loss_at_zero(y_bound) >= F(0) -
inf F`` (a public bound replacing the paper's data-dependent ``F(w_0) - F*``; the robust
losses are non-negative) and ``sigma_g^2 = 4 L^2/m + p (z L/m)^2`` bounds the variance of
the stochastic gradient (the paper's ``4 L^2 + d sigma_z^2`` at ``m = 1``; for Poisson
batches the sampling part is ``<= L^2/m``).  ``eta <= 1/beta < 2/beta`` as the theorem
requires.  Unbounded losses without ``y_bound`` (Cauchy) give ``D_F = inf`` and ``eta =
1/beta``.  With this step Thm 5 gives ``E ||grad F(w_R)||^2 <= beta (D_F^2 + sigma_g^2 T
eta^2) / (T (2 eta - beta eta^2))``, reported as ``details["utility_bound"]`` (a bound on
the expected *squared* gradient norm, for clipping that is a no-op).

Reported quantities
-------------------
``noise_scale = z L`` (std of the noise on a round's clipped **sum**), ``sensitivity =
2L``, ``n_iter = R`` (the random round), ``n_gradient_evals`` = realised sum of batch sizes
(data-independent), ``details``: ``n_rounds = T``, ``random_round = R``, ``step``,
``noise_multiplier``, ``sampling_rate``, ...  ``max_coef_norm`` and ``max_iter`` are ignored
(no projection; the number of rounds ``T`` fixes the calibration and is never capped).
Same seed ⇒ bitwise identical output (``R``, the batches and the noise are drawn serially
from ``rng``) *on the same versions of numpy and scipy*.  Across versions the model may
differ: ``z`` comes from dp-accounting's PLD accountant, whose ``T``-fold composition is
``ifft(fft(pmf)^T)`` (``scipy.fft``, numpy's complex power), and the rounding of those
changes between releases -- by about ``T`` ulps of relative error.  Measured with
dp-accounting 0.6.0 for ``PoissonSampled(q = 1/60, Gaussian(z = 4.4757837))``: epsilon at
``delta = 1e-6`` differs by 7e-14 relative after 100 rounds, 1.6e-9 after 1000 and 2.7e-9
after 3600 between numpy 1.26/scipy 1.11.4 (the declared floors) and numpy 2.4/scipy
1.17.  The calibration's search then stops at a ``z`` differing in the 8th digit
(4.47578371 vs 4.47578365 for the default ``T = n^2/m^2 = 3600`` rounds of ``n = 3000``,
``m = 50``), the exact noise's integer scale on its grid changes, and with it every
discrete draw: a different, equally private model (max ``|coef|`` difference 0.07 in that
fit).  Privacy is unaffected: each run's ``z`` is certified by its own accountant, and
``epsilon_ <= epsilon`` in both.  rrpsgd shows it most because its default composes the
most rounds, but every solver calibrated by the PLD accountant (``dpsgd``, ``resque``,
``rrpsgd``) has it: in the floor check's seeded fits (``.ci/smoke_min_versions.py``),
dpsgd (binary logistic, nonconvex) and resque differ too (dpsgd for Huber and multinomial
logistic only in the 10th digit of ``noise_scale_``, not enough to move the grid), while
the solvers calibrated in closed form (objective and output perturbation, phased, spider,
zeroth_order, warm_gd) are bitwise equal.  Making them equal would mean rounding ``z`` up
to a coarse public grid (fewer mismatches, never none: two values can straddle a grid
point) or composing without the third-party FFT.

With a ``noise_source`` (``secure_noise``, the estimator's default) every round's clipped
sum is an exact grid release instead of a float sum (``dpsgd``'s
:func:`~skdp._solvers._dpsgd.run_steps`), which the floating-point attacks of Mironov
(2012) and of the precision attack cannot read.
"""

import math

import dp_accounting
import numpy as np

from ..accounting import (
    calibrate_poisson_gaussian,
    gaussian_mu_for,
    poisson_gaussian_event,
)
from .._mechanisms import clip_and_augment
from ._dpsgd import _clip_bound, check_batch_sum
from ._dpsgd import run_steps
from .._mechanisms._clipping import row_norms
from ._result import SolverResult, split_intercept
from ._threads import solver_threads
from ._validation import check_gaussian_solver_args, check_int, require_certified

__all__ = ["solve_rrpsgd", "rrpsgd_plan", "rrpsgd_event"]


def rrpsgd_event(sampling_rate, noise_multiplier, n_rounds):
    """Event of ``n_rounds`` noisy clipped-sum rounds (the full trajectory).

    ``SelfComposedDpEvent(GaussianDpEvent(z), T)`` at ``q = 1`` (exact GDP closed form),
    else ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)`` (PLD).

    Examples
    --------
    >>> from skdp._solvers._rrpsgd import rrpsgd_event
    >>> rrpsgd_event(1.0, 4.0, 9).event.noise_multiplier
    4.0
    """
    if sampling_rate >= 1.0:
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.GaussianDpEvent(float(noise_multiplier)), int(n_rounds))
    return poisson_gaussian_event(sampling_rate, noise_multiplier, n_rounds)


def _paper_multiplier(epsilon, delta, n):
    """Paper Thm 4's sigma_z over the per-record bound L: 2 sqrt(ln(3n/δ) ln(2/δ))/ε."""
    return 2.0 * math.sqrt(math.log(3.0 * n / delta) * math.log(2.0 / delta)) / epsilon


def _noise_multiplier(epsilon, delta, q, n_rounds, n, calibration):
    """Noise multiplier ``z`` (public only); module-level so tests can replace it."""
    if calibration == "paper":
        z = _paper_multiplier(epsilon, delta, n)
        require_certified(rrpsgd_event(q, z, n_rounds), epsilon, delta,
                          f"the paper's printed noise (z = {z:.4g}) for {n_rounds} rounds at "
                          f"sampling rate {q:.4g}")
        return z
    if q >= 1.0:
        return 2.0 * math.sqrt(n_rounds) / gaussian_mu_for(epsilon, delta)
    return calibrate_poisson_gaussian(epsilon, delta, q, n_rounds)


def rrpsgd_plan(n, p, loss, *, epsilon, delta, alpha, data_norm, y_bound=None,
                calibration="tight", batch_size=1, n_steps=None):
    """Everything public about a run on ``n`` rows of ``p`` coordinates, before any data.

    Returns a dict with ``T, q, m, z, sigma, L, beta, eta, D_F, sigma_g, utility_bound,
    clip, event``; the solver and the estimator's privacy-ledger planner both call it.

    Examples
    --------
    >>> from skdp._losses import WelschLoss
    >>> from skdp._solvers._rrpsgd import rrpsgd_plan
    >>> P = rrpsgd_plan(100, 3, WelschLoss(), epsilon=1.0, delta=1e-5, alpha=0.0,
    ...                 data_norm=1.0, batch_size=100, n_steps=25)
    >>> P["T"], P["q"], round(P["z"] / 10, 3)    # full batch: z = 2 sqrt(T) / mu*
    (25, 1.0, 3.731)
    """
    epsilon, delta, alpha = float(epsilon), float(delta), float(alpha)
    if n < 2:
        raise ValueError(f"solver='rrpsgd' needs at least 2 samples, got n={n}")
    check_batch_sum(n, "rrpsgd")      # from n alone, before the calibration
    epsilon, delta, alpha = check_gaussian_solver_args(epsilon, delta, alpha, calibration,
                                                       "rrpsgd")
    if calibration == "paper" and epsilon > 1.0:
        raise ValueError(
            f"calibration='paper' (Zhang et al. 2017, Thm 4) holds for epsilon <= 1 only, got "
            f"epsilon={epsilon}; use calibration='tight'")
    m = check_int("batch_size", batch_size, 1, n, high_name="n_samples")
    T = math.ceil(n * n / (m * m)) if n_steps is None else check_int("n_steps", n_steps, 1)
    q = 1.0 if m == n else m / n
    L = float(loss.lipschitz(data_norm))
    beta = float(loss.smoothness(data_norm)) + alpha
    if not (L > 0.0 and math.isfinite(L) and beta > 0.0 and math.isfinite(beta)):
        raise ValueError(
            f"solver='rrpsgd' needs finite positive Lipschitz and smoothness constants, got "
            f"L={L!r}, beta={beta!r}")
    z = float(_noise_multiplier(epsilon, delta, q, T, n, calibration))
    sigma = z * L
    f0 = float(loss.sup_loss_at_zero(y_bound))
    D_F = math.sqrt(2.0 * f0 / beta) if math.isfinite(f0) else math.inf
    sigma_g = math.sqrt(4.0 * L * L / m + p * (sigma / m) ** 2)
    eta = min(1.0 / beta, D_F / (sigma_g * math.sqrt(T)))
    denom = T * (2.0 * eta - beta * eta * eta)
    bound = beta * (D_F**2 + sigma_g**2 * T * eta * eta) / denom if math.isfinite(D_F) \
        else math.inf
    return dict(T=int(T), q=q, m=m, z=z, sigma=sigma, L=L, beta=beta, eta=eta, D_F=D_F,
                sigma_g=sigma_g, utility_bound=bound, clip=_clip_bound(L, p, n),
                event=rrpsgd_event(q, z, T), calibration=calibration)


def solve_rrpsgd(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1,
                 fit_intercept=True, intercept_scaling=1.0, y_bound=None, calibration="tight",
                 max_iter=None, max_coef_norm=None, rng, batch_size=1, n_steps=None,
                 noise_source=None):
    """Random-round private SGD (module docstring).  Returns a :class:`SolverResult`.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
        Raw features; rows are clipped here.
    y : ndarray of shape (n,), float64
        Targets (clipped to ``y_bound`` by the estimator when given).
    loss : loss spec (:mod:`skdp._losses`) with ``lipschitz``, ``smoothness``,
        ``sup_loss_at_zero``; a single-output loss.
    epsilon, delta : float
        Privacy target, ``0 < delta < 1``.
    alpha : float
        L2 strength (its gradient uses the public iterate: no privacy cost).
    data_norm : float
        Public bound on ``||[x, intercept_scaling]||``, enforced by clipping.
    n_outputs : int, default=1
        Must be 1.
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    y_bound : float or None
        Public target bound (only used for the step size of unbounded losses).
    calibration : {"tight", "paper"}, default="tight"
    max_iter, max_coef_norm : ignored
        The number of rounds is ``n_steps`` (it fixes the calibration); no projection.
    rng : numpy.random.Generator
        Source of ``R``, the batches and the noise.
    batch_size : int, default=1
        Expected batch size ``m`` (1: the paper's one row per round; ``n``: full batch).
    n_steps : int or None
        Number of rounds ``T``; default ``ceil(n^2/m^2)``.
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source: every round's clipped sum is an exact grid release
        (discrete Gaussian pre-drawn in chunks, as in ``dpsgd``; the recorded event is
        unchanged); ``R`` and the batches still come from ``rng``.  None: float noise.

    Returns
    -------
    SolverResult
        ``coef`` of shape (d, 1) is ``w_R`` without the intercept coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._losses import WelschLoss
    >>> from skdp._solvers import solve_rrpsgd
    >>> from skdp.accounting import get_epsilon
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (2000, 2))
    >>> res = solve_rrpsgd(X, X @ [1.0, -1.0], WelschLoss(), epsilon=1.0, delta=1e-6,
    ...                    alpha=0.0, data_norm=2.0, batch_size=100, n_steps=200, rng=rng)
    >>> 1 <= res.n_iter <= 200, get_epsilon(res.dp_event, 1e-6) <= 1.0
    (True, True)
    """
    if int(n_outputs) != 1:
        raise ValueError("solver='rrpsgd' fits a single-output model")
    n, d = X.shape
    p = d + int(bool(fit_intercept))
    P = rrpsgd_plan(n, p, loss, epsilon=epsilon, delta=delta, alpha=alpha,
                    data_norm=data_norm, y_bound=y_bound, calibration=calibration,
                    batch_size=batch_size, n_steps=n_steps)
    # The random round, drawn from the public rng before the data is read.
    R = int(rng.integers(1, P["T"] + 1))
    with solver_threads(n, p):
        Xc = clip_and_augment(X, data_norm, fit_intercept, intercept_scaling)
        yc = np.ascontiguousarray(y, dtype=np.float64)
        xnorm = np.empty(n)
        row_norms(Xc, xnorm)
        W = np.zeros((p, 1))
        # constant step eta (step_coef = inf, capped at eta), no projection (radius 0)
        args = (Xc, yc, int(loss.loss_id), float(loss.param), P["clip"], xnorm, W)
        hyper = (P["q"], float(P["m"]), P["sigma"], float(alpha), math.inf, False, P["eta"],
                 0.0, rng)
        total, dropped = run_steps(args, R, hyper, noise_source, P["sigma"], P["L"], p,
                                   bound=n * P["L"])
    del dropped  # private: never reported
    coef, intercept = split_intercept(W, fit_intercept, intercept_scaling)
    details = {
        "lipschitz": P["L"], "smoothness": P["beta"], "calibration": calibration,
        "sampling_rate": P["q"], "batch_size": P["m"], "noise_multiplier": P["z"],
        "n_rounds": P["T"], "random_round": R, "step": P["eta"], "D_F": P["D_F"],
        "sigma_g": P["sigma_g"], "utility_bound": P["utility_bound"], "clip_bound": P["clip"],
        "full_gradient_equivalents": total / n,
    }
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(1),
        n_iter=R,
        n_gradient_evals=int(total),
        noise_scale=float(P["sigma"]),
        sensitivity=float(2.0 * P["L"]),
        dp_event=P["event"],
        data_norm=float(data_norm),
        details=details,
    )
