r"""Objective perturbation with an approximate-minimum certificate.

Chaudhuri, Monteleoni & Sarwate (JMLR 2011, Alg. 2) for pure epsilon; Kifer, Smith &
Thakurta (COLT 2012) for the Gaussian (epsilon, delta) form; Iyengar et al. (IEEE S&P 2019,
"approximate minimum perturbation", AMP) so that an inexact optimiser stays private.  Binary
logistic and Huber (``huber_threshold > 0``) losses; multinomial and the absolute loss are
refused (the first needs a rank-(K-1) analysis, the second has no density).

Mechanism (replace-one neighbours, ``n`` public)
------------------------------------------------
Rows are clipped to the public row bound ``R`` (:func:`~skdp._mechanisms.clip_and_augment`:
features to ``data_norm``, then the intercept column), so the per-row gradient is bounded by
``L = loss.lipschitz(R)`` and the per-row Hessian by ``beta = loss.smoothness(R)``.  With
``lambda = alpha_`` (mean scale), ``Lambda = n lambda`` and the objective

.. math:: F_b(w) = \frac1n\sum_i \ell(x_i^\top w; y_i) + \frac{\lambda}{2}\|w\|^2
   + \frac{\langle b, w\rangle}{n},

1. plan from public quantities only (:func:`objective_perturbation_plan`): ``lambda``, the
   noise scales, the certificate ``gamma`` and the event;
2. draw ``b`` (sum-gradient scale), then the output noise ``z``, from the Generator (with
   ``secure_noise``: ``b`` as exact lattice integers coupled with a continuous Gaussian or
   Laplace law, :func:`_coupled_objective_noise`, and ``z`` exact at the release);
3. minimise ``F_b`` until a point ``w`` is **certified**: ``||grad F_b(w)|| <= gamma`` in exact
   arithmetic (computed gradient norm plus a rigorous rounding allowance);
4. release ``w + z``.  The exact minimiser is never computed in floating point, so the
   output step is always there.

Privacy (derivation in :mod:`skdp.accounting._objective_perturbation`)
----------------------------------------------------------------------
* Jacobian term ``eps_J = log(1 + beta/Lambda)`` (matrix determinant lemma; CMS11 have twice
  this in log).
* Gaussian ``b ~ N(0, sigma^2 I)``: with ``mu = 2L/sigma`` the privacy loss is at most
  ``eps_J + max_j (m_j^2/2 + m_j |xi_j|)``, ``m_1^2 + m_2^2 <= mu^2`` (the two differing rows
  span a plane), whose profile ``delta_OP`` is evaluated on a grid of geometries;
  ``calibration="tight"`` takes the largest ``mu`` with ``delta_OP(epsilon) <= delta``.
  The fitted ``epsilon_`` is that certified epsilon.  ``dp_event_`` is a *dominating*
  record (zCDP with ``rho = mu^2/2``, ``xi = eps_J + sqrt(2/pi) mu``, composed with the
  output step) whose epsilon is 13-23 % larger (measured, logistic, n = 10^3-10^5, epsilon = 0.5-10): composition with other fits uses it.
  ``calibration="composable"`` (chosen automatically under a ``privacy_ledger``) instead
  calibrates ``mu`` so that the record itself meets ``(epsilon, delta)``.
* Pure (``delta = 0``): ``b`` norm-Laplace with density ``∝ exp(-||b||/s)``, ``s = 2L/(eps_obj
  - eps_J)``, ``eps_obj = (1 - f) epsilon``; the output step takes ``f epsilon``.
* Output step: the certified points of two neighbours lie within ``gamma/lambda`` of the
  same exact minimiser, so ``Delta_out = 2 gamma/lambda``.  Gaussian: ``mu_out = r mu`` with
  ``sigma_out = kappa sigma/(n beta + Lambda)``, hence ``gamma = lambda mu_out sigma_out/2``.
* Condition on alpha: privacy needs only ``Lambda > 0`` and ``eps_J < eps_obj``; the plan
  raises ``alpha`` to ``beta/(n expm1(eps_obj/2))`` (``eps_J <= eps_obj/2``) with a warning.

Utility constants (not part of the proof): ``r = 0.2`` (costs ~2 % of sigma),
``COEF_MARGIN_CAP = 1e4`` (the coefficient scale at which certification must be reachable),
``kappa = 0.1`` (the output noise adds <= 1 % variance even in the stiffest direction),
``f = 0.02``, ``theta_J = 1/2``.  ``gamma`` is raised (through ``kappa``) to at least 4
times the rounding allowance at a public bound on ``||w||``, so certification is reachable.

Errata of the sources (fixed here): KST12's printed sigma is calibrated for add/remove
neighbours (replace-one needs the gradient bound ``2L``); the AMP code uses the output
sensitivity ``gamma/lambda`` instead of ``2 gamma/lambda`` and, on non-convergence, redraws
the noise with a doubled ``gamma`` (a data-dependent noise scale); diffprivlib 0.6.6 uses
``c R`` instead of ``c R^2`` in the Jacobian term and releases an uncertified L-BFGS iterate
with no output noise and an unregularised intercept.
"""

import functools
import math

import numpy as np

