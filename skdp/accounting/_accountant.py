"""epsilon at a given delta (and back) for any event skdp builds.

Strategy, tightest exact method first:

1. Events made only of Gaussian releases (``GaussianDpEvent``, nested in ``ComposedDpEvent``
   / ``SelfComposedDpEvent``) are ``mu``-GDP with ``mu = sqrt(sum mu_i^2)``: the closed form
   of :mod:`skdp.accounting._gaussian` is exact.
2. A single pure ε-DP release: exact closed form of the randomized-response pair,
   ``delta(eps') = max(0, (e^eps - e^eps') / (1 + e^eps))``; several pure releases at
   ``delta = 0``: basic composition ``sum eps_i`` (exact at delta = 0).
3. ``DeltaDpEvent(delta_i)`` parts (the threshold of a private category
   discovery, :mod:`skdp.preprocessing._categorical`) are peeled off and their ``delta_i``
   added: a ``(0, delta_i)`` release composed with an ``(eps, delta)`` one is
   ``(eps, delta + delta_i)``-DP, with any accountant of the rest.
4. Anything else: dp-accounting's PLD accountant under REPLACE_ONE (pessimistic
   discretisation, so never optimistic).  Events it cannot account raise
   :class:`skdp.exceptions.UnsupportedDpEventError`; skdp never falls back to an accountant
   whose convention differs (see :mod:`skdp.accounting._events`).

The PLD grid
------------
dp-accounting discretises the privacy loss on a grid of width ``d`` with pessimistic
("connect-the-dots") rounding (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022): the
discretised pair *dominates* the true one, so the ε it gives is an upper bound for
**every** ``d`` -- the width only trades tightness for time.  The cost of one evaluation
is proportional to the number of grid points of the one-step PLD (its loss range over
``d``: 1.2e5 points, 0.7 s, for a Poisson-sampled Gaussian at ``z = 0.75``, ``d = 1e-4``);
the pessimism measured on the DP-SGD schedules of :mod:`skdp.linear_model._auto` (159 to
5000 steps, ``q`` from 1e-3 to 0.13, ε from 0.05 to 11) is about

    (ε_d - ε_fine) / ε  ~  1.4 T (d / ε)^2          (T composed steps),

so a width proportional to ``ε / sqrt(T)`` keeps the relative pessimism near ``GRID_RTOL``
(0.3 %) whatever ε: :func:`pld_interval`, snapped down to ``PLD_FINEST * 2^(k/2)``.  ε is
not known in advance, so the width is found by passes from the coarsest grid down: each
pass is an upper bound, the next width is chosen from its model-corrected value
(:func:`grid_corrected`), and the pass on the width the rule accepts is reported -- a
deterministic function of ``(event, delta)``.  The width never goes below ``PLD_FINEST``
(the fixed width of earlier versions); it is coarser where ε is large, where ``d = 1e-4``
bought 0.01 % of tightness at ε = 10 for 50x the time.

The rule is applied to events made of (Poisson-sampled) Gaussian releases only, whose
losses are continuous; a discrete loss (randomized response, Laplace) can be rounded up by
the full width at each of ``T`` steps, so those events keep the finest grid.

Below ``PLD_DELTA_FLOOR``: Rényi DP
-----------------------------------
The pessimistic grid makes the *exact* composition of the discretised losses an upper
bound, but dp-accounting composes them by FFT (``ifft(fft(p)^T)``), whose rounding is
about ``1e-16`` of the total mass per bin, in either direction.  Where ``delta`` is the
mass of a far tail that rounding is no longer negligible: an audit composed the same
pessimistic grids by direct (non-negative, tail-accurate) convolution and found the
FFT's delta at the reported epsilon low by a factor 1.000001 at ``delta = 1e-8``, 1.00004
at ``1e-10``, up to 1.014 at ``1e-12`` (absorbed there by the grid's pessimism: 0.80 of
the target on a grid twice as fine), and off by 12-21 % either way at ``1e-14``.  So
below ``PLD_DELTA_FLOOR = 1e-10`` (asked, or reached by :func:`get_delta`) the PLD is
not used: the Rényi-DP accountant (:mod:`skdp.accounting._rdp`, closed-form curves in
log space, no FFT) gives the bound, looser by 5-20 % in epsilon and rigorous.
"""

import functools
import math

from ..exceptions import UnsupportedDpEventError
from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._events import DeltaDpEvent
from ._gaussian import gaussian_delta, gaussian_epsilon

__all__ = ["get_epsilon", "get_delta"]

