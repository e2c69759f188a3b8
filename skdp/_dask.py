"""Dask collections as input: detection, validation and partition-wise reductions.

A fit on a ``dask.array.Array`` or a ``dask.dataframe.DataFrame`` must keep the rows on the
workers: what travels to the client is a reduction over partitions (``O(p)`` or ``O(p^2)``
numbers), computed on rows that were clipped to the public bounds *inside* each partition,
before anything leaves it.  The number of rows is read from the collection's chunk sizes
(counted when unknown) and treated as public, as for in-memory data.

Only :class:`skdp.preprocessing.DPStandardScaler` accepts Dask input so far; the estimators
refuse it with a clear error rather than collecting the data on the client.
"""

import numpy as np

__all__ = ["is_dask_collection", "as_dask_array", "check_dask_array", "refuse_dask"]


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
    return X.astype(np.float64), names


def check_dask_array(X):
    """Refuse NaN or infinite entries, as scikit-learn does for in-memory data: one
    reduction (a boolean per partition) travels to the client.  (A fit that reduces the
    data anyway folds this check into its own pass.)"""
    import dask.array as da

    if not bool(da.isfinite(X).all().compute()):
        raise ValueError("Input X contains NaN or infinity.")


def refuse_dask(estimator, X):
    """Raise a clear error when an estimator without a Dask path is given a Dask
    collection (instead of silently collecting it on the client)."""
    if is_dask_collection(X):
        raise TypeError(
            f"{type(estimator).__name__}.fit does not accept Dask collections yet: it would "
            "collect the data on the client.  Call .compute() on data that fits in memory; "
            "DPStandardScaler fits on Dask arrays and DataFrames partition by partition.")