from .._losses import HUBER, LOGISTIC
from .._mechanisms._clipped_rows import ClippedRows
from .._mechanisms import (
    gaussian_noise,
    norm_laplace_noise,
    release_gaussian,
    release_laplace,
)
from .._mechanisms._exact import (
    COUPLING_STEPS,
    coupled_gaussian_noise,
    coupled_laplace_noise,
)
from ..accounting import compose, gaussian_mu_for, get_epsilon, pure_dp_event
from ..accounting._objective_perturbation import (
    calibrate_objective_perturbation,
    calibrate_objective_perturbation_many,
    largest_safe_scale,
    objective_perturbation_event,
)
from ._objective import (
    Objective,
    UNIT_ROUNDOFF,
    gradient_rounding_allowance,
    linear_term_allowance,
    uses_vectorised,
)
from ._dask_objective import DaskDesign, DaskObjective
from ._optimizers import certified_minimize
from ._result import SolverResult, split_intercept
from ._threads import solver_threads

__all__ = ["solve_objective_perturbation", "objective_perturbation_plan",
           "minimum_alpha", "noise_balanced_alpha", "objective_noise_mu",
           "objective_perturbation_alpha", "budget_mu", "MARGIN", "OP_MARGIN"]

#: mu_out / mu (output step's share of the Gaussian budget)
OUT_RATIO = 0.2
#: sigma_out = KAPPA sigma / (n beta + Lambda)
KAPPA = 0.1
#: share of epsilon given to the output step in the pure variant
PURE_OUT_FRACTION = 0.02
#: the alpha rule keeps eps_J <= THETA_J * eps_obj
THETA_J = 0.5
#: gamma >= ALLOWANCE_FACTOR * rounding allowance at the public coefficient scale.  A
#: utility constant (certification is checked, so privacy never depends on it): at the
#: exact minimiser the computed gradient is within the allowance, so any factor > 1 keeps
#: certification reachable, and a point certifies once its computed gradient is below
#: (ALLOWANCE_FACTOR - 1) allowances.  4 (it was 16) halves the output noise twice where
#: this floor binds (n >~ 10^6): 20 features, n = 10^7, eps = 1: test accuracy 0.853 ->
#: 0.855 (scikit-learn 0.855), same iterations; p = 2101 (L-BFGS without Newton): certified
#: in 34 evaluations instead of 23 (the smaller alpha the rule then picks)
ALLOWANCE_FACTOR = 4.0
#: public coefficient scale of that allowance: ||w|| R <= COEF_MARGIN_CAP (margins up to
#: 1e4), unless the always-valid bound (L + ||b||/n)/lambda is smaller
COEF_MARGIN_CAP = 1e4
LBFGS_MAX_ITER = 10_000
#: margin scale ``M_0`` of the comparator ``W`` in :func:`noise_balanced_alpha`, per loss
#: family (logits for the classifiers, target units for the regressors), and the exponent
#: ``gamma`` and reference ``t_0`` of its size factor; calibrated together on synthetic data
#: (``benchmarks/calibrate_auto.py``, derivation in ``skdp.linear_model._auto``)
MARGIN = {"classification": 54.0, "regression": 29.0}
SIZE_EXPONENT = 1.0 / 3.0
SIZE_REF = 1000.0
#: the comparator stops growing at this privacy sample size ``t``: the largest ``t`` of the
#: calibration cells (16,717: n = 3e4, p = 10, epsilon = 10), rounded up.  A power law fitted
#: on t in [6, 1.7e4] is not extrapolated: at 10^8 rows (t ~ 5e6) it would ask for margins
#: of ~1,500 and push alpha down until the certificate's rounding floor sets the output
#: noise (synthetic logistic, 10^8 x 20, eps = 1: 0.12 per coefficient instead of 0.03)
SIZE_MAX = 2.0e4


def comparator_norm(margin, row_bound, t, size_exponent=None):
    """``W = (margin/R) (min(t, SIZE_MAX)/SIZE_REF)^gamma``: the norm of the comparator
    model the ``alpha`` rules weigh the regulariser's bias with (derived in
    :mod:`skdp.linear_model._auto`), ``t = n mu/sqrt(p)`` the privacy sample size."""
    gamma = SIZE_EXPONENT if size_exponent is None else float(size_exponent)
    return (float(margin) / float(row_bound)) * (min(float(t), SIZE_MAX) / SIZE_REF) ** gamma


#: objective perturbation's comparator margins ``M_0`` in its floor-aware rule
#: (:func:`objective_perturbation_alpha`), calibrated on synthetic data with
#: ``SIZE_EXPONENT = 1/3`` (``benchmarks/calibrate_auto.py``, its floor-aware section)
OP_MARGIN = {"classification": 83.0, "regression": 49.0}
#: points of the log grid on which the floor-aware rule minimises its risk proxy
OP_GRID_POINTS = 40
#: the regressors' small-sample knee of the comparator: below the privacy sample size
#: ``SMALL_SIZE_KNEE`` the comparator shrinks as ``(t/SMALL_SIZE_KNEE)^SMALL_SIZE_EXPONENT``
#: (``objective_perturbation_alpha``; derivation and measurements in
#: :mod:`skdp.linear_model._auto`)
SMALL_SIZE_KNEE = 70.0
SMALL_SIZE_EXPONENT = 1.5


