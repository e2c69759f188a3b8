"""The one place where skdp maps a mechanism to a dp-accounting ``DpEvent``.

Convention (pinned by ``tests/accounting/test_events.py`` against closed forms):

* Neighbouring relation: **replace one row** (``NeighboringRelation.REPLACE_ONE``), ``n``
  public.  Every event skdp builds is read under this relation and nothing else.
* ``GaussianDpEvent(z)`` means: each record's contribution is bounded by ``C`` in L2 and the
  noise has standard deviation ``z * C``.  Replacing a record moves the output by up to
  ``2 C``.  So a release with *replace-one* L2 sensitivity ``Delta`` and noise ``sigma`` is
  ``GaussianDpEvent(2 * sigma / Delta)`` -- its GDP parameter is ``mu = Delta / sigma = 2/z``.
  This is dp-accounting's PLD convention under REPLACE_ONE (ε = 10.0 at z = 1, δ = 1e-5).
  dp-accounting's RDP accountant under REPLACE_ONE reads the same event as if the replace
  sensitivity were ``C`` (half as much), so skdp never hands its events to the RDP accountant.
* A pure ε-DP release (norm-Laplace) is recorded as the binary randomized-response event
  with the same ε, ``RandomizedResponseDpEvent(2/(1 + e^ε), 2)``: its privacy-loss pair
  dominates every ε-DP mechanism (Kairouz, Oh & Viswanathan 2015), so composing it is exact
  in the worst case and never optimistic.
* A release that is ``(0, delta)``-DP -- the threshold of a private category discovery,
  whose ``delta`` holds at every epsilon (:mod:`skdp.preprocessing._categorical`) -- is a
  :class:`DeltaDpEvent`; :func:`skdp.accounting.get_epsilon` adds its ``delta``
  (basic composition with the rest, exact for a ``(0, delta)`` pair).
"""

import math

import attr

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module

__all__ = ["NEIGHBORING_RELATION", "DeltaDpEvent", "gaussian_event", "pure_dp_event",
           "compose", "events_close", "without_no_ops"]


@attr.s(frozen=True)
class DeltaDpEvent(dp_accounting.DpEvent):
    """A release that is ``(0, delta)``-DP: its outputs' laws on neighbouring datasets are
    within total variation ``delta`` (at every epsilon).

    Parameters
    ----------
    delta : float
        In [0, 1].

    Examples
    --------
    >>> from skdp.accounting import DeltaDpEvent, compose, gaussian_event, get_delta
    >>> get_delta(compose(gaussian_event(1.0, 1.0), DeltaDpEvent(1e-7)), 50.0)
    1e-07
    """

    delta = attr.ib(type=float)


def __getattr__(name):
    # ``NeighboringRelation`` lives in dp-accounting's ``privacy_accountant``, which
    # imports the whole package: read only when an accountant is built.
    if name == "NEIGHBORING_RELATION":
        return dp_accounting.NeighboringRelation.REPLACE_ONE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def gaussian_event(noise_std, sensitivity):
    """Event of ``q(S) + N(0, noise_std^2 I)`` where ``q`` has replace-one L2 sensitivity.

    Parameters
    ----------
    noise_std : float
        Standard deviation of the Gaussian noise per coordinate.
    sensitivity : float
        ``sup ||q(S) - q(S')||_2`` over datasets differing in one replaced row.

    Returns
    -------
    event : dp_accounting.GaussianDpEvent
        ``GaussianDpEvent(2 * noise_std / sensitivity)`` (see the module docstring).

    Examples
    --------
    >>> from skdp.accounting import gaussian_event
    >>> gaussian_event(2.0, 1.0).noise_multiplier
    4.0
    """
    if not (noise_std > 0.0 and sensitivity > 0.0):
        raise ValueError("noise_std and sensitivity must be > 0")
    return dp_accounting.GaussianDpEvent(2.0 * float(noise_std) / float(sensitivity))


#: the largest pure-DP epsilon an event records (``e^epsilon`` stays a finite float)
MAX_PURE_EPSILON = 700.0


