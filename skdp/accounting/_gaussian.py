"""Closed forms of the Gaussian mechanism (Balle & Wang, ICML 2018).

A Gaussian mechanism whose output moves by at most ``Delta`` (L2) between neighbouring
datasets, with noise ``N(0, sigma^2 I)``, is ``mu``-GDP with ``mu = Delta / sigma``
(Dong, Roth & Su 2022).  Its exact privacy profile is

    delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2),

decreasing in ``eps`` and increasing in ``mu``.  A composition of ``mu_i``-GDP mechanisms
(adaptive or not) is exactly ``sqrt(sum mu_i^2)``-GDP.  These are the formulas skdp uses to
calibrate every Gaussian release and to report the epsilon of any composition of Gaussian
releases; ``tests/accounting`` pins them against dp-accounting's PLD accountant.
"""

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

__all__ = ["gaussian_delta", "gaussian_epsilon", "gaussian_mu_for", "calibrate_gaussian_sigma"]


def gaussian_delta(epsilon, mu):
    """Exact ``delta`` of a ``mu``-GDP mechanism at ``epsilon`` (Balle–Wang Thm. 8).

    ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)``.

    Parameters
    ----------
    epsilon : float
        Epsilon at which the privacy profile is evaluated, >= 0.
    mu : float
        GDP parameter ``Delta / sigma`` (sensitivity over noise standard deviation);
        ``mu <= 0`` gives 0, ``mu = inf`` gives 1.

    Returns
    -------
    delta : float
        The smallest delta for which the mechanism is ``(epsilon, delta)``-DP, in [0, 1].

    Examples
    --------
    >>> from skdp.accounting import gaussian_delta
    >>> round(gaussian_delta(1.0, 1.0), 4)
    0.1269
    """
    if mu <= 0.0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    first = float(ndtr(a))
    # epsilon + log Phi(b) <= -(epsilon/mu - mu/2)^2 / 2 <= 0 mathematically; clamping
    # guards against cancellation at absurdly large epsilon (never reached for eps < 1e8).
    second = math.exp(min(0.0, epsilon + float(log_ndtr(b))))
    return max(0.0, first - second)


def gaussian_epsilon(delta, mu):
    """Smallest ``epsilon >= 0`` with ``gaussian_delta(epsilon, mu) <= delta``.

    Returned on the safe side: the bisection keeps the upper end of its bracket, so
    ``gaussian_delta(result, mu) <= delta`` always holds.  ``delta = 0`` gives ``inf``.

    Parameters
    ----------
    delta : float
        Target delta in [0, 1).
    mu : float
        GDP parameter ``Delta / sigma`` of the mechanism (or ``sqrt(sum mu_i^2)`` of a
        composition).

    Returns
    -------
    epsilon : float
        Upper bound on the smallest epsilon, within ``1e-12`` relative of it.

    Examples
    --------
    >>> from skdp.accounting import gaussian_delta, gaussian_epsilon
    >>> eps = gaussian_epsilon(1e-5, 0.5)
    >>> round(eps, 3), gaussian_delta(eps, 0.5) <= 1e-5
    (1.993, True)
    """
    if mu <= 0.0:
        return 0.0
    if delta <= 0.0 or math.isinf(mu):
        return math.inf
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return hi


#: ``log`` of the smallest GDP ``mu`` :func:`gaussian_mu_for` returns: a noise multiplier
#: up to ``e^30 = 1.1e13``; an ``(epsilon, delta)`` that needs more is refused
MIN_LOG_MU = -30.0


def check_gaussian_range(epsilon, delta):
    """Raise a ``ValueError`` naming ``epsilon`` and ``delta`` (and the values that work)
    when ``(epsilon, delta)`` needs a GDP ``mu`` below ``e^MIN_LOG_MU``, i.e. Gaussian noise
    above ``e^30 = 1.1e13`` times the sensitivity: the range of :func:`gaussian_mu_for`."""
    mu_min = math.exp(MIN_LOG_MU)
    if gaussian_delta(epsilon, mu_min) > delta:
        raise ValueError(
            f"(epsilon={epsilon:.3g}, delta={delta:.3g}) is out of the Gaussian "
            f"calibration's range: it needs noise above e^{-MIN_LOG_MU:g} = "
            f"{1.0 / mu_min:.3g} times the sensitivity (the calibration's limit; the noise "
            "would swamp any signal anyway). Usable: at this delta, epsilon >= "
            f"{gaussian_epsilon(delta, mu_min):.3g}; at this epsilon, delta >= "
            f"{gaussian_delta(epsilon, mu_min):.3g}")


def gaussian_mu_for(epsilon, delta):
    """Largest ``mu`` such that ``mu``-GDP implies ``(epsilon, delta)``-DP (safe side).

    Solves ``gaussian_delta(epsilon, mu) = delta`` for ``mu`` and steps down until the
    criterion holds exactly in floating point, so the result is never optimistic.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    mu : float
        A Gaussian mechanism with sensitivity over noise ``Delta / sigma <= mu`` is
        ``(epsilon, delta)``-DP.

    Examples
    --------
    >>> from skdp.accounting import gaussian_delta, gaussian_mu_for
    >>> mu = gaussian_mu_for(1.0, 1e-5)
    >>> round(mu, 4), gaussian_delta(1.0, mu) <= 1e-5
    (0.2681, True)
    """
    if not (epsilon > 0.0 and 0.0 < delta < 1.0):
        raise ValueError("need epsilon > 0 and 0 < delta < 1 for a Gaussian mechanism")
    target = math.log(delta)

    def f(log_mu):
        val = gaussian_delta(epsilon, math.exp(log_mu))
        return (math.log(val) if val > 0.0 else -1e300) - target

    check_gaussian_range(epsilon, delta)
    lo, hi = MIN_LOG_MU, 1.0
    while f(hi) < 0.0:
        hi += 2.0
    root = brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    mu = math.exp(root)
    # brentq may land a hair on the unsafe side: step down until the criterion holds.
    while gaussian_delta(epsilon, mu) > delta:
        mu = np.nextafter(mu, 0.0) * (1.0 - 1e-12)
    return float(mu)


def calibrate_gaussian_sigma(epsilon, delta, sensitivity):
    """Analytic Gaussian mechanism: the smallest ``sigma`` giving (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0 (any size: the analytic criterion is exact for every epsilon).
    delta : float
        Target delta in (0, 1).
    sensitivity : float
        L2 sensitivity ``Delta`` of the released vector under the neighbouring relation.

    Returns
    -------
    sigma : float
        Noise standard deviation per coordinate, ``sigma = Delta / mu`` with ``mu`` from
        :func:`gaussian_mu_for`, so that
        ``Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)
        <= delta``.

    Examples
    --------
    >>> from skdp.accounting import calibrate_gaussian_sigma
    >>> round(calibrate_gaussian_sigma(1.0, 1e-3, 1.0), 3)
    2.575
    """
    if not sensitivity > 0.0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    return float(sensitivity) / gaussian_mu_for(float(epsilon), float(delta))
