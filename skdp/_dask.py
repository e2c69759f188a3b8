"""Dask collections as input: detection, validation and partition-wise reductions.

A fit on a ``dask.array.Array`` or a ``dask.dataframe.DataFrame`` must keep the rows on the
workers: what travels to the client is a reduction over partitions (``O(p)`` or ``O(p^2)``
numbers), computed on rows that were clipped to the public bounds *inside* each partition,
before anything leaves it.  The number of rows is read from the collection's chunk sizes
(counted when unknown) and treated as public, as for in-memory data.

:class:`skdp.preprocessing.DPStandardScaler`; the objective-perturbation, output-
perturbation, ``phased`` and ``dpsgd`` fits of binary :class:`~skdp.DPLogisticRegression`
and of :class:`~skdp.DPHuberRegressor` (the first is the default solver of both); the
``dpsgd`` (default) and ``phased`` fits of the multinomial model (``MULTINOMIAL_DASK``);
and the ``warm_gd`` (default) and ``dpsgd`` fits of :class:`~skdp.DPNonconvexRegressor`
accept Dask input (``DASK_SOLVERS``).  Other solvers refuse it with a clear error rather
than collecting the data on the client.
"""

import numpy as np

from ._mechanisms._quiet import silent_floating_point_task
from ._shared_setting import SharedSetting

__all__ = ["is_dask_collection", "as_dask_array", "check_dask_array", "dask_design",
           "map_rows", "block_tasks", "keep_rows", "rebuilt_per_pass", "DASK_SOLVERS",
           "MULTINOMIAL_DASK", "without_low_level_fusion"]

#: solvers that fit a Dask collection without collecting it (the others refuse it)
DASK_SOLVERS = ("objective_perturbation", "output_perturbation", "phased", "dpsgd",
                "warm_gd")
#: those that also fit the multinomial model there (per-row steps: a (d + 1) x K clipped
#: gradient sum per partition); output perturbation's K-output minimiser is in memory only
MULTINOMIAL_DASK = ("phased", "dpsgd")


def is_dask_collection(X):
    """Whether ``X`` is a Dask array, DataFrame or Series (without importing dask)."""
    module = type(X).__module__ or ""
    return module.startswith("dask.") or module.startswith("dask_expr")


def as_dask_array(X):
    """``X`` as a 2-D float64 ``dask.array.Array`` with known chunk sizes, and its column
    names (a DataFrame's, else None).  Nothing is computed on the client but the chunk
    sizes (the number of rows of each partition: public, like ``n``)."""
    import dask.array as da

    names = None
    if hasattr(X, "to_dask_array"):  # DataFrame / Series
        names = list(getattr(X, "columns", [])) or None
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"expected a dask array or DataFrame, got {type(X).__name__}")
    if X.ndim == 1:
        raise ValueError("Expected a 2D array, got a 1D dask array: reshape it with "
                         "X.reshape(-1, 1) for a single feature")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got {X.ndim} dimensions")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.dtype == object:
        return X.map_blocks(_float_block, dtype=np.float64), names
    return X.astype(np.float64), names


#: the error of a float conversion of private values that failed: the column kind only
NOT_A_NUMBER = ("X holds an entry that is not a number in a column of object or string "
                "dtype (the value is private and not shown): encode it (a categorical "
                "column belongs in a DP one-hot encoder) or convert it before the fit")


def float64_or_refuse(convert, message=NOT_A_NUMBER):
    """``convert()``, a float64 conversion of private values on a worker, or
    ``ValueError(message)`` when it fails.

    numpy's and pandas' conversion errors quote the entry that failed (``could not convert
    string to float: '<a value>'``): one row's private value, in a message that travels
    to the client, its logs and tracebacks.  ``message`` names the public schema at most
    (the in-memory fit's :func:`skdp._raw_input.raw_table_message`), and the conversion
    error is neither chained nor kept as the context (raised outside the handler), so no
    traceback shows it."""
    try:
        return convert()
    except (TypeError, ValueError):
        pass
    raise ValueError(message) from None


