r"""Rényi-DP accounting of skdp events, including private selection (``RepeatAndSelect``).

Why a translation is needed
---------------------------
skdp's events are written in one convention (:mod:`skdp.accounting._events`): replace-one
neighbours, and ``GaussianDpEvent(z)`` means a release whose *replace-one* L2 sensitivity is
``2C`` with noise ``zC`` -- a ``mu = 2/z`` Gaussian-DP mechanism.  dp-accounting's
``RdpAccountant`` computes the Rényi divergence of ``GaussianDpEvent(z)`` as that of
``N(0, z^2)`` versus ``N(1, z^2)`` -- sensitivity ``1`` in units of ``C`` -- under *every*
neighbouring relation (its Gaussian branch ignores the relation).  Read directly it would
report ``alpha / (2 z^2)`` instead of the true ``alpha (2/z)^2 / 2 = 2 alpha / z^2``: a
four-fold under-count of the Rényi divergence .

Derivation of the translation.  The Rényi divergence of order ``alpha`` between
``N(a, s^2 I)`` and ``N(b, s^2 I)`` is ``alpha ||a - b||^2 / (2 s^2)``, and the supremum over
neighbouring datasets of ``||q(S) - q(S')||`` is the sensitivity, so a Gaussian release
with replace-one sensitivity ``Delta`` and noise ``sigma`` is ``(alpha, alpha mu^2/2)``-RDP
with ``mu = Delta / sigma`` -- exactly, and the Gaussian pair is symmetric, so the bound is
the same in both directions.  skdp's ``GaussianDpEvent(z)`` has ``mu = 2/z``;
dp-accounting's ``GaussianDpEvent(z')`` is read as ``mu = 1/z'``.  Hence

    skdp GaussianDpEvent(z)   ->   RDP GaussianDpEvent(z / 2),

which has the same RDP curve ``2 alpha / z^2`` at every order.  (This is the suggested
"z/2 under add/remove" translation; for the Gaussian mechanism the add/remove and
replace-one guarantees coincide once the sensitivity is the replace-one one.)

The other events skdp builds:

* ``RandomizedResponseDpEvent(p, 2)`` -- skdp's record of a pure epsilon-DP release (the
  binary randomized-response pair, which dominates every epsilon-DP pair, Kairouz, Oh &
  Viswanath 2015).  ``RdpAccountant(REPLACE_ONE)`` computes the Rényi divergence of exactly
  that pair, ``P = (1 - p/2, p/2)`` versus ``Q = (p/2, 1 - p/2)`` (same convention as the
  PLD path), so it is passed through unchanged under ``REPLACE_ONE``.  Dominance in every
  hockey-stick divergence is Blackwell dominance, so it also bounds every Rényi divergence.
  Other bucket counts are not events skdp builds and are refused.
* ``ZCDpEvent(rho, xi)`` -- the composable record of objective perturbation
  (:mod:`skdp.accounting._objective_perturbation`): already a bound on the Rényi divergence
  between the two replace-one output laws, ``RDP_alpha <= xi + alpha rho``, so it is passed
  through unchanged (``RdpAccountant`` reads it the same under both relations).
* ``ComposedDpEvent``, ``SelfComposedDpEvent``, ``NoOpDpEvent``, ``NonPrivateDpEvent``:
  structural, translated recursively / passed through.
* ``RepeatAndSelectDpEvent(event, mean, shape)`` (Papernot & Steinke, ICLR 2022): the inner
  event is translated; dp-accounting computes Theorem 2 (truncated negative binomial
  number of runs, ``0 <= shape < inf``) or Theorem 6 (Poisson) from the inner RDP curve.
* Everything else is refused with :class:`~skdp.exceptions.UnsupportedDpEventError`, in
  particular ``PoissonSampledDpEvent`` (DP-SGD): under replace-one the RDP accountant has no
  exact bound for it (it refuses the relation), and reading it under add/remove would be
  the wrong neighbouring relation.  Those events are accounted by PLD only
  (:func:`skdp.accounting.get_epsilon`), which cannot account ``RepeatAndSelect``.

RDP to (epsilon, delta) uses dp-accounting's conversion (Canonne, Kamath & Steinke 2020),
an upper bound: ``rdp_epsilon`` is never below the exact epsilon of the event, and for a
single Gaussian it is typically 5-20 % above the Balle–Wang value (the price of RDP, paid
only where RDP is the only exact-enough analysis, i.e. private selection).
"""

import functools
import math

from ..exceptions import UnsupportedDpEventError
from . import _lazy_dp_accounting as dp_accounting  # events only; see that module

__all__ = ["to_rdp_event", "rdp_epsilon", "rdp_delta", "repeat_and_select_event"]

RepeatAndSelectDpEvent = dp_accounting.dp_event.RepeatAndSelectDpEvent


