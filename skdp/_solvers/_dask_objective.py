r"""The regularised (and perturbed) risk of a design held on Dask workers.

:class:`DaskObjective` has the interface of :class:`skdp._solvers._objective.Objective`
(``value_grad``, ``rounding_allowance``, ``hessian``, ``subsample``), so the certified
minimisers of objective and output perturbation run unchanged on data larger than the
client's memory.

What travels
------------
The rows stay on the workers (``persist``) with their clip factors, computed there
partition by partition (:func:`scaled_design`); each pass forms the clipped, augmented rows
on the fly, bitwise those of :func:`skdp._mechanisms.clip_and_augment` (the per-step
solvers' :func:`clipped_design` keeps that copy instead).  A private pipeline's basis is
not persisted: its workers keep it as compact rows and each task that reads a partition
expands it first (:func:`skdp._dask.block_tasks`,
:func:`skdp._dask_pipeline.rebuilt_basis`).
Each evaluation sends ``W`` (``p`` numbers) to every partition and brings back ``p + 1``
numbers per partition: the partition's loss sum and gradient sum, computed by the same
specialised kernel as in memory (:func:`skdp._losses._kernels.binary_sums`,
the partition's rows in ``N_CHUNKS`` chunks of blocks), or, for CSR partitions (a private
pipeline's basis, which stays sparse: about a fifth of the dense basis's memory), the
in-memory sparse pass (:func:`skdp._losses._vectorised.sparse_sums`).  The client adds the partition
totals in partition order and forms ``sum/n + alpha W (+ b/n)``.  A Newton step brings back
one ``p x p`` matrix per partition.  No row, margin or residual leaves a worker.

Rounding
--------
Within a partition of ``n_k <= n`` rows the kernel's summation depth is at most that of an
in-memory pass over ``n`` rows (:func:`~skdp._solvers._objective.kernel_sum_depth`; CSR:
:func:`~skdp._losses._vectorised.blocked_sum_depth`, increasing in ``n``), and
adding the ``P`` partition totals in order adds ``(P - 1) u sum_i |x_ij g_i|`` to entry
``j``, a vector of 2-norm ``<= (P - 1) u n C g_max``:
:func:`~skdp._solvers._objective.gradient_rounding_allowance` with ``partitions=P``.  The
certificate therefore holds for the Dask sums exactly as for the in-memory ones.

Failures
--------
Every evaluation reduces over *all* partitions or raises: a lost worker is recomputed from
the collection's lineage by Dask (the same rows, clipped again the same way), and an error
that Dask cannot recover propagates out of ``fit`` before anything is released.
"""

import numpy as np

from .._mechanisms import clip_and_augment
from ._objective import (
    BINARY_CONVEX,
    gradient_rounding_allowance,
    linear_term_allowance,
    margin_curvature,
    max_row_terms,
    weighted_gram,
)

__all__ = ["DaskDesign", "DaskObjective", "clipped_design", "partition_blocks",
           "partition_sum", "scaled_design"]


class DaskDesign:
    """Features and encoded targets of a fit, on the workers.

    ``X``: 2-D float64 ``dask.array`` with one column chunk and known row chunks; ``y``: the
    encoded targets (1-D, the same row chunks).  ``shape`` is ``(n, d)`` of the *raw*
    features (``n`` is public, read from the chunk sizes), also for an ``augmented`` design,
    whose ``X`` holds the clipped rows with the intercept column (:func:`clipped_design`)."""

    def __init__(self, X, y, raw_features=None):
        self.X = X
        self.y = y
        self.augmented = raw_features is not None
        n, d = (int(s) for s in X.shape)
        self.shape = (n, d if raw_features is None else int(raw_features))
        self.n_partitions = len(X.chunks[0])
        #: the clip factors of the rows (:func:`scaled_design`), None until computed
        self.scale = None
        self.intercept = 0.0
        self.n_coef = d
        #: ``(row_bound, fit_intercept, intercept_scaling)`` when the rows are clipped and
        #: augmented as a step samples them (CSR blocks, :func:`clipped_design`), else None
        self.clip_rows = None

    def with_targets(self, y):
        """This design with the targets ``y`` (a Dask vector with the same row chunks, e.g.
        a public map of these targets computed on the workers)."""
        import copy

        out = copy.copy(self)
        out.y = y
        return out