@silent_floating_point_task
def _float_block(block):
    """An object block (a frame's mixed or nullable columns: ``Int64``, ``Float64``,
    ``boolean``) as float64, a missing value (``pd.NA``, ``None``) as NaN -- what the
    in-memory validation makes of it (a value, not an error, whichever row holds it)."""
    import pandas as pd

    return float64_or_refuse(
        lambda: np.where(pd.isna(block), np.nan, block).astype(np.float64))


def check_dask_array(X):
    """Refuse NaN or infinite entries, as scikit-learn does for in-memory data: one
    reduction (a boolean per partition) travels to the client.  (A fit that reduces the
    data anyway folds this check into its own pass.)"""
    import dask.array as da

    if not bool(da.isfinite(X).all().compute()):
        raise ValueError("Input X contains NaN or infinity.")


def is_sparse_blocks(X):
    """Whether the blocks of the Dask array ``X`` are scipy sparse matrices (CSR rows of a
    private pipeline's basis, :mod:`skdp._dask_pipeline`)."""
    import scipy.sparse as sp

    return sp.issparse(getattr(X, "_meta", None))


#: name prefix of the blocks of a Dask array rebuilt on every pass from rows kept compact
#: on the workers (:func:`skdp._dask_pipeline.rebuilt_basis`)
REBUILT_PREFIX = "skdp-rebuilt-basis"


def rebuilt_per_pass(X):
    """Whether the Dask array ``X`` is (derived from) blocks rebuilt on every pass from
    compact rows kept on the workers: persisting it would keep the full blocks, which is
    what the compact rows avoid."""
    layers = getattr(getattr(X, "dask", None), "layers", {})
    return any(str(name).startswith(REBUILT_PREFIX) for name in layers)


def keep_rows(X):
    """``X`` kept on the workers for the passes to come: ``X.persist()``, or ``X`` itself
    when its blocks are rebuilt on every pass (:func:`rebuilt_per_pass`) from what the
    workers already keep."""
    return X if rebuilt_per_pass(X) else X.persist()


def _on_expanded(fn, recipe, rows, *args, **kwargs):
    return fn(recipe.expand(rows), *args, **kwargs)


def block_tasks(X, fn, *per_block, args=(), kwargs=None, per_block_kwargs=None):
    """``[fn(block_k, *(v[k] for v in per_block), *args, **kwargs, **{name: v[k] for name,
    v in per_block_kwargs.items()})]`` as delayed tasks over the row blocks of the 2-D
    Dask array ``X``, one task per block.  A basis rebuilt per pass
    (:func:`skdp._dask_pipeline.rebuilt_basis`, which records its compact rows on the array
    as ``_skdp_rebuilt``) is expanded inside the task that reads it, so a worker holds the
    basis of the one partition its task reads (as separate tasks, the scheduler ran up to
    three expansions ahead of their readers, measured at 10^7 rows)."""
    import dask

    kwargs = kwargs or {}
    per_block_kwargs = per_block_kwargs or {}

    def task(k, call, *first):
        return dask.delayed(call)(
            *first, *(values[k] for values in per_block), *args, **kwargs,
            **{name: values[k] for name, values in per_block_kwargs.items()})

    rebuilt = getattr(X, "_skdp_rebuilt", None)
    if rebuilt is not None and len(rebuilt[1]) == len(X.chunks[0]):
        recipe, parts = rebuilt
        return [task(k, _on_expanded, fn, recipe, part) for k, part in enumerate(parts)]
    return [task(k, fn, block) for k, block in enumerate(X.to_delayed().ravel())]


def map_rows(X, fn, *args, dtype=np.float64):
    """The 1-D Dask array ``fn(block, *args)`` over the row blocks of the 2-D Dask array
    ``X`` (one column chunk), each block's output of its rows' length.  Each call gets its
    block itself: ``X.map_blocks(fn, drop_axis=1)`` passes the blocks through Dask's
    concatenation of the dropped axis, which for CSR blocks is ``scipy.sparse.hstack`` of
    the one block -- a copy of every partition (0.6 s and 100 MB a 5 x 10^5-row partition
    of a pipeline's basis, measured with py-spy on a worker)."""
    import dask.array as da

    return da.concatenate([
        da.from_delayed(task, shape=(int(m),), dtype=dtype)
        for task, m in zip(block_tasks(X, fn, args=args), X.chunks[0])], axis=0)


def _block_finite(block):
    values = block.data if hasattr(block, "tocsr") else block
    return np.array([[bool(np.isfinite(values).all())]])