def budget_mu(epsilon, delta, p):
    """GDP parameter of an ``(epsilon, delta)`` budget: the largest ``mu`` with ``mu``-GDP
    ``=> (epsilon, delta)``-DP; for ``delta = 0`` the per-coordinate equivalent of
    norm-Laplace noise on ``p`` coordinates, ``epsilon/sqrt(p + 1)``.  Sets the privacy
    sample size ``t = n mu/sqrt(p)`` of the ``alpha`` rules."""
    if delta == 0.0:
        return float(epsilon) / math.sqrt(p + 1.0)
    return gaussian_mu_for(float(epsilon), float(delta))


def noise_balanced_alpha(L, p, n, mu, row_bound, margin, size_exponent=None):
    """The ``alpha="auto"`` rule of the gradient-noise solvers (derived in
    ``skdp.linear_model._auto``)::

        alpha = sigma sqrt(p) / (n W),   sigma = 2 L / mu,
        W = (margin / row_bound) * (min(t, SIZE_MAX) / SIZE_REF)**gamma,   t = n mu / sqrt(p),

    the L2 strength that balances the regulariser's bias ``alpha W^2/2`` against the excess
    risk ``p sigma^2/(2 n^2 alpha)`` of gradient noise ``sigma/n`` in flat directions, with
    the comparator ``W`` growing as ``t^gamma`` (``gamma = size_exponent``, default
    ``SIZE_EXPONENT``; ``0`` gives the flat-spectrum rule) because a decaying curvature
    spectrum damps the noise in all but a shrinking set of directions."""
    t = n * mu / math.sqrt(p)
    W = comparator_norm(margin, row_bound, t, size_exponent)
    return (2.0 * L / mu) * math.sqrt(p) / (n * W)


def minimum_alpha(loss, row_bound, n, epsilon, delta):
    """The smallest ``alpha`` the plan accepts: ``beta/(n expm1(THETA_J eps_obj))``, which
    keeps the Jacobian term ``eps_J = log(1 + beta/(n alpha))`` at most ``THETA_J eps_obj``."""
    eps_obj = (1.0 - PURE_OUT_FRACTION) * epsilon if delta == 0.0 else epsilon
    beta = float(loss.smoothness(row_bound))
    return beta / (n * math.expm1(min(THETA_J * eps_obj, 700.0)))


#: relative precision of :func:`objective_noise_mu` (a utility estimate, not a calibration)
NOISE_MU_RTOL = 1e-3


def objective_noise_mu(epsilon, delta, eps_j, p):
    """The GDP parameter ``mu = 2L/sigma`` the objective noise ``b`` gets once the Jacobian
    term ``eps_J`` is paid -- what the ``alpha`` rule needs to see how the noise grows as
    ``alpha`` falls (``eps_J = log(1 + beta/(n alpha))``).

    Gaussian (``delta > 0``): the ``calibration="tight"`` profile at ``eps_J`` with the
    output step's share ``OUT_RATIO`` (:func:`calibrate_objective_perturbation`, to relative
    precision ``NOISE_MU_RTOL``).  Pure: the per-coordinate equivalent of norm-Laplace noise
    of scale ``s = 2L/(eps_obj - eps_J)`` (variance ``(p + 1) s^2`` per coordinate), i.e.
    ``(eps_obj - eps_J)/sqrt(p + 1)``.  Used to *choose* ``alpha`` only; the fit calibrates
    its noise itself."""
    if delta == 0.0:
        eps_obj = (1.0 - PURE_OUT_FRACTION) * epsilon
        return max(eps_obj - eps_j, 0.0) / math.sqrt(p + 1.0)
    return calibrate_objective_perturbation(epsilon, delta, eps_j, OUT_RATIO,
                                            rtol=NOISE_MU_RTOL)


def objective_noise_mus(epsilon, delta, eps_js, p):
    """:func:`objective_noise_mu` at each Jacobian term of ``eps_js`` (a list), the same
    floats, the Gaussian ones from one batched calibration
    (:func:`~skdp.accounting._objective_perturbation.calibrate_objective_perturbation_many`)."""
    if delta == 0.0:
        return [objective_noise_mu(epsilon, delta, term, p) for term in eps_js]
    return [float(mu) for mu in calibrate_objective_perturbation_many(
        epsilon, delta, np.asarray(eps_js, dtype=float), OUT_RATIO, rtol=NOISE_MU_RTOL)]


