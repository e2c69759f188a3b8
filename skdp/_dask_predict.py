"""A fitted estimator's predictions, transforms and score on Dask collections, without
collecting them.

What a fitted model computes from new rows is post-processing of its release: it costs no
privacy, and it needs no pass over the training data.  On a ``dask.array.Array`` or a
``dask.dataframe.DataFrame`` it should not need the rows on the client either:

* :func:`lazy_rowwise` maps the in-memory method (``predict``, ``transform``...) over the
  row blocks, lazily: a Dask array of ``(n,)`` or ``(n, K)`` whose blocks are computed on
  the workers when asked
  (the rows of a DataFrame partition are handed to the method as a pandas DataFrame with
  the fitted column names, so the names are checked as in memory);
* :func:`dask_score` is the estimator's default score -- accuracy for a classifier,
  ``R^2`` for a regressor -- from per-partition sums (:func:`score_of`, the pipeline's
  too): a few numbers travel to the client.

A :class:`~skdp.PrivatePipeline` does the same for raw Dask DataFrames
(:mod:`skdp._dask_pipeline`).
"""

import numpy as np

__all__ = ["lazy_rowwise", "dask_score", "score_of"]


def _dask_rows(X):
    """``(array, names)``: ``X`` as a 2-D Dask array with one column chunk (a DataFrame's
    row chunks counted), and a DataFrame's column names or None."""
    import dask.array as da

    names = None
    if hasattr(X, "to_dask_array"):                 # DataFrame
        if getattr(X, "ndim", 2) != 2:
            raise ValueError("Expected a 2D DataFrame, got a Series: pass X.to_frame()")
        names = list(X.columns)
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"expected a dask array or DataFrame, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got {X.ndim} dimension(s)")
    return X.rechunk({1: -1}), names


def _check_columns(estimator, n_columns, names):
    """The public schema checks of ``validate_data(reset=False)``, made now rather than
    when the first block is computed: the number of columns and, for a DataFrame, their
    names."""
    n_features = getattr(estimator, "n_features_in_", None)
    if n_features is not None and n_columns != n_features:
        raise ValueError(f"X has {n_columns} features, but {type(estimator).__name__} is "
                         f"expecting {n_features} features as input.")
    fitted = getattr(estimator, "feature_names_in_", None)
    if fitted is not None and names is not None and list(fitted) != list(names):
        raise ValueError(f"The feature names should match those that were passed during "
                         f"fit: got {list(names)!r}, fitted with {list(fitted)!r}")


def _on_block(block, method, names, dense, empty):
    """``method`` on one block (a DataFrame of ``names`` for an array's block); a block
    without rows gives ``empty`` (the in-memory methods refuse zero rows)."""
    if block.shape[0] == 0:
        return empty
    if names is not None:
        import pandas as pd

        block = pd.DataFrame(block, columns=names)
    out = method(block)
    if dense and hasattr(out, "toarray"):
        out = out.toarray()
    return np.asarray(out)


def lazy_rowwise(method, X, tail_shape, dtype, dense=False):
    """``method`` (a fitted estimator's bound in-memory method: ``predict``, ``transform``...)
    over the Dask collection ``X``: a lazy Dask array of shape ``(n,) + tail_shape`` and
    ``dtype``, whose blocks are computed on the workers when asked; ``dense``: a sparse
    block (a CSR basis) is densified there.  A DataFrame's partitions reach ``method`` as
    pandas DataFrames with their own dtypes (their lengths stay unknown until computed), an
    array's blocks as arrays.  Nothing is computed here."""
    import dask
    import dask.array as da

    tail_shape = tuple(int(k) for k in tail_shape)
    if hasattr(X, "to_delayed") and not isinstance(X, da.Array):   # DataFrame
        if getattr(X, "ndim", 2) != 2:
            raise ValueError("Expected a 2D DataFrame, got a Series: pass X.to_frame()")
        _check_columns(method.__self__, len(X.columns), list(X.columns))
        meta = np.empty((0,) + tail_shape, dtype=dtype)
        blocks = [da.from_delayed(dask.delayed(_on_block)(part, method, None, dense, meta),
                                  shape=(np.nan,) + tail_shape, dtype=dtype, meta=meta)
                  for part in X.to_delayed()]
        return da.concatenate(blocks, axis=0, allow_unknown_chunksizes=True)
    X, names = _dask_rows(X)
    _check_columns(method.__self__, X.shape[1], names)
    # meta given: dask does not call the method on an empty block to infer it
    meta = np.empty((0,) + tail_shape, dtype=dtype)
    if tail_shape:
        return X.map_blocks(_on_block, method, names, dense, meta, dtype=dtype, meta=meta,
                            chunks=(X.chunks[0],) + tuple((k,) for k in tail_shape))
    return X.map_blocks(_on_block, method, names, dense, meta, dtype=dtype, meta=meta,
                        drop_axis=1)


def dask_score(estimator, X, y, classifier):
    """The default score of a fitted ``estimator`` on Dask ``X`` and ``y`` (a Dask array or
    Series, or an in-memory vector, aligned with ``X`` by position): the accuracy of
    ``estimator.predict`` (``classifier``) or its ``R^2``, from sums over the partitions."""
    from ._dask import _as_dask_vector

    X, names = _dask_rows(X)
    _check_columns(estimator, X.shape[1], names)
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    n = int(X.shape[0])
    target = _as_dask_vector(y, X.chunks[0])
    dtype = target.dtype if classifier else np.float64
    meta = np.empty((0,), dtype=dtype)
    pred = X.map_blocks(_on_block, estimator.predict, names, False, meta, drop_axis=1,
                        dtype=dtype, meta=meta)
    return score_of(pred, target, n, classifier)


def score_of(pred, target, n, classifier):
    """The accuracy (``classifier``) or ``R^2`` of the lazy predictions ``pred`` against
    the lazy ``target`` (the same row chunks, ``n`` rows), from sums over the blocks."""
    import dask

    if classifier:
        return float((pred == target).sum().compute()) / n
    t = target.astype(np.float64)
    # the squares about the mean (not s2 - s^2/n, which cancels for targets far from 0)
    sse, sst = dask.compute(((t - pred) ** 2).sum(), ((t - t.mean()) ** 2).sum())
    return float(1.0 - sse / sst) if sst > 0 else 0.0
