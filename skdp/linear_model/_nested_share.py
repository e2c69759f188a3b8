"""One search, not a search inside a search, for an estimator that releases its own bounds
first (``y_bound="auto"``, a ``target_range``'s mean) when a composite splits its budget.

Standalone, such an estimator at ``epsilon = e`` releases its bounds (or its targets' mean)
under public shares of ``mu(e)^2`` and gives its model the largest share ``s`` that
composes with them within ``(e, delta)`` -- a search over ``s``
(:func:`skdp.linear_model._budget.largest_model_epsilon`).  A composite (a
:class:`~skdp.PrivatePipeline`) that gives the estimator the largest ``e`` composing with
the transformers' releases within its own budget searched ``e``, and ran that inner search
at every point: on 3,000 wine rows a fit at a new epsilon took about 2x a repeat.

Inside a composite's fit (:func:`skdp.accounting._sampled.joint_calibrations` holds), the
split is instead, from public quantities only:

1. the estimator's epsilon ``e = g``, the Gaussian-DP share next to the transformers'
   releases ``T`` (:func:`~skdp.linear_model._budget._gaussian_guess`: ``mu(g)^2 =
   mu(epsilon)^2 - sum mu_T^2``) -- no search;
2. its own releases ``R`` under their shares of ``mu(g)^2``, as standalone
   (:func:`skdp.linear_model._base._released_events`);
3. its model gets the largest share ``s`` for which both ``compose(T, R, model(s))`` is
   ``(epsilon, delta)``-DP (the composite's budget) and ``compose(R, model(s))`` is
   ``(g, delta)``-DP (the estimator's own): one search over ``s``
   (:func:`~skdp.linear_model._budget.search_share`) of the larger of the composite's
   total and the estimator's, scaled by ``epsilon/g`` to the composite's budget.

``s`` is registered for the estimator's public parameters, ``g``, ``delta`` and the
design's size; the estimator, fitted or planned at ``g`` inside the composite, takes it
(:func:`released_bounds_model_epsilon`) after checking ``compose(R, model(s))`` within
``(g, delta)`` with the exact accountant, and the composite checks its total as always.
So the planned event is the fitted one, every step is still an upper bound, and a share
that fails its check falls back to the estimator's own search (the composite's final
check then refuses a total above its budget).  The estimator may spend a little less
than ``g`` when the composite's budget binds first; none of it is lost to the composite.

Outside a composite's fit nothing reads the registry: a standalone fit's split does not
depend on what the process fitted before.  A plan that pins the model's width-dependent
choices (``model_plan="fixed"``, which private searches and cross-validation set) keeps
the estimator's own search (:func:`own_searches`): the pins change the estimator's
parameters after the share is found, and its event must be fixed whatever width the fit
sees.  (Registered for the unpinned estimator, the share overspent there: a private
search over a ``target_range`` pipeline raised ``BudgetExceededError``.)
"""

import contextlib
import contextvars
import math

from ..accounting._pld_memo import _LRU

__all__ = ["nested_share", "own_searches", "released_bounds_model_epsilon"]

#: True inside :func:`own_searches`
_OWN = contextvars.ContextVar("skdp_nested_own_searches", default=False)


@contextlib.contextmanager
def own_searches():
    """Within: :func:`nested_share` declines, so an estimator with releases of its own
    keeps its own search.  A plan that pins the model's width-dependent choices
    (``model_plan="fixed"``, a private search's) holds it: the pins (an ``alpha``
    resolved from the rule) change the estimator's parameters after its share is found,
    and its event must not depend on the width the fit will see, so the share is the one
    its own search finds at the pinned parameters, as the fit finds it."""
    token = _OWN.set(True)
    try:
        yield
    finally:
        _OWN.reset(token)

#: ``(estimator's public parameters, g, delta, n, p) -> s``, registered by
#: :func:`nested_share`: keys and values are public
_NESTED = _LRU(1024)
#: parameters that do not enter a split (the noise's seed, the ledger charged)
_NOT_IN_KEY = ("epsilon", "delta", "random_state", "privacy_ledger")


