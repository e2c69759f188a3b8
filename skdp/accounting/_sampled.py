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

Pessimism.  The PLD is built with pessimistic ("connect-the-dots") discretisation of the
privacy losses, so every ε reported here is an upper bound for any grid width; the width
is picked from ε itself (:func:`skdp.accounting._accountant.pld_interval`, relative
pessimism about 0.3 %).  Calibration returns a ``z`` for which the *reporting* accountant
(:func:`skdp.accounting.get_epsilon`) gives ``<= ε``, so the fitted model never reports more
than was asked, and the report is never below the true ε.

Speed.  One PLD on the reporting grid costs 0.01-0.1 s on the default DP-SGD schedules, so
calibration first searches on a grid ``COARSE_FACTOR`` times coarser than the reporting
one (a few times cheaper) and then needs two to four evaluations of the reporting accountant
around that point (measured in ``benchmarks/bench_calibration.py``).
"""

import contextlib
import contextvars
import functools
import math

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._accountant import (PLD_COARSEST_LEVEL, composition_count, get_epsilon, grid_corrected,
                          grid_epsilon, grid_width, pld_epsilon_on_grid, pld_interval)
from ._gaussian import gaussian_mu_for
from ._pld_memo import _LRU

__all__ = ["poisson_gaussian_event", "calibrate_poisson_gaussian"]

#: Search range of the noise multiplier.  Below ``Z_MIN`` the one-step PLD's loss range
#: (of order ``1/z^2``) makes evaluations slow, while the guarantee is vacuous anyway at any
#: sampling rate the default schedules use (z = 0.2 at q = 1 is ε ~ 90 at δ = 1e-5).  The
#: floor used to be 0.5, which over-noised small sampling rates (asked ε = 10 at q = 1.3e-3,
#: 1883 steps, got 5.3).
Z_MIN = 0.2
Z_MAX = 1e5
#: Stop when the calibrated ε is within this relative distance below the target.
RTOL = 0.004
MAX_EVALS = 40
#: The first, coarse search: grid width over the reporting one, and tolerance.
COARSE_FACTOR = 4.0
COARSE_RTOL = 0.01
DEFAULT_SLOPE = -1.5  # d log(eps) / d log(z) before two points are known
MAX_LOG_STEP = math.log(4.0)


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


def _with_follow_up(event, follow_up_mu):
    """``event`` composed with a Gaussian follow-up release of GDP parameter
    ``follow_up_mu`` (none for 0)."""
    if not follow_up_mu > 0.0:
        return event
    from ._events import gaussian_event

    # a tuple: the calibration's PLD caches need a hashable event
    return dp_accounting.ComposedDpEvent((event, gaussian_event(1.0 / follow_up_mu, 1.0)))


def _epsilon(q, z, steps, delta, follow_up_mu=0.0):
    return get_epsilon(_with_follow_up(poisson_gaussian_event(q, z, steps), follow_up_mu),
                       delta)


def _initial_guess(epsilon, delta, q, steps):
    """Central-limit guess (Bu, Dong, Long & Su 2020, replace-one sensitivity 2):
    ``mu ~ q sqrt(T (exp(4/z^2) - 1))``, solved for ``z``.  Only a starting point."""
    mu = gaussian_mu_for(epsilon, delta)
    ratio = mu / (q * math.sqrt(steps))
    return 2.0 / math.sqrt(math.log1p(ratio * ratio))


def calibrate_poisson_gaussian(epsilon, delta, sampling_rate, steps, follow_up_mu=0.0):
    """Smallest noise multiplier ``z`` making :func:`poisson_gaussian_event` (ε, δ)-DP
    (composed with a Gaussian follow-up of GDP parameter ``follow_up_mu`` when it is > 0).

    The search runs in ``log z`` (bracketing, then Illinois regula falsi on
    ``log ε(z)``), first on the coarsest PLD grid (a starting point only), then with
    :func:`skdp.accounting.get_epsilon` -- the accountant that reports the fit's guarantee
    -- and always returns the safe end of its bracket, so

        get_epsilon(poisson_gaussian_event(q, z, steps), delta) <= epsilon

    holds for the returned ``z``, and the ε it gives is within ``RTOL`` (0.4 %) of the
    target unless ``z`` hits ``Z_MIN`` (the target is then more than met).  Results are
    cached on the exact inputs; exact
    rather than rounded keys, so the cached ``z`` always belongs to the inputs asked for.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    sampling_rate : float in (0, 1]
    steps : int >= 1
    follow_up_mu : float >= 0, default=0.0
        A Gaussian release after the steps (the base-rate check of
        :mod:`skdp.linear_model._base_rate`), composed in the search: the returned ``z``
        makes ``compose(poisson_gaussian_event(q, z, steps), gaussian_event(1/mu_f, 1))``
        (ε, δ)-DP.

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
    follow_up_mu = float(follow_up_mu)
    if not (follow_up_mu >= 0.0 and math.isfinite(follow_up_mu)):
        raise ValueError(f"follow_up_mu must be finite and >= 0, got {follow_up_mu!r}")
    mode = _HINTS.get()
    if mode is not None:
        key = (epsilon, delta, q, steps, follow_up_mu)
        if mode[0] == "propose":
            mode[2].append(key)
            return mode[1]
        joint = _JOINT.get(key)
        if joint is not None:
            return joint
    return _calibrate_cached(epsilon, delta, q, steps, follow_up_mu)


