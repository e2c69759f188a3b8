r"""The planned event of a scikit-learn ``Pipeline`` on a Dask collection, without ``n``
rows on the client.

A private search or cross-validation reads the event of every fit it will run before the
first one (:func:`skdp.model_selection._common.probe`): by the replace-one convention
nothing that shapes a DP step's noise depends on the rows -- only on its parameters,
``n`` and the public schema (column names and dtypes, or the width) -- so a fit on public
placeholder rows of the same shape releases the same event.  In memory that placeholder
is ``n`` rows on the client; on a Dask DataFrame or array of ``10^7 - 10^8`` rows it would
be gigabytes there, against the Dask contract that the client never holds ``n`` rows.

For a scikit-learn ``Pipeline`` whose last step is an skdp estimator (the others DP
transformers, verified data-free steps, or composites of them), :func:`lazy_pipeline_probe`
reads the same event without them:

1. the steps before the model are fitted by :func:`skdp._dask_pipeline.fit_tree` on a
   lazy placeholder of ``n`` public rows (:func:`skdp._dask_pipeline.placeholder`:
   partitions built from the schema on the workers; zeros for a Dask array).  Each
   releasing DP transformer fits it through its own Dask path, from the counts and sums of
   the in-memory placeholder (the same zeros), so it records the event -- and releases the
   values -- of the in-memory placeholder fit;
2. the model's input width is read by transforming two placeholder rows with them;
3. the model's event is its public plan at ``n`` rows and that width
   (:func:`skdp.linear_model._base.planned_dp_event`, the arithmetic its fit runs);
4. the events compose in fit order, as :func:`skdp.accounting.fitted_dp_event` composes a
   fitted pipeline's (:func:`skdp.accounting._fitted.composed_events`).

These are the in-memory placeholder fit's events (``tests/model_selection/
test_dask_search.py`` compares them), bit for bit with public bounds; the planned event
of a model that releases its own bounds (``data_norm="auto"``) equals a fitted one up to
float rounding (its solver's constants are computed from the released bound), as the
real fits do, which are compared with :func:`skdp.accounting._events.events_close`.

Privacy.  The probe reads nothing of the private rows: the schema (or width) and ``n`` are
public, the placeholder is a function of them, and so is every event above.  The search
and the cross-validation check every real fit's event against this one and stop, before
its score is released, if they differ (a step whose noise depended on the data); so a
wrong plan fails loudly and can never widen the guarantee.

Refused before any fit (the caller releases nothing):

* a :class:`~skdp.PrivatePipeline` inside the ``Pipeline`` (its own plan splits the budget
  it is given; put the whole pipeline in one ``PrivatePipeline``, which plans on Dask);
* a last step that is neither an skdp estimator nor a DP transformer or verified
  data-free step (it would learn without DP: the refusal of ``fitted_dp_event``);
* a model whose event has no public plan at that width (invalid parameters: the
  estimator's own error);
* what :func:`~skdp._dask_pipeline.fit_tree` cannot fit lazily, e.g. a
  ``ColumnTransformer`` whose ``remainder`` is an estimator.
"""

import warnings

__all__ = ["is_sklearn_pipeline", "lazy_pipeline_probe"]


def is_sklearn_pipeline(estimator):
    """Whether ``estimator`` is a scikit-learn ``Pipeline`` that is not a
    :class:`~skdp.PrivatePipeline` (which plans itself: :mod:`skdp._plan`)."""
    from sklearn.pipeline import Pipeline

    from .._pipeline import PrivatePipeline

    return isinstance(estimator, Pipeline) and not isinstance(estimator, PrivatePipeline)


def lazy_pipeline_probe(pipeline, X, n_rows):
    """``(event, privacy_guaranteed)`` of a fit of the scikit-learn ``pipeline`` on
    ``n_rows`` rows of a Dask collection (module docstring): ``X`` is a Dask DataFrame's
    schema (an empty pandas frame) or the Dask array itself; neither is read.

    Raises ``TypeError`` or ``ValueError`` for a pipeline it cannot plan this way, before
    anything is fitted on the private rows."""
    from sklearn.base import clone

    from ..accounting._fitted import (_is_data_free, _refusal, composed_events,
                                      refuse_unverified_containers)
    from ..accounting._released_width import released_width_event

    refuse_unverified_containers(pipeline)   # before anything walks or fits it
    _refuse_private_pipelines(pipeline)
    path, last = _final_step(pipeline)
    has_model = _plans_its_event(last)
    if not has_model and not (_is_dp_transformer(last) or _is_data_free(last)):
        raise _refusal(path, last)
    # the steps before the model: the pipeline with its model passed through
    prefix = clone(pipeline).set_params(**{path: "passthrough"}) if has_model else \
        clone(pipeline)
    events, guaranteed, width, width_released = _prefix_probe(prefix, X, n_rows, has_model)
    if has_model:
        model_event = _model_event(last, n_rows, width)
        if width_released and not _is_non_private(model_event):
            # as fitted_dp_event composes a model after a released width
            model_event = released_width_event(last, model_event, n_rows)
        events = events + [model_event]
        guaranteed = guaranteed and not _is_non_private(model_event)
    return composed_events(events), guaranteed