#: Finest PLD grid width (privacy-loss units); the width of every grid is
#: ``PLD_FINEST * 2^(k/2)`` with ``0 <= k <= PLD_COARSEST_LEVEL``.
PLD_FINEST = 1e-4
PLD_COARSEST_LEVEL = 12  # 6.4e-3
#: Relative pessimism of the grid the width rule aims at (module docstring).
GRID_RTOL = 3e-3
#: ``c`` of the measured pessimism model ``(eps_d - eps) / eps ~ c T (d / eps)^2``
PESSIMISM_COEF = 1.4
#: Kept for callers that build their own accountant on the finest grid.
PLD_DISCRETIZATION = PLD_FINEST
#: Below this delta the FFT's rounding in the PLD composition is not negligible next to
#: the tail mass; Rényi-DP accounting is used instead (module docstring).
PLD_DELTA_FLOOR = 1e-10


def _rr_epsilon(event):
    """ε of a binary randomized-response event, or None if it is not binary."""
    if event.num_buckets != 2:
        return None
    p = event.noise_parameter
    if p <= 0.0:
        return math.inf
    return math.log((1.0 - p / 2.0) / (p / 2.0))


def _decompose(event, count, out):
    """Flatten ``event`` into out = {'mu2': float, 'gaussian_terms': int (the Gaussian
    leaves summed into mu2), 'pure': [eps...], 'other': bool, ...}."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        out["nonprivate"] = True
        return
    if isinstance(event, dp_accounting.GaussianDpEvent):
        z = event.noise_multiplier
        out["mu2"] += count * (math.inf if z == 0 else (2.0 / z) ** 2)
        out["gaussian_terms"] += 1
        return
    if isinstance(event, dp_accounting.ComposedDpEvent):
        for ev in event.events:
            _decompose(ev, count, out)
        return
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        _decompose(event.event, count * event.count, out)
        return
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        eps = _rr_epsilon(event)
        if eps is not None:
            out["pure"].extend([eps] * count)
            return
    out["other"] = True


def _analyse(event):
    out = {"mu2": 0.0, "gaussian_terms": 0, "pure": [], "other": False, "nonprivate": False}
    _decompose(event, 1, out)
    return out


def _pld(event, interval=PLD_FINEST):
    """The PLD of ``event`` on a grid of width ``interval``: built from memoised parts
    (:func:`skdp.accounting._pld_memo.pld_of`, the accountant's PLD bit for bit) when
    every part is a (Poisson-sampled) Gaussian, else by dp-accounting's accountant."""
    from dp_accounting.pld import PLDAccountant  # scipy.signal: imported when used

    from ._events import NEIGHBORING_RELATION
    from ._pld_memo import pld_of

    memoised = pld_of(event, interval, NEIGHBORING_RELATION)
    if memoised is not None:
        return memoised
    acc = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=interval)
    try:
        acc.compose(event)
    except dp_accounting.UnsupportedEventError as exc:
        raise UnsupportedDpEventError(
            f"skdp cannot account {event!r} exactly under replace-one neighbours: {exc}"
        ) from exc
    return acc


def composition_count(event):
    """Number of elementary releases ``event`` composes (``T`` of the grid rule)."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return sum(composition_count(e) for e in event.events)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return event.count * composition_count(event.event)
    return 1


def _gaussian_leaves_only(event):
    """Whether every release in ``event`` is a (Poisson-sampled) Gaussian: the events the
    width rule was measured on.  Discrete losses (randomized response, Laplace) round
    up by up to the width at every step, so they keep the finest grid.  The passes choose the next width from the model-corrected estimate
(:func:`grid_corrected`), so one coarse pass usually suffices to pick the last width."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return all(_gaussian_leaves_only(e) for e in event.events)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _gaussian_leaves_only(event.event)
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return isinstance(event.event, dp_accounting.GaussianDpEvent)
    return isinstance(event, (dp_accounting.GaussianDpEvent, dp_accounting.NoOpDpEvent))


def pld_interval(epsilon, count):
    """Grid width for a PLD whose ε is about ``epsilon`` after ``count`` compositions:
    ``epsilon * sqrt(GRID_RTOL / (1.4 count))`` (module docstring) rounded down to
    ``PLD_FINEST * 2^(k/2)``, ``0 <= k <= PLD_COARSEST_LEVEL``."""
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        return grid_width(PLD_COARSEST_LEVEL)
    width = epsilon * math.sqrt(GRID_RTOL / (PESSIMISM_COEF * max(1, count)))
    level = math.floor(2.0 * math.log2(width / PLD_FINEST)) if width > PLD_FINEST else 0
    return grid_width(min(level, PLD_COARSEST_LEVEL))


def grid_width(level):
    """``PLD_FINEST * 2^(level/2)``."""
    return PLD_FINEST * 2.0 ** (0.5 * level)


