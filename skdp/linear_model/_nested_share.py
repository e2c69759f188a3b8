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

The composite hands the estimator ``epsilon = g`` and ``model_epsilon = s`` as parameters
(:func:`model_split`), as it hands every step its share.  The estimator, planned or fitted
with them, takes ``s`` (:func:`released_bounds_model_epsilon`) after checking
``compose(R, model(s))`` within ``(g, delta)`` with the exact accountant, and the composite
checks its total as always.  So the planned event is the fitted one, every step is still
an upper bound, and a share that fails its check is not used (the estimator's own search
runs; the composite's final check then refuses a total above its budget).  The estimator
may spend a little less than ``g`` when the composite's budget binds first; none of it is
lost to the composite.

A plan that pins the model's width-dependent choices (``model_plan="fixed"``, which
private searches and cross-validation set) keeps the estimator's own search: the pins (an
``alpha`` resolved from the rule) change the estimator's parameters after a share would be
found, and its event must be fixed whatever width the fit sees.  (With a share found for
the unpinned estimator, a private search over a ``target_range`` pipeline overspent:
``BudgetExceededError``.)
"""

import math

__all__ = ["model_split", "nested_share", "released_bounds_model_epsilon"]


def nested_share(probe, events, n_samples, n_features, epsilon, delta):
    """``(g, s)``: the estimator's epsilon and its model's share (module docstring), or
    None: outside a composite's fit, for an estimator without releases of its own, without
    a Gaussian-DP guess next to ``events``, or when no share fits (the caller's search then
    runs and raises its own error).  ``probe`` is a clone (modified)."""
    from sklearn.base import clone

    from ..accounting import compose, get_epsilon
    from ..accounting._sampled import joint_calibrations_active
    from ._base import _released_events, planned_dp_event
    from ._budget import SMALLEST_SHARE_EXPONENT, _gaussian_guess, search_share
    from ._target_range import check_target_range

    if not joint_calibrations_active() or not events:
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
                                g * 2.0 ** -SMALLEST_SHARE_EXPONENT)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    if share is None:
        return None
    return g, float(share)


def model_split(model, events, n_samples, n_features, epsilon, delta, data_norm=None):
    """``(epsilon_model, params)``: what a composite hands its final estimator after the
    releases ``events`` -- for an estimator with releases of its own and a
    ``model_epsilon`` parameter, ``g`` and ``{"model_epsilon": s}`` from
    :func:`nested_share`; else the largest epsilon that composes
    (:func:`~skdp.linear_model._budget.largest_model_epsilon`) and ``{}``.  ``data_norm``:
    a public bound standing for the estimator's ``data_norm="auto"``."""
    from sklearn.base import clone

    from ._budget import largest_model_epsilon

    if "model_epsilon" in model.get_params(deep=False):
        probe = clone(model)
        if data_norm is not None:
            probe.set_params(data_norm=float(data_norm))
        split = nested_share(probe, events, n_samples, n_features, epsilon, delta)
        if split is not None:
            return split[0], {"model_epsilon": split[1]}
    return largest_model_epsilon(model, events, n_samples, n_features, epsilon, delta,
                                 data_norm=data_norm), {}


def released_bounds_model_epsilon(estimator, inner, events, n_samples, n_features,
                                  epsilon, delta):
    """The share of ``estimator``'s model after its own releases ``events`` at
    ``(epsilon, delta)``: its ``model_epsilon`` (handed by a composite, :func:`model_split`)
    once the exact accountant confirms ``compose(events, model(model_epsilon))`` within
    ``(epsilon, delta)``; else the estimator's own search
    (:func:`~skdp.linear_model._budget.largest_model_epsilon`).  The plan
    (:func:`skdp.linear_model._base.planned_dp_event`) and the fit
    (:meth:`skdp.linear_model._base.BaseDPLinear._run_solver_released_bounds`) both ask
    here, so they agree."""
    from sklearn.base import clone

    from ..accounting import compose, get_epsilon
    from ._auto import RELEASED_BOUNDS_EPSILON_MARGIN
    from ._base import planned_dp_event
    from ._budget import largest_model_epsilon

    # room for the reservation's loosening (RELEASED_BOUNDS_EPSILON_MARGIN)
    target = float(epsilon) * (1.0 - RELEASED_BOUNDS_EPSILON_MARGIN)
    share = getattr(estimator, "model_epsilon", None)
    if share is not None:
        probe = clone(inner).set_params(epsilon=float(share), delta=float(delta))
        planned = planned_dp_event(probe, n_samples, n_features)
        if planned is not None and get_epsilon(compose(*events, planned),
                                               float(delta)) <= target:
            return float(share)
    return largest_model_epsilon(inner, events, n_samples, n_features, target, delta)