def pure_dp_event(epsilon):
    """Event of a pure ``epsilon``-DP release (dominating randomized-response pair).

    A pure ``epsilon``-DP release (e.g. norm-Laplace output perturbation at ``delta = 0``)
    is recorded as binary randomized response with the same epsilon, whose privacy-loss
    pair dominates every ``epsilon``-DP mechanism (Kairouz, Oh & Viswanathan 2015), so
    composing it is never optimistic.

    Parameters
    ----------
    epsilon : float
        The pure-DP parameter of the release, > 0.

    Returns
    -------
    event : dp_accounting.RandomizedResponseDpEvent
        ``RandomizedResponseDpEvent(noise_parameter=2/(1 + e^epsilon), num_buckets=2)``.

    Examples
    --------
    >>> from skdp.accounting import pure_dp_event, get_epsilon
    >>> round(get_epsilon(pure_dp_event(0.5), delta=0.0), 12)
    0.5
    """
    if not epsilon > 0.0:
        raise ValueError("epsilon must be > 0")
    if not epsilon <= MAX_PURE_EPSILON:
        # e^epsilon overflows a float: such a release protects nothing, and rounding it
        # to a smaller epsilon would record less than was spent
        raise ValueError(
            f"epsilon={epsilon!r} is beyond what the accounting represents (at most "
            f"{MAX_PURE_EPSILON:g}; e^epsilon overflows): a budget this large gives no "
            "protection -- fit the non-private estimator instead")
    return dp_accounting.RandomizedResponseDpEvent(
        noise_parameter=2.0 / (1.0 + math.exp(epsilon)), num_buckets=2
    )


def compose(*events):
    """Sequential composition of events (flattening nested compositions).

    Adaptive sequential composition: the releases may be chosen one after the other, each
    knowing the previous outputs; the composed event is accounted exactly by
    :func:`skdp.accounting.get_epsilon`.

    Parameters
    ----------
    *events : dp_accounting.DpEvent or list or tuple of them
        Events to compose, in release order; nested ``ComposedDpEvent`` objects, lists and
        tuples are flattened.

    Returns
    -------
    event : dp_accounting.ComposedDpEvent
        The flat composition of every event given.

    Examples
    --------
    >>> from skdp.accounting import compose, gaussian_event
    >>> len(compose(gaussian_event(1.0, 1.0), gaussian_event(2.0, 1.0)).events)
    2
    """
    flat = []
    for ev in events:
        if isinstance(ev, dp_accounting.ComposedDpEvent):
            flat.extend(ev.events)
        elif isinstance(ev, (list, tuple)):
            flat.extend(compose(*ev).events)
        else:
            flat.append(ev)
    return dp_accounting.ComposedDpEvent(flat)


def without_no_ops(event):
    """``event`` with every ``NoOpDpEvent`` taken out of its compositions: a composition
    left with one event becomes that event, one left with none ``NoOpDpEvent()``.

    A ``NoOpDpEvent`` releases nothing (a public-category encoder's fit): its privacy-loss
    distribution is the point mass at 0, the identity of composition, so removing it
    changes no accountant's answer.  Only ``NoOpDpEvent`` instances are removed -- a
    Gaussian, a pure-DP, a ``DeltaDpEvent`` or a ``NonPrivateDpEvent`` always stays, so no
    real release can be dropped.  An event without a NoOp is returned as is (the same
    object).

    >>> from skdp.accounting import compose, gaussian_event
    >>> from skdp.accounting import _lazy_dp_accounting as dp_accounting
    >>> g = gaussian_event(1.0, 1.0)
    >>> without_no_ops(compose(dp_accounting.NoOpDpEvent(), g)) == g
    True
    """
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [without_no_ops(e) for e in event.events]
        kept = [p for p in parts if not isinstance(p, dp_accounting.NoOpDpEvent)]
        if len(kept) == len(event.events) and all(p is e for p, e in zip(parts, event.events)):
            return event
        if not kept:
            return dp_accounting.NoOpDpEvent()
        return kept[0] if len(kept) == 1 else dp_accounting.ComposedDpEvent(kept)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = without_no_ops(event.event)
        if inner is event.event:
            return event
        if isinstance(inner, dp_accounting.NoOpDpEvent):
            return inner
        return dp_accounting.SelfComposedDpEvent(inner, event.count)
    return event


def events_close(a, b, rtol=1e-9):
    """Whether two events release the same up to float rounding: after
    :func:`without_no_ops` (what releases nothing is not compared), the same tree of event
    types, every integer equal, every float equal to ``rtol`` relative.

    Two plans of one mechanism from public quantities that pass through different but
    equal-in-exact-arithmetic float expressions (a width entering a sum, a released bound
    that cancels) differ in the last bits; a data-dependent noise differs by far more.  A
    plan leaves out a public-category encoder's ``NoOpDpEvent`` that its fit records.

    Examples
    --------
    >>> from skdp.accounting import gaussian_event
    >>> from skdp.accounting._events import events_close
    >>> events_close(gaussian_event(1.0, 1.0), gaussian_event(1.0 + 1e-15, 1.0))
    True
    >>> events_close(gaussian_event(1.0, 1.0), gaussian_event(1.001, 1.0))
    False
    """
    return _same_tree(without_no_ops(a), without_no_ops(b), rtol)


