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
* ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` (a DP-SGD step) -- translated into
  the private event :class:`ReplaceOneSampledGaussianDpEvent`, whose curve is the
  replace-one bound derived below ("The Poisson-sampled Gaussian under replace-one").
* ``DeltaDpEvent(delta_T)`` (the threshold of a private category discovery,
  :mod:`skdp.preprocessing._categorical`) -- not a Rényi curve: :func:`rdp_epsilon` and
  :func:`rdp_delta` peel it off and add its ``delta_T`` ("(0, delta) parts" below).
* Everything else is refused with :class:`~skdp.exceptions.UnsupportedDpEventError`
  (Laplace, randomized response with more than two buckets, sampling without replacement,
  a Poisson-sampled event whose inner event is not a single ``GaussianDpEvent``, unknown
  events): dp-accounting has no curve for them under replace-one neighbours in skdp's
  convention, and reading them under another relation could under-count.

The Poisson-sampled Gaussian under replace-one
----------------------------------------------
A step includes every record independently with probability ``q``, sums the included
contributions (each bounded by ``C`` in L2) and adds ``N(0, (zC)^2 I)``
(:mod:`skdp.accounting._sampled`: ``z`` is relative to the per-record bound ``C``, the
same unit as dp-accounting's add/remove sensitivity).  Let ``eps_AR(beta)`` be
dp-accounting's RDP curve of ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` under
ADD_OR_REMOVE_ONE (``_compute_rdp_poisson_subsampled_gaussian``): by Mironov, Talwar &
Zhang (2019, Sec. 3, Theorems 4 and 5) it bounds the Rényi divergence of order ``beta``
between the outputs on *any* two datasets differing by adding or removing one record, in
*both* directions (``(1/(beta-1)) log A_beta``; the "add" direction ``A_beta`` dominates the
"remove" one ``B_beta``; ``tests/accounting/test_rdp_sampled.py`` checks both directions
by numerical integration).

*Weak triangle inequality* (Mironov 2017, Proposition 11).  For distributions ``P, Q, R``,
``alpha > 1`` and Hölder exponents ``p, p' = p/(p-1)``: writing
``P^alpha R^(1-alpha) = [P^alpha Q^-(alpha-1/p)] [Q^(alpha-1/p) R^(1-alpha)]`` and applying
Hölder,

    (alpha-1) D_alpha(P||R) <= (alpha-1/p) D_{p alpha}(P||Q) + (alpha-1) D_{beta}(Q||R),
    beta = p' (alpha - 1/p)

