"""The regularised empirical risk and its gradient on clipped rows.

``F(W) = (1/n) sum_i l(x_i W, y_i) + (alpha/2) ||W||_F^2``.  Binary logistic and Huber
(one output, the default estimators' objectives) are evaluated in numpy/BLAS up to a size
(:func:`uses_vectorised`; :func:`skdp._losses._vectorised.binary_value_grad`: nothing to
compile on a first fit), above it, and for the other losses and the multinomial
objective, in one fused numba pass
(:func:`skdp._losses._kernels.binary_value_grad`,
:func:`~skdp._losses._kernels.design_value_grad`).  The gradient is summed in fixed chunks
and blocks so that its rounding error has a bound (see :meth:`Objective.rounding_allowance`),
which the certified solver relies on, and so that the result is bitwise identical whatever
the number of threads.
"""

import numpy as np

from .._losses import _vectorised
from .._losses._ids import BLOCK, HUBER, LOGISTIC
from .._mechanisms._clipped_rows import ClippedRows, gram_of_blocks
from .._mechanisms._clipping import block_rows
from .._mechanisms._summation import UNIT_ROUNDOFF
from .._parallel import current_threads

#: the convex scalar-margin losses evaluated by the specialised kernel (same bits, a
#: fraction of the generic kernel's compilation)
BINARY_CONVEX = (LOGISTIC, HUBER)
#: rows per block of :func:`weighted_gram`'s sum of ``x_i l''_i x_i^T``
HESSIAN_BLOCK_ROWS = 4096


