r"""Privacy profile of objective perturbation under replace-one neighbours.

The mechanism (:mod:`skdp._solvers._objective_perturbation`) releases an approximate
minimiser of

.. math:: J_b(w) = \sum_i \ell(x_i^\top w; y_i) + \frac{\Lambda}{2}\|w\|^2 + \langle b, w\rangle,
   \qquad b \sim N(0, \sigma^2 I_p),

plus a Gaussian output noise.  Rows obey ``||x_i|| <= R``, the loss derivative
``|l'| <= G`` and ``0 <= l'' <= c``, so the per-row gradient is bounded by ``L = G R`` and
the per-row Hessian by ``beta = c R^2``.  This module bounds its privacy loss; the proof
is summarised here so that the code can be checked against it.

1. **Change of variables** (Chaudhuri, Monteleoni & Sarwate 2011, proof of Thm 9).
   ``b -> t = argmin J_b`` is a bijection with inverse ``b_D(w) = -sum grad l_i(w) -
   Lambda w``, so the density of the exact minimiser is ``nu(b_D(w)) det H_D(w)`` with
   ``H_D = sum l_i'' x_i x_i^T + Lambda I``.  (Huber is only C^{1,1}: ``b_D`` is then
   bi-Lipschitz and the area formula gives the same density with the a.e. Hessian; the
   absolute loss has no density and is refused.)

2. **Jacobian term.**  For ``D = D0 + {z}``, ``D' = D0 + {z'}`` the shared part
   ``A = sum_{D0} l'' x x^T + Lambda I`` is ``>= Lambda I``; by the matrix determinant lemma
   ``det(A + c_z x x^T) = det A (1 + c_z x^T A^{-1} x)`` lies in ``[det A, det A (1 +
   beta/Lambda)]``, so ``|log det H_D - log det H_D'| <= eps_J = log(1 + beta/Lambda)``.
   (CMS11 bound the rank-2 difference directly and get twice this in log.)

3. **Gradient term.**  ``u(w) = b_D'(w) - b_D(w) = l'(x.w) x - l'(x'.w) x'`` lies in
   ``span{x, x'}`` and ``||u|| <= 2L`` -- but it depends on ``w``, hence on ``b``, so this is
   *not* a plain Gaussian mechanism.  The log-ratio ``(2<b,u> + ||u||^2)/(2 sigma^2)`` is
   convex in ``(l'(x.w), l'(x'.w)) in [-G, G]^2``, hence at most its value at a corner
   ``u in {+-(P+Q), +-(P-Q)}`` (``P = G x``, ``Q = G x'``).  With ``mu = 2L/sigma``:

   .. math:: Z \le \varepsilon_J + \max_{j=1,2}\Big(\frac{m_j^2}{2} + m_j|\xi_j|\Big),
      \quad \xi_j \sim N(0,1),\quad m_1^2 + m_2^2 \le \mu^2.

4. **Profile.**  ``phi(z) = (1 - e^{eps - z})_+`` is increasing, so ``delta(eps) = E phi(Z)
   <= sum_j E phi(eps_J + m_j^2/2 + m_j |xi_j|)``; for a folded normal ``E f(|xi|) <= 2 E
   f(xi)``, and ``E f(xi)`` is a Gaussian profile.  Including the output step of GDP
   parameter ``mu_out`` (point 5):

   ``T(m) = 2 delta_G(eps - eps_J; sqrt(m^2 + mu_out^2))`` (``m > 0``),
   ``delta_OP(eps) = max_{0<=k<K} T(mu cos theta_k) + T(mu sin theta_{k+1})``,
   ``theta_k = k pi/(4K)``, ``K = 256``,

   with ``delta_G`` the Gaussian profile of Balle & Wang (2018, Thm 8).  ``T`` is
   increasing, so the grid maximum bounds the supremum over every geometry of the two
   rows (the expression is symmetric under ``theta <-> pi/2 - theta``).

5. **Inexact minimiser** (approximate minimum perturbation, Iyengar et al. 2019).  The
   optimiser returns ``w`` with ``||grad F_b(w)|| <= gamma`` (mean scale, ``F_b = J_b/n``,
   ``lambda = Lambda/n``), so ``||w - t|| <= gamma/lambda``.  For a neighbour the
   *same* ``t`` is the exact minimiser with the noise ``b' = b_D'(t)``, and both certified
   points lie within ``gamma/lambda`` of it: the output step has sensitivity
   ``Delta_out = 2 gamma/lambda`` (the AMP code uses ``gamma/lambda``: an erratum).  With
   ``z ~ N(0, sigma_out^2 I)`` its GDP parameter is ``mu_out = Delta_out/sigma_out``;
   averaging a Gaussian profile over a Gaussian shift is GDP composition,
   ``sqrt(m^2 + mu_out^2)``.

6. **Composable record.**  No dp-accounting event represents ``delta_OP``.  From the
   cruder ``Z <= eps_J + mu^2/2 + (mu/2)(|xi'_1| + |xi'_2|)`` and Cauchy-Schwarz,
   ``RDP_alpha <= eps_J + sqrt(2/pi) mu + alpha mu^2/2``: the release is
   ``(xi, rho)``-zCDP with ``xi = eps_J + sqrt(2/pi) mu``, ``rho = mu^2/2``
   (Redberg, Koskela & Wang 2023 state the add/remove version with ``L``; replace-one
   needs ``2L`` and our ``eps_J``).  :func:`objective_perturbation_event` returns it
   composed with the Gaussian output step; its epsilon is 13-23 % above the profile's (measured, logistic, n = 10^3-10^5).

7. **A Gaussian follow-up release** (the base-rate check of
   :mod:`skdp.linear_model._base_rate`): a query on the same data, chosen after seeing the
   released model, answered with Gaussian noise of GDP parameter ``mu_f`` (L2 sensitivity
   over noise std, for *every* released model).  Its privacy loss ``Z_f``, conditionally on
   the model, is dominated by ``N(mu_f^2/2, mu_f^2)`` (a smaller sensitivity gives a
   smaller ``mu``; the Gaussian profile increases with ``mu``).  Then
   ``phi(Z + Z_f) <= sum_j phi(eps_J + m_j^2/2 + m_j |xi_j| + Z_f)`` as in point 4, and for
   each ``j`` the expectation over ``xi_j`` and ``Z_f`` is that of one Gaussian privacy loss
   of parameter ``sqrt(m_j^2 + mu_f^2)`` (the folded-normal step holds for any
   non-negative function of ``|xi_j|``).  So the follow-up enters exactly like the output
   step: ``T(m) = 2 delta_G(eps - eps_J; sqrt(m^2 + mu_out^2 + mu_f^2))``, and the
   calibration below takes ``out_ratio = hypot(mu_out, mu_f)/mu``.  The composable record
   adds ``gaussian_event(1/mu_f, 1)``.
"""