@functools.lru_cache(maxsize=512)
def pld_epsilon_on_grid(event, delta, interval):
    """ε of ``event`` at ``delta`` from a PLD on a grid of width ``interval`` (an upper
    bound for any width).  Cached: ``event`` must be hashable."""
    return float(_pld(event, interval).get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def _pld_epsilon_cached(event, delta):
    return _pld_epsilon_adaptive(event, delta)


def _pld_epsilon_adaptive(event, delta):
    """ε on the grid :func:`pld_interval` picks for ε itself: passes from the coarsest grid
    down until the rule asks for no finer one.  Every pass is an upper bound; the last is
    returned.  A deterministic function of ``(event, delta)``."""
    on_grid = pld_epsilon_on_grid if _hashable(event) else pld_epsilon_on_grid.__wrapped__
    if not _gaussian_leaves_only(event):
        return on_grid(event, delta, PLD_FINEST)
    count = composition_count(event)
    interval = grid_width(PLD_COARSEST_LEVEL)
    eps = on_grid(event, delta, interval)
    while True:
        wanted = pld_interval(grid_corrected(eps, interval, count), count)
        if wanted >= interval:
            return eps
        interval = wanted
        eps = on_grid(event, delta, interval)


def _pessimism(interval, count):
    """``a`` of the model ``eps_d = eps + a / eps``: ``PESSIMISM_COEF T d^2``."""
    return PESSIMISM_COEF * max(1, count) * interval * interval


def grid_epsilon(epsilon, interval, count):
    """The model's ε on a grid of width ``interval`` for a fine-grid ``epsilon`` (the
    inverse of :func:`grid_corrected`); a prediction only, never a reported value."""
    return epsilon + _pessimism(interval, count) / epsilon


def grid_corrected(epsilon, interval, count):
    """Estimate of the fine-grid ε from ``epsilon`` measured on a grid of width
    ``interval``, by the pessimism model ``eps_d = eps (1 + a / eps^2)``,
    ``a = 1.4 T d^2`` (module docstring); ``epsilon`` itself beyond the model's range
    (``epsilon^2 < 4a``: a pessimism of over 100 %, where the model is not accurate).
    Only used to pick the next grid: it never becomes a reported value."""
    a = _pessimism(interval, count)
    disc = epsilon * epsilon - 4.0 * a
    if not math.isfinite(epsilon) or disc <= 0.0:
        return epsilon
    return 0.5 * (epsilon + math.sqrt(disc))


@functools.lru_cache(maxsize=256)
def _pld_delta_cached(event, epsilon):
    return _pld_delta_adaptive(event, epsilon)


def _pld_delta_adaptive(event, epsilon):
    """δ at ``epsilon`` on the grid the rule picks for ``epsilon`` (known here)."""
    interval = PLD_FINEST
    if epsilon > 0 and _gaussian_leaves_only(event):
        interval = pld_interval(epsilon, composition_count(event))
    return float(_pld(event, interval).get_delta(epsilon))


def _hashable(event):
    try:
        hash(event)
    except TypeError:  # e.g. ComposedDpEvent holds a list
        return False
    return True


def _hashable_form(event):
    """``event`` with every ``ComposedDpEvent``'s list of events made a tuple, at any
    depth (dp_accounting's events are frozen attrs classes, hashed and compared by their
    fields), or None when some part still cannot be hashed.  The same releases with the
    same parameters, so the same PLD: a composed event (DP-SGD's steps and its base-rate
    check) then hits the caches too, where each fit of the same schedule rebuilt its PLD
    (24 ms of a 105 ms DP-SGD fit on adult)."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = tuple(_hashable_form(e) for e in event.events)
        return None if any(p is None for p in parts) else dp_accounting.ComposedDpEvent(parts)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = _hashable_form(event.event)
        return None if inner is None else dp_accounting.SelfComposedDpEvent(inner,
                                                                            event.count)
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        inner = _hashable_form(event.event)
        return None if inner is None else dp_accounting.PoissonSampledDpEvent(
            event.sampling_probability, inner)
    return event if _hashable(event) else None


def _pld_epsilon(event, delta):
    """PLD epsilon, cached when the event has a hashable form: a fit may report the same
    event many times (refits in a search, audits, repeated fits of one schedule) and
    building a PLD can take a second."""
    frozen = _hashable_form(event)
    if frozen is not None:
        return _pld_epsilon_cached(frozen, delta)
    return _pld_epsilon_adaptive(event, delta)


def _pld_delta(event, epsilon):
    frozen = _hashable_form(event)
    if frozen is not None:
        return _pld_delta_cached(frozen, epsilon)
    return _pld_delta_adaptive(event, epsilon)


#: events that only the RDP path accounts: private selection (Papernot & Steinke 2022)
#: and the zCDP record of objective perturbation (already a replace-one curve)
_RDP_ONLY = (dp_accounting.dp_event.RepeatAndSelectDpEvent, dp_accounting.dp_event.ZCDpEvent)


def _has_repeat_and_select(event):
    """Whether ``event`` contains an event accounted by RDP only (``_RDP_ONLY``)."""
    if isinstance(event, _RDP_ONLY):
        return True
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_has_repeat_and_select(e) for e in event.events)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _has_repeat_and_select(event.event)
    return False


def _peel_delta_events(event):
    """``(rest, extra_delta)``: ``event`` without its ``DeltaDpEvent(delta_i)``
    parts (composed at any depth) and the sum of their ``delta_i`` (module docstring):
    :func:`skdp.accounting._rdp.peel_delta_events`, which also counts a part inside a
    private selection once per expected run."""
    from ._rdp import peel_delta_events

    return peel_delta_events(event)


def get_epsilon(event, delta):
    """Smallest epsilon (upper bound, never optimistic) such that ``event`` is (ε, δ)-DP.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event built by skdp (see :mod:`skdp.accounting._events` for the convention).
    delta : float
        Target delta in [0, 1).

    Returns
    -------
    epsilon : float
        ``inf`` when no finite epsilon holds (e.g. Gaussian noise at ``delta = 0``).

    Examples
    --------
    >>> from skdp.accounting import get_epsilon, gaussian_event
    >>> round(get_epsilon(gaussian_event(1.0, 2.0), 1e-5), 2)  # z = 1 under replace-one
    10.0
    """
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    event, extra_delta = _peel_delta_events(event)
    if extra_delta > 0.0:
        if delta <= extra_delta:
            return math.inf
        delta -= extra_delta
    if _has_repeat_and_select(event):
        # Private selection (Papernot & Steinke 2022) and zCDP records are accounted in
        # RDP, through the replace-one translation of skdp.accounting._rdp (refuses what it
        # cannot translate, e.g. Poisson-sampled steps).
        from ._rdp import rdp_epsilon

        return rdp_epsilon(event, delta)
    info = _analyse(event)
    if info["nonprivate"]:
        return math.inf
    mu2, pure = info["mu2"], info["pure"]
    if not info["other"]:
        if not pure:
            return gaussian_epsilon(delta, math.sqrt(mu2)) if mu2 > 0 else 0.0
        if mu2 == 0.0:
            if delta == 0.0 or len(pure) == 1:
                total = sum(pure)
                if len(pure) == 1 and delta > 0.0 and math.isfinite(total):
                    e = math.exp(total)
                    return max(0.0, math.log(max(1.0, e - delta * (1.0 + e))))
                return total
        elif delta == 0.0:
            return math.inf
    if delta == 0.0 and mu2 > 0.0:
        return math.inf
    if 0.0 < delta < PLD_DELTA_FLOOR:
        from ._rdp import rdp_epsilon

        return rdp_epsilon(event, delta)
    return _pld_epsilon(event, delta)


def get_delta(event, epsilon):
    """Smallest delta (upper bound) such that ``event`` is (epsilon, δ)-DP.

    The same methods as :func:`get_epsilon`, tightest exact first: the Gaussian-DP closed
    form, the randomized-response closed form for a single pure release, else
    dp-accounting's PLD accountant under replace-one neighbours.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event built by skdp (see :mod:`skdp.accounting._events` for the convention).
    epsilon : float
        Target epsilon, >= 0.

    Returns
    -------
    delta : float
        In [0, 1]; 1 for a ``NonPrivateDpEvent``.

    Examples
    --------
    >>> from skdp.accounting import get_delta, gaussian_event
    >>> get_delta(gaussian_event(1.0, 1.0), 50.0) < 1e-100
    True
    """
    epsilon = float(epsilon)
    if not epsilon >= 0.0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    event, extra_delta = _peel_delta_events(event)
    if extra_delta > 0.0:
        return min(1.0, get_delta(event, epsilon) + extra_delta)
    if _has_repeat_and_select(event):
        from ._rdp import rdp_delta

        return rdp_delta(event, epsilon)
    info = _analyse(event)
    if info["nonprivate"]:
        return 1.0
    mu2, pure = info["mu2"], info["pure"]
    if not info["other"] and not pure:
        return gaussian_delta(epsilon, math.sqrt(mu2)) if mu2 > 0 else 0.0
    if not info["other"] and mu2 == 0.0 and len(pure) == 1:
        e = math.exp(pure[0])
        return max(0.0, (e - math.exp(epsilon)) / (1.0 + e))
    delta = _pld_delta(event, epsilon)
    if delta < PLD_DELTA_FLOOR:
        from ._rdp import rdp_delta

        return rdp_delta(event, epsilon)
    return delta