def to_rdp_event(event):
    """Translate an skdp event into one that ``RdpAccountant(REPLACE_ONE)`` reads exactly.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event in skdp's convention (:mod:`skdp.accounting._events`).

    Returns
    -------
    dp_accounting.DpEvent
        The same event tree with every ``GaussianDpEvent(z)`` replaced by
        ``GaussianDpEvent(z / 2)`` (derivation in :mod:`skdp.accounting._rdp`).

    Raises
    ------
    UnsupportedDpEventError
        For events that RDP cannot account exactly under replace-one neighbours
        (Poisson-sampled events, non-binary randomized response, unknown events).

    Examples
    --------
    >>> from skdp.accounting import gaussian_event, to_rdp_event
    >>> to_rdp_event(gaussian_event(1.0, 1.0)).noise_multiplier   # skdp z = 2
    1.0
    """
    if isinstance(event, (dp_accounting.NoOpDpEvent, dp_accounting.NonPrivateDpEvent)):
        return event
    if isinstance(event, dp_accounting.dp_event.ZCDpEvent):
        # A zCDP curve is a bound on the Renyi divergence between the two neighbouring
        # output laws themselves: skdp builds it for replace-one neighbours (objective
        # perturbation), and RdpAccountant reads it identically under both relations.
        return event
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        if event.num_buckets == 2:
            return event
    elif isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([to_rdp_event(e) for e in event.events])
    elif isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(to_rdp_event(event.event), event.count)
    elif isinstance(event, RepeatAndSelectDpEvent):
        return RepeatAndSelectDpEvent(to_rdp_event(event.event), event.mean, event.shape)
    raise UnsupportedDpEventError(
        f"{type(event).__name__} cannot be accounted exactly by Rényi DP under replace-one "
        f"neighbours ({event!r}); skdp accounts it with PLD only "
        "(skdp.accounting.get_epsilon), which cannot account private selection"
    )


def _accountant(event):
    # replace-one: the relation under which translated events are read (module docstring)
    from dp_accounting.rdp import RdpAccountant  # scipy, absl: imported when used

    from ._events import NEIGHBORING_RELATION

    acc = RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    translated = to_rdp_event(event)
    try:
        acc.compose(translated)
    except dp_accounting.UnsupportedEventError as exc:  # pragma: no cover - guarded above
        raise UnsupportedDpEventError(str(exc)) from exc
    return acc


@functools.lru_cache(maxsize=512)
def _rdp_epsilon_cached(key, delta, event_box):
    return float(_accountant(event_box[0]).get_epsilon(delta))


def rdp_epsilon(event, delta):
    """epsilon at ``delta`` of an skdp event by Rényi-DP accounting (an upper bound).

    The event is translated by :func:`to_rdp_event` and composed in dp-accounting's
    ``RdpAccountant`` under replace-one neighbours; the RDP curve is converted to
    (epsilon, delta) by dp-accounting.  Use it for events that contain
    ``RepeatAndSelectDpEvent`` (private selection); for everything else
    :func:`skdp.accounting.get_epsilon` is tighter.

    Parameters
    ----------
    event : dp_accounting.DpEvent
    delta : float in (0, 1)

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from skdp.accounting import gaussian_epsilon, gaussian_event, rdp_epsilon
    >>> ev = gaussian_event(4.0, 1.0)                 # mu = 1/4 Gaussian DP
    >>> exact = gaussian_epsilon(1e-6, 0.25)
    >>> bool(exact <= rdp_epsilon(ev, 1e-6) <= 1.3 * exact)
    True
    """
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1) for Rényi-DP accounting, got {delta!r}")
    # dp-accounting events are attrs classes with a complete, deterministic repr; a
    # ComposedDpEvent holds a list and is not hashable, so the cache is keyed by the repr.
    return _rdp_epsilon_cached(repr(event), delta, _Box(event))


def rdp_delta(event, epsilon):
    """delta at ``epsilon`` of an skdp event by Rényi-DP accounting (an upper bound).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event in skdp's convention (translated by :func:`to_rdp_event`), possibly
        containing :func:`repeat_and_select_event` events.
    epsilon : float
        Target epsilon, >= 0.

    Returns
    -------
    delta : float
        An upper bound on the smallest delta for which ``event`` is ``(epsilon, delta)``-DP.

    Examples
    --------
    >>> from skdp.accounting import gaussian_event, rdp_delta
    >>> rdp_delta(gaussian_event(4.0, 1.0), 5.0) < 1e-6
    True
    """
    epsilon = float(epsilon)
    if not epsilon >= 0.0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    return float(_accountant(event).get_delta(epsilon))


class _Box(tuple):
    """Carries an event through ``lru_cache`` without taking part in the key."""

    def __new__(cls, event):
        return super().__new__(cls, (event,))

    def __hash__(self):
        return 0

    def __eq__(self, other):
        return isinstance(other, _Box)


def repeat_and_select_event(event, mean, shape):
    """Event of the best of a random number of runs of ``event`` (Papernot & Steinke 2022).

    The number of runs ``K`` follows a truncated negative binomial distribution with
    ``E[K] = mean`` and shape ``eta = shape`` (``0``: logarithmic, ``1``: geometric,
    ``math.inf``: Poisson); only the best run's output is released.  The result is in
    skdp's convention and is accounted by :func:`rdp_epsilon` only.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event of one run (skdp's convention; must be accountable in Rényi DP).
    mean : float
        Expected number of runs ``E[K]``, finite and >= 1.
    shape : float
        Shape ``eta >= 0`` of the truncated negative binomial law of ``K``.

    Returns
    -------
    event : RepeatAndSelectDpEvent
        The event of the whole selection, for :func:`rdp_epsilon` / :func:`rdp_delta`.

    Examples
    --------
    >>> from skdp.accounting import gaussian_event, rdp_epsilon, repeat_and_select_event
    >>> one = gaussian_event(4.0, 1.0)
    >>> best = repeat_and_select_event(one, mean=10, shape=1.0)
    >>> bool(rdp_epsilon(best, 1e-6) > rdp_epsilon(one, 1e-6))
    True
    """
    mean = float(mean)
    shape = float(shape)
    if not (mean >= 1.0 and math.isfinite(mean)):
        raise ValueError(f"mean number of repetitions must be finite and >= 1, got {mean!r}")
    if not shape >= 0.0:
        raise ValueError(f"shape must be >= 0, got {shape!r}")
    to_rdp_event(event)  # refuse early what RDP cannot account
    return RepeatAndSelectDpEvent(event, mean, shape)
