r"""A Rényi-DP privacy filter: a budget check that stays valid when each release is chosen
after seeing the earlier ones.

Why the ledger needs it
-----------------------
:class:`~skdp.accounting.PrivacyLedger` composes its events exactly (Gaussian-DP closed
forms, the PLD accountant) and refuses a release that would take the composition over
``(epsilon, delta)``.  That total is a proof only for a sequence of events fixed in
advance.  In an interactive session the analyst picks the next ``epsilon``, solver or
estimator after reading the last model: the events are *adaptive*, and the budget check is
a *privacy filter* (Rogers, Roth, Ullman & Vadhan 2016).  Composing the privacy profiles of
what happened and stopping when the curve crosses the budget is not a valid filter in
general (Rogers et al. 2016 for advanced composition; for trade-off curves, the natural
f-DP filter is invalid, arXiv 2602.06756).

The filter
----------
Feldman & Zrnic (2021, "Individual privacy accounting via a Rényi filter") proved that
Rényi DP of one *fixed* order composes under full adaptivity: if the ``i``-th release,
given everything released before it, is ``(alpha, r_i)``-RDP, and the analyst stops so that
``r_1 + ... + r_k <= B`` on every path, the whole interaction is ``(alpha, B)``-RDP.  (Haney
et al. 2023 extend it to concurrently running mechanisms, the ledger's parallel fits.)  The
filter here fixes, when the ledger is created and from its budget alone,

* the order ``alpha`` (:func:`gaussian_optimal_order`),
* a part ``delta_reserve = LEDGER_FILTER_DELTA_RESERVE_SHARE * delta`` for the
  ``(0, delta)`` parts of events (:class:`~skdp.accounting.DeltaDpEvent`, the thresholds of
  private category discoveries), and the rest ``delta_rdp = delta - delta_reserve``,
* the Rényi budget ``B`` (:func:`renyi_budget`): the largest ``B`` whose conversion at
  ``alpha`` and ``delta_rdp`` is at most ``epsilon``, less a margin for rounding
  (``1e-12 B`` and a bound on the float conversion's error), so that whatever is admitted
  converts to at most ``epsilon`` in exact arithmetic,

and admits a release only if, with it, the Rényi divergences at ``alpha`` sum to at most
``B`` *and* the ``(0, delta)`` parts sum to at most ``delta_reserve`` (each sum rounded
once, ``math.fsum``).  A budget so small that no positive ``B`` is left at the largest
order searched is refused when the ledger is created
(:func:`smallest_filter_epsilon`: ``1.59e-4`` at ``delta = 1e-12``).

**Proof of the guarantee.**  For a pair of neighbours ``(D, D')`` write ``P`` and ``R`` for
the laws of the whole transcript.  Each release ``i`` has (given the past, module
:mod:`skdp.accounting._rdp`, "(0, delta) parts") laws ``P_i'`` with
``TV(M_i(D), P_i') <= delta_i`` and Rényi divergences between ``P_i'`` and ``M_i(D')`` at
most ``r_i``.  Couple each release with its ``P_i'`` maximally: the transcripts differ
with probability at most ``E[sum_i delta_i] <= delta_reserve``, because the filter keeps
the sum below ``delta_reserve`` on every path.  The transcript drawn from the ``P_i'`` and
``R`` form an adaptive Rényi composition whose divergences sum to at most ``B`` on every
path, hence ``D_alpha <= B`` (Feldman & Zrnic), and the conversion of dp-accounting
(Canonne, Kamath & Steinke 2020; Asoodeh et al. 2021) gives, for every set ``S`` of
transcripts, ``P(S) <= e^epsilon R(S) + delta_rdp + delta_reserve``.  The interaction is
``(epsilon, delta)``-DP whatever the analyst chose, whenever the filter admitted it.

**Its price.**  One order and a fixed split are what the proof needs; the exact, non-
adaptive composition is tighter.  For Gaussian releases at ``(epsilon, delta) = (1, 1e-6)``
the filter admits 0.819 of the ``mu^2`` the exact Gaussian-DP composition admits (0.869
with no reserve; 0.784 at ``epsilon = 0.1``, 0.866 at 10), so a single fit asking for
the whole budget is refused: ask each fit for a part of it.  For events that are not
Gaussian (objective perturbation's zCDP record, DP-SGD's sampled steps, private selection)
the Rényi curve is what their own accounting rests on, and the filter reads it at
``alpha``.
"""

