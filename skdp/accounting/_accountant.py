"""epsilon at a given delta (and back) for any event skdp builds.

Strategy, tightest exact method first:

1. Events made only of Gaussian releases (``GaussianDpEvent``, nested in ``ComposedDpEvent``
   / ``SelfComposedDpEvent``) are ``mu``-GDP with ``mu = sqrt(sum mu_i^2)``: the closed form
   of :mod:`skdp.accounting._gaussian` is exact.
2. A single pure ε-DP release: exact closed form of the randomized-response pair,
   ``delta(eps') = max(0, (e^eps - e^eps') / (1 + e^eps))``; several pure releases at
   ``delta = 0``: basic composition ``sum eps_i`` (exact at delta = 0).
3. Anything else: dp-accounting's PLD accountant under REPLACE_ONE (pessimistic
   discretisation, so never optimistic).  Events it cannot account raise
   :class:`skdp.exceptions.UnsupportedDpEventError`; skdp never falls back to an accountant
   whose convention differs (see :mod:`skdp.accounting._events`).
"""

import functools
import math

import dp_accounting
from dp_accounting.pld import PLDAccountant

from ..exceptions import UnsupportedDpEventError
from ._events import NEIGHBORING_RELATION
from ._gaussian import gaussian_delta, gaussian_epsilon

__all__ = ["get_epsilon", "get_delta"]

PLD_DISCRETIZATION = 1e-4


def _rr_epsilon(event):
    """ε of a binary randomized-response event, or None if it is not binary."""
    if event.num_buckets != 2:
        return None
    p = event.noise_parameter
    if p <= 0.0:
        return math.inf
    return math.log((1.0 - p / 2.0) / (p / 2.0))


def _decompose(event, count, out):
    """Flatten ``event`` into out = {'mu2': float, 'pure': [eps...], 'other': bool, ...}."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        out["nonprivate"] = True
        return
    if isinstance(event, dp_accounting.GaussianDpEvent):
        z = event.noise_multiplier
        out["mu2"] += count * (math.inf if z == 0 else (2.0 / z) ** 2)
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
    out = {"mu2": 0.0, "pure": [], "other": False, "nonprivate": False}
    _decompose(event, 1, out)
    return out


def _pld(event):
    acc = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=PLD_DISCRETIZATION)
    try:
        acc.compose(event)
    except dp_accounting.UnsupportedEventError as exc:
        raise UnsupportedDpEventError(
            f"skdp cannot account {event!r} exactly under replace-one neighbours: {exc}"
        ) from exc
    return acc


@functools.lru_cache(maxsize=256)
def _pld_epsilon_cached(event, delta):
    return float(_pld(event).get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def _pld_delta_cached(event, epsilon):
    return float(_pld(event).get_delta(epsilon))


def _hashable(event):
    try:
        hash(event)
    except TypeError:  # e.g. ComposedDpEvent holds a list
        return False
    return True


def _pld_epsilon(event, delta):
    """PLD epsilon, cached when the event is hashable: a fit may report the same event many
    times (refits in a search, audits) and building a PLD can take a second."""
    if _hashable(event):
        return _pld_epsilon_cached(event, delta)
    return float(_pld(event).get_epsilon(delta))


def _pld_delta(event, epsilon):
    if _hashable(event):
        return _pld_delta_cached(event, epsilon)
    return float(_pld(event).get_delta(epsilon))


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
    return _pld_delta(event, epsilon)