@functools.lru_cache(maxsize=256)
def _calibrate_cached(epsilon, delta, q, steps, follow_up_mu=0.0):
    return _calibrate_core(epsilon, delta, q, steps, follow_up_mu, (), epsilon)


def _calibrate_core(epsilon, delta, q, steps, follow_up_mu, prior, guess_epsilon):
    """The search of :func:`calibrate_poisson_gaussian` for the event ``prior`` (a tuple
    of earlier releases, ``()``: none) composed with the steps and their follow-up;
    ``guess_epsilon``: the steps' share the central-limit starting point is computed for.
    With ``prior = ()`` it is the plain calibration, unchanged: the same events, grids
    and steps."""
    def event_at(z):
        own = _with_follow_up(poisson_gaussian_event(q, z, steps), follow_up_mu)
        return own if not prior else dp_accounting.ComposedDpEvent(prior + (own,))

    count = steps if not prior else composition_count(event_at(1.0))
    log_target = math.log(epsilon)

    def objective(eps_of_z):
        def f(log_z):  # log eps(z) - log target: decreasing in z
            eps = eps_of_z(math.exp(log_z))
            return -math.inf if eps == 0.0 else math.log(eps) - log_target
        return f

    lo_limit, hi_limit = math.log(Z_MIN), math.log(Z_MAX)
    guess = min(max(math.log(_initial_guess(guess_epsilon, delta, q, steps)), lo_limit),
                hi_limit)
    args = (lo_limit, hi_limit, epsilon, delta, q, steps)
    # 1. a grid COARSE_FACTOR times coarser than the one the reporting accountant will pick
    #    at the answer: a few times cheaper, pessimistic by ~COARSE_FACTOR^2 GRID_RTOL; its
    #    answer is only a starting point
    interval = min(pld_interval(epsilon, count) * COARSE_FACTOR,
                   grid_width(PLD_COARSEST_LEVEL))
    coarse = objective(lambda z: pld_epsilon_on_grid(event_at(z), delta, interval))
    x, slope = _secant(coarse, guess, lo_limit, hi_limit)
    # 2. the reporting accountant, first at the point where the pessimism model
    #    (:func:`skdp.accounting._accountant.grid_corrected`) expects ε a little below the
    #    target, then the bracketing search with small steps, always on the safe side
    report = objective(lambda z: get_epsilon(event_at(z), delta))
    aim = math.log1p(-0.6 * RTOL)
    true_eps = grid_corrected(epsilon, interval, count)
    gap = 0.0  # predicted log(eps_report / eps_coarse) at x
    if true_eps < epsilon:  # inside the model's range
        gap = math.log(grid_epsilon(true_eps, pld_interval(epsilon, count), count) / epsilon)
    x0 = min(max(x + (aim - gap) / slope, lo_limit), hi_limit)
    f0 = report(x0)
    if math.log1p(-RTOL) <= f0 <= 0.0:
        return math.exp(x0)
    x1 = min(max(x0 + (aim - f0) / slope, lo_limit), hi_limit)
    return math.exp(_solve_safe_side(report, x1, math.log(1.01), *args, rtol=RTOL,
                                     known=(x0, f0)))


