"""Read the privacy of a fitted estimator or pipeline.

A fitted skdp estimator carries ``dp_event_`` (what its ``fit`` released) and
``privacy_guaranteed_`` (whether every bound that shaped the noise was public).  A
scikit-learn ``Pipeline`` of such steps released the composition of its steps' events: each
step's ``fit`` reads the private rows once (through the previous steps' *already private*
output), so the pipeline's guarantee is the sequential composition of its steps' events.

A step that learned from the data *without* a DP mechanism (a plain ``StandardScaler``, a
``PCA``...) voids the guarantee of everything after it.  Only steps that provably learn
nothing from the data values are accepted without an event (``"passthrough"``, ``None`` and a
short allow-list of stateless transformers); anything else makes :func:`fitted_dp_event` raise.
"""

import sys

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._events import compose

__all__ = ["fitted_dp_event", "fitted_privacy_guaranteed"]

# Transformers whose fitted state depends only on the *shape* of X (public), never on its
# values.  FunctionTransformer is accepted only with inverse checks off and no fitted state.
_STATELESS = frozenset(
    {"FunctionTransformer", "PolynomialFeatures", "Normalizer", "Binarizer"}
)


def _is_pipeline(estimator):
    # Not imported at module level (a default fit does not need sklearn.pipeline): an
    # estimator can only be a Pipeline if sklearn.pipeline has been imported.
    pipeline = sys.modules.get("sklearn.pipeline")
    return pipeline is not None and isinstance(estimator, pipeline.Pipeline)


def _parts(estimator):
    """The fitted sub-steps of a ``ColumnTransformer`` or ``FeatureUnion`` (None if
    ``estimator`` is neither).  Each reads the same rows as its siblings, so their events
    compose *sequentially* (one person's row is in every block's input), never in
    parallel."""
    compose = sys.modules.get("sklearn.compose")
    if compose is not None and isinstance(estimator, compose.ColumnTransformer):
        if not hasattr(estimator, "transformers_"):
            return None
        return [trans for _, trans, cols in estimator.transformers_ if not
                (isinstance(trans, str) and trans == "drop") and not _no_columns(cols)]
    pipeline = sys.modules.get("sklearn.pipeline")
    if pipeline is not None and isinstance(estimator, pipeline.FeatureUnion):
        return [trans for _, trans in estimator.transformer_list if not
                (isinstance(trans, str) and trans == "drop")]
    return None


def _no_columns(columns):
    """Whether a ColumnTransformer block selected no column (it is then never fitted)."""
    if columns is None:
        return True
    if hasattr(columns, "__len__") and not isinstance(columns, str):
        if len(columns) == 0:
            return True
        if all(isinstance(c, bool) for c in columns) or getattr(columns, "dtype", None) == bool:
            return not any(columns)
    return False


def _steps(estimator):
    if _is_pipeline(estimator):
        for _, step in estimator.steps:
            yield from _steps(step)
        return
    parts = _parts(estimator)
    if parts is None:
        yield estimator
    else:
        for part in parts:
            yield from _steps(part)


def _is_public_one_hot(step):
    """scikit-learn's ``OneHotEncoder`` with public category lists learns nothing from the
    data values, provided an unknown value can never raise (``handle_unknown`` "ignore" or
    "infrequent_if_exist") and no frequency is read (``min_frequency`` and
    ``max_categories`` None)."""
    return (type(step).__name__ == "OneHotEncoder"
            and type(step).__module__.startswith("sklearn.")
            and not (isinstance(step.categories, str) and step.categories == "auto")
            and step.handle_unknown in ("ignore", "infrequent_if_exist")
            and step.min_frequency is None and step.max_categories is None)


def _is_data_free(step):
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    if _is_public_one_hot(step):
        return True
    return type(step).__name__ in _STATELESS and type(step).__module__.startswith(
        "sklearn."
    )


def fitted_dp_event(estimator):
    """The dp-accounting event released by fitting ``estimator`` (estimator or Pipeline).

    Parameters
    ----------
    estimator : fitted skdp estimator or sklearn.pipeline.Pipeline
        For a pipeline every step must either carry ``dp_event_`` or be data-free
        (``"passthrough"``, ``None``, ``FunctionTransformer``, ``PolynomialFeatures``,
        ``Normalizer``, ``Binarizer``, ``OneHotEncoder`` with public category lists that
        ignores unknown values).  ``ColumnTransformer`` and ``FeatureUnion`` are walked:
        their blocks read the same rows, so their events compose sequentially.

    Returns
    -------
    event : dp_accounting.DpEvent
        The step's own event, or ``ComposedDpEvent`` of the steps' events in order (replace-one
        neighbours, see :mod:`skdp.accounting._events`).

    Raises
    ------
    TypeError
        If a step learned from the data without a DP mechanism, or the estimator is not fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import PolynomialFeatures
    >>> from skdp import DPLogisticRegression
    >>> from skdp.accounting import fitted_dp_event, get_epsilon
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (200, 2)); y = (X[:, 0] > 0).astype(int)
    >>> pipe = make_pipeline(PolynomialFeatures(2), DPLogisticRegression(
    ...     data_norm=3.0, classes=[0, 1], solver="output_perturbation",
    ...     random_state=0)).fit(X, y)
    >>> get_epsilon(fitted_dp_event(pipe), delta=1e-6) <= 1.0
    True

    Objective perturbation (the default solver of binary models) certifies ``epsilon_``
    from its exact privacy profile but records a *dominating* zCDP curve, which composes
    with other events at a slightly larger epsilon:

    >>> pipe = make_pipeline(PolynomialFeatures(2), DPLogisticRegression(
    ...     data_norm=3.0, classes=[0, 1], random_state=0)).fit(X, y)
    >>> pipe[-1].epsilon_, get_epsilon(fitted_dp_event(pipe), delta=1e-6) >= 1.0
    (1.0, True)
    """
    events = []
    for step in _steps(estimator):
        event = getattr(step, "dp_event_", None)
        if event is not None:
            if not getattr(step, "privacy_guaranteed_", True):
                # a bound or label set read from the data: whatever the step's own record
                event = dp_accounting.NonPrivateDpEvent()
            events.append(event)
        elif not _is_data_free(step):
            raise TypeError(
                f"{type(step).__name__} has no dp_event_: either it is not fitted or it "
                "learned from the data without differential privacy, which voids the "
                "guarantee of the whole pipeline. Use a DP transformer (e.g. "
                "skdp.preprocessing.DPStandardScaler) or a data-free one."
            )
    if not events:
        raise TypeError("the estimator released nothing: no step carries a dp_event_")
    return events[0] if len(events) == 1 else compose(*events)


def fitted_privacy_guaranteed(estimator):
    """Whether every DP step of a fitted estimator/pipeline ran on public bounds only.

    ``False`` as soon as one step has ``privacy_guaranteed_ = False`` (a bound was read
    from the data) or a step learned from the data without DP.

    Parameters
    ----------
    estimator : fitted estimator or sklearn.pipeline.Pipeline
        A fitted skdp estimator, or a pipeline (nested pipelines are walked).

    Returns
    -------
    guaranteed : bool
        True iff every step either carries ``dp_event_`` with ``privacy_guaranteed_`` True
        or is data-free (see :func:`fitted_dp_event`).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp.accounting import fitted_privacy_guaranteed
    >>> fitted_privacy_guaranteed(StandardScaler().fit([[0.0], [1.0]]))
    False
    """
    for step in _steps(estimator):
        if getattr(step, "dp_event_", None) is not None:
            if not getattr(step, "privacy_guaranteed_", False):
                return False
        elif not _is_data_free(step):
            return False
    return True
