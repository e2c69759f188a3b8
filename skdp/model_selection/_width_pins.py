"""The public width a private search or cross-validation hands the model of a
scikit-learn ``Pipeline`` whose steps release its width.

Behind a :class:`~skdp.preprocessing.DPSplineTransformer` or a discovering
:class:`~skdp.preprocessing.DPOneHotEncoder` the width of the final skdp estimator's input
is a released value; an estimator whose ``auto`` rules read it has an event that follows
it, which :func:`skdp.accounting.fitted_dp_event` composes as the pair dominating its
``(epsilon, delta)`` (:mod:`skdp.accounting._released_width`).  Each such pair adds its
``delta`` per fit, which a procedure that fits a row many times cannot afford.  So the
procedure sets the estimator's ``auto_n_features`` for every fit to the width the steps
output on *public* placeholder rows (``n`` rows of the schema, every knot distinct: what
a :class:`~skdp.PrivatePipeline` plans with): the model's rules then read a public
number, its event is fixed before any row and composed exactly, and the real fits'
events are checked against the placeholder ones as before.  The returned model gets its
user's ``auto_n_features`` (None) back; its ``auto_n_features_`` records the width the
fit's rules read.
"""

import warnings

import numpy as np
from sklearn.base import clone

__all__ = ["rule_width_pins", "restore_rule_widths"]


def rule_width_pins(est, X, y, n_rows, classes, lazy=False):
    """``{"<path>__auto_n_features": width}`` for the configured candidate ``est`` when it
    is a scikit-learn ``Pipeline`` whose last step is an skdp estimator with
    ``auto_n_features=None`` behind a step that releases the width
    (:func:`skdp.accounting._released_width.sets_width`); ``{}`` otherwise.  ``width``:
    the output width of the steps before the model fitted on ``n_rows`` public
    placeholder rows of ``X``'s schema (``lazy``: a Dask DataFrame's schema or a Dask
    array, fitted on the workers as the lazy probe fits).  Public: the parameters, the
    schema and ``n`` only.

    Raises ``ValueError`` before any fit when the model's event follows the width even
    with its rules read at that public width (or the user's): every fit would then add
    the ``delta`` of the pair that dominates it, which no per-fit budget affords."""
    from ..accounting._released_width import sets_width
    from ._common import _is_dask_array
    from ._lazy_probe import _final_step, _plans_its_event, is_sklearn_pipeline

    if not is_sklearn_pipeline(est):
        return {}
    path, model = _final_step(est)
    if not _plans_its_event(model):
        return {}
    prefix = clone(est).set_params(**{path: "passthrough"})
    if not any(sets_width(step) for step in prefix.get_params(deep=True).values()):
        return {}
    model = clone(model)
    pins = {}
    if model.get_params(deep=False).get("auto_n_features") is None:
        width = max(int(_cached_width(prefix, X, y, int(n_rows), classes,
                                      lazy or _is_dask_array(X))), 1)
        pins = {f"{path}__auto_n_features": width}
        model.set_params(auto_n_features=width)
    _refuse_width_following(model, int(n_rows))
    return pins


def _refuse_width_following(model, n_rows):
    """Raise when ``model``'s event follows its design width with its rules' width fixed
    (:func:`skdp.accounting._released_width.event_follows_width`)."""
    from ..accounting._released_width import event_follows_width

    if event_follows_width(model, n_rows):
        raise ValueError(
            f"{type(model).__name__}(solver={getattr(model, 'solver', None)!r}) releases "
            "an event that depends on the width of its input, which the DP steps before it "
            "release (spline knots, discovered categories), even with its rules read at a "
            "public width (auto_n_features): a private search or cross-validation would "
            "compose every fit as the pair dominating its (epsilon, delta), one delta per "
            "fit. Use a solver whose event does not follow the width (the default "
            "'warm_gd', 'dpsgd', 'rrpsgd', or calibration='tight'); nothing was fitted")


def _cached_width(prefix, X, y, n_rows, classes, lazy):
    """:func:`_placeholder_width`, remembered by everything it depends on
    (:func:`skdp._plan._probe_key`): a search reads it for every candidate at every
    per-fit budget it tries."""
    from .._plan import _PROBES, _probe_key, _remember, _stable_repr

    key = _probe_key("rule-width", prefix, X, n_rows, _stable_repr(classes), lazy)
    if key not in _PROBES:
        _remember(key, _placeholder_width(prefix, X, y, n_rows, classes, lazy))
    return _PROBES[key]


def _placeholder_width(prefix, X, y, n_rows, classes, lazy):
    """The output width of ``prefix`` fitted on ``n_rows`` public placeholder rows: a
    DataFrame's schema with distinct values in its numeric columns (every knot distinct,
    :func:`skdp._plan.placeholder_frame`), else zeros of ``X``'s width.  ``lazy``: the
    same rows built on the workers (:func:`skdp._dask_pipeline.placeholder`), never ``n``
    of them on the client; the widths agree with the in-memory fit's."""
    from .._plan import placeholder_frame
    from ..preprocessing._rowwise import as_pandas
    from ._common import placeholder_data

    frame = hasattr(X, "columns") and hasattr(X, "dtypes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if lazy and frame:
            from .._dask_pipeline import fit_tree, placeholder, placeholder_lengths

            fit_tree(prefix, placeholder(X, n_rows, spread=True),
                     placeholder_lengths(n_rows))
            return int(prefix.transform(placeholder_frame(X, 2)).shape[1])
        if lazy:      # a Dask array: zeros on the workers (the lazy probe's own fit)
            from ._lazy_probe import _prefix_probe

            return int(_prefix_probe(prefix, X, n_rows, True)[2])
        if frame:
            Xd = placeholder_frame(as_pandas(X), n_rows, spread=True)
            yd = placeholder_data(X, y, n_rows, classes)[1]
        else:
            Xd, yd = placeholder_data(X, y, n_rows, classes)
        prefix.fit(Xd, yd)
        return int(np.shape(prefix.transform(
            Xd.iloc[:2] if hasattr(Xd, "iloc") else Xd[:2]))[1])


def restore_rule_widths(model, pins):
    """Give a model the procedure returns its user's ``auto_n_features`` back (None: the
    pins are only set where it was); its ``auto_n_features_`` keeps what the fit read."""
    model.set_params(**dict.fromkeys(pins))
    return model
