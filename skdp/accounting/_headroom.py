r"""The largest ``epsilon`` a ledger still admits for one given fit.

:attr:`PrivacyLedger.remaining <skdp.accounting.PrivacyLedger.remaining>` answers for a
Gaussian release.  What a fit records depends on the estimator: objective perturbation's
zCDP record, DP-SGD's subsampled steps, a pipeline's releases composed with its model --
each costs the ledger a different amount at the same ``epsilon`` parameter, and the
adaptive ledger's Rényi filter (``adaptive=True``) prices them at one order only.  An
analyst who picks the next fit's ``epsilon`` from what earlier fits released wants the
largest one this fit may ask for, without trial and error on the private data.

:func:`largest_admitted_epsilon` plans the fit at candidate values of its ``epsilon``
parameter -- from public quantities only: the estimator's parameters, the number of rows
and the schema of ``X``, never a value -- and asks the ledger whether it would admit each
planned event (:meth:`~skdp.accounting.PrivacyLedger.would_exceed`, nothing written).  The
planners are the ones the fits reserve with, so a fit at the returned ``epsilon`` is
admitted as long as nothing else is charged in between, and the answer reveals nothing
about the data (it is a function of the ledger's entries and public quantities).

Search.  A fit's event grows with its ``epsilon``, so admission is monotone at the top;
at the bottom a plan may not exist (a pipeline whose releases cannot be resolved below
some ``epsilon`` raises).  The candidates are therefore first a doubling grid from
``budget/2^12`` up to the first refused value (at most ``budget 2^6``: an ``epsilon``
parameter may exceed the ledger's when the fit's ``delta`` is smaller than the ledger's),
then a bisection in ``log epsilon`` between the largest admitted grid point and the next
one, to a relative width ``rtol``.  The value returned was itself admitted.
"""

import math

__all__ = ["largest_admitted_epsilon"]

#: The doubling grid: from the ledger's epsilon over 2^12 up to 2^6 times it.
GRID_LOW_EXPONENT = -12
GRID_HIGH_EXPONENT = 6


def event_planner(estimator, X):
    """``event_at(epsilon)``: the event a fit of ``estimator`` with that ``epsilon`` on
    ``X`` would reserve (public quantities only: its parameters, ``X``'s number of rows
    and schema, read once), or None when no plan exists at that ``epsilon``."""
    from sklearn.base import clone

    from .._pipeline import PrivatePipeline
    from ..exceptions import BudgetExceededError

    no_plan = (ValueError, ZeroDivisionError, OverflowError, BudgetExceededError)
    if isinstance(estimator, PrivatePipeline):
        try:
            plan_at = estimator._planner(X)
        except no_plan:
            return lambda epsilon: None

        def planned(epsilon):
            return plan_at(epsilon).ledger_event
    else:
        n_samples, n_features = _public_shape(X)

        def planned(epsilon):
            candidate = clone(estimator).set_params(epsilon=epsilon)
            if not hasattr(candidate, "_planning_loss"):
                return candidate.planned_event(n_samples, n_features)
            from ..linear_model._base import planned_dp_event, released_bounds_reservation

            event = planned_dp_event(candidate, n_samples, n_features, raise_errors=True)
            if event is not None and candidate._released_bounds():
                # what such a fit reserves: its plan loosened by a public rounding margin
                event = released_bounds_reservation(event)
            return event

    def event_at(epsilon):
        try:
            return planned(epsilon)
        except no_plan:
            return None

    return event_at


def _public_shape(X):
    """``(n_samples, n_features)`` of ``X`` without reading a value (an array, a frame, a
    Dask collection's known sizes or a ``(n_samples, n_features)`` tuple)."""
    if isinstance(X, tuple) and len(X) == 2 and all(isinstance(v, int) for v in X):
        return X
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise TypeError("X must be 2-dimensional (an array, a DataFrame, or a "
                        "(n_samples, n_features) tuple)")
    n_samples, n_features = shape
    if not isinstance(n_samples, int):      # a Dask DataFrame's row count is lazy
        raise TypeError("the number of rows of X is unknown (a lazy collection): pass "
                        "(n_samples, n_features)")
    return int(n_samples), int(n_features)


def _check_supported(estimator):
    from .._pipeline import PrivatePipeline

    plannable = (isinstance(estimator, PrivatePipeline) or hasattr(estimator, "_planning_loss")
                 or hasattr(estimator, "planned_event"))
    if not plannable or "epsilon" not in estimator.get_params(deep=False):
        raise TypeError(
            f"{type(estimator).__name__} cannot be planned from public quantities here: "
            "largest_epsilon takes an skdp DP estimator, DPSplineTransformer, "
            "DPOneHotEncoder or a PrivatePipeline (make_private_pipeline)")


def largest_admitted_epsilon(ledger, estimator, X, *, rtol=0.01):
    """The largest ``epsilon`` parameter with which a fit of ``estimator`` on ``X`` is
    admitted by ``ledger`` now (module docstring), or ``0.0`` if none is.

    Parameters
    ----------
    ledger : PrivacyLedger
    estimator : estimator
        An skdp DP estimator, ``DPSplineTransformer``, ``DPOneHotEncoder`` or
        :class:`~skdp.PrivatePipeline`; its other parameters (``delta``, solver, bounds)
        are kept.
    X : array-like, DataFrame or tuple
        The rows the fit will see -- read for their number and schema only -- or
        ``(n_samples, n_features)`` for an estimator.
    rtol : float, default=0.01
        Relative precision of the answer (it is at most ``rtol`` below the exact edge).

    Returns
    -------
    epsilon : float
    """
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"rtol must be in (0, 1), got {rtol!r}")
    _check_supported(estimator)
    if ledger.epsilon is None:
        return math.inf

    event_at = event_planner(estimator, X)

    def admitted(epsilon):
        event = event_at(epsilon)
        return event is not None and not ledger.would_exceed(event)

    best, refused = None, None
    for k in range(GRID_LOW_EXPONENT, GRID_HIGH_EXPONENT + 1):
        epsilon = ledger.epsilon * 2.0 ** k
        if admitted(epsilon):
            best = epsilon
        elif best is not None:
            refused = epsilon
            break
    if best is None:
        return 0.0
    if refused is None:
        return best
    while refused / best > 1.0 + rtol:
        middle = math.sqrt(best * refused)
        if admitted(middle):
            best = middle
        else:
            refused = middle
    return best