import functools
import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module

__all__ = [
    "objective_perturbation_delta",
    "calibrate_objective_perturbation",
    "calibrate_objective_perturbation_many",
    "objective_perturbation_event",
]

#: grid size of the two-row geometry (point 4 of the module docstring)
GRID = 256
_THETA = np.arange(GRID + 1) * (math.pi / (4 * GRID))
#: ``cos(theta_k)`` (k < GRID) then ``sin(theta_{k+1})``: the cells' corners, scaled by mu
_COS_SIN = np.concatenate([np.cos(_THETA[:-1]), np.sin(_THETA[1:])])


def _gaussian_delta_array(e, m):
    """Vectorised ``delta_G(e; m)`` (Balle & Wang 2018, Thm 8), ``e >= 0``, ``m > 0``."""
    m = np.asarray(m, dtype=float)
    a = -e / m + m / 2.0
    b = -e / m - m / 2.0
    return np.clip(ndtr(a) - np.exp(e + log_ndtr(b)), 0.0, 1.0)


#: cells per block of :func:`_profile_within`'s first pass
BLOCK = 16
_BLOCK_STARTS = np.arange(0, GRID, BLOCK)
#: the first pass's angles, per block: ``cos theta_j``, ``sin theta_{j+1}``, ``sin theta_{l+1}``
_FIRST_PASS = np.concatenate([_COS_SIN[_BLOCK_STARTS], _COS_SIN[GRID + _BLOCK_STARTS],
                              _COS_SIN[GRID + _BLOCK_STARTS + BLOCK - 1]])