def same_privacy_profile(a, b, rtol=1e-9):
    """Whether two events have one privacy profile: :func:`events_close`, or both are
    compositions of Gaussian releases only with one total ``mu^2`` (to ``rtol``).  A
    composition of Gaussian mechanisms of GDP parameters ``mu_i`` is exactly
    ``sqrt(sum mu_i^2)``-GDP (Dong, Roth & Su 2019, Cor. 3.3), so such events bound every
    pair of neighbours alike whatever their structure (a zeroth-order fit's steps, whose
    number follows the width while their total ``mu`` does not).

    Examples
    --------
    >>> from skdp.accounting import compose, gaussian_event
    >>> from skdp.accounting._events import same_privacy_profile
    >>> same_privacy_profile(gaussian_event(1.0, 1.0),
    ...                      compose(gaussian_event(2.0 ** 0.5, 1.0),
    ...                              gaussian_event(2.0 ** 0.5, 1.0)))
    True
    >>> same_privacy_profile(gaussian_event(1.0, 1.0), gaussian_event(1.001, 1.0))
    False
    """
    if events_close(a, b, rtol):
        return True
    from ._accountant import _analyse

    parts = [_analyse(without_no_ops(e)) for e in (a, b)]
    if any(p["other"] or p["pure"] or p["nonprivate"] for p in parts):
        return False
    return math.isclose(parts[0]["mu2"], parts[1]["mu2"], rel_tol=rtol)


def privacy_profile_at_most(a, b, rtol=1e-9):
    """Whether event ``a`` is dominated by event ``b``: :func:`same_privacy_profile`, or
    both are Gaussian releases and ``(0, delta)`` parts only, with ``a``'s total ``mu^2``
    and total ``delta`` each at most ``b``'s (to ``rtol``).  A Gaussian composition's
    profile increases with its ``mu`` (Dong, Roth & Su 2019), and ``(0, delta)`` parts add
    their ``delta``; a comparison of the epsilons at one ``delta`` would not be domination
    for events of two kinds.

    Examples
    --------
    >>> from skdp.accounting import gaussian_event
    >>> from skdp.accounting._events import privacy_profile_at_most
    >>> privacy_profile_at_most(gaussian_event(2.0, 1.0), gaussian_event(1.0, 1.0))
    True
    >>> privacy_profile_at_most(gaussian_event(1.0, 1.0), gaussian_event(2.0, 1.0))
    False
    """
    if same_privacy_profile(a, b, rtol):
        return True
    from ._accountant import _analyse, _peel_delta_events

    parts = []
    for event in (a, b):
        rest, delta = _peel_delta_events(without_no_ops(event))
        info = _analyse(rest)
        if info["other"] or info["pure"] or info["nonprivate"]:
            return False
        parts.append((info["mu2"], delta))
    (mu2_a, delta_a), (mu2_b, delta_b) = parts
    return mu2_a <= mu2_b * (1.0 + rtol) and delta_a <= delta_b * (1.0 + rtol)


def loosened(event, rtol):
    """``event`` with every calibrated parameter moved ``rtol`` (relative) to the side of
    more privacy loss: a Gaussian's noise multiplier divided by ``1 + rtol``, a zCDP
    record's ``rho`` and ``xi`` multiplied by it; sampling probabilities, counts and every
    other event unchanged.  The result dominates ``event`` (:func:`dominated_by`), so it
    is a valid, slightly looser, record of the same release: what a reservation made from
    a plan at a placeholder value charges for a release whose parameters move from the
    plan's by float rounding (:meth:`skdp.linear_model._base.BaseDPLinear.
    _run_solver_released_bounds`).

    Examples
    --------
    >>> from skdp.accounting import gaussian_event
    >>> from skdp.accounting._events import dominated_by, loosened
    >>> g = gaussian_event(2.0, 1.0)
    >>> loosened(g, 1e-10).noise_multiplier < g.noise_multiplier, dominated_by(
    ...     g, loosened(g, 1e-10))
    (True, True)
    """
    factor = 1.0 + float(rtol)
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier / factor)
    if isinstance(event, dp_accounting.ZCDpEvent):
        return dp_accounting.ZCDpEvent(rho=event.rho * factor, xi=event.xi * factor)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([loosened(e, rtol) for e in event.events])
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(loosened(event.event, rtol), event.count)
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return dp_accounting.PoissonSampledDpEvent(event.sampling_probability,
                                                   loosened(event.event, rtol))
    return event


