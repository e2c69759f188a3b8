r"""The public folds of a Dask collection, fitted and scored where its partitions are.

A private search or cross-validation splits its ``n`` rows by position: the folds are a
public random permutation of ``0 .. n - 1`` (:func:`skdp.model_selection._common.
public_splits`), drawn from ``n`` and the search's seed alone.  On a Dask DataFrame (a raw
table, as :class:`~skdp.PrivatePipeline` fits it) or a Dask array, position ``j`` is the
``j``-th row of the partitions taken in order.

Public quantities.  Under replace-one neighbours the rows of every partition are public
(a neighbour has another row at the same place of the same partition), as ``n`` is; one
pass counts them (:func:`skdp._dask_pipeline.inspect_frame` for a DataFrame, the chunk
sizes of an array).  The client then holds one fold label per row
(:class:`~skdp.model_selection._common.PublicSplits`: one byte a row, the public split,
never a value of the data) -- and, while it draws them, the permutation (eight bytes a
row).

Training parts.  A split's training part is a lazy collection of the partitions' rows
outside its validation fold, in their order: the rows, and the order, of the in-memory
``_safe_indexing`` with the sorted indices, so an estimator that fits Dask collections
(a :class:`~skdp.PrivatePipeline` on a raw DataFrame, the estimators on a Dask array)
releases the event of its in-memory fit of the same rows (the search checks each fit's
event against its plan) -- and, under objective perturbation and DP-SGD, the same model up
to the rounding of partition sums; a partition with no training row is left out, which
depends on the public labels only.  Each fit counts its rows again (its own public ``n``).

Validation scores.  Each partition's validation rows are scored on its worker: the
clipped per-row terms of :meth:`~skdp.model_selection.PrivateScorer.row_values`, summed
there.  Only one float per partition reaches the client, where the partial sums are
added in partition order -- a summation tree, which
:meth:`~skdp.model_selection.PrivateScorer.released_sensitivity` already bounds for any
order.  The raw sum is noised by the caller, as in memory.
"""

import numpy as np

from .._dask import _as_dask_vector, is_dask_collection

__all__ = ["DaskFolds", "fit_fold", "fold_score_sum", "split_rows"]


class DaskFolds:
    """``X`` (a Dask DataFrame or 2-D array) and ``y`` as aligned partitions of public
    lengths, and the training and validation parts of public splits of their rows.

    Parameters
    ----------
    X : dask.dataframe.DataFrame or dask.array.Array of shape (n, p)
    y : Dask Series or array, or array-like, of shape (n,)
        Aligned with ``X`` by position (its partitions need not match ``X``'s).
    """

    def __init__(self, X, y):
        import dask.array as da

        from .._dask_pipeline import inspect_frame, is_dask_frame

        if is_dask_frame(X):
            rows = inspect_frame(X, y)
            self.schema = rows.schema
            self.x_parts = list(rows.parts)
            lengths = rows.lengths
            target = rows.y
        elif isinstance(X, da.Array):
            if X.ndim != 2:
                raise ValueError(f"Expected a 2D array, got {X.ndim} dimension(s)")
            X = X.rechunk({1: -1})
            if any(np.isnan(c) for c in X.chunks[0]):
                X = X.compute_chunk_sizes()
            self.schema = None
            self.width, self.dtype = int(X.shape[1]), X.dtype
            self.x_parts = list(X.to_delayed().ravel())
            lengths = tuple(int(c) for c in X.chunks[0])
            target = y
        else:
            raise TypeError("X must be a Dask DataFrame or a Dask array (a Series is not a "
                            f"table: pass X.to_frame()), got {type(X).__name__}")
        self.public_X = self.schema if self.schema is not None else X
        self.lengths = tuple(int(m) for m in lengths)
        self.n = int(sum(self.lengths))
        vector = _as_dask_vector(target, self.lengths)
        self.y_dtype = vector.dtype
        self.y_parts = list(vector.to_delayed().ravel())

    @property
    def lazy(self):
        """Whether the public ``X`` is a DataFrame's schema (plans run on lazy
        placeholder rows, as :meth:`skdp.PrivatePipeline.fit` plans a Dask DataFrame)."""
        return self.schema is not None

    def labels(self):
        """The sorted distinct values of ``y`` (one unique per partition on the workers):
        only where no public label set was given -- a non-private read, which the
        caller reports (:func:`skdp.model_selection._common.public_label_set`)."""
        import dask

        uniques = dask.compute(*[dask.delayed(np.unique)(p) for p in self.y_parts])
        return np.unique(np.concatenate(uniques))

    def split(self, splits):
        """``(X_train, y_train, X_val, None)`` of every split of ``splits`` (a
        :class:`~skdp.model_selection._common.PublicSplits` of ``n`` rows): lazy training
        collections and a :class:`_Validation` of the fold.  Nothing is read; each
        partition's task holds its slice of the fold labels."""
        starts = np.cumsum((0,) + self.lengths[:-1])
        labels = [splits.labels[a:a + m] for a, m in zip(starts, self.lengths)]
        return [(*self._training(labels, s), _Validation(self, labels, s), None)
                for s in range(len(splits))]

    def _training(self, labels, s):
        import dask
        import dask.array as da
        import dask.dataframe as dd

        kept = [(x, y, lab, int(np.count_nonzero(lab != s)))
                for x, y, lab in zip(self.x_parts, self.y_parts, labels)]
        kept = [k for k in kept if k[3] > 0]
        take = dask.delayed(_rows_outside, pure=True)
        y_train = da.concatenate([da.from_delayed(take(y, lab, s), shape=(m,),
                                                  dtype=self.y_dtype)
                                  for _, y, lab, m in kept], axis=0)
        if self.schema is not None:
            X_train = dd.from_delayed([take(x, lab, s) for x, _, lab, _ in kept],
                                      meta=self.schema, verify_meta=False)
        else:
            X_train = da.concatenate([da.from_delayed(take(x, lab, s),
                                                      shape=(m, self.width),
                                                      dtype=self.dtype)
                                      for x, _, lab, m in kept], axis=0)
        return X_train, y_train