def objective_perturbation_alpha(loss, *, n, p, epsilon, delta, row_bound, margin):
    """Objective perturbation's ``alpha="auto"``: the noise-balanced rule with the noise
    that objective perturbation actually adds at each ``alpha`` (module docstring).

    Minimises, over ``alpha`` at or above the privacy floor (:func:`minimum_alpha`),

        ``p sigma(alpha)^2/(2 n^2 alpha) + sigma_out(alpha)^2 (beta + p alpha)/2
        + alpha W^2/2``,

    with ``sigma(alpha) = 2L/mu(alpha)``, ``mu(alpha)`` the budget left to the objective
    noise after the Jacobian term ``eps_J = log(1 + beta/(n alpha))``
    (:func:`objective_noise_mu`); ``sigma_out(alpha)`` the output step's noise per
    coordinate (:func:`output_step`, whose certificate floor makes it grow as ``1/alpha``
    when ``alpha`` is tiny: at ``n`` in the millions it is what stops ``alpha`` from
    falling further), weighed by the trace bound ``beta + p alpha`` of the Hessian; and
    ``W = (margin/R) (min(t, SIZE_MAX)/t_0)^gamma``, ``t = n budget_mu/sqrt(p)``, as in
    :func:`noise_balanced_alpha` (``margin``: ``OP_MARGIN`` of the loss family).  The
    search runs on a log grid from the closed-form minimiser of the first and last terms
    at ``mu(0)`` (exact: every term but the last only decreases with ``alpha``, and
    ``mu(alpha) <= mu(0)``) to four times the largest of the closed forms at the floor's
    ``mu`` and of the last two terms.  Public quantities only."""
    R = float(row_bound)
    floor = minimum_alpha(loss, R, n, epsilon, delta)
    g_max = max(1.0, float(loss.lipschitz(1.0)))
    knee = SMALL_SIZE_KNEE if loss.loss_id == HUBER else 0.0
    return _objective_perturbation_alpha(
        float(loss.lipschitz(R)), float(loss.smoothness(R)), floor, float(margin),
        int(n), int(p), float(epsilon), float(delta), R, g_max,
        float(loss.sup_loss_at_zero()), knee, uses_vectorised(n, p, 1, loss.loss_id))


def small_size_factor(t, knee):
    """``min(1, t/knee)^SMALL_SIZE_EXPONENT`` (1 for ``knee = 0``): the regressors'
    comparator shrinks below the privacy sample size ``knee`` (:mod:`skdp.linear_model._auto`)."""
    if not knee > 0.0 or t >= knee:
        return 1.0
    return (float(t) / knee) ** SMALL_SIZE_EXPONENT


@functools.lru_cache(maxsize=256)
def _objective_perturbation_alpha(L, beta, floor, margin, n, p, epsilon, delta, R, g_max,
                                  f0, knee, numpy_path):
    t = n * budget_mu(epsilon, delta, p) / math.sqrt(p)
    W = comparator_norm(margin, R, t) * small_size_factor(t, knee)
    pure = delta == 0.0

    def closed_form(mu):          # argmin at a fixed mu: sigma sqrt(p)/(n W)
        return (2.0 * L / mu) * math.sqrt(p) / (n * W)

    def eps_j(alpha):
        return math.log1p(beta / (n * alpha))

    def noise(alpha, mu):
        """(objective noise std, output noise std per coordinate) at ``alpha``, whose
        objective noise has the GDP parameter ``mu`` (:func:`objective_noise_mu`)."""
        if not mu > 0.0:
            return math.inf, math.inf
        if pure:
            s = 2.0 * L / (mu * math.sqrt(p + 1.0))      # the norm-Laplace scale
            share, b_bound = PURE_OUT_FRACTION * epsilon, s * (p + 10.0 * math.sqrt(p) + 50)
        else:
            s = 2.0 * L / mu
            share, b_bound = OUT_RATIO * mu, s * (math.sqrt(p) + 10.0)
        sigma_out = output_step(n, p, L, beta, alpha, s, share, b_bound, R, g_max, f0,
                                numpy_path=numpy_path)[2]
        per_coordinate = sigma_out * math.sqrt(p + 1.0) if pure else sigma_out
        return 2.0 * L / mu, per_coordinate

    def risk(alpha, mu):
        sigma, sigma_out = noise(alpha, mu)
        return (p * sigma * sigma / (2.0 * n * n * alpha)
                + sigma_out * sigma_out * (beta + p * alpha) / 2.0 + alpha * W * W / 2.0)

    # every noise level below from batched calibrations (the same numbers as one
    # objective_noise_mu each): this rule runs at every share a budget split tries
    mu_free, mu_floor = objective_noise_mus(epsilon, delta, [0.0, eps_j(floor)], p)
    lo = max(floor, closed_form(mu_free))
    mu_lo = mu_floor if lo == floor else objective_noise_mus(
        epsilon, delta, [eps_j(lo)], p)[0]
    # the output term alone: sigma_out ~ c/alpha gives argmin (2 c^2 beta/W^2)^(1/3)
    c_out = noise(lo, mu_lo)[1] * lo
    out_form = (2.0 * c_out * c_out * beta / (W * W)) ** (1.0 / 3.0)
    hi = 4.0 * max(floor, out_form, closed_form(mu_floor))
    if not hi > lo:
        return lo
    grid = [lo * (hi / lo) ** (k / (OP_GRID_POINTS - 1)) for k in range(OP_GRID_POINTS)]
    mus = [mu_lo] + objective_noise_mus(epsilon, delta, [eps_j(a) for a in grid[1:]], p)
    return min(zip(grid, mus), key=lambda point: risk(*point))[0]


def _check_loss(loss, n_outputs):
    if n_outputs != 1 or loss.loss_id not in (LOGISTIC, HUBER):
        raise ValueError(
            "solver='objective_perturbation' supports binary logistic and Huber "
            "(huber_threshold > 0) only: multinomial needs a rank-(K-1) analysis and the "
            "absolute loss has no density; use solver='output_perturbation', 'phased' or "
            "'dpsgd'")