def all_finite(X):
    """A lazy boolean: every entry of the 2-D Dask array ``X`` is finite (dense or sparse
    blocks; one boolean per block travels)."""
    import dask.array as da

    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return da.concatenate([da.from_delayed(task, shape=(1, 1), dtype=bool)
                           for task in block_tasks(X, _block_finite)], axis=0).all()


def _as_dask_vector(y, row_chunks):
    import dask.array as da

    if hasattr(y, "to_dask_array"):            # Series / one-column DataFrame
        y = y.to_dask_array(lengths=True)
    if not isinstance(y, da.Array):
        y = da.from_array(np.asarray(y), chunks=(row_chunks,))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.shape[0] != sum(row_chunks):
        raise ValueError(f"X and y have different numbers of rows: {sum(row_chunks)} and "
                         f"{y.shape[0]}")
    return y.rechunk((row_chunks,))


def dask_design(estimator, X, y, encode, labels=None):
    """A fit's :class:`~skdp._solvers._dask_objective.DaskDesign`, validated on the workers.

    Sets ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame with string column
    names) as ``validate_data`` would.  One reduction checks that ``X`` and ``y`` are finite
    (and, with ``labels``, that every label is one of them); ``encode`` maps each ``y``
    partition to the solver's float targets on the workers.  Nothing else is computed."""
    import dask
    import dask.array as da

    from ._solvers._dask_objective import DaskDesign

    if estimator.data_norm is None:
        raise ValueError(
            f"{type(estimator).__name__}.fit on a Dask collection needs a public data_norm: "
            "reading the bound from the data would need a pass and breaks the guarantee")
    X, names = as_dask_array(X)
    X = X.rechunk({1: -1})
    n, d = X.shape
    if n == 0 or d == 0:
        raise ValueError(f"Found array with shape {(n, d)}: at least one sample and one "
                         "feature are required")
    y = _as_dask_vector(y, X.chunks[0])
    checks = [all_finite(X)]
    if labels is None:
        checks.append(da.isfinite(y.astype(np.float64)).all())
    else:
        checks.append(da.isin(y, np.asarray(labels)).all())
    try:
        finite_X, good_y = dask.compute(*checks)
    except ValueError as exc:
        from ._raw_input import non_numeric_targets_message, quotes_an_entry

        if labels is None and quotes_an_entry(exc):   # y.astype(float64) on a string
            raise ValueError(non_numeric_targets_message(estimator)) from None
        raise
    if not finite_X:
        raise ValueError("Input X contains NaN or infinity.")
    if not good_y:
        raise ValueError("Input y contains NaN or infinity." if labels is None else
                         f"y contains labels not in classes={list(labels)!r}")
    estimator.n_features_in_ = int(d)
    if names is not None and all(isinstance(c, str) for c in names):
        estimator.feature_names_in_ = np.asarray(names, dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    return DaskDesign(X, y.map_blocks(encode, dtype=np.float64))


def _fusion_off():
    import dask

    return dask.config.set({"optimization.fuse.active": False})


#: dask's fusion switched off by the first fit in, its setting restored by the last out
_FUSION_OFF = SharedSetting(_fusion_off)


def without_low_level_fusion():
    """Dask's low-level task fusion (``optimization.fuse.active``) switched off while any
    thread is inside; the user's setting back once the last thread leaves.

    dask 2026.8's fusion of array graphs drops the tasks of a ``dd.from_delayed`` frame's
    partitions when they are read back through ``to_delayed`` into a Dask array -- what a
    private pipeline's fit and the searches' fold fits do -- and the compute fails with
    "Missing dependency ('fromdelayed-...', k)" (the failure family of dask issue #12127),
    after the fit's reservation.  Fusion only merges chains of tasks into one: it changes
    no value, so neither does switching it off.

    The switch is dask's process-wide configuration, which ``dask.config.set`` saves and
    restores per block: two fits entering and leaving interleaved (threads, a threading
    joblib backend) would restore each other's saved value -- fusion back on under a fit
    still running, or left off for good.  So the first thread to enter switches it off and
    the last to leave restores the setting, once
    (:class:`skdp._shared_setting.SharedSetting`)."""
    return _FUSION_OFF.held()