import functools
import math
from dataclasses import dataclass

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module

__all__ = ["RenyiFilter", "gaussian_optimal_order", "renyi_budget", "event_rdp_at",
           "smallest_filter_epsilon"]

#: Orders are searched in ``[MIN_ORDER, MAX_ORDER]``.  dp-accounting's conversion needs
#: ``alpha > 1.01``.  The cap is a cost, not an optimum: the Rényi divergence of a sampled
#: event (DP-SGD's steps) at a fractional order costs time linear in the order
#: (dp-accounting's series; measured 2 s per event at 3.5e4, 5.6 s at 1e5, 60 s at 1.2e6),
#: and a small budget's Gaussian-optimal order grows as ``~1/epsilon`` (3.5e4 at
#: ``(1e-3, 1e-12)``).  A budget whose optimum lies above the cap gets ``MAX_ORDER`` (it
#: admits less than at its optimum); one left with no positive Rényi budget there is
#: refused (:func:`smallest_filter_epsilon`).
MIN_ORDER = 1.02
MAX_ORDER = 1e5

#: Relative part of the margin :func:`renyi_budget` takes off the Rényi budget: it covers
#: the rounding of the admission test (the correctly rounded sum of the divergences, and
#: the margin's own subtraction: ``2u``, ``u = 2^-53``) with room to spare; the rounding
#: of dp-accounting's conversion is taken off explicitly (:func:`conversion_rounding`).
BUDGET_RTOL = 1e-12


def _budget_formula(epsilon, delta, order):
    """dp-accounting's conversion ``epsilon = B + log(1 - 1/alpha) - log(delta alpha) /
    (alpha - 1)`` solved for ``B`` (before the float check of :func:`renyi_budget`)."""
    return epsilon - math.log1p(-1.0 / order) + math.log(delta * order) / (order - 1.0)