def _block_scale(block, row_bound, fit_intercept, intercept_scaling):
    """The clip factors of a partition's rows *as given*: every pass multiplies the raw
    rows by them (the dense kernels form ``fl(x_ij s_i)`` first; a CSR pass builds a
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows`, which stores its long rows
    clipped).  Not a design's factors, whose long rows are already clipped and set to 1."""
    from .._mechanisms._clipped_rows import clip_factors

    return clip_factors(block, row_bound, fit_intercept, intercept_scaling)[1]


def scaled_design(design, row_bound, fit_intercept, intercept_scaling):
    """``design`` with the clip factors ``s_i`` of every partition's rows computed and
    kept on its worker next to the rows (``persist``): the partition passes form
    ``[s_i x_i, intercept_scaling]`` on the fly
    (:class:`~skdp._mechanisms._clipped_rows.ClippedRows`), bitwise the clipped copy's
    rows, without holding that copy (``n`` numbers per partition instead of
    ``n (d + 1)``).  A design already clipped (augmented) or scaled is returned as is.
    Rows rebuilt per pass from compact rows kept on the workers (a private pipeline's
    basis, :func:`skdp._dask.keep_rows`) are not persisted: only their factors are."""
    if design.augmented or design.scale is not None:
        return design
    from .._dask import keep_rows, map_rows

    # a pipeline's basis rebuilt per pass from compact rows (keep_rows) is not persisted:
    # each pass expands one partition at a time on its worker
    X, y = keep_rows(design.X), design.y.persist()

    scale = map_rows(X, _block_scale, float(row_bound), bool(fit_intercept),
                     float(intercept_scaling)).persist()
    out = DaskDesign(X, y)
    out.scale = scale
    out.intercept = float(intercept_scaling) if fit_intercept else 0.0
    out.n_coef = design.shape[1] + int(bool(fit_intercept))
    return out


def _scale_blocks(design):
    """``{"scale": [the factors of each partition]}`` for :func:`partition_sum` (empty for a
    clipped copy)."""
    if design.scale is None:
        return {}
    return {"scale": list(design.scale.to_delayed().ravel())}


def _clip_block(block, row_bound, fit_intercept, intercept_scaling):
    return clip_and_augment(block, row_bound, fit_intercept, intercept_scaling)


def clipped_design(design, row_bound, fit_intercept, intercept_scaling):
    """``design`` with every partition clipped to the public ``row_bound`` and augmented
    with the intercept column *on its worker*, kept there (``persist``).  An augmented
    design is returned as is, so that several stages of a fit clip once."""
    if design.augmented or design.clip_rows is not None:
        return design
    X, y = design.X, design.y
    from .._dask import is_sparse_blocks

    if is_sparse_blocks(X):
        # CSR blocks (a pipeline's basis) stay CSR on the workers: the rows a step samples
        # are clipped and augmented there, as they are drawn (``clip_rows``), bitwise the
        # rows of the dense copy (clip_and_augment is row by row)
        out = DaskDesign(X.persist(), y.persist())
        out.clip_rows = (float(row_bound), bool(fit_intercept), float(intercept_scaling))
        return out
    p = X.shape[1] + int(bool(fit_intercept))
    X = X.map_blocks(_clip_block, float(row_bound), bool(fit_intercept),
                     float(intercept_scaling), chunks=(X.chunks[0], (p,)), dtype=np.float64)
    return DaskDesign(X.persist(), y.persist(), raw_features=design.shape[1])


def _every(block, step):
    if hasattr(block, "tocsr"):          # CSR rows (a pipeline's basis) stay CSR
        return block.tocsr()[::step]
    return np.ascontiguousarray(block[::step])


def _rows_on_worker(X, scale, intercept, augmented):
    """A partition's rows clipped on the fly (:class:`ClippedRows` over the block and its
    factors ``scale``; no copy)."""
    from .._mechanisms._clipped_rows import ClippedRows

    rows = ClippedRows.__new__(ClippedRows)
    rows._set(X, scale, intercept, augmented, hasattr(X, "tocsr"))
    return rows