class Objective:
    """Value and gradient of the regularised risk on the clipped design.

    Parameters
    ----------
    X : ClippedRows, or an ndarray (n, p_in) of rows already clipped to ``data_norm``
        The design (:class:`skdp._mechanisms._clipped_rows.ClippedRows`: the user's rows,
        clipped on the fly, dense or sparse, not copied).
    y : ndarray (n,), encoded targets
    loss : loss spec from :mod:`skdp._losses`
    alpha : float, L2 strength
    n_outputs : int, number of columns K of W
    data_norm : float, the public row bound (stored as ``row_bound``, for the rounding
        allowance)
    """

    def __init__(self, X, y, loss, alpha, n_outputs, data_norm):
        self.design = X if isinstance(X, ClippedRows) else ClippedRows.of_clipped(X)
        self.y = y
        self.loss = loss
        self.alpha = float(alpha)
        self.n_outputs = int(n_outputs)
        self.row_bound = float(data_norm)
        self.n, self.d = self.design.shape
        self.shape = (self.d, self.n_outputs)
        self.sparse = self.design.sparse
        #: an already clipped array (ClippedRows.of_clipped): the numpy pass reads its rows
        #: as they are; else the rows are scaled on the fly (the allowance's ``scaled``)
        self.plain = not isinstance(X, ClippedRows)
        #: numpy/BLAS evaluation (public sizes, format and loss only;
        #: :mod:`skdp._losses._vectorised`); a sparse design always runs there
        self.vectorised = self.sparse or uses_vectorised(self.n, self.d, self.n_outputs,
                                                         loss.loss_id)
        self.n_evals = 0
        self.extra_example_gradients = 0  # e.g. spent on a warm start elsewhere
        #: the largest count of non-zeros in a row of a sparse design (its margins' terms,
        #: for the rounding allowance), None for a dense one
        self.row_terms = max_row_terms(self.design.X) if self.sparse else None
        #: ``(W, x_i' W)`` of the last evaluation of a sparse single-output objective:
        #: :meth:`curvature` at that point (Newton-CG's next step) reads them instead of
        #: another pass over the rows
        self._margins = None

    def value_grad(self, W):
        """Return ``(F(W), grad F(W))`` with ``W`` of shape ``(d, K)``."""
        self.n_evals += 1
        W = np.ascontiguousarray(W, dtype=np.float64)
        grad = np.empty_like(W)
        design, loss = self.design, self.loss
        if self.sparse:
            margins = None
            if W.shape[1] == 1:     # the last point's margins are overwritten: one buffer
                margins = np.empty(self.n) if self._margins is None else self._margins[1]
                self._margins = None
            value = _vectorised.sparse_value_grad(design, self.y, W, loss.loss_id, loss.param,
                                                  self.alpha, grad, current_threads(),
                                                  margins)
            self._margins = None if margins is None else (W.copy(), margins)
            return float(value), grad
        if self.vectorised:
            value = _vectorised.binary_value_grad(design, self.y, W, loss.loss_id, loss.param,
                                                  self.alpha, grad, current_threads())
            return float(value), grad
        # the numba kernels, imported on first use (the numpy path above needs none)
        from .._losses._kernels import binary_value_grad, design_value_grad

        if W.shape[1] == 1 and loss.loss_id in BINARY_CONVEX:
            value = binary_value_grad(design.X, self.y, W, loss.loss_id, loss.param,
                                      self.alpha, grad, design.scale, design.intercept)
        else:
            value = design_value_grad(design.X, design.scale, design.intercept, self.y, W,
                                      loss.loss_id, loss.param, self.alpha, grad)
        return float(value), grad

    @property
    def n_example_gradients(self):
        """Per-example gradients computed so far (``n`` per evaluation, plus extras)."""
        return self.n_evals * self.n + self.extra_example_gradients

    def value_grad_flat(self, w):
        """The same on a flat vector (for scipy)."""
        value, grad = self.value_grad(w.reshape(self.shape))
        return value, grad.ravel()

    def rounding_allowance(self, W):
        """Upper bound on ``||computed grad - exact grad||_F`` at ``W``.

        Per entry ``(j, k)``, with ``u = 2^-53``, ``C = data_norm``, ``g_max`` the bound on
        ``|dl/dz_k|`` (1 for logistic/softmax, h for Huber), ``B`` = ``BLOCK``, ``m`` the
        number of blocks:

        * the margin ``z = x W`` errs by ``<= k u C ||W||`` with ``k`` the roundings on a
          product's path: ``_dot_row`` adds the ``p_in`` products in four interleaved
          accumulators (at most ``p_in//4 + 3`` terms each, the first addition exact) and
          then ``(a0 + a1) + (a2 + a3)``, so ``k = p_in//4 + 5`` (``p_in`` for BLAS's dot on
          the numpy path, any order); this moves ``dl/dz`` by at most
          ``curv k u C ||W||``, ``curv`` = sup of ``l''`` (``loss.smoothness(1)``: 1/4 for
          logistic, 1 for Huber; 1 for multinomial);
        * the derivative kernel errs by ``<= (8 + 2K) u g_max`` (a few correctly rounded
          exp/log1p/divisions per row); the numpy path by ``<= DERIVATIVE_ULPS u g_max``
          (:mod:`skdp._losses._vectorised`: numpy's exp is not correctly rounded);
        * summing ``x_ij g_ik`` within blocks of ``B`` rows, then the ``m`` blocks of a chunk,
          then the ``N_CHUNKS`` chunks, errs by at most
          ``(B + m + N_CHUNKS) u sum_i |x_ij g_ik| <= (B + m + N_CHUNKS) u n C g_max``
          (recursive summation, Higham, *Accuracy and Stability*, §4.2), ``m =
          ceil(ceil(n/N_CHUNKS)/B)`` the blocks of one chunk (a term meets the additions
          of its own chunk's blocks only); on the numpy path
          ``B + m + N_CHUNKS`` becomes :func:`~skdp._losses._vectorised.blocked_sum_depth`
          (BLAS's order within sub-blocks of ``BLOCK`` rows, their totals added in order
          within each of the ``N_CHUNKS`` chunks) on a dense design, and on a sparse one
          (each sub-block's rows added in order), plus one for the scaling;
        * dividing by ``n`` and adding ``alpha W`` adds ``<= 2u (|grad| + alpha |W|)``.

        Summing and doubling for second-order terms gives the bound returned, times
        ``sqrt(K)`` for the Frobenius norm over the outputs -- not ``sqrt(p_in K)``: each
        output's error is a vector over the ``p_in`` coefficients, and every term above
        bounds its 2-norm, not just each entry, by the triangle inequality over the rows.
        A row's margin or derivative error ``e_i`` enters as ``x_i e_i``, of norm ``<= C
        |e_i|``; the summation error of entry ``j`` is at most ``depth u sum_i |x_ij g_i|``,
        and the vector of those sums has norm ``<= sum_i |g_i| ||x_i|| <= n C g_max``.  (A
        per-entry bound times ``sqrt(p_in)`` -- what this used before -- overstates it by
        ``sqrt(p_in)``: rows of norm ``C`` spread their mass over the entries.)
        """
        K = self.n_outputs
        g_max = max(1.0, self.loss.lipschitz(1.0) / (np.sqrt(2.0) if K > 1 else 1.0))
        return gradient_rounding_allowance(self.n, self.d, K, self.row_bound, g_max,
                                           self.alpha, float(np.linalg.norm(W)),
                                           vectorised=self.vectorised,
                                           curvature=margin_curvature(self.loss, K),
                                           scaled=self.vectorised and not self.plain,
                                           sparse=self.sparse, row_terms=self.row_terms)

    def hessian(self, W):
        """``X^T diag(l''(X W)) X / n + alpha I`` for a single-output loss (``K = 1``):
        the (a.e.) Hessian, used only to choose Newton steps (the certificate never
        trusts it)."""
        return (self.design.weighted_gram(self.curvature(W)) / self.n
                + self.alpha * np.eye(self.d))

    def curvature(self, W):
        """``l''(x_i' W, y_i)`` of every row (single output; one pass over the data, none
        on a sparse design at the point evaluated last: its margins are kept)."""
        if self._margins is not None and np.array_equal(self._margins[0], W):
            z = self._margins[1]
        else:
            z = self.design.matvec(W[:, 0])
            self.extra_example_gradients += self.n
        if self.vectorised and self.loss.loss_id == LOGISTIC:
            return _vectorised.logistic_curvature(z)
        return _vectorised.curvature_weights(z, self.y, self.loss.loss_id, self.loss.param)

    def hessp(self, curv, v):
        """``(X'^T diag(curv) X'/n + alpha I) v`` (Newton-CG; no matrix: two passes over
        a dense design, one over a sparse one, :meth:`ClippedRows.gram_product`)."""
        self.extra_example_gradients += self.n
        return self.design.gram_product(curv, v) / self.n + self.alpha * v

    def hessian_diagonal(self, curv):
        """The diagonal of the Hessian at the curvatures ``curv`` (Newton-CG's
        preconditioner; one pass)."""
        return self.design.squared_rmatvec(curv) / self.n + self.alpha

    def subsample(self, step):
        """The same objective on every ``step``-th row (warm starts; path only)."""
        return Objective(self.design.take(slice(None, None, step)),
                         np.ascontiguousarray(self.y[::step]), self.loss, self.alpha,
                         self.n_outputs, self.row_bound)


