r"""The event a scikit-learn ``Pipeline`` composes for a DP step whose privacy event
follows a width that an earlier DP step released.

A :class:`~skdp.preprocessing.DPSplineTransformer` releases its knots (equal knots merge,
so the number of basis columns is part of the release) and a discovering
:class:`~skdp.preprocessing.DPOneHotEncoder` (``categories="auto"``) releases the
categories it keeps: the width ``w`` of the next step's input is a released value.  An skdp
estimator's ``auto`` rules read its width (``alpha``, DP-SGD's batch size and steps,
``warm_gd``'s warm start), and so does its privacy event.  The pipeline then releases
``A`` followed by ``M_{w(a)}``, and for neighbours with ``A``'s privacy loss ``L_A`` at
its output ``a`` the composition's privacy profile is

.. math:: \delta(\varepsilon) = \mathbb{E}_{a \sim A(D)}
   \big[\delta_{M_{w(a)}}(\varepsilon - L_A(a))\big].

The exact composition of ``A`` with the one ``M_w`` that ran accounts ``M_w`` as if its
width were public: a rule that takes the larger profile where ``L_A(a)`` is large exceeds
the reported ``delta`` (:func:`skdp.linear_model._budget.width_rule_pins`; a one-hot
encoder before a logistic model reported 1.041 and 1.047 at two released widths, against
a Rényi-DP bound of 1.059 over every width the encoder can release).

What is composed instead (:func:`released_width_event`):

* **The estimator's event has the same privacy profile at every width**
  (:func:`event_follows_width`, which probes its planned event with its parameters: output
  perturbation, numeric ``alpha`` and schedules, and rules given a public
  ``auto_n_features`` -- by the user or a private search, recorded as
  ``auto_n_features_``): one mechanism's profile ``delta_M`` whatever ``a``, so the
  profile above is the composition of ``A`` with it.  Its exact event is composed.  A
  public ``auto_n_features`` is not enough by itself: ``DPNonconvexRegressor``'s
  ``zeroth_order`` and ``spider`` at ``calibration="paper"`` read the design's width in
  their own plans.  The model of a :class:`~skdp.PrivatePipeline` is not probed here:
  its plan fixed its event before any row (``skdp._plan._plan_model`` checks it at the
  widths the transformers can release, or composes the dominating pair below).
* **Otherwise** every ``M_w`` is ``(epsilon, delta)``-DP, its parameters: each width's
  fit is calibrated to them.  Every ``(epsilon, delta)``-DP mechanism is dominated by one
  pair -- randomized response at ``epsilon`` with a revealing outcome of probability
  ``delta`` (Kairouz, Oh & Viswanath 2015, Thm 2.4; Dong, Roth & Su 2019, Prop. 2.12),
  whose events are ``pure_dp_event(epsilon)`` and ``DeltaDpEvent(delta)`` -- so
  ``delta_{M_w} <= delta_P`` for every ``w`` and the profile above is at most that of
  ``A`` composed with ``P``.  That pair is composed.
* **A DP transformer** behind a released width is composed as its calibration target
  (its ``_width_free_event``): its recorded event is a Gaussian release of one total
  Gaussian-DP ``mu`` whatever its input's width, but the grid-rounding term of its exact
  noise grows with the number of counts, so the recorded noise multiplier moves in its
  ninth digit with the width -- never below ``1/mu``
  (:func:`skdp.preprocessing._common.target_event`), which therefore bounds every width.
  A releasing skdp class without one is composed as the pair of its ``(epsilon,
  delta)``.  A :class:`~skdp.PrivatePipeline` plans such a transformer with the same
  event (:func:`skdp._plan._release_probe`).
* **A** :class:`~skdp.PrivatePipeline` **nested behind such a release** plans its whole
  split from its input's width; as a unit it is ``(epsilon, delta)``-DP at its plan's
  total budget, so its steps are replaced by that pair.

:func:`skdp.accounting._fitted.walk_events` tracks which inputs' widths are released.
Steps of other libraries are composed as recorded (their releases are taken to set their
output's width).  Everything here reads public quantities only: parameters, ``n`` and
widths.
"""


__all__ = ["sets_width", "event_follows_width", "dominating_pair", "step_pair",
           "released_width_event", "behind_released_width"]


def sets_width(step):
    """Whether ``step``'s release fixes the width of the next step's input: a fitted (or
    unfitted) :class:`~skdp.preprocessing.DPSplineTransformer` (its released knots merge
    when equal), or a :class:`~skdp.preprocessing.DPOneHotEncoder` that discovers its
    categories.  A public-category encoder releases nothing and keeps its width."""
    from .._plan import _sets_width

    return type(step).__module__.startswith("skdp.preprocessing") and _sets_width(step)


#: the widths :func:`event_follows_width` compares, from 1 to ``2^40`` (above any design a
#: fit could hold, where the rules have saturated: DP-SGD's epochs at their floor); dense
#: at small widths, where a zeroth-order plan's event moves without a trend
PROBE_WIDTHS = (1, 2, 2 ** 5, 2 ** 10, 2 ** 20, 2 ** 40)