def _conversion(order, rdp, delta):
    """dp-accounting's RDP-to-(epsilon, delta) bound at one order (``compute_epsilon``)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    return float(compute_epsilon([order], [rdp], delta)[0])


def conversion_rounding(order, rdp, delta):
    r"""A bound on the rounding error of dp-accounting's float conversion
    ``rdp + log1p(-1/alpha) - log(delta alpha)/(alpha - 1)`` (``compute_epsilon``).

    With ``u = 2^-53`` and the library's ``log``/``log1p`` within one unit in the last place
    (``2u`` relative): ``-1/alpha`` is rounded (relative ``u``, which ``log1p`` turns into
    an absolute ``u/(alpha - 1)``), ``log1p`` adds ``2u |t_1|``; ``delta alpha`` is rounded
    (absolute ``u`` after ``log``, ``u/(alpha - 1)`` after the division), ``log`` adds
    ``2u |log(delta alpha)|`` and ``alpha - 1`` and the division ``2u |t_2|``; the two
    additions add ``u`` of their results, at most ``u (|r| + |t_1|)`` and ``u (|r| + |t_1|
    + |t_2|)``.  Every coefficient is at most ``5u``; the bound takes
    ``2^-49 = 16u`` times ``|r| + |t_1| + |t_2| + 1/(alpha - 1)``, where
    ``t_1 = log1p(-1/alpha)`` and ``t_2 = log(delta alpha)/(alpha - 1)``.

    Examples
    --------
    >>> from skdp.accounting._filter import conversion_rounding
    >>> conversion_rounding(23.26, 0.5335, 5e-7) < 1e-14
    True
    """
    t_1 = abs(math.log1p(-1.0 / order))
    t_2 = abs(math.log(delta * order) / (order - 1.0))
    return 2.0 ** -49 * (abs(rdp) + t_1 + t_2 + 1.0 / (order - 1.0))


def renyi_budget(epsilon, delta, order):
    r"""The Rényi budget ``B`` at ``order`` whose admitted divergences prove
    ``(epsilon, delta)``, with a margin for rounding.

    dp-accounting converts ``(alpha, B)``-RDP into ``(epsilon, delta)``-DP with
    ``epsilon = B + log(1 - 1/alpha) - log(delta alpha) / (alpha - 1)``; solved for ``B``:

    .. math:: B_0 = \varepsilon - \log(1 - 1/\alpha) + \frac{\log(\delta\alpha)}{\alpha - 1},

    then lowered by floating-point steps until the float conversion ``c~(B_0)`` is at most
    ``epsilon``, and returned as

    .. math:: B = B_0 - \rho B_0 - E, \qquad \rho = \mathrm{BUDGET\_RTOL} = 10^{-12},
       \quad E = \mathrm{conversion\_rounding}(\alpha, B_0, \delta).

    **Why the margin suffices.**  The filter admits divergences ``r_i`` when their sum
    rounded to nearest (``math.fsum``), ``s``, is at most ``B``; so their exact sum is
    ``S <= s (1 + u) <= B (1 + u)``, and ``B`` itself is within ``u`` of ``B_0 - rho B_0
    - E``: ``S <= (B_0 (1 - rho) - E)(1 + 2.0001 u) <= B_0 - E`` as ``rho >= 2.0001 u``.
    The exact conversion ``c(S) = S + t`` (``t`` the terms of the order and ``delta``)
    satisfies ``c(B_0) <= c~(B_0) + E <= epsilon + E`` (:func:`conversion_rounding`), so
    ``c(S) = c(B_0) - (B_0 - S) <= epsilon``: what is admitted proves ``(epsilon,
    delta)`` in exact arithmetic, however many releases it sums (a float sum left to right
    can lose ``(k - 1) u`` of ``k`` terms; the correctly rounded one loses ``u``).  (Where
    ``B_0`` is below ``-log(1 - delta^2)``, dp-accounting proves the budget through the
    KL divergence instead, ``epsilon = 0``, whose few units of rounding ``rho`` covers.)
    The margin costs ``10^-12`` of the budget.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    order : float > 1.01

    Returns
    -------
    budget : float
        ``<= 0`` when no release fits at this order.

    Examples
    --------
    >>> from skdp.accounting._filter import renyi_budget
    >>> round(renyi_budget(1.0, 1e-6, 22.0), 4)
    0.5358
    """
    budget = _budget_formula(epsilon, delta, order)
    while budget > 0.0 and _conversion(order, budget, delta) > epsilon:
        budget = math.nextafter(budget, 0.0)
    if not budget > 0.0:
        return budget
    return budget - (BUDGET_RTOL * budget + conversion_rounding(order, budget, delta))


def smallest_filter_epsilon(delta):
    r"""The epsilon below which an adaptive ledger of budget ``(epsilon, delta)`` has no
    positive Rényi budget: the conversion at ``MAX_ORDER`` of a zero divergence,
    ``log(1 - 1/alpha) - log(delta_rdp alpha)/(alpha - 1)``, with ``delta_rdp`` the part of
    ``delta`` the conversion uses (:meth:`RenyiFilter.for_budget`), rounded up to three
    significant digits (0 when every epsilon works).  Public: ``delta`` only.

    Examples
    --------
    >>> from skdp.accounting._filter import smallest_filter_epsilon
    >>> smallest_filter_epsilon(1e-12), smallest_filter_epsilon(1e-6)
    (0.000159, 2e-05)
    """
    from ..linear_model._auto import LEDGER_FILTER_DELTA_RESERVE_SHARE

    delta_rdp = delta - LEDGER_FILTER_DELTA_RESERVE_SHARE * delta
    order = MAX_ORDER
    floor = math.log1p(-1.0 / order) - math.log(delta_rdp * order) / (order - 1.0)
    if not floor > 0.0:
        return 0.0
    # the margins of renyi_budget move it by ~1e-12 relative: 3 digits rounded up
    unit = 10.0 ** (math.floor(math.log10(floor)) - 2)
    return float(f"{math.ceil(floor * (1.0 + 1e-9) / unit) * unit:.3g}")


def gaussian_optimal_order(epsilon, delta):
    r"""The order at which the filter admits the largest Gaussian workload.

    A Gaussian release with Gaussian-DP parameter ``mu`` is ``(alpha, alpha mu^2/2)``-RDP at
    every order, so a Rényi budget ``B(alpha)`` (:func:`renyi_budget`) admits a total
    ``sum_i mu_i^2 <= 2 B(alpha) / alpha``.  The order maximises that, over
    ``[MIN_ORDER, MAX_ORDER]`` (bounded scalar search on ``log alpha``), and is rounded to
    four significant digits (a readable, reproducible value for the store; the budget is
    computed at the rounded order).  It depends on ``(epsilon, delta)`` only.

    Examples
    --------
    >>> from skdp.accounting._filter import gaussian_optimal_order
    >>> gaussian_optimal_order(1.0, 5e-7)
    23.26
    """
    from scipy.optimize import minimize_scalar

    def minus_admitted(log_order):
        order = math.exp(log_order)
        return -_budget_formula(epsilon, delta, order) / order

    best = minimize_scalar(minus_admitted, bounds=(math.log(MIN_ORDER), math.log(MAX_ORDER)),
                           method="bounded", options={"xatol": 1e-6})
    order = float(f"{math.exp(best.x):.4g}")
    return min(max(order, MIN_ORDER), MAX_ORDER)


@functools.lru_cache(maxsize=4096)
def event_rdp_at(event_text, order):
    """``(rdp, delta_sum)`` of a stored event at ``order``.

    ``event_text`` is the ledger's JSON of the event (:func:`skdp.accounting._ledger.
    event_to_json`, canonical, so it keys the cache).  The event's ``DeltaDpEvent`` parts are
    peeled off (their sum, :func:`skdp.accounting._rdp.peel_delta_events`); the rest is
    translated into dp-accounting's convention (:func:`skdp.accounting._rdp.to_rdp_event`)
    and composed in skdp's replace-one Rényi accountant on dp-accounting's default orders
    and ``order`` -- the other orders serve private selection's formula (Papernot & Steinke
    2022), which bounds the divergence at one order from the inner curve at others -- and
    the divergence at ``order`` is returned.  ``inf`` for a non-private fit.
    """
    import numpy as np
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    from ._events import NEIGHBORING_RELATION
    from ._ledger import event_from_json
    from ._rdp import _accountant_class, peel_delta_events, to_rdp_event

    rest, delta_sum = peel_delta_events(event_from_json(event_text))
    if isinstance(rest, dp_accounting.NonPrivateDpEvent):
        return math.inf, delta_sum
    orders = sorted(set(DEFAULT_RDP_ORDERS) | {float(order)})
    accountant = _accountant_class()(orders=orders, neighboring_relation=NEIGHBORING_RELATION)
    accountant.compose(to_rdp_event(rest))
    rdp = float(np.asarray(accountant._rdp)[orders.index(float(order))])
    return (math.inf if math.isnan(rdp) else max(rdp, 0.0)), delta_sum


@dataclass(frozen=True)
class RenyiFilter:
    """A fixed-order Rényi filter for a budget ``(epsilon, delta)`` (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The budget the whole interaction keeps.
    order : float
        The Rényi order ``alpha``, fixed before any release.
    delta_reserve : float
        The part of ``delta`` for the events' ``(0, delta)`` parts.

    Attributes
    ----------
    epsilon, delta, order, delta_reserve : float
        As given.
    budget : float
        The Rényi budget ``B`` at ``order``.
    delta_rdp : float
        ``delta - delta_reserve``, the part of ``delta`` the Rényi conversion uses.

    Examples
    --------
    >>> from skdp.accounting import RenyiFilter
    >>> from skdp.accounting._ledger import event_to_json
    >>> from skdp.accounting import gaussian_event
    >>> flt = RenyiFilter.for_budget(1.0, 1e-6)
    >>> flt.order, round(flt.budget, 4)
    (23.26, 0.5335)
    >>> one = event_to_json(gaussian_event(8.0, 1.0))   # mu = 1/8: 0.1817 at order 23.26
    >>> flt.admits([one] * 2), flt.admits([one] * 3)    # exact composition admits 3
    (True, False)
    """

    epsilon: float
    delta: float
    order: float
    delta_reserve: float

    @classmethod
    def for_budget(cls, epsilon, delta):
        """The filter skdp fixes for ``(epsilon, delta)``: the Gaussian-optimal order at
        ``delta - delta_reserve``, ``delta_reserve`` from
        :data:`skdp.linear_model._auto.LEDGER_FILTER_DELTA_RESERVE_SHARE`.

        Raises
        ------
        ValueError
            When ``epsilon`` is at most :func:`smallest_filter_epsilon` of ``delta``: the
            filter would have no positive Rényi budget and refuse every release."""
        from ..linear_model._auto import LEDGER_FILTER_DELTA_RESERVE_SHARE

        reserve = LEDGER_FILTER_DELTA_RESERVE_SHARE * delta
        order = gaussian_optimal_order(epsilon, delta - reserve)
        flt = cls(float(epsilon), float(delta), order, float(reserve))
        if not flt.budget > 0.0:
            # the order is capped (MAX_ORDER): a budget this small has no Rényi budget
            raise ValueError(
                f"an adaptive ledger at delta={delta:g} needs epsilon > "
                f"{smallest_filter_epsilon(delta):g}, got epsilon={epsilon:g}: below that "
                f"its Rényi filter, whose order is capped at {MAX_ORDER:g}, admits nothing "
                "(skdp.accounting._filter.MAX_ORDER). Use a larger epsilon or delta, or "
                "adaptive=False (exact composition, for fits fixed in advance)")
        return flt

    @property
    def delta_rdp(self):
        """The part of ``delta`` the Rényi conversion uses."""
        return self.delta - self.delta_reserve

    @functools.cached_property
    def budget(self):
        """The Rényi budget ``B`` at :attr:`order` (:func:`renyi_budget`; computed once)."""
        return renyi_budget(self.epsilon, self.delta_rdp, self.order)

    def spent(self, event_texts):
        """``(sum of Rényi divergences at the order, sum of (0, delta) parts)``, each the
        exact sum of the floats rounded once (``math.fsum``: :func:`renyi_budget`'s
        margin covers one rounding, whatever the number of releases)."""
        parts = [event_rdp_at(text, self.order) for text in event_texts]
        return (math.fsum(r for r, _ in parts), math.fsum(d for _, d in parts))

    def admits(self, event_texts):
        """Whether the interaction made of ``event_texts`` stays within the filter."""
        rdp, delta_sum = self.spent(event_texts)
        return rdp <= self.budget and delta_sum <= self.delta_reserve

    def gaussian_epsilon_left(self, event_texts, delta=None):
        """Epsilon at ``delta`` (default: the budget's) of the largest Gaussian release the
        filter would still admit: Gaussian-DP ``mu`` with ``alpha mu^2 / 2`` the Rényi budget
        left (0 when nothing is left)."""
        from ._gaussian import gaussian_epsilon

        rdp, _ = self.spent(event_texts)
        left = self.budget - rdp
        if not left > 0.0:
            return 0.0
        mu = math.sqrt(2.0 * left / self.order)
        return float(gaussian_epsilon(self.delta if delta is None else delta, mu))