def weighted_gram(X, weights):
    """``X^T diag(weights) X`` for ``weights >= 0`` and a dense ``X``: blocks of
    ``HESSIAN_BLOCK_ROWS`` rows of ``sqrt(weights) X`` (no ``n x d`` temporary) through
    :func:`skdp._mechanisms._clipped_rows.gram_of_blocks`."""
    root = np.sqrt(weights)
    step = block_rows(X.shape[0], HESSIAN_BLOCK_ROWS)
    blocks = (X[a:a + step] * root[a:a + step, None] for a in range(0, X.shape[0], step))
    return gram_of_blocks(blocks, X.shape[1])


def uses_vectorised(n, d, K, loss_id):
    """Whether :class:`Objective` evaluates a dense design in numpy
    (:mod:`skdp._losses._vectorised`): one output, and the logistic loss on at most
    ``LOGISTIC_NUMPY_MAX_WORK`` entries (``2^23``) or Huber on at most ``NUMPY_MAX_WORK``
    (``2^22``).  Public sizes and loss only, so the certificate planned before the data is
    read uses the same path.

    Measured on 2 vCPUs (warm default fits, median of 5, one run, numpy pass against the
    kernel, 1 / 2 threads).  The kernel evaluates the logistic loss's ``exp`` and ``log1p``
    row by row, numpy vectorised: the numpy pass is faster on one thread and as fast on
    two up to about 10^6 x 20 (``DPLogisticRegression`` 10^5 x 50: 99 -> 82 / 123 -> 96
    ms; 10^6 x 20: 463 -> 265 / 340 -> 249 ms), but it runs on one thread (threading it
    gained nothing here), while the kernel's passes use every core: from 10^6 x 50 the
    kernel won on two threads (615 against 623 ms; 10^7 x 20 2.55 against 3.1 s), and a
    machine with more cores moves that crossing lower.  Hence ``2^23`` entries (10^5 x 50
    and 4 * 10^5 x 20 take numpy), where a fit takes about 0.1 s either way.  Huber's kernel has no
    transcendental function: above ``2^22`` the numpy pass lost on two threads
    (``DPHuberRegressor`` 10^6 x 50: 246 -> 416 ms; 10^6 x 20 float32: 135 -> 208 ms), and
    numpy's larger margin rounding (``d`` against ``d//4 + 5`` roundings,
    :func:`gradient_rounding_allowance`) doubled its output noise at 10^6 rows."""
    if int(K) != 1:
        return False
    if loss_id == LOGISTIC:
        return _vectorised.uses_numpy(n, d, _vectorised.LOGISTIC_NUMPY_MAX_WORK)
    return loss_id == HUBER and _vectorised.uses_numpy(n, d)