def _key(estimator, n_samples, n_features, epsilon, delta):
    params = estimator.get_params(deep=False)
    public = tuple(sorted((name, repr(value)) for name, value in params.items()
                          if name not in _NOT_IN_KEY))
    return (type(estimator).__name__, public, float(epsilon), float(delta),
            int(n_samples), int(n_features))


def nested_share(probe, events, n_samples, n_features, epsilon, delta, first_fit=False):
    """The estimator's epsilon ``g`` (module docstring) with its model's share registered,
    or None: outside a composite's fit, for an estimator without releases of its own,
    without a Gaussian-DP guess next to ``events``, or when no share fits (the caller's
    search then runs and raises its own error).  ``probe`` is a clone (modified);
    ``first_fit``: stop at the first share that fits, register nothing (a plan's check)."""
    from sklearn.base import clone

    from ..accounting import compose, get_epsilon
    from ..accounting._sampled import joint_calibrations_active
    from ._base import _released_events, planned_dp_event
    from ._budget import SMALLEST_SHARE_EXPONENT, _gaussian_guess, search_share
    from ._target_range import check_target_range

    if not joint_calibrations_active() or not events or _OWN.get():
        return None
    names = probe._released_bounds()
    if not names or probe._data_derived_inputs() or float(delta) == 0.0:
        return None
    try:
        check_target_range(probe)
    except ValueError:
        return None     # the caller's search raises it, as a plan does
    epsilon, delta = float(epsilon), float(delta)
    g = _gaussian_guess(events, epsilon, delta)
    if g is None or not 0.0 < g <= epsilon:
        return None
    probe.set_params(epsilon=g, delta=delta)
    try:
        own, inner = _released_events(probe, names, int(n_samples), g, delta)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    inner = clone(inner)

    def total(s):
        """The composite's total, or the estimator's own scaled to the composite's
        budget (``epsilon/g`` times it), whichever is larger: within ``epsilon`` when both
        compositions are within theirs."""
        inner.set_params(epsilon=s, delta=delta)
        planned = planned_dp_event(inner, n_samples, n_features)
        if planned is None:
            return math.inf
        outer = get_epsilon(compose(*events, *own, planned), delta)
        mine = get_epsilon(compose(*own, planned), delta)
        return max(outer, mine * (epsilon / g))

    try:
        share, _ = search_share(total, g, epsilon,
                                _gaussian_guess([*events, *own], epsilon, delta),
                                g * 2.0 ** -SMALLEST_SHARE_EXPONENT, first_fit=first_fit)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    if share is None:
        return None
    if not first_fit:
        _NESTED.put(_key(probe, n_samples, n_features, g, delta), float(share))
    return g


def released_bounds_model_epsilon(estimator, inner, events, n_samples, n_features,
                                  epsilon, delta):
    """The share of ``estimator``'s model after its own releases ``events`` at
    ``(epsilon, delta)``: inside a composite's fit, the share :func:`nested_share`
    registered, once the exact accountant confirms ``compose(events, model(share))``
    within ``(epsilon, delta)``; else the estimator's own search
    (:func:`~skdp.linear_model._budget.largest_model_epsilon`).  The plan
    (:func:`skdp.linear_model._base.planned_dp_event`) and the fit
    (:meth:`skdp.linear_model._base.BaseDPLinear._run_solver_released_bounds`) both ask
    here, so they agree."""
    from sklearn.base import clone

    from ..accounting import compose, get_epsilon
    from ..accounting._sampled import joint_calibrations_active
    from ._base import planned_dp_event
    from ._budget import largest_model_epsilon

    if joint_calibrations_active():
        share = _NESTED.get(_key(estimator, n_samples, n_features, epsilon, delta))
        if share is not None:
            probe = clone(inner).set_params(epsilon=share, delta=float(delta))
            planned = planned_dp_event(probe, n_samples, n_features)
            if planned is not None and get_epsilon(compose(*events, planned),
                                                   float(delta)) <= float(epsilon):
                return share
    return largest_model_epsilon(inner, events, n_samples, n_features, epsilon, delta)
