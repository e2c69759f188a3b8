r"""Poisson-subsampled Gaussian mechanisms (DP-SGD) under replace-one neighbours.

A step of DP-SGD includes every record independently with probability ``q`` (Poisson
sampling), sums the included records' contributions, each bounded by ``C`` in L2, and adds
``N(0, (z C)^2 I)``.  Run ``T`` times (adaptively: each step may depend on the previous
outputs), it is described by

    SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T),

read -- like every skdp event (:mod:`skdp.accounting._events`) -- under **replace-one**
neighbours with dp-accounting's PLD accountant.  The noise multiplier ``z`` is relative to
the per-record bound ``C``: replacing a record moves the sum by up to ``2 C``.

Dominating pair.  Fix everything but the replaced record ``i`` (its inclusion coin is
independent of the others').  Conditionally on the other records' coins (sum ``s``) the
step outputs the mixtures ``(1-q) N(s, z^2 C^2 I) + q N(s + g_i, z^2 C^2 I)`` versus
the same with ``g_i'``, ``||g_i||, ||g_i'|| <= C``; the common part ``s`` is removed by
post-processing (a shift) and the mixture over the other coins by joint convexity of the
hockey-stick divergence.  dp-accounting's ``REPLACE`` adjacency for the Poisson-subsampled
Gaussian uses the one-dimensional pair ``(1-q) N(0, z^2) + q N(-1, z^2)`` versus
``(1-q) N(0, z^2) + q N(+1, z^2)`` (units of ``C``), composed ``T`` times by FFT; at
``q = 1`` this is the Gaussian mechanism with sensitivity ``2C``, i.e. ``mu = 2/z`` GDP,
which ``tests/accounting/test_sampled.py`` pins against the closed form.  We rely on
dp-accounting for the claim that this pair dominates every pair of vectors in the ball
(the antipodal extreme).

Monotonicity in ``q`` (used nowhere for safety, stated for the reader): the pair at
``q' < q`` is the image of the pair at ``q`` under the Markov kernel "keep the output with
probability ``q'/q``, else replace it by a fresh ``N(0, z^2)`` draw", so a smaller
sampling rate is never less private.

Pessimism.  The PLD is built with pessimistic rounding of the privacy losses to a grid of
width ``PLD_DISCRETIZATION`` (the same constant :func:`skdp.accounting.get_epsilon` uses),
so every ε reported here is an upper bound.  With ``T ~ 8e5`` steps the rounding adds a few
percent (measured at ``n = 45211``, ``q = 50/n``, ``z = 11.7``, ``δ = 1e-3``: ε = 0.387 at
``1e-4``, 0.3773 at ``3e-5``, 0.3765 at ``1e-5``); calibrating against the same grid as the
reporting accountant guarantees ``get_epsilon(event, δ) <= ε`` for the calibrated event.
"""

import functools
import math

import dp_accounting

from ._accountant import get_epsilon
from ._gaussian import gaussian_mu_for

__all__ = ["poisson_gaussian_event", "calibrate_poisson_gaussian"]

#: Search range of the noise multiplier.  Below ``Z_MIN`` the PLD's support explodes
#: (privacy losses of order ``2/z^2``: 1.2 s per evaluation at z = 0.5, 5.7 s at 0.2) while
#: the guarantee is vacuous anyway (z = 0.5 at q = 1 is already epsilon ~ 24 at delta = 1e-5).
Z_MIN = 0.5
Z_MAX = 1e5
#: Stop when the calibrated ε is within this relative distance below the target.
RTOL = 0.004
MAX_EVALS = 40


def poisson_gaussian_event(sampling_rate, noise_multiplier, steps):
    """Event of ``steps`` Poisson-sampled Gaussian sums (DP-SGD).

    Parameters
    ----------
    sampling_rate : float in (0, 1]
        Inclusion probability ``q`` of every record at every step.
    noise_multiplier : float >= 0
        ``z``: noise standard deviation over the per-record L2 bound ``C`` (replace-one
        sensitivity of one step's sum is ``2C``).
    steps : int >= 1

    Returns
    -------
    dp_accounting.SelfComposedDpEvent

    Examples
    --------
    >>> from skdp.accounting import poisson_gaussian_event
    >>> ev = poisson_gaussian_event(0.01, 2.0, 100)
    >>> ev.count, ev.event.sampling_probability, ev.event.event.noise_multiplier
    (100, 0.01, 2.0)
    """
    q = float(sampling_rate)
    z = float(noise_multiplier)
    steps = int(steps)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    if not z >= 0.0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}")
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps
    )


def _epsilon(q, z, steps, delta):
    return get_epsilon(poisson_gaussian_event(q, z, steps), delta)


def _initial_guess(epsilon, delta, q, steps):
    """Central-limit guess (Bu, Dong, Long & Su 2020, replace-one sensitivity 2):
    ``mu ~ q sqrt(T (exp(4/z^2) - 1))``, solved for ``z``.  Only a starting point."""
    mu = gaussian_mu_for(epsilon, delta)
    ratio = mu / (q * math.sqrt(steps))
    return 2.0 / math.sqrt(math.log1p(ratio * ratio))