def margin_curvature(loss, K):
    """``sup |l''|`` of a scalar-margin loss (``loss.smoothness(1)``; 1 for ``K > 1``): how
    much a margin's rounding moves the loss derivative."""
    return float(loss.smoothness(1.0)) if int(K) == 1 else 1.0


def kernel_sum_depth(n):
    """Roundings on a term's path through the kernels' gradient sum over ``n`` rows: the
    product, ``BLOCK - 1`` additions in its block, one per block of its chunk
    (``ceil(ceil(n/N)/BLOCK)``), ``N - 1`` for the chunk totals, ``N = min(N_CHUNKS, n)``
    (:meth:`Objective.rounding_allowance`): ``BLOCK + m + N - 2``, counted here as
    ``BLOCK + m + N``."""
    n_chunks, rows = _vectorised.chunk_layout(n)
    blocks = -(-rows // BLOCK)
    return BLOCK + blocks + n_chunks


def max_row_terms(X):
    """The largest count of stored entries in a row of the CSR matrix ``X`` (0 without
    rows): the terms of a margin, for :func:`gradient_rounding_allowance`'s
    ``row_terms``."""
    return int(np.max(np.diff(X.indptr), initial=0)) if X.shape[0] else 0


def gradient_rounding_allowance(n, d, K, row_bound, g_max, alpha, w_norm, partitions=1,
                                vectorised=False, curvature=1.0, scaled=False, sparse=False,
                                row_terms=None):
    """The bound of :meth:`Objective.rounding_allowance` from public sizes and ``||W||``
    (also used to plan a certificate before any data is read).  ``partitions > 1``: the sums
    of that many partitions (each at most the in-memory depth) added in order, which adds
    ``(partitions - 1) u C g_max`` per output (:mod:`skdp._solvers._dask_objective`).
    ``vectorised``: the numpy path's depths and derivative error; ``sparse``: a CSR
    design's (each sub-block's rows added in order, the dense pass's depth; a margin adds
    a row's non-zeros: at most ``row_terms`` of them when given -- the design's largest
    row count of non-zeros, a floating-point bound that the certificate checks, not a
    privacy bound -- else ``d``).  ``curvature``: ``sup |l''|`` (:func:`margin_curvature`;
    1 is always safe for the losses here)."""
    u = UNIT_ROUNDOFF
    C = float(row_bound)
    # the numpy path's summation depth: sub-blocks in each chunk (dense), or a chunk's rows
    # in order (CSR; skdp._losses._vectorised._sparse_chunk)
    numpy_depth = _vectorised.blocked_sum_depth(n)
    if scaled or sparse:
        # numpy passes on the rows scaled on the fly, dense or CSR
        # (skdp._losses._vectorised._scaled_value_grad, _sparse_chunk): the scaled margin
        # and the scaled derivative add two roundings to a margin and one to a gradient
        # term; derivatives from numpy or the kernels' expressions
        terms = int(d) if not sparse or row_terms is None else min(int(d), int(row_terms))
        margin_depth = terms + 2
        depth = numpy_depth + 1
        derivative = max(_vectorised.DERIVATIVE_ULPS, 8 + 2 * K)
    elif vectorised:
        margin_depth = int(d)
        depth = numpy_depth
        derivative = _vectorised.DERIVATIVE_ULPS
    else:
        margin_depth = int(d) // 4 + 5
        depth = kernel_sum_depth(n)
        derivative = 8 + 2 * K
    per_output = C * (
        margin_depth * u * float(curvature) * C * w_norm + derivative * u * g_max
        + depth * u * g_max
    ) + 2 * u * (C * g_max + 2 * alpha * w_norm)
    if partitions > 1:
        per_output += C * (int(partitions) - 1) * u * g_max
    # each term bounds the 2-norm of an output's error vector (Objective.rounding_allowance)
    return 2.0 * np.sqrt(K) * per_output


def linear_term_allowance(L, alpha, w_norm, b_over_n_norm):
    """Rounding of forming ``b/n`` and adding it to the gradient:
    ``2u (L + alpha ||W|| + 2 ||b/n||)`` (``||grad F_b|| <= L + alpha ||W|| + ||b||/n``)."""
    return 2.0 * UNIT_ROUNDOFF * (L + alpha * w_norm + 2.0 * b_over_n_norm)