def dominated_by(a, b):
    r"""Whether event ``a`` is dominated by event ``b`` -- every privacy guarantee that
    ``b`` records holds for the release ``a`` records -- proved from their parameters in
    exact arithmetic (no tolerance), by one of:

    1. **Leaf by leaf** (after :func:`without_no_ops`): the same tree of compositions,
       sampling probabilities, sample sizes and counts, and at each leaf a Gaussian whose
       noise multiplier is at least ``b``'s (more noise is a post-processing of less:
       add independent Gaussian noise; so for a Poisson-sampled sum too), a zCDP record
       with ``rho`` and ``xi`` each at most ``b``'s (its Rényi bound ``xi + rho alpha``
       is then below ``b``'s at every order), a ``(0, delta)`` part with at most ``b``'s
       ``delta``, or the same event.  A composition -- adaptive included -- of releases
       each dominated by ``b``'s is dominated by ``b``'s composition.
    2. **One Gaussian composition each** (only plain Gaussian leaves): a composition of
       Gaussian mechanisms of GDP parameters ``mu_i = 2/z_i`` is exactly
       ``sqrt(sum mu_i^2)``-GDP (Dong, Roth & Su 2019, Cor. 3.3), and ``mu``-GDP is a
       post-processing of ``mu'``-GDP for ``mu <= mu'``: ``a`` is dominated when its
       ``sum mu_i^2`` is at most ``b``'s (a zeroth-order fit's steps, whose number may
       follow a released bound while their total ``mu`` does not).  The float sums are
       compared with their rounding bounded: each term ``count (2/z)^2`` is within
       ``4 u`` of its exact value and a sum of ``k`` positive terms adds ``(k - 1) u``
       (``u = 2^-53``), so ``a``'s sum times ``1 + (k + 4) 2^-52`` is above its exact
       value and ``b``'s times ``1 - (k + 4) 2^-52`` below.

    Examples
    --------
    >>> from skdp.accounting import compose, gaussian_event
    >>> from skdp.accounting._events import dominated_by
    >>> dominated_by(gaussian_event(2.0, 1.0), gaussian_event(1.0, 1.0))
    True
    >>> dominated_by(gaussian_event(1.0, 1.0), gaussian_event(2.0, 1.0))
    False
    >>> two = compose(gaussian_event(2.0 ** 0.5, 1.0), gaussian_event(2.0 ** 0.5, 1.0))
    >>> dominated_by(two, gaussian_event(0.99, 1.0)), dominated_by(two, gaussian_event(1.01, 1.0))
    (True, False)
    """
    a, b = without_no_ops(a), without_no_ops(b)
    if _leafwise_at_most(a, b):
        return True
    from ._accountant import _analyse

    parts = [_analyse(event) for event in (a, b)]
    if any(p["other"] or p["pure"] or p["nonprivate"] or not math.isfinite(p["mu2"])
           for p in parts):
        return False
    (mu2_a, terms_a), (mu2_b, terms_b) = ((p["mu2"], p["gaussian_terms"]) for p in parts)
    return (mu2_a * (1.0 + (terms_a + 4) * 2.0 ** -52)
            <= mu2_b * (1.0 - (terms_b + 4) * 2.0 ** -52))


def _leafwise_at_most(a, b):
    """Case 1 of :func:`dominated_by` (recursive, exact)."""
    if a == b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dp_accounting.GaussianDpEvent):
        return a.noise_multiplier >= b.noise_multiplier
    if isinstance(a, dp_accounting.ZCDpEvent):
        return a.rho <= b.rho and a.xi <= b.xi
    if isinstance(a, DeltaDpEvent):
        return a.delta <= b.delta
    if isinstance(a, dp_accounting.ComposedDpEvent):
        return len(a.events) == len(b.events) and all(
            _leafwise_at_most(x, y) for x, y in zip(a.events, b.events))
    if isinstance(a, dp_accounting.SelfComposedDpEvent):
        return a.count == b.count and _leafwise_at_most(a.event, b.event)
    if isinstance(a, dp_accounting.PoissonSampledDpEvent):
        return (a.sampling_probability == b.sampling_probability
                and _leafwise_at_most(a.event, b.event))
    return False


def _same_tree(a, b, rtol):
    """:func:`events_close` on events already without NoOps (recursive)."""
    import numbers

    if a == b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_tree(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, numbers.Integral):
        return a == b
    if isinstance(a, numbers.Real):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)
    if attr.has(type(a)):
        return all(_same_tree(getattr(a, f.name), getattr(b, f.name), rtol)
                   for f in attr.fields(type(a)))
    return False