def objective_perturbation_plan(n, p, loss, *, epsilon, delta, alpha, row_bound,
                                calibration="tight", n_outputs=1, mu=None,
                                follow_up_ratio=0.0):
    """Everything public about a fit: reads ``n``, ``p``, the loss and the parameters only.

    Parameters
    ----------
    n, p : int
        Rows and coefficients (intercept included).
    loss : loss spec (binary logistic or Huber)
    epsilon, delta : float
        Target; ``delta = 0`` selects the pure variant.
    alpha : float
        Requested L2 strength (raised to :func:`minimum_alpha` when below it).
    row_bound : float
        Public bound ``R`` on the augmented row.
    calibration : {"tight", "composable"}
        ``"tight"``: sigma from the privacy profile; ``"composable"``: sigma such that the
        composable record (``dp_event``) meets the target itself.
    n_outputs : int
        Must be 1.
    mu : float or None
        ``2L/sigma`` fixed by a caller that accounts the release inside a larger
        composition (:mod:`skdp._solvers._warm_gd`); ``epsilon`` then only sets the
        alpha floor and the returned ``epsilon`` is None.
    follow_up_ratio : float, default=0.0
        ``mu_f/mu``: a Gaussian follow-up release of GDP parameter ``mu_f`` (the base-rate
        check of :mod:`skdp.linear_model._base_rate`) accounted inside this release's
        profile (:mod:`skdp.accounting._objective_perturbation`, point 7): the calibration
        takes ``out_ratio = hypot(OUT_RATIO, follow_up_ratio)``, the event records it, and
        ``mu_follow_up`` (returned) is what the follow-up may spend.  Gaussian only.

    Returns
    -------
    dict
        ``alpha``, ``alpha_raised``, ``eps_j``, ``L``, ``beta``, ``pure``, ``sigma`` (objective
        noise std, or norm-Laplace scale), ``sigma_out`` (same for the output step),
        ``gamma``, ``output_sensitivity``, ``epsilon`` (certified), ``dp_event``,
        ``mu_follow_up``.

    Examples
    --------
    >>> from skdp._losses import LogisticLoss
    >>> plan = objective_perturbation_plan(10_000, 5, LogisticLoss(), epsilon=1.0,
    ...                                    delta=1e-6, alpha=1e-3, row_bound=1.0)
    >>> round(plan["sigma"], 2), round(plan["eps_j"], 4)
    (9.11, 0.0247)
    """
    _check_loss(loss, n_outputs)
    if calibration not in ("tight", "composable"):
        raise ValueError(
            "solver='objective_perturbation' supports calibration='tight' (and "
            f"'composable', used under a privacy ledger), got {calibration!r}")
    n, p = int(n), int(p)
    if n < 2:
        raise ValueError(f"solver='objective_perturbation' needs at least 2 samples, got {n}")
    epsilon, delta, alpha, R = float(epsilon), float(delta), float(alpha), float(row_bound)
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    pure = delta == 0.0
    given_mu = mu is not None
    if given_mu and pure:
        raise ValueError("a given mu needs delta > 0 (Gaussian objective noise)")
    follow_up_ratio = float(follow_up_ratio)
    if follow_up_ratio and (pure or given_mu or not follow_up_ratio > 0.0):
        raise ValueError("a follow-up release needs delta > 0, a calibrated mu and a "
                         f"positive ratio; got follow_up_ratio={follow_up_ratio!r}")
    out_ratio = math.hypot(OUT_RATIO, follow_up_ratio)
    L = float(loss.lipschitz(R))
    beta = float(loss.smoothness(R))
    if not (L > 0.0 and math.isfinite(L) and beta > 0.0 and math.isfinite(beta)):
        raise ValueError("solver='objective_perturbation' needs a smooth loss with finite "
                         "positive constants (huber_threshold > 0)")
    eps_obj = (1.0 - PURE_OUT_FRACTION) * epsilon if pure else epsilon
    alpha_min = minimum_alpha(loss, R, n, epsilon, delta)
    lam = max(alpha, alpha_min)
    Lam = n * lam
    eps_j = math.log1p(beta / Lam)
    if pure:
        s = 2.0 * L / (eps_obj - eps_j)
        b_bound = s * (p + 10.0 * math.sqrt(p) + 50.0)
        eps_out = PURE_OUT_FRACTION * epsilon
    else:
        if mu is not None:
            mu = float(mu)
        elif calibration == "tight":
            mu = calibrate_objective_perturbation(epsilon, delta, eps_j, out_ratio)
        else:
            mu = _calibrate_record(epsilon, delta, eps_j, follow_up_ratio)
        s = float(np.nextafter(2.0 * L / mu, np.inf))
        mu = 2.0 * L / s
        b_bound = s * (math.sqrt(p) + 10.0)
    share = PURE_OUT_FRACTION * epsilon if pure else OUT_RATIO * mu
    g_max = max(1.0, float(loss.lipschitz(1.0)))
    gamma, kappa, sigma_out = output_step(n, p, L, beta, lam, s, share, b_bound, R, g_max,
                                          float(loss.sup_loss_at_zero()),
                                          numpy_path=uses_vectorised(n, p, 1, loss.loss_id))
    out_sens = 2.0 * gamma / lam
    if pure:
        dp_event = compose([pure_dp_event(eps_obj), pure_dp_event(eps_out)])
        eps_certified = epsilon
    else:
        mu_out = out_sens / sigma_out
        # mu was rounded down with sigma: the follow-up's share of the final mu is within
        # the calibrated one
        mu_follow_up = follow_up_ratio * mu
        dp_event = objective_perturbation_event(mu, eps_j, mu_out, mu_follow_up)
        if given_mu:
            eps_certified = None
        elif calibration == "tight":
            eps_certified = epsilon
        else:
            eps_certified = min(epsilon, get_epsilon(dp_event, delta))
    return {
        "alpha": lam, "alpha_raised": lam > alpha, "alpha_min": alpha_min, "eps_j": eps_j,
        "L": L, "beta": beta, "pure": pure, "sigma": s, "sigma_out": sigma_out,
        "gamma": gamma, "output_sensitivity": out_sens, "kappa": kappa,
        "coef_bound": (L + b_bound / n) / lam,
        "epsilon": eps_certified, "dp_event": dp_event, "calibration": calibration,
        "mu_follow_up": 0.0 if pure else mu_follow_up,
    }