def _secant(f, x, lo_limit, hi_limit):
    """Root of ``f`` (decreasing in ``log z``) to ``COARSE_RTOL`` by the secant method, with
    steps capped at ``MAX_LOG_STEP``; returns ``(x, slope)``.  No safety needed: its answer
    is a starting point for the safe search on the reporting accountant."""
    x_prev, f_prev, slope = None, None, DEFAULT_SLOPE
    for _ in range(MAX_EVALS // 2):
        fx = f(x)
        if x_prev is not None and math.isfinite(fx) and math.isfinite(f_prev) and x != x_prev:
            s = (fx - f_prev) / (x - x_prev)
            if s < 0.0:
                slope = s
        if abs(fx) <= math.log1p(COARSE_RTOL):
            break
        step = -fx / slope if math.isfinite(fx) else -MAX_LOG_STEP
        step = min(max(step, -MAX_LOG_STEP), MAX_LOG_STEP)
        x_new = min(max(x + step, lo_limit), hi_limit)
        if x_new == x:
            break
        x_prev, f_prev, x = x, fx, x_new
    return x, slope


def _solve_safe_side(f, x, factor, lo_limit, hi_limit, epsilon, delta, q, steps, rtol,
                     known=None):
    """Largest-ε safe point of the decreasing ``f`` (``f(x) <= 0``) with
    ``f >= log(1 - rtol)``: bracketing walk from ``x`` (step ``factor`` in ``log z``,
    doubling), then Illinois regula falsi.  Returns the safe end of the bracket, or
    ``lo_limit`` if even that is safe.  ``known = (x0, f(x0))`` is a point already
    evaluated: if it brackets with ``x``, the walk is skipped."""
    evals = 0

    def g(v):
        nonlocal evals
        evals += 1
        return f(v)

    fx = g(x)
    if known is not None and (known[1] <= 0.0) != (fx <= 0.0):
        (lo, flo), (hi, fhi) = sorted([(x, fx), known], key=lambda t: t[1] <= 0.0)
        if fhi >= math.log1p(-rtol):
            return hi
    elif fx <= 0.0:  # safe: walk down until unsafe (or Z_MIN)
        hi, fhi = x, fx
        if fhi >= math.log1p(-rtol):
            return hi
        while True:
            if hi <= lo_limit:
                return lo_limit
            lo = max(hi - factor, lo_limit)
            flo = g(lo)
            if flo > 0.0:
                break
            hi, fhi = lo, flo
            if fhi >= math.log1p(-rtol):
                return hi
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
            fhi = g(hi)
            if fhi <= 0.0:
                break
            lo, flo = hi, fhi
            factor *= 2.0

    # Illinois regula falsi on the bracket [lo (unsafe), hi (safe)]; ``w_lo``/``w_hi`` are
    # the (possibly halved) values used for interpolation, ``fhi`` the true value at hi.
    w_lo, w_hi = flo, fhi
    side = 0
    while evals < MAX_EVALS:
        if fhi >= math.log1p(-rtol) or hi - lo < 1e-6:
            break
        if math.isfinite(w_hi) and math.isfinite(w_lo):
            x = (lo * w_hi - hi * w_lo) / (w_hi - w_lo)
            # keep strictly inside the bracket (guards against flat or stepwise PLD output)
            width = hi - lo
            x = min(max(x, lo + 0.02 * width), hi - 0.02 * width)
        else:
            x = 0.5 * (lo + hi)
        fx = g(x)
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
    return hi


# --------------------------------------------------------------------------------------
# One search for a model that follows earlier releases (a pipeline's budget split)
# --------------------------------------------------------------------------------------

#: ``None`` (no hints: every calibration searches), ``("joint",)`` (inside a composite's
#: fit: a calibration the composite registered is answered from :data:`_JOINT`) or
#: ``("propose", z, calls)`` (every calibration answers ``z`` and records its inputs: how
#: the composite reads a model's calibration inputs without searching)
_HINTS = contextvars.ContextVar("skdp_calibration_hints", default=None)


#: joint calibrations ``(epsilon, delta, q, steps, follow_up_mu) -> z``: keys and values are
#: public (functions of public sizes and budgets)
_JOINT = _LRU(4096)


@contextlib.contextmanager
def joint_calibrations():
    """Within: :func:`calibrate_poisson_gaussian` answers the inputs a composite
    registered (:func:`register_joint_calibration`) with the registered ``z``.  A
    :class:`~skdp.PrivatePipeline` holds it over its plan and fit (and a private search
    over its plans), so the model it fits uses the noise its budget split verified;
    outside, no calibration ever sees the registry (a standalone fit's noise does not
    depend on what the process fitted before)."""
    token = _HINTS.set(("joint",))
    try:
        yield
    finally:
        _HINTS.reset(token)


def joint_calibrations_active():
    """Whether :func:`joint_calibrations` holds (a proposal inside one counts)."""
    return _HINTS.get() is not None


@contextlib.contextmanager
def proposing(z):
    """Within: every :func:`calibrate_poisson_gaussian` returns ``z`` without searching
    and appends its inputs ``(epsilon, delta, q, steps, follow_up_mu)`` to the yielded
    list -- how a composite learns the calibration a model *would* run (and the event it
    would release with ``z``) before deciding to register it."""
    calls = []
    token = _HINTS.set(("propose", float(z), calls))
    try:
        yield calls
    finally:
        _HINTS.reset(token)


def register_joint_calibration(key, z):
    """Answer the calibration ``key = (epsilon, delta, q, steps, follow_up_mu)`` with
    ``z`` inside :func:`joint_calibrations`.  The caller has verified with the reporting
    accountant that ``get_epsilon`` of the model's event at ``z`` is at most ``epsilon``
    (the contract of :func:`calibrate_poisson_gaussian`; ``z`` is then a valid answer,
    exactly at the budget rather than within ``RTOL`` below it)."""
    _JOINT.put(tuple(key), float(z))


def calibrate_poisson_gaussian_after(prior, epsilon, delta, sampling_rate, steps,
                                     follow_up_mu=0.0, guess_epsilon=None):
    """Smallest noise multiplier ``z`` (to ``RTOL``) for which the releases ``prior``
    followed by :func:`poisson_gaussian_event` ``(q, z, steps)`` (and its Gaussian
    follow-up of GDP parameter ``follow_up_mu``) are (ε, δ)-DP together: one search over
    ``z`` of the *composed* event, where a composite's budget split searched the model's
    epsilon and ran a calibration at every point (a search inside a search).

    The search is :func:`calibrate_poisson_gaussian`'s (coarse secant, then the
    reporting accountant on the safe side), so

        get_epsilon(compose(*prior, poisson_gaussian_event(q, z, steps) [, follow-up]),
                    delta) <= epsilon

    holds for the returned ``z``.  ``prior`` may hold Gaussian releases and
    ``DeltaDpEvent`` thresholds (their ``delta_i`` is taken off ``delta``) only; anything
    else returns None (the caller falls back to its own search), as does a target out of
    reach.  ``guess_epsilon``: the steps' share the starting point is computed for (e.g.
    the Gaussian-DP share; default ``epsilon``).  Cached on the exact (public) inputs.
    """
    from ._accountant import _gaussian_leaves_only, _hashable_form
    from ._rdp import peel_delta_events

    epsilon, delta, q, steps = float(epsilon), float(delta), float(sampling_rate), int(steps)
    follow_up_mu = float(follow_up_mu)
    rest, extra = peel_delta_events(dp_accounting.ComposedDpEvent(tuple(prior)))
    frozen = _hashable_form(rest)
    if frozen is None or not _gaussian_leaves_only(frozen):
        return None
    delta_left = delta - extra
    if not (0.0 < delta_left < 1.0 and epsilon > 0.0 and math.isfinite(epsilon)):
        return None
    parts = (frozen.events if isinstance(frozen, dp_accounting.ComposedDpEvent)
             else (frozen,))
    parts = tuple(p for p in parts if not isinstance(p, dp_accounting.NoOpDpEvent))
    guess = float(epsilon if guess_epsilon is None else guess_epsilon)
    return _calibrate_after_cached(parts, epsilon, delta_left, q, steps, follow_up_mu, guess)


@functools.lru_cache(maxsize=256)
def _calibrate_after_cached(prior, epsilon, delta, q, steps, follow_up_mu, guess):
    try:
        return _calibrate_core(epsilon, delta, q, steps, follow_up_mu, prior, guess)
    except ValueError:      # out of reach even at Z_MAX: the caller's search says why
        return None