def _final_step(pipeline):
    """``(parameter path, step)`` of the last leaf of ``pipeline`` (the last step of its
    last step, when that is a nested scikit-learn ``Pipeline``)."""
    path, step = pipeline.steps[-1]
    while is_sklearn_pipeline(step):
        name, step = step.steps[-1]
        path = f"{path}__{name}"
    return path, step


def _refuse_private_pipelines(pipeline):
    from .._pipeline import PrivatePipeline

    for key, value in pipeline.get_params(deep=True).items():
        if isinstance(value, PrivatePipeline):
            raise TypeError(
                f"step {key!r} is a PrivatePipeline inside a scikit-learn Pipeline: on a "
                "Dask collection a private search or cross-validation plans such a "
                "pipeline from its schema only when the whole pipeline is one "
                "PrivatePipeline (or make_private_pipeline); nothing was fitted")


def _plans_its_event(step):
    """Whether ``step`` is an skdp estimator, whose event has a public plan."""
    return hasattr(step, "_planning_loss") and type(step).__module__.startswith("skdp.")


def _is_dp_transformer(step):
    from .._plan import _is_dp_transformer

    return not isinstance(step, str) and step is not None and _is_dp_transformer(step)


def _prefix_probe(prefix, X, n_rows, has_model):
    """``(events, privacy_guaranteed, output width, width released)`` of the steps before
    the model (the last: whether a step released the width,
    :func:`skdp.accounting._fitted.walk_events`),
    fitted on a lazy placeholder of ``n_rows`` rows (steps 1-2 of the module docstring);
    ``events``: each releasing leaf's event in fit order, ``NoOpDpEvent``\\ s left out.
    Cached by everything the fit depends on (:func:`skdp._plan._probe_key`): the
    candidates of a grid over the model's parameters share it."""
    from .._plan import _PROBES, _probe_key, _remember

    key = _probe_key("sklearn-pipeline-prefix", prefix, X, n_rows, has_model)
    if key not in _PROBES:
        _remember(key, _fit_prefix(prefix, X, n_rows, has_model))
    events, guaranteed, width, width_released = _PROBES[key]
    return list(events), guaranteed, width, width_released


def _fit_prefix(prefix, X, n_rows, has_model):
    """:func:`_prefix_probe` without the cache: fit, width, then the checks and events of
    :func:`skdp.accounting.fitted_dp_event` on the fitted steps."""
    from .._plan import placeholder_frame
    from ..accounting import fitted_privacy_guaranteed
    from ..accounting._fitted import (_check_distinct_seeds, refuse_density_formats,
                                      walk_events)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_lazily(prefix, X, n_rows)
        width = int(prefix.transform(placeholder_frame(X, 2)).shape[1])
    _check_distinct_seeds(prefix)
    events, recorded, width_released = walk_events(prefix)
    if not recorded and not has_model:
        raise TypeError("the estimator released nothing: no step carries a dp_event_")
    refuse_density_formats(prefix)
    return tuple(events), fitted_privacy_guaranteed(prefix), width, width_released


def _fit_lazily(prefix, X, n_rows):
    """Fit ``prefix`` in place on ``n_rows`` lazy placeholder rows of ``X``'s schema (a
    Dask DataFrame's) or width (a Dask array's): partitions of
    :data:`skdp._dask_pipeline.PLACEHOLDER_PARTITION_ROWS` rows, built on the workers."""
    from .._dask_pipeline import fit_tree, placeholder, placeholder_lengths

    rows = placeholder_lengths(n_rows)
    if hasattr(X, "columns"):
        lazy = placeholder(X, n_rows)
    else:
        import dask.array as da

        from .._plan import _width

        lazy = da.zeros((int(n_rows), _width(X)), chunks=(rows.lengths, -1))
    fit_tree(prefix, lazy, rows)


def _model_event(model, n_rows, width):
    """The final estimator's planned event at ``n_rows`` rows of ``width`` columns, or the
    estimator's own error (:func:`skdp.linear_model._base.planned_dp_event`)."""
    from sklearn.base import clone

    from ..linear_model._base import planned_dp_event

    event = planned_dp_event(clone(model), n_rows, width)
    if event is None:
        event = planned_dp_event(clone(model), n_rows, width, raise_errors=True)
    if event is None:
        raise ValueError(
            f"the event of {type(model).__name__} at the end of this Pipeline has no public "
            "plan at the width its steps output (its parameters need a fit to tell it), "
            "so a private search or cross-validation cannot read it on a Dask collection "
            "without n placeholder rows on the client; nothing was fitted. Use a "
            "PrivatePipeline (make_private_pipeline), or public bounds (data_norm, "
            "y_bound) and a delta > 0")
    return event


def _is_non_private(event):
    from ..accounting import _lazy_dp_accounting as dp_accounting

    return isinstance(event, dp_accounting.NonPrivateDpEvent)