def output_step(n, p, L, beta, lam, s, share, b_bound, R, g_max, f0=math.inf, *,
                numpy_path):
    r"""``(gamma, kappa, sigma_out)`` of the AMP output step, from public quantities.

    ``gamma = lam share sigma_out/2`` with ``sigma_out = kappa s/(n beta + n lam)``
    (``share``: the output step's ``mu_out``, or its epsilon in the pure variant), and
    ``kappa = KAPPA`` unless the certificate floor binds: ``gamma >= ALLOWANCE_FACTOR`` times
    the rounding allowance at a public scale ``w_ref`` of ``||w||`` (exceeding it only slows
    certification; ``gamma`` never depends on the drawn ``b``).  Where the floor binds,
    ``sigma_out = 2 ALLOWANCE_FACTOR allowance/(lam share)`` grows as ``1/lam``: the
    ``alpha`` rule weighs it (:func:`objective_perturbation_alpha`).

    ``w_ref`` is the smallest of three scales.  Two are bounds on the perturbed minimiser
    ``W*``, valid for every dataset whenever ``||b|| <= b_bound`` (a larger draw only slows
    certification):

    * ``(L + ||b||/n)/lam``: the gradient at ``W*`` vanishes;
    * with ``f0 = sup_y l(0, y)`` finite (``log 2`` for logistic):
      ``(beta_b + sqrt(beta_b^2 + 2 lam f0))/lam`` with ``beta_b = ||b||/n``.  The loss is
      non-negative, so ``lam ||W*||^2/2 - beta_b ||W*|| <= F_b(W*) <= F_b(0) <= f0``.  At
      large ``n`` this is ~``sqrt(2 f0/lam)``, far below the first.

    The third is the cap ``COEF_MARGIN_CAP/R`` on the margins ``||w|| R`` (a utility
    choice: without it the first bound, ~1e7 at small ``alpha``, inflates the output noise
    for nothing)."""
    stiff = n * beta + n * lam
    beta_b = b_bound / n
    w_ref = min((L + beta_b) / lam, COEF_MARGIN_CAP / R)
    if math.isfinite(f0):
        w_ref = min(w_ref, (beta_b + math.sqrt(beta_b * beta_b + 2.0 * lam * f0)) / lam)
    # binary logistic / Huber: the in-memory objective's path (``numpy_path``, the public
    # rule uses_vectorised) sets the allowance's depths
    allowance = (gradient_rounding_allowance(n, p, 1, R, g_max, lam, w_ref,
                                             vectorised=numpy_path, scaled=numpy_path,
                                             curvature=beta / (R * R))
                 + 2.0 * UNIT_ROUNDOFF * (L + lam * w_ref + 2.0 * b_bound / n))
    kappa = KAPPA
    gamma = lam * share * kappa * s / (2.0 * stiff)
    if gamma < ALLOWANCE_FACTOR * allowance:
        kappa *= ALLOWANCE_FACTOR * allowance / gamma
        gamma = lam * share * kappa * s / (2.0 * stiff)
    return gamma, kappa, kappa * s / stiff


def _calibrate_record(epsilon, delta, eps_j, follow_up_ratio=0.0):
    """Largest ``mu`` whose composable record meets ``(epsilon, delta)`` (bisection on
    ``log mu``, safe end kept)."""
    def ok(mu):
        ev = objective_perturbation_event(mu, eps_j, OUT_RATIO * mu, follow_up_ratio * mu)
        return get_epsilon(ev, delta) <= epsilon

    return largest_safe_scale(ok, 1e-6, 1.0, 1e3, 1e-6)