def _partition_sums(X, y, W, loss_id, param, intercept=0.0, scale=None):
    """``[sum_i l_i, sum_i x_i' l'_i]`` of one partition (:func:`binary_sums`: the in-memory
    kernel's chunks and blocks over the partition's rows, clipped on the fly with the
    factors ``scale`` when given)."""
    if hasattr(X, "tocsr"):
        if scale is None:
            raise ValueError("CSR partitions are passed with their clip factors")
        # CSR rows (a pipeline's basis): the in-memory sparse pass over the partition, its
        # chunks added in order (depth blocked_sum_depth(n_k) + 1 <= that of n rows)
        from .._losses._vectorised import sparse_sums

        rows = _rows_on_worker(X, scale, intercept, W.shape[0] > X.shape[1])
        value, total = sparse_sums(rows, y, W, loss_id, param, 1)
        return np.concatenate(([value], total.ravel()))
    from .._losses._kernels import binary_sums  # numba: imported where it runs (a worker)

    value, total = binary_sums(X, y, W, loss_id, param, 1, scale, intercept)
    return np.concatenate(([value], total))


def _partition_hessian(X, y, w, loss_id, param, intercept=0.0, scale=None):
    """``sum_i l''(x_i' w) x_i' x_i'^T`` of one partition (Newton steps only)."""
    from .._losses._vectorised import curvature_weights

    if scale is None:
        return weighted_gram(X, curvature_weights(X @ w, y, loss_id, param))
    rows = _rows_on_worker(X, scale, intercept, w.shape[0] > X.shape[1])
    return rows.weighted_gram(curvature_weights(rows.matvec(w), y, loss_id, param))