def event_follows_width(model, n_samples):
    """Whether ``model``'s planned event (:func:`skdp.linear_model._base.planned_dp_event`
    of its parameters at ``n_samples`` rows) differs in privacy profile between two of
    :data:`PROBE_WIDTHS`, or has no plan at one of them (then counted as following: the
    safe answer).  Public: parameters and ``n``.

    The widths run from 1 to ``2^40``, above any width a release can give (a category
    discovery's width has no bound but memory, and a data-free map such as
    ``PolynomialFeatures`` widens it further), and do not depend on the width fitted: a
    search's placeholder fit and its real fits, whose widths may differ, get one
    verdict.  The ``auto`` rules are
    monotone in the width (``alpha`` a power of ``p``; DP-SGD's epochs a power of ``p``
    clipped to a range, its steps then monotone), so a profile equal at every probe is
    equal between them.  The solvers whose own plan reads the width without a trend
    (:data:`PAPER_WIDTH_SOLVERS` at ``calibration="paper"``) are not probed: they follow
    it."""
    from sklearn.base import clone

    return _follows(clone(model), int(n_samples))


#: solvers whose own plan reads the design's width (their steps and tree) at
#: ``calibration="paper"``: their event's Gaussian-DP parameter ``rho sqrt(m / max(2 ln T,
#: m))``, ``m`` the bits of the step count ``T``, is a sawtooth in the width (``rho`` at
#: ``T = 2`` and ``4``, ``0.954 rho`` at ``T = 3``), which no set of probes brackets
PAPER_WIDTH_SOLVERS = frozenset({"zeroth_order", "spider"})


def _reads_width_in_its_plan(model):
    """Whether ``model`` resolves to a solver of :data:`PAPER_WIDTH_SOLVERS` at
    ``calibration="paper"`` (public: its parameters; an invalid one counts, as the safe
    answer)."""
    from ..linear_model._auto import resolve_solver

    try:
        loss, n_outputs = model._planning_loss()
        solver, _ = resolve_solver(model, loss, n_outputs)
        return solver in PAPER_WIDTH_SOLVERS and \
            model._solver_calibration(solver) == "paper"
    except (ValueError, TypeError, AttributeError):
        return True


def _follows(model, n_samples):
    from ..linear_model._base import planned_dp_event
    from ._events import same_privacy_profile

    key = _cache_key(model, n_samples)
    if key is not None and key in _VERDICTS:
        return _VERDICTS[key]
    first = None if _reads_width_in_its_plan(model) else \
        planned_dp_event(model, n_samples, PROBE_WIDTHS[0])
    follows = first is None
    for w in PROBE_WIDTHS[1:]:
        if follows:
            break                    # the first difference decides
        other = planned_dp_event(model, n_samples, w)
        follows = other is None or not same_privacy_profile(first, other, rtol=WIDTH_RTOL)
    if key is not None:
        if len(_VERDICTS) >= 256:
            _VERDICTS.pop(next(iter(_VERDICTS)))
        _VERDICTS[key] = follows
    return follows


#: events this close (relative) are one mechanism's: the width-free estimators' planned
#: events are bit for bit equal, a zeroth-order fit's Gaussian steps sum to one ``mu^2``
#: up to double rounding, and the exact-noise grid margin moves events by ``1e-9``
WIDTH_RTOL = 1e-12

#: verdicts of :func:`event_follows_width` by (class, parameters, n): a search reads one
#: pipeline's event at every candidate and fold
_VERDICTS = {}


def _cache_key(model, n_samples):
    params = model.get_params(deep=False)
    try:
        items = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "random_state"))
    except TypeError:   # pragma: no cover - parameters without a stable repr
        return None
    # the class itself: a subclass, or a class of the same name elsewhere, plans apart
    return (type(model), items, n_samples)


def dominating_pair(epsilon, delta):
    """The events of the pair that dominates every ``(epsilon, delta)``-DP mechanism:
    ``pure_dp_event(epsilon)`` composed with ``DeltaDpEvent(delta)`` (the first alone for
    ``delta = 0``)."""
    from ._events import DeltaDpEvent, compose, pure_dp_event

    if float(delta) == 0.0:
        return pure_dp_event(float(epsilon))
    return compose(pure_dp_event(float(epsilon)), DeltaDpEvent(float(delta)))


def step_pair(epsilon, delta, epsilon_spent=0.0, delta_spent=0.0):
    """:func:`dominating_pair` of a step's ``(epsilon, delta)`` parameters, or of what it
    certified when that is larger (the accountant's bisection may land a hair above)."""
    return dominating_pair(max(float(epsilon), float(epsilon_spent)),
                           max(float(delta), float(delta_spent)))


def released_width_event(model, event, n_samples=None):
    """The event a pipeline composes for the skdp estimator ``model`` whose (fitted or
    planned) event is ``event``, behind a step that released the width of its input
    (module docstring): ``event`` when it does not follow the width
    (:func:`event_follows_width`, of its parameters -- ``auto_n_features`` included -- at
    ``n_samples`` rows, by default its ``n_samples_seen_``), else :func:`step_pair`.  A
    model fitted before ``n_samples_seen_`` was recorded cannot be probed: the pair."""
    n = getattr(model, "n_samples_seen_", None) if n_samples is None else n_samples
    if n is not None and not event_follows_width(model, n):
        return event
    return step_pair(model.epsilon, model.delta, getattr(model, "epsilon_", 0.0),
                     getattr(model, "delta_", 0.0))


def behind_released_width(step, event):
    """The event composed for the DP transformer ``step`` (which recorded ``event``)
    behind a released width: its ``_width_free_event`` (module docstring), else the pair
    of its ``(epsilon, delta)`` for an skdp class, else ``event`` (another library's
    step, composed as recorded)."""
    if hasattr(step, "_width_free_event"):
        return step._width_free_event()
    if type(step).__module__.startswith("skdp."):
        return step_pair(step.epsilon, step.delta, getattr(step, "epsilon_", 0.0),
                         getattr(step, "delta_", 0.0))
    return event