class PerturbedObjective(Objective):
    """``F_b(W) = F(W) + <b, W>/n`` (``b`` of the shape of ``W``, drawn before).

    The rounding allowance adds ``2u (L + alpha ||W|| + 2 ||b||/n)``, which bounds the error
    of forming ``b/n`` and adding it (``||grad F_b|| <= L + alpha ||W|| + ||b||/n``).
    """

    def __init__(self, X, y, loss, alpha, n_outputs, data_norm, b_over_n):
        super().__init__(X, y, loss, alpha, n_outputs, data_norm)
        self.b_over_n = np.ascontiguousarray(b_over_n, dtype=np.float64).reshape(self.shape)
        self._b_norm = float(np.linalg.norm(self.b_over_n))

    def value_grad(self, W):
        value, grad = super().value_grad(W)
        return value + float(np.sum(self.b_over_n * W)), grad + self.b_over_n

    def rounding_allowance(self, W):
        L = float(self.loss.lipschitz(self.row_bound))
        return super().rounding_allowance(W) + linear_term_allowance(
            L, self.alpha, float(np.linalg.norm(W)), self._b_norm)

    def subsample(self, step):
        return PerturbedObjective(self.design.take(slice(None, None, step)),
                                  np.ascontiguousarray(self.y[::step]), self.loss, self.alpha,
                                  self.n_outputs, self.row_bound, self.b_over_n)


def solve_objective_perturbation(X, y, loss, **kwargs):
    """Private minimiser of the regularised risk by objective perturbation (AMP form).

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
        Raw features; rows are clipped here.
    y : ndarray of shape (n,), float64
        ±1 for logistic, real targets for Huber (clipped to ``y_bound`` by the caller).
    loss : LogisticLoss or HuberLoss
    epsilon, delta : float
        Privacy target; ``delta = 0``: pure epsilon-DP.
    alpha : float
        Requested L2 strength (raised to :func:`minimum_alpha` if below; reported).
    data_norm : float
        Public bound on the augmented row ``||[x, intercept_scaling]||``.
    n_outputs : int, default=1
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    y_bound : float or None
        Unused by the proof (Huber's gradient is bounded whatever the target).
    calibration : {"tight", "composable"}, default="tight"
    max_iter : int, default=10000
        L-BFGS iteration cap; gradient descent continues from its last point until the
        certificate holds (never a redraw of the noise).
    max_coef_norm : ignored
    follow_up_ratio : float, default=0.0
        Budget for a Gaussian follow-up release, ``mu_f/mu`` (:func:`objective_perturbation_plan`);
        ``details["mu_follow_up"]`` is its GDP parameter.
    rng : numpy.random.Generator
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source (:func:`skdp._mechanisms.new_word_source`): the output step is
        floating-point safe (exact discrete noise on a power-of-two grid,
        :mod:`skdp._mechanisms._exact`); None: float noise from ``rng``.
        With a source the linear term ``b`` is an exact lattice draw coupled with the
        continuous law of the proof (:func:`_coupled_objective_noise`: the output
        sensitivity gains the coupling distance, the recorded event is unchanged; the pure
        variant's ``b`` is per-coordinate Laplace, up to 1.41x the norm-Laplace std).

    Returns
    -------
    SolverResult
        With ``epsilon``, ``delta`` the certified guarantee and ``details["alpha"]``.
    """
    with solver_threads(X.shape[0], X.shape[1] + 1):
        return _solve(X, y, loss, **kwargs)


def _solve(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1, fit_intercept=True,
           intercept_scaling=1.0, y_bound=None, calibration="tight", max_iter=10_000,
           max_coef_norm=None, rng, noise_source=None, follow_up_ratio=0.0):
    n = X.shape[0]
    p = X.shape[1] + int(bool(fit_intercept))
    plan = objective_perturbation_plan(n, p, loss, epsilon=epsilon, delta=delta, alpha=alpha,
                                       row_bound=data_norm, calibration=calibration,
                                       n_outputs=n_outputs, follow_up_ratio=follow_up_ratio)
    W_priv, info, n_grads = run_objective_perturbation(
        X, y, loss, plan, row_bound=data_norm, fit_intercept=fit_intercept,
        intercept_scaling=intercept_scaling, max_iter=max_iter, rng=rng,
        noise_source=noise_source)
    coef, intercept = split_intercept(W_priv, fit_intercept, intercept_scaling)
    details = {k: plan[k] for k in ("alpha", "alpha_raised", "alpha_min", "eps_j", "gamma",
                                    "sigma_out", "output_sensitivity", "kappa", "pure",
                                    "calibration", "mu_follow_up")}
    details.update(info, lipschitz=plan["L"], smoothness=plan["beta"])
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(1),
        n_iter=int(info["n_iter"]),
        n_gradient_evals=int(n_grads),
        noise_scale=float(plan["sigma"]),
        sensitivity=float(2.0 * plan["L"]),
        dp_event=plan["dp_event"],
        data_norm=float(data_norm),
        details=details,
        epsilon=float(plan["epsilon"]),
        delta=0.0 if plan["pure"] else float(delta),
    )