#: a block is cleared without its cells when its bound is below ``delta (1 - BLOCK_MARGIN)``
#: (room for rounding in the monotonicity the bound rests on)
BLOCK_MARGIN = 1e-9


def _profile_within(e, mu, mu_out, delta):
    """``_profile_deltas(e, mu, mu_out) <= delta``, decided mostly on blocks of ``BLOCK``
    cells.  ``T`` increases in its argument, ``cos theta`` falls and ``sin theta`` rises on
    ``[0, pi/4]``, so the cells ``k = j..l`` of a block have totals at most ``2 T(mu cos
    theta_j) + 2 T(mu sin theta_{l+1})`` (point 4 of the module docstring).  One pass
    evaluates, per block, that bound and the block's first cell: a first cell above
    ``delta`` decides "no"; a block whose bound is below ``delta (1 - BLOCK_MARGIN)`` is
    cleared (the margin leaves room for rounding in the monotonicity the bound rests on);
    the cells of the remaining blocks are evaluated.  Every cell is computed as
    :func:`_profile_deltas` computes it, so the decision is the full grid's; far from the
    calibrated noise one pass decides, near it one or two blocks are opened -- about a
    sixth of the grid's work.  For the ``alpha`` rule's estimates
    (:func:`calibrate_objective_perturbation_many`); the fit's own calibration evaluates
    the whole grid."""
    nb = _BLOCK_STARTS.size
    t = _gaussian_delta_array(e[:, None],
                              np.hypot(mu[:, None] * _FIRST_PASS, mu_out[:, None]))
    first_cell = np.minimum(1.0, 2.0 * t[:, :nb] + 2.0 * t[:, nb:2 * nb])
    within = ~(first_cell > delta).any(axis=1)
    bound = 2.0 * t[:, :nb] + 2.0 * t[:, 2 * nb:]
    rows, blocks = np.nonzero((bound > delta * (1.0 - BLOCK_MARGIN)) & within[:, None])
    if rows.size:
        cells = _BLOCK_STARTS[blocks][:, None] + np.arange(BLOCK)        # (P, BLOCK)
        angles = np.concatenate([_COS_SIN[cells], _COS_SIN[GRID + cells]], axis=1)
        both = _gaussian_delta_array(
            e[rows][:, None], np.hypot(mu[rows][:, None] * angles, mu_out[rows][:, None]))
        worst = (2.0 * both[:, :BLOCK] + 2.0 * both[:, BLOCK:]).max(axis=1)
        within[rows[np.minimum(1.0, worst) > delta]] = False
    return within


def objective_perturbation_delta(epsilon, mu, mu_out, eps_j):
    """``delta_OP(epsilon)``: an upper bound on the replace-one privacy profile.

    Parameters
    ----------
    epsilon : float
        Epsilon at which the profile is evaluated.
    mu : float
        ``2L/sigma``: per-row gradient bound over the objective noise's standard deviation.
    mu_out : float
        GDP parameter ``Delta_out/sigma_out`` of the output step (0: exact minimiser).
    eps_j : float
        Jacobian term ``log(1 + beta/Lambda)``.

    Returns
    -------
    delta : float
        In [0, 1]; 1 when ``epsilon <= eps_j`` (no guarantee at that epsilon).

    Examples
    --------
    >>> from skdp.accounting._objective_perturbation import objective_perturbation_delta
    >>> d = objective_perturbation_delta(1.0, 0.2, 0.04, 0.01)
    >>> 0 < d < 1e-5
    True
    """
    e = float(epsilon) - float(eps_j)
    if not e > 0.0:
        return 1.0
    return float(_profile_deltas(np.array([e]), np.array([float(mu)]),
                                 np.array([float(mu_out)]))[0])