(the first factor integrates to ``exp((p alpha - 1) D_{p alpha}(P||Q))`` to the power
``1/p``; in the second the exponents ``p'(alpha-1/p)`` and ``p'(1-alpha)`` add to 1 and
``(beta - 1)/p' = alpha - 1``).  Replacing record ``r`` of ``D`` by ``r'`` (giving ``D'``)
is removing ``r`` (giving ``D''``) and then adding ``r'``; with ``P = M(D)``,
``Q = M(D'')``, ``R = M(D')`` both divergences on the right are add/remove divergences of
the sampled Gaussian, so every step of DP-SGD is ``(alpha, eps_R(alpha))``-RDP under
replace-one with

    eps_R(alpha) = min_p [ (alpha-1/p)/(alpha-1) eps_AR(p alpha) + eps_AR(p'(alpha-1/p)) ],

``p`` over the fixed set ``HOLDER_EXPONENTS`` (``p = 2`` gives orders ``2 alpha`` and
``2 alpha - 1``).  dp-accounting evaluates ``eps_AR`` at fractional orders (Mironov, Talwar
& Zhang 2019, Sec. 3.3); where its series does not converge it returns ``inf`` and we use
the next integer order instead (``D_beta`` is non-decreasing in ``beta``, van Erven &
Harremoës 2014, Theorem 3).  We also take the minimum with the *convexity bound*: the
output laws are mixtures, over the other records' coins, of ``(1-q) N(s) + q N(s + g)`` and
``(1-q) N(s) + q N(s + g')``, ``||g - g'|| <= 2C``, and ``(P, R) -> int P^alpha R^(1-alpha)``
is jointly convex, so ``eps_R(alpha) <= log(1 - q + q exp((alpha-1) 2 alpha/z^2))/(alpha-1)``
-- exact at ``q = 1`` (the Gaussian mechanism with sensitivity ``2C``, curve
``2 alpha/z^2``) and better than the triangle at large orders.  RDP composes adaptively
(Mironov 2017, Proposition 1), so ``T`` steps have curve ``T eps_R``.

*Not wasteful to first order.*  For small ``q`` (second order in ``q``),
``eps_AR(beta) ~ beta c`` with ``c = q^2 (e^u - 1)/2``, ``u = 1/z^2`` (the chi-square
expansion ``D_beta ~ beta chi^2/2``, ``E_N(0)[L_a L_b] = e^(a b u)`` for the likelihood
ratios ``L_a`` of ``N(a, z^2)`` to ``N(0, z^2)``), and the exact replace-one divergence of
the one-dimensional pair ``(1-q) N(0, z^2) + q N(+-1, z^2)`` is
``~ (alpha/2) q^2 E[(L_1 - L_-1)^2] = alpha q^2 (e^u - e^-u)``.  At ``p = 2`` the bound is
``c [2 alpha (alpha-1/2)/(alpha-1) + 2 alpha - 1] = c (2 alpha - 1)^2/(alpha-1)``, a ratio

    (2 alpha - 1)^2 / (4 alpha (alpha-1))  x  2 / (1 + e^(-1/z^2))

to the truth: 1 + 1/(4 alpha (alpha-1)) (1.125 at ``alpha = 2``, 1.01 at ``alpha = 6``)
times a factor that is 1.005 at ``z = 10``, 1.12 at ``z = 2`` and 1.46 at ``z = 1``
(``tests/accounting/test_rdp_sampled.py`` checks it by quadrature).  Beyond first order
the add/remove curve grows faster than linearly in the order when ``z`` is near 1, and
the doubled orders pay for it.  In (epsilon, delta), against dp-accounting's PLD of the
same event under replace-one, measured at ``delta = 1e-6`` for ``q`` in 0.02-0.1 and
``T`` in 100-2000, ``rdp_epsilon`` is 1.08-1.15x at ``z`` of 5-10, 1.19-1.35x at
``z = 2`` and 1.57-2.4x at ``z = 1`` (the largest at ``T = 100``); about 1.07-1.14x of it
is the price of RDP itself (dp-accounting's add/remove RDP against its add/remove PLD).  Use it where only RDP can account the event
(private selection); :func:`skdp.accounting.get_epsilon` reports DP-SGD fits by PLD.

(0, delta) parts: ``DeltaDpEvent``
---------------------------------
``DeltaDpEvent(delta_T)`` inside a composition records that the release is within
``delta_T`` of one accounted by the rest, in this sense: for every ordered pair of
neighbours ``(D, D')`` there are output laws ``P'``, ``R'`` whose Rényi divergences (both
directions) are bounded by the curve of the event with its ``DeltaDpEvent`` parts removed,
with ``R' = M(D')`` exactly and ``TV(M(D), P') <= delta_T``.  The category discovery of
:mod:`skdp.preprocessing._categorical` has it: let ``M'`` noise and threshold every value
of the union ``U`` of the supports, and ``phi`` drop the values ``A`` present only in ``D``.
``phi(M'(D'))`` is ``M(D')`` (same values, same counts), ``phi(M'(D))`` and ``M(D)`` driven
by the same noise differ only if an ``A`` value passes in ``M(D)`` or a value ``B``
present only in ``D'`` passes in ``phi(M'(D))`` (probability ``<= |A| q_1 + |B| q_0 <=
delta_T``), and ``(phi(M'(D)), phi(M'(D')))`` is a post-processing of the Gaussian pair on
the coordinates ``U``.  A lone ``DeltaDpEvent`` (a ``(0, delta)``-DP release) has it with
``P' = R' = M(D')``.  The property is preserved by

* adaptive composition: ``P' = P_1' x P_2'`` (given the first output), the curves add,
  ``R' = R`` still, and ``TV(P, P') <= delta_1 + delta_2`` (hybrid argument);
* repeat-and-select with ``K`` runs: couple each run of ``M(D)`` with one of ``P'``
  (maximal coupling); the transcripts differ with probability ``<= E[K] delta_T`` (union
  bound over the runs given ``K``, then the mean over ``K``), so the selection's output
  law is within ``E[K] delta_T`` of the selection run on ``P'``, while on ``D'`` it is the
  selection run on ``R' = M(D')``; Papernot & Steinke (2022, Theorems 2 and 6) bound the
  Rényi divergence of the selections from the curve of the pair ``(P', R')``.  skdp draws
  ``K`` with ``E[K] <= mean`` (:func:`skdp.model_selection._common.tnb_gamma`;
  ``E[K] = mean`` for the Poisson law), so ``mean * delta_T`` is used.

Finally ``P[M(D) in S] <= P'(S) + delta_sum <= e^eps R'(S) + delta_rdp(eps) + delta_sum``
with ``R'(S) = P[M(D') in S]``.  Hence :func:`rdp_epsilon` ``(event, delta)`` is the RDP
epsilon of the event without its ``DeltaDpEvent`` parts at ``delta - delta_sum``, where
``delta_sum`` adds every ``delta_T``, times ``count`` inside ``SelfComposedDpEvent`` and
times ``mean`` inside ``RepeatAndSelectDpEvent`` (``inf`` if ``delta_sum >= delta``), and
:func:`rdp_delta` adds ``delta_sum``.

RDP to (epsilon, delta) uses dp-accounting's conversion (Canonne, Kamath & Steinke 2020),
an upper bound: ``rdp_epsilon`` is never below the exact epsilon of the event, and for a
single Gaussian it is typically 5-20 % above the Balle–Wang value (the price of RDP, paid
only where RDP is the only exact-enough analysis, i.e. private selection).
"""

import functools
import logging
import math

import attr

from ..exceptions import UnsupportedDpEventError
from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._events import DeltaDpEvent

__all__ = ["to_rdp_event", "rdp_epsilon", "rdp_delta", "repeat_and_select_event",
           "ReplaceOneSampledGaussianDpEvent", "replace_one_sampled_gaussian_rdp"]

RepeatAndSelectDpEvent = dp_accounting.dp_event.RepeatAndSelectDpEvent

#: Hölder exponents ``p`` of the weak triangle inequality tried at every order (module
#: docstring); the bound is the minimum over them.  ``p = 2`` alone is within 10 % of the
#: minimum on the DP-SGD schedules measured.
HOLDER_EXPONENTS = (1.5, 2.0, 2.5)


@attr.s(frozen=True)
class ReplaceOneSampledGaussianDpEvent(dp_accounting.DpEvent):
    """One Poisson-sampled Gaussian step (skdp's ``PoissonSampledDpEvent(q,
    GaussianDpEvent(z))``) as the RDP path reads it under replace-one neighbours: its
    curve is :func:`replace_one_sampled_gaussian_rdp` (module docstring).  Built by
    :func:`to_rdp_event` only; no other accountant knows it.

    Parameters
    ----------
    sampling_probability : float in (0, 1]
    noise_multiplier : float >= 0
        Noise standard deviation over the per-record L2 bound ``C``.
    """

    sampling_probability = attr.ib(type=float)
    noise_multiplier = attr.ib(type=float)


def _rdp_module():
    from dp_accounting.rdp import rdp_privacy_accountant  # scipy, absl: imported when used

    return rdp_privacy_accountant


@functools.lru_cache(maxsize=65536)
def _add_remove_rdp(q, z, order):
    """dp-accounting's add/remove RDP of the Poisson-sampled Gaussian at one order (both
    directions, Mironov, Talwar & Zhang 2019); at a fractional order whose series does not
    converge, the value at the next integer order (RDP is non-decreasing in the order)."""
    rdp = _rdp_module()
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)  # the non-convergence warning is handled here
    try:
        value = float(rdp._compute_rdp_poisson_subsampled_gaussian(q, z, [order])[0])
        if not math.isfinite(value) and not float(order).is_integer():
            value = float(rdp._compute_rdp_poisson_subsampled_gaussian(
                q, z, [float(math.ceil(order))])[0])
    finally:
        absl_logger.setLevel(level)
    return value if value >= 0.0 else 0.0  # rounding below 0 at tiny q: 0 is the floor


def _replace_one_at(q, z, alpha):
    """The replace-one bound at one order ``alpha > 1`` (module docstring)."""
    if z == 0.0:
        return math.inf
    # convexity bound (exact at q = 1): log(1 - q + q exp((alpha-1) 2 alpha / z^2))/(alpha-1)
    x = (alpha - 1.0) * 2.0 * alpha / (z * z)
    if x < 50.0:
        convex = math.log1p(q * math.expm1(x)) / (alpha - 1.0)
    else:  # log(1 - q + q e^x) = x + log(q + (1 - q) e^-x), no overflow
        convex = (x + math.log(q + (1.0 - q) * math.exp(-x))) / (alpha - 1.0)
    if q >= 1.0:
        return convex
    return min([convex] + [_triangle_bound(q, z, alpha, p) for p in HOLDER_EXPONENTS])


def _triangle_bound(q, z, alpha, p=2.0):
    """Weak triangle inequality (Mironov 2017, Prop. 11) through the dataset without the
    replaced record: ``(alpha-1/p)/(alpha-1) eps_AR(p alpha) + eps_AR(p'(alpha-1/p))``."""
    first = _add_remove_rdp(q, z, p * alpha)
    second = _add_remove_rdp(q, z, p / (p - 1.0) * (alpha - 1.0 / p))
    return (alpha - 1.0 / p) / (alpha - 1.0) * first + second


@functools.lru_cache(maxsize=256)
def _replace_one_curve(q, z, orders):
    import numpy as np

    return np.array([_replace_one_at(q, z, float(a)) if a > 1.0 else math.inf
                     for a in orders])


def replace_one_sampled_gaussian_rdp(sampling_probability, noise_multiplier, orders):
    """Rényi-DP curve of one Poisson-sampled Gaussian step under replace-one neighbours.

    An upper bound at every order (derivation in :mod:`skdp.accounting._rdp`): the minimum
    of the weak-triangle bound ``(alpha-1/p)/(alpha-1) eps_AR(p alpha) +
    eps_AR(p/(p-1) (alpha-1/p))`` over ``p`` in ``HOLDER_EXPONENTS``, ``eps_AR`` being
    dp-accounting's add/remove curve of the sampled Gaussian, and of the convexity bound
    ``log(1 - q + q exp(2 alpha (alpha-1)/z^2))/(alpha-1)``.

    Parameters
    ----------
    sampling_probability : float in [0, 1]
    noise_multiplier : float >= 0
        ``z``: noise standard deviation over the per-record L2 bound (replace-one
        sensitivity of a step's sum is ``2 z``-relative: ``2C``).
    orders : sequence of float
        Rényi orders; ``inf`` is returned at orders ``<= 1``.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> from skdp.accounting._rdp import replace_one_sampled_gaussian_rdp
    >>> float(replace_one_sampled_gaussian_rdp(1.0, 2.0, [3.0])[0])  # 2 alpha / z^2
    1.5
    """
    q = float(sampling_probability)
    z = float(noise_multiplier)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"sampling_probability must be in [0, 1], got {q!r}")
    if not z >= 0.0:
        raise ValueError(f"noise_multiplier must be >= 0, got {z!r}")
    orders = tuple(float(a) for a in orders)
    if q == 0.0:
        import numpy as np

        return np.zeros(len(orders))
    return _replace_one_curve(q, z, orders).copy()


def to_rdp_event(event):
    """Translate an skdp event into one that ``RdpAccountant(REPLACE_ONE)`` reads exactly.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event in skdp's convention (:mod:`skdp.accounting._events`), without
        ``DeltaDpEvent`` parts (:func:`rdp_epsilon` peels them off first).

    Returns
    -------
    dp_accounting.DpEvent
        The same event tree with every ``GaussianDpEvent(z)`` replaced by
        ``GaussianDpEvent(z / 2)`` and every ``PoissonSampledDpEvent(q,
        GaussianDpEvent(z))`` by ``ReplaceOneSampledGaussianDpEvent(q, z)`` (derivations
        in :mod:`skdp.accounting._rdp`); the latter is read by skdp's accountant only.

    Raises
    ------
    UnsupportedDpEventError
        For events that RDP cannot account under replace-one neighbours (Laplace,
        non-binary randomized response, sampling without replacement, unknown events).

    Examples
    --------
    >>> from skdp.accounting import gaussian_event, to_rdp_event
    >>> to_rdp_event(gaussian_event(1.0, 1.0)).noise_multiplier   # skdp z = 2
    1.0
    """
    if isinstance(event, (dp_accounting.NoOpDpEvent, dp_accounting.NonPrivateDpEvent,
                          ReplaceOneSampledGaussianDpEvent)):
        return event
    if isinstance(event, dp_accounting.dp_event.ZCDpEvent):
        # A zCDP curve is a bound on the Renyi divergence between the two neighbouring
        # output laws themselves: skdp builds it for replace-one neighbours (objective
        # perturbation), and RdpAccountant reads it identically under both relations.
        return event
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        q = float(event.sampling_probability)
        inner = event.event
        if isinstance(inner, dp_accounting.GaussianDpEvent) and 0.0 <= q <= 1.0 and \
                inner.noise_multiplier >= 0.0:
            if q == 0.0:
                return dp_accounting.NoOpDpEvent()
            return ReplaceOneSampledGaussianDpEvent(q, float(inner.noise_multiplier))
    elif isinstance(event, dp_accounting.RandomizedResponseDpEvent):
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


def peel_delta_events(event):
    """``(rest, delta_sum)``: ``event`` without its ``DeltaDpEvent`` parts and the sum of
    their deltas, times ``count`` inside ``SelfComposedDpEvent`` and times ``mean`` inside
    ``RepeatAndSelectDpEvent`` (proof in the module docstring).

    Examples
    --------
    >>> from skdp.accounting import DeltaDpEvent, compose, gaussian_event
    >>> from skdp.accounting import repeat_and_select_event
    >>> from skdp.accounting._rdp import peel_delta_events
    >>> run = compose(gaussian_event(1.0, 1.0), DeltaDpEvent(1e-7))
    >>> rest, d = peel_delta_events(repeat_and_select_event(run, 10, 1.0))
    >>> type(rest).__name__, round(d, 12)
    ('RepeatAndSelectDpEvent', 1e-06)
    """
    if isinstance(event, DeltaDpEvent):
        delta = float(event.delta)
        if not 0.0 <= delta <= 1.0:
            raise ValueError(f"DeltaDpEvent.delta must be in [0, 1], got {delta!r}")
        return dp_accounting.NoOpDpEvent(), delta
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts, total = [], 0.0
        for ev in event.events:
            rest, d = peel_delta_events(ev)
            total += d
            if not isinstance(rest, dp_accounting.NoOpDpEvent):
                parts.append(rest)
        if total == 0.0:
            return event, 0.0
        if not parts:
            return dp_accounting.NoOpDpEvent(), total
        return (parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)), total
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        rest, d = peel_delta_events(event.event)
        if d == 0.0:
            return event, 0.0
        if isinstance(rest, dp_accounting.NoOpDpEvent):
            return rest, d * event.count
        return dp_accounting.SelfComposedDpEvent(rest, event.count), d * event.count
    if isinstance(event, RepeatAndSelectDpEvent):
        rest, d = peel_delta_events(event.event)
        if d == 0.0:
            return event, 0.0
        if isinstance(rest, dp_accounting.NoOpDpEvent):
            # the runs' remaining pair is one law (curve 0): so is the selection's
            return rest, d * float(event.mean)
        return RepeatAndSelectDpEvent(rest, event.mean, event.shape), d * float(event.mean)
    return event, 0.0


@functools.lru_cache(maxsize=1)
def _accountant_class():
    """``RdpAccountant`` that also reads :class:`ReplaceOneSampledGaussianDpEvent`.

    dp-accounting's ``_maybe_compose`` recurses through ``self._maybe_compose`` for
    composed, self-composed and repeat-and-select events (the latter zeroes ``_rdp``,
    composes the inner event into it, then applies Papernot & Steinke's formula), so the
    override is used at any depth, inside a selection included.  Everything else --
    other events, RDP to (epsilon, delta), the selection formula -- is dp-accounting's.
    """
    from dp_accounting.rdp import RdpAccountant

    class _ReplaceOneRdpAccountant(RdpAccountant):
        def _maybe_compose(self, event, count, do_compose):
            if isinstance(event, ReplaceOneSampledGaussianDpEvent):
                if do_compose:
                    self._rdp = self._rdp + count * replace_one_sampled_gaussian_rdp(
                        event.sampling_probability, event.noise_multiplier, self._orders)
                return None
            return super()._maybe_compose(event, count, do_compose)

    return _ReplaceOneRdpAccountant


def _accountant(event):
    # replace-one: the relation under which translated events are read (module docstring)
    from ._events import NEIGHBORING_RELATION

    acc = _accountant_class()(neighboring_relation=NEIGHBORING_RELATION)
    translated = to_rdp_event(event)
    try:
        acc.compose(translated)
    except dp_accounting.UnsupportedEventError as exc:  # pragma: no cover - guarded above
        raise UnsupportedDpEventError(str(exc)) from exc
    return acc


@functools.lru_cache(maxsize=512)
def _rdp_epsilon_cached(key, delta, event_box):
    event, delta_sum = peel_delta_events(event_box[0])
    if delta_sum >= delta:
        to_rdp_event(event)  # still refuse what cannot be accounted
        return math.inf
    return float(_accountant(event).get_epsilon(delta - delta_sum))


def rdp_epsilon(event, delta):
    """epsilon at ``delta`` of an skdp event by Rényi-DP accounting (an upper bound).

    ``DeltaDpEvent`` parts are peeled off and their deltas (times ``count`` inside a
    self-composition and ``mean`` inside a selection) subtracted from ``delta``
    (:func:`peel_delta_events`; ``inf`` if nothing is left); the rest is translated by
    :func:`to_rdp_event` and composed in dp-accounting's ``RdpAccountant`` under replace-one
    neighbours (with skdp's curve for Poisson-sampled Gaussian steps); the RDP curve is
    converted to (epsilon, delta) by dp-accounting.  Use it for events that contain
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
        containing :func:`repeat_and_select_event` events and ``DeltaDpEvent`` parts
        (whose deltas are added, :func:`peel_delta_events`).
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
    event, delta_sum = peel_delta_events(event)
    return min(1.0, float(_accountant(event).get_delta(epsilon)) + delta_sum)


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
    to_rdp_event(peel_delta_events(event)[0])  # refuse early what RDP cannot account
    return RepeatAndSelectDpEvent(event, mean, shape)