def run_objective_perturbation(X, y, loss, plan, *, row_bound, fit_intercept,
                               intercept_scaling, max_iter, rng, noise_source=None):
    """Draw the noise, certify, release: ``(W_priv (p, 1), optimiser info, gradients)``.

    Reads the data only through the certified minimisation; everything that shapes the
    noise comes from ``plan`` (public)."""
    n = X.shape[0]
    p = X.shape[1] + int(bool(fit_intercept))
    lam = plan["alpha"]
    # 2. Noise first, in a fixed order: b (objective), then z (output).  With a
    # noise_source the output step is an exact grid release (drawn at step 4).
    out_sens, sigma_out = plan["output_sensitivity"], plan["sigma_out"]
    if noise_source is not None:
        b, out_sens, sigma_out = _coupled_objective_noise(noise_source, plan, n, p)
        z = None
    elif plan["pure"]:
        b = norm_laplace_noise(rng, (p, 1), plan["sigma"])
        z = norm_laplace_noise(rng, (p, 1), plan["sigma_out"])
    else:
        b = gaussian_noise(rng, (p, 1), plan["sigma"])
        z = gaussian_noise(rng, (p, 1), plan["sigma_out"])
    # 3. Certified minimisation on clipped rows (on the workers for a Dask design).
    if isinstance(X, DaskDesign):
        objective = DaskObjective(X, loss, lam, row_bound, fit_intercept, intercept_scaling,
                                  b / n)
    else:
        Xc = ClippedRows(X, row_bound, fit_intercept, intercept_scaling)   # no copy of X
        objective = PerturbedObjective(Xc, np.ascontiguousarray(y, dtype=np.float64), loss,
                                       lam, 1, row_bound, b / n)
    gamma = plan["gamma"]
    coef_bound = (plan["L"] + float(np.linalg.norm(b)) / n) / lam
    W, info = certified_minimize(objective, lam, gamma / lam, plan["beta"], coef_bound,
                                 min(int(max_iter), LBFGS_MAX_ITER))
    # 4. Release exactly the certified point plus the output noise (AMP output step,
    #    L2 sensitivity output_sensitivity; pure: norm-Laplace scale sigma_out).
    if noise_source is None:
        return W + z, info, objective.n_example_gradients
    # grid bound: ||W|| <= (L + ||b||/n)/lambda, with the public high-probability bound
    # b_bound on ||b|| (beyond it the release clamps: 1-Lipschitz, no sensitivity added)
    bound = plan["coef_bound"]
    if plan["pure"]:
        # the plan's epsilon_out, on the sensitivity with the coupling distance
        eps_out = plan["output_sensitivity"] / plan["sigma_out"]
        W_priv, _ = release_laplace(W, out_sens, eps_out, rng, noise_source, bound)
    else:
        W_priv, _ = release_gaussian(W, sigma_out, out_sens, rng, noise_source, bound)
    return W_priv, info, objective.n_example_gradients


def _coupled_objective_noise(source, plan, n, p):
    """``(b, output_sensitivity, sigma_out)`` of the floating-point-safe variants.

    **Pure** (``delta = 0``): ``b`` is per-coordinate Laplace instead of norm-Laplace,
    coupled with no exception (:func:`skdp._mechanisms._exact.coupled_laplace_noise`).  Its
    density ratio is ``exp(||u||_1/s_1)`` for the gradient difference ``u = a x + c x'``
    (``|a|, |c| <= G``), and ``||u||_1 <= G (||x||_1 + ||x'||_1) <= 2 G R sqrt(p) = sqrt(p)
    2L``: the scale ``s_1 = sqrt(p) s`` keeps ``eps_obj`` (``s`` the norm-Laplace scale of the
    plan).  Its standard deviation is ``sqrt(2p/(p+1))`` times the norm-Laplace one (at most
    1.41x, as for the exact pure output noise).  The output step's sensitivity gains the
    coupling distance as below and its epsilon stays the plan's.

    **Gaussian:**

    ``b = gamma_b Z`` with ``Z`` exact discrete Gaussian integers of ``s_b`` grid steps,
    ``s_b gamma_b >= sigma`` (:func:`skdp._mechanisms._exact.coupled_gaussian_noise`): ``b``
    is exact in float64 and, by the coupling lemma there, a fixed function of a continuous
    ``b_c ~ N(0, (s_b gamma_b)^2 I)`` with ``||b - b_c|| <= e = COUPLING_STEPS gamma_b
    sqrt(p)`` (except with probability ``tau < 2 p exp(-2^58/9)``).  The analysis of the
    module docstring runs on ``b_c``, whose noise is at least the planned ``sigma``.  The
    objective is ``lambda``-strongly convex and ``b`` enters its gradient as ``b/n``, so the
    exact minimisers for ``b`` and ``b_c`` lie within ``e/(n lambda)``, and the certified point
    within ``gamma/lambda + e/(n lambda)`` of the exact minimiser for ``b_c``: the output
    step's sensitivity grows by ``2 e/(n lambda)``.  Its noise grows in proportion, so the
    recorded ``mu_out = Delta_out/sigma_out`` (hence the event) is the plan's.  The growth is
    ``~1e-9 sqrt(p) (beta + lambda)/(lambda mu_out kappa)`` relative: 4.7e-3 sqrt(p) at
    ``lambda = 1e-8``, ``beta = 1/4``, negligible at the default alpha.
    """
    if plan["pure"]:
        b, grid, _ = coupled_laplace_noise(source, math.sqrt(p) * plan["sigma"], p)
    else:
        b, grid, _ = coupled_gaussian_noise(source, plan["sigma"], p)
    lam = plan["alpha"]
    coupling = 2.0 * COUPLING_STEPS * grid * math.sqrt(p) / (n * lam) * (1.0 + 2.0 ** -40)
    out_sens = plan["output_sensitivity"] + coupling
    ratio = out_sens / plan["output_sensitivity"]
    sigma_out = float(np.nextafter(plan["sigma_out"] * ratio, np.inf))
    return b.reshape(p, 1), out_sens, sigma_out