def _profile_deltas(e, mu, mu_out):
    """``delta_OP`` for ``K`` parameter sets at once: ``e = epsilon - eps_J > 0``, ``mu``
    and ``mu_out`` arrays of shape ``(K,)``; returns shape ``(K,)``.  Every element is
    computed by the same floating-point operations whatever ``K`` is (the ufuncs act
    elementwise), so a batched calibration takes the scalar one's decisions exactly."""
    # the cells' two corner families in one array: one pass of the ufuncs instead of two
    both = _gaussian_delta_array(e[:, None], np.hypot(mu[:, None] * _COS_SIN, mu_out[:, None]))
    total = 2.0 * both[:, :GRID] + 2.0 * both[:, GRID:]
    return np.minimum(1.0, total.max(axis=1))


def largest_safe_scale(ok, lo, hi, cap, rtol):
    """Largest ``t`` with ``ok(t)`` for a predicate that holds below a threshold: double
    ``hi`` while ``ok(hi)`` (return ``lo`` once ``hi`` exceeds ``cap``), then bisect on
    ``log t`` to relative width ``rtol``, always keeping the safe end.  Raises
    ``ValueError`` when even ``lo`` is unsafe.  The calibrations of objective perturbation
    and of ``warm_gd`` share it."""
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > cap:
            return lo
    if not ok(lo):
        raise ValueError("no noise level meets the privacy target")
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def largest_safe_scales(ok_many, lo, hi, cap, rtol, size):
    """:func:`largest_safe_scale` for ``size`` predicates at once, element for element the
    same answer: ``ok_many(t)`` decides ``ok_k(t_k)`` for every ``k`` (a boolean array).
    Each element's doubling and bisection visit the points the scalar search visits
    (``sqrt`` is correctly rounded in both), so only the number of predicate calls
    changes: one batched call per step instead of one per element and step (elements
    already settled are evaluated along, their answer unused -- every element of a batch
    starting from one bracket takes about as many steps).  ``ok_k(lo)`` must hold for
    every ``k`` (the caller checks it, as :func:`calibrate_objective_perturbation` does):
    the scalar search's check of ``lo`` after the doubling then always passes and is not
    repeated."""
    lo = np.full(size, float(lo))
    hi = np.full(size, float(hi))
    doubling = np.ones(size, dtype=bool)
    done = np.zeros(size, dtype=bool)
    while not done.all():
        at = np.where(doubling, hi, np.sqrt(lo * hi))
        safe = np.asarray(ok_many(at), dtype=bool)
        grow = doubling & safe & ~done           # hi was safe: lo <- hi, hi <- 2 hi
        halve = ~doubling & ~done                # a bisection step at ``at``
        lo = np.where(grow | (halve & safe), np.where(grow, hi, at), lo)
        hi = np.where(grow, 2.0 * hi, np.where(halve & ~safe, at, hi))
        done |= grow & (hi > cap)                # the scalar search returns lo here
        doubling &= ~(~safe & ~done)             # a bracket: the bisection starts
        done |= ~doubling & ~(hi / lo > 1.0 + rtol)
    return lo