def calibrate_poisson_gaussian(epsilon, delta, sampling_rate, steps):
    """Smallest noise multiplier ``z`` making :func:`poisson_gaussian_event` (ε, δ)-DP.

    The search runs in ``log z`` (bracketing, then Illinois regula falsi on
    ``log ε(z)``) with :func:`skdp.accounting.get_epsilon` -- the accountant that reports
    the fit's guarantee -- and always returns the upper end of its bracket, so

        get_epsilon(poisson_gaussian_event(q, z, steps), delta) <= epsilon

    holds for the returned ``z``, and the ε it gives is within ``RTOL`` (0.4 %) of the
    target unless ``z`` hits ``Z_MIN`` (the target is then more than met).  Results are
    cached on the exact inputs (PLD construction takes ~0.4 s at ``steps ~ 8e5``); exact
    rather than rounded keys, so the cached ``z`` always belongs to the inputs asked for.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    sampling_rate : float in (0, 1]
    steps : int >= 1

    Returns
    -------
    z : float

    Raises
    ------
    ValueError
        On invalid inputs, or if even ``z = Z_MAX`` does not reach the target.

    Examples
    --------
    >>> from skdp.accounting import calibrate_poisson_gaussian, get_epsilon
    >>> from skdp.accounting import poisson_gaussian_event
    >>> z = calibrate_poisson_gaussian(1.0, 1e-5, 0.01, 1000)
    >>> 0.99 < get_epsilon(poisson_gaussian_event(0.01, z, 1000), 1e-5) <= 1.0
    True
    """
    epsilon = float(epsilon)
    delta = float(delta)
    q = float(sampling_rate)
    steps = int(steps)
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(
            f"delta must be in (0, 1) for a Gaussian mechanism, got {delta!r}"
        )
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}")
    return _calibrate_cached(epsilon, delta, q, steps)


@functools.lru_cache(maxsize=256)
def _calibrate_cached(epsilon, delta, q, steps):
    log_target = math.log(epsilon)
    evals = 0

    def f(log_z):  # log eps(z) - log target: decreasing in z
        nonlocal evals
        evals += 1
        eps = _epsilon(q, math.exp(log_z), steps, delta)
        if eps == 0.0:
            return -math.inf
        return math.log(eps) - log_target

    lo_limit, hi_limit = math.log(Z_MIN), math.log(Z_MAX)
    x = min(max(math.log(_initial_guess(epsilon, delta, q, steps)), lo_limit), hi_limit)
    fx = f(x)
    factor = math.log(1.25)
    if fx <= 0.0:  # safe: walk down until unsafe (or Z_MIN)
        hi, fhi = x, fx
        while True:
            if hi <= lo_limit:
                return math.exp(lo_limit)
            lo = max(hi - factor, lo_limit)
            flo = f(lo)
            if flo > 0.0:
                break
            hi, fhi = lo, flo
            factor *= 2.0
    else:  # unsafe: walk up until safe
        lo, flo = x, fx
        while True:
            if lo >= hi_limit:
                raise ValueError(
                    f"({epsilon}, {delta})-DP is out of reach: no noise multiplier up to "
                    f"{Z_MAX:g} gives it for {steps} steps at sampling rate {q:.3g} (the "
                    "noise would swamp any signal anyway). Use a larger epsilon (below "
                    "0.01 a model rarely learns anything), fewer steps (n_steps; n_epochs for "
                    "resque), or more data."
                )
            hi = min(lo + factor, hi_limit)
            fhi = f(hi)
            if fhi <= 0.0:
                break
            lo, flo = hi, fhi
            factor *= 2.0

    # Illinois regula falsi on the bracket [lo (unsafe), hi (safe)]; ``w_lo``/``w_hi`` are
    # the (possibly halved) values used for interpolation, ``fhi`` the true value at hi.
    w_lo, w_hi = flo, fhi
    side = 0
    while evals < MAX_EVALS:
        if fhi >= math.log1p(-RTOL) or hi - lo < 1e-6:
            break
        if math.isfinite(w_hi) and math.isfinite(w_lo):
            x = (lo * w_hi - hi * w_lo) / (w_hi - w_lo)
            # keep strictly inside the bracket (guards against flat or stepwise PLD output)
            width = hi - lo
            x = min(max(x, lo + 0.02 * width), hi - 0.02 * width)
        else:
            x = 0.5 * (lo + hi)
        fx = f(x)
        if fx <= 0.0:
            hi, fhi, w_hi = x, fx, fx
            if side == 1:
                w_lo *= 0.5
            side = 1
        else:
            lo, flo, w_lo = x, fx, fx
            if side == -1:
                w_hi *= 0.5
            side = -1
    return math.exp(hi)