class _Validation:
    """The validation fold ``s`` of a :class:`DaskFolds`: each partition's rows labelled
    ``s``, scored where the partition is (:func:`fold_score_sum`)."""

    def __init__(self, folds, labels, s):
        self.folds, self.labels, self.s = folds, labels, s


def _rows(part, keep):
    return part.iloc[keep] if hasattr(part, "iloc") else part[keep]


def _rows_outside(part, labels, s):
    return _rows(part, np.flatnonzero(labels != s))


def _partition_score_sum(scorer, estimator, part, y_part, labels, s):
    keep = np.flatnonzero(labels == s)
    if keep.size == 0:
        return 0.0
    return float(np.sum(scorer.row_values(estimator, _rows(part, keep), y_part[keep])))


def fit_fold(estimator, X_train, y_train):
    """``estimator.fit`` on a training part of :meth:`DaskFolds.split` (a
    ``dd.from_delayed`` frame) with dask's low-level fusion off, which fails on such
    frames (:func:`skdp._dask.without_low_level_fusion`; it changes no value)."""
    from .._dask import without_low_level_fusion

    with without_low_level_fusion():
        return estimator.fit(X_train, y_train)


def fold_score_sum(scorer, estimator, validation):
    """The sum of ``scorer``'s clipped per-row terms of the fitted ``estimator`` over the
    rows of ``validation``: one partial sum per partition, computed on its worker, added
    here in partition order.  The caller noises it."""
    import dask

    from .._solvers._dask_objective import _ordered_sum

    folds = validation.folds
    task = dask.delayed(_partition_score_sum)
    sums = dask.compute(*[task(scorer, estimator, x, y, lab, validation.s)
                          for x, y, lab in zip(folds.x_parts, folds.y_parts,
                                               validation.labels)
                          if np.any(lab == validation.s)])
    return float(_ordered_sum(sums))


def split_rows(X, y, who):
    """``(X, y, n, X_public, folds)`` for ``who`` (a search or the cross-validation):
    a Dask ``X`` gives its :class:`DaskFolds` (one pass: the partitions' public lengths)
    and the public ``X`` its plans read (a DataFrame's schema); in-memory ``X`` and ``y``
    are made indexable, ``folds`` None.  An in-memory ``X`` with a Dask ``y`` is refused
    (their rows would be aligned by collecting ``y``)."""
    from sklearn.utils.validation import _num_samples, indexable

    if is_dask_collection(X):
        folds = DaskFolds(X, y)
        return X, y, folds.n, folds.public_X, folds
    if is_dask_collection(y):
        raise ValueError(f"{who} was given an in-memory X and a Dask y: pass both in memory "
                         "(y.compute()) or both as Dask collections")
    X, y = indexable(X, y)
    return X, y, _num_samples(X), X, None