@functools.lru_cache(maxsize=512)
def calibrate_objective_perturbation(epsilon, delta, eps_j, out_ratio, rtol=1e-9):
    """Largest ``mu`` with ``delta_OP(epsilon; mu, out_ratio * mu, eps_j) <= delta``.

    Bisection on ``log mu`` keeping the safe end, so the returned value always satisfies
    the inequality (and is within ``rtol`` relative of the largest one that does; a looser
    ``rtol`` serves the ``alpha`` rule, which only needs an estimate).

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee, ``epsilon > eps_j``, ``0 < delta < 1``.
    eps_j : float
        Jacobian term.
    out_ratio : float
        ``mu_out/mu`` (the output step's share, fixed by the solver).

    Returns
    -------
    mu : float

    Examples
    --------
    >>> from skdp.accounting._objective_perturbation import (
    ...     calibrate_objective_perturbation, objective_perturbation_delta)
    >>> mu = calibrate_objective_perturbation(1.0, 1e-6, 0.0247, 0.2)
    >>> objective_perturbation_delta(1.0, mu, 0.2 * mu, 0.0247) <= 1e-6
    True
    """
    epsilon, delta, eps_j, out_ratio = map(float, (epsilon, delta, eps_j, out_ratio))
    if not epsilon > eps_j:
        raise ValueError(f"epsilon={epsilon} must exceed the Jacobian term eps_J={eps_j:.4g}: "
                         "raise alpha")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")

    def ok(mu):
        return objective_perturbation_delta(epsilon, mu, out_ratio * mu, eps_j) <= delta

    if not ok(1e-8):
        raise ValueError(
            f"(epsilon={epsilon:.3g}, delta={delta:.3g}) is out of objective perturbation's "
            "calibration range: even noise 1e8 times its sensitivity (GDP mu = 1e-8"
            + (f", Jacobian term {eps_j:.3g}" if eps_j > 0 else "")
            + ") does not give it; raise epsilon or delta")
    return largest_safe_scale(ok, 1e-8, 1.0, 1e4, rtol)


def calibrate_objective_perturbation_many(epsilon, delta, eps_j, out_ratio, rtol=1e-9):
    """:func:`calibrate_objective_perturbation` at many Jacobian terms ``eps_j`` (an array)
    at once: the same ``mu``'s, bit for bit (:func:`largest_safe_scales`), with one batched
    profile evaluation per bisection step.  The ``alpha`` rule of objective perturbation
    calibrates the noise at every point of its grid (``OP_GRID_POINTS``) at every share a
    budget split tries; batched, that grid costs about as much as one calibration."""
    epsilon, delta, out_ratio = float(epsilon), float(delta), float(out_ratio)
    eps_j = np.asarray(eps_j, dtype=float)
    if not np.all(epsilon > eps_j):
        raise ValueError(f"epsilon={epsilon} must exceed the Jacobian term "
                         f"eps_J={float(eps_j.max()):.4g}: raise alpha")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    e = epsilon - eps_j

    def ok_many(mu):
        return _profile_within(e, mu, out_ratio * mu, delta)

    if not np.all(ok_many(np.full(e.size, 1e-8))):
        # the scalar calibration's message, at the first Jacobian term out of range
        for term in eps_j:
            calibrate_objective_perturbation(epsilon, delta, float(term), out_ratio, rtol)
    return largest_safe_scales(ok_many, 1e-8, 1.0, 1e4, rtol, e.size)


def zcdp_record(mu, eps_j):
    """The ``(xi, rho)``-zCDP event dominating the objective step (module docstring, 6)."""
    return dp_accounting.dp_event.ZCDpEvent(
        rho=0.5 * mu * mu, xi=float(eps_j) + math.sqrt(2.0 / math.pi) * mu)


def objective_perturbation_event(mu, eps_j, mu_out, mu_follow_up=0.0):
    """Composable record of one objective-perturbation release: the zCDP record of the
    objective step composed with the Gaussian output step (``gaussian_event(1/mu_out, 1)``,
    i.e. GDP parameter ``mu_out``) and, when ``mu_follow_up > 0``, with the Gaussian
    follow-up release accounted inside the profile (module docstring, point 7)."""
    from ._events import gaussian_event

    events = [zcdp_record(mu, eps_j)]
    if mu_out > 0.0:
        events.append(gaussian_event(1.0 / mu_out, 1.0))
    if mu_follow_up > 0.0:
        events.append(gaussian_event(1.0 / mu_follow_up, 1.0))
    return dp_accounting.ComposedDpEvent(events)