class DaskObjective:
    """``F(W) = (1/n) sum_i l(x_i W, y_i) + (alpha/2)||W||^2 + <b, W>/n`` over a
    :class:`DaskDesign` (binary logistic or Huber, ``K = 1``).

    Parameters
    ----------
    design : DaskDesign
        Raw features (clipped here, on the workers) and encoded targets.
    loss : LogisticLoss or HuberLoss
    alpha : float
    row_bound : float
        Public bound ``R`` on the augmented row.
    fit_intercept : bool
    intercept_scaling : float
    b_over_n : ndarray of shape (p, 1) or None
        The objective perturbation's linear term (None: unperturbed).
    """

    def __init__(self, design, loss, alpha, row_bound, fit_intercept, intercept_scaling,
                 b_over_n=None):
        if loss.loss_id not in BINARY_CONVEX:
            raise ValueError("Dask fits support binary logistic and Huber losses")
        self.design = scaled_design(design, row_bound, fit_intercept, intercept_scaling)
        self.loss = loss
        self.alpha = float(alpha)
        self.row_bound = float(row_bound)
        self.fit_intercept = bool(fit_intercept)
        self.intercept_scaling = float(intercept_scaling)
        self.n, self.d = self.design.shape[0], self.design.n_coef
        self.n_outputs = 1
        self.shape = (self.d, 1)
        self.b_over_n = (None if b_over_n is None else
                         np.ascontiguousarray(b_over_n, dtype=np.float64).reshape(self.shape))
        self.n_evals = 0
        self.extra_example_gradients = 0
        from .._dask import is_sparse_blocks

        #: CSR partitions (a private pipeline's basis): each pass is the in-memory sparse
        #: pass over a partition's rows (:func:`_partition_sums`), and the rounding
        #: allowance is the sparse path's
        self.sparse = is_sparse_blocks(self.design.X)
        #: the largest count of non-zeros in a row of CSR partitions (the margins' terms in
        #: the allowance): one reduction over the partitions' row pointers, on first use
        self._row_terms = None

    @property
    def row_terms(self):
        """The design's largest count of non-zeros in a row (CSR partitions), else None."""
        if self.sparse and self._row_terms is None:
            import dask

            from .._dask import block_tasks

            self._row_terms = int(max(dask.compute(*block_tasks(self.design.X,
                                                                 max_row_terms)) + (0,)))
        return self._row_terms

    def value_grad(self, W):
        """``(F(W), grad F(W))``: one reduction over the partitions."""
        self.n_evals += 1
        W = np.ascontiguousarray(W, dtype=np.float64).reshape(self.shape)
        total = partition_sum(self.design, _partition_sums, W, self.loss.loss_id,
                              self.loss.param, self.design.intercept,
                              per_partition=_scale_blocks(self.design))
        grad = (total[1:] / self.n + self.alpha * W[:, 0]).reshape(self.shape)
        value = total[0] / self.n + 0.5 * self.alpha * float(np.sum(W * W))
        if self.b_over_n is not None:
            value += float(np.sum(self.b_over_n * W))
            grad = grad + self.b_over_n
        return float(value), grad

    def value_grad_flat(self, w):
        value, grad = self.value_grad(w.reshape(self.shape))
        return value, grad.ravel()

    @property
    def n_example_gradients(self):
        return self.n_evals * self.n + self.extra_example_gradients

    def rounding_allowance(self, W):
        """The in-memory bound with the partition sum added (module docstring), plus the
        linear term's when perturbed."""
        g_max = max(1.0, float(self.loss.lipschitz(1.0)))
        w_norm = float(np.linalg.norm(W))
        bound = gradient_rounding_allowance(self.n, self.d, 1, self.row_bound, g_max,
                                            self.alpha, w_norm,
                                            partitions=self.design.n_partitions,
                                            curvature=margin_curvature(self.loss, 1),
                                            vectorised=self.sparse, scaled=self.sparse,
                                            sparse=self.sparse, row_terms=self.row_terms)
        if self.b_over_n is not None:
            bound += linear_term_allowance(float(self.loss.lipschitz(self.row_bound)),
                                           self.alpha, w_norm,
                                           float(np.linalg.norm(self.b_over_n)))
        return bound

    def hessian(self, W):
        """``X^T diag(l'') X / n + alpha I`` from one ``p x p`` matrix per partition."""
        w = np.ascontiguousarray(W[:, 0], dtype=np.float64)
        H = partition_sum(self.design, _partition_hessian, w, self.loss.loss_id,
                          self.loss.param, self.design.intercept,
                          per_partition=_scale_blocks(self.design))
        self.extra_example_gradients += self.n
        H /= self.n
        H[np.diag_indices_from(H)] += self.alpha
        return H

    def subsample(self, step):
        """The same objective on every ``step``-th row of each partition (warm starts: the
        path only), kept on the workers."""
        import dask.array as da

        from .._dask import block_tasks

        source = self.design
        rows = tuple(-(-int(c) // step) for c in source.X.chunks[0])   # public sizes
        # one task a partition (a basis rebuilt per pass is expanded inside it)
        X = da.concatenate([
            da.from_delayed(task, shape=(r, source.X.shape[1]), dtype=np.float64,
                            meta=source.X._meta)
            for task, r in zip(block_tasks(source.X, _every, args=(step,)), rows)], axis=0)
        y = source.y.map_blocks(_every, step, chunks=(rows,), dtype=np.float64)
        if source.scale is None:
            design = DaskDesign(X.persist(), y.persist(), raw_features=source.shape[1])
        else:
            design = DaskDesign(X.persist(), y.persist())
            design.scale = source.scale.map_blocks(_every, step, chunks=(rows,),
                                                   dtype=np.float64).persist()
            design.intercept, design.n_coef = source.intercept, source.n_coef
        sub = DaskObjective(design, self.loss, self.alpha, self.row_bound,
                            self.fit_intercept, self.intercept_scaling, self.b_over_n)
        sub._row_terms = self.row_terms       # its rows are some of these: still a bound
        return sub


def partition_blocks(design):
    """``[(X_k, y_k)]``: the delayed partitions of a design, in partition order."""
    xs = design.X.to_delayed().ravel()
    ys = design.y.to_delayed().ravel()
    return list(zip(xs, ys))


def partition_sum(design, fn, *args, per_partition=None, **kwargs):
    """``sum_k fn(X_k, y_k, *args, **kwargs)`` over the partitions of ``design``: each term
    computed on its partition's worker, the terms added on the client from zero in partition
    order (a fixed reduction, the order the callers' rounding bounds assume).
    ``per_partition``: ``{name: [one value per partition]}``, passed as keywords.  ``fn``
    returns an array, or a tuple of arrays/numbers summed componentwise."""
    import dask

    from .._dask import block_tasks

    # each term one task (a basis rebuilt per pass is expanded inside it: block_tasks)
    parts = dask.compute(*block_tasks(design.X, fn, list(design.y.to_delayed().ravel()),
                                      args=args, kwargs=kwargs,
                                      per_block_kwargs=per_partition))
    if isinstance(parts[0], tuple):
        return tuple(_ordered_sum([part[i] for part in parts]) for i in range(len(parts[0])))
    return _ordered_sum(parts)


def _ordered_sum(values):
    total = np.zeros(np.shape(values[0]))
    for value in values:
        total += value
    return total
