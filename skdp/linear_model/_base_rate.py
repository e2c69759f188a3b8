r"""The base-rate fallback of ``DPLogisticRegression`` (binary and multinomial): never
(much) worse than predicting the majority class.

Why
---
Where the features carry little signal, a private linear model is mostly noise: its
margins ``x.w`` spread over several logits around an intercept near the base rate's
logit, and many rows land on the minority side.  Its accuracy then falls *below* the
majority rate (held-out sets: 0.650 against 0.684; synthetic, ``n = 3,400``, ``p = 28``:
0.59 against 0.635), although its ranking (AUC) is as good as the data allow.  No public
rule can tell this case from a useful model at the same ``(n, p, epsilon)``; the data can,
privately.

The check
---------
After the model is released, one Gaussian release answers counts on the training rows:

* two classes: ``c = #{i : y_i = +1}`` (the positives) and ``a = #{i : sign(x_i.w + b) =
  y_i}`` (the rows the released model classifies right; the rule of ``predict``: positive
  iff the score is ``> 0``).  Replacing one row changes each count by at most 1 whatever
  the model: L2 sensitivity ``sqrt 2``;
* ``K >= 3`` classes: the class counts ``c_1..c_K`` and ``a`` (rows whose largest score is
  their class).  A replaced row moves one class count down and one up (or none) and ``a``
  by at most 1: L2 sensitivity ``sqrt 3``.

The counts are computed on the training rows as given (unclipped): ``x_i.w + b`` of a
finite extreme row (``[1e308, -1e308, 1e308]``) overflows to ``+-inf`` or ``NaN``.  numpy
would report that overflow -- a warning on stderr, an exception under
``simplefilter("error")`` -- on the neighbour with the row only, outside the release; so
the scores are computed under :func:`skdp._mechanisms._quiet.quiet_private_arithmetic`
(numpy errors ignored, warnings suppressed; in memory and in each Dask task).  The
sensitivity is unchanged: the IEEE values are what they were, and a row whose scores are
not finite is still classified by the same rule (``NaN > 0`` is false: negative; the
largest score of a row with ``NaN``: the first ``NaN``'s class), from its own row alone, so
it adds 0 or 1 to ``a`` and to one class count like any row.

The check runs where its comparison is precise, ``n mu >= CHECK_MIN_SIZE``
(:func:`skdp.linear_model._auto.uses_base_rate_fallback`).  The noise is exact discrete
Gaussian of GDP parameter ``mu_f``
(:func:`skdp._mechanisms._exact.exact_gaussian_noise`, at least as private as the continuous
one).  The check is planned with the fit, so the reported ``epsilon_`` covers model and
check:

* objective perturbation (binary default) accounts it inside its own privacy profile as a
  Gaussian follow-up, ``mu_f = FALLBACK_RATIO mu`` with ``mu`` the objective noise's
  parameter (:mod:`skdp.accounting._objective_perturbation`, point 7); this costs the model
  about ``1 - sqrt((1 + r_out^2)/(1 + r_out^2 + r_f^2))`` of its ``mu`` (2 % at ``r_f = 0.2``);
* dpsgd (multinomial default) gets ``mu_f = FALLBACK_RATIO mu(epsilon, delta)`` and its
  steps' noise is calibrated so that the PLD composition of the steps and the check meets
  the target (:func:`skdp.accounting.calibrate_poisson_gaussian`, ``follow_up_mu``).

The decision (post-processing of the two releases)
--------------------------------------------------
With ``m`` the majority class's count (``max(c, n - c)``; ``max_k c_k``): if ``a < m``, the
released model is replaced by its *base-rate fallback*:

* ``coef_ <- f W`` with ``f = FALLBACK_MARGIN/(||W||_F data_norm)``: the scores of rows within
  the public bound move by at most ``FALLBACK_MARGIN``, so the model predicts the majority
  class (unless two class rates are within ``2 FALLBACK_MARGIN`` in log) and keeps its
  ranking (the ROC AUC of a binary model is unchanged);
* ``intercept_ <- logit(c/n)`` (two classes) or ``log(c_k/n)`` (rates clipped to
  ``[1/(2n), 1 - 1/(2n)]``): probabilities at the private class rates.

The noise std of ``a - m`` is ``2/mu_f`` rows (``sqrt 6/mu_f`` for ``K >= 3``); the
training rows also flatter the model a little (it was fitted on them).  Both only matter
where the model and the majority are close, and there either choice costs little.
"""

import math

import numpy as np
from scipy.sparse import issparse

from .._mechanisms._clipping import block_rows, matmul_in_blocks
from .._mechanisms._quiet import quiet_private_arithmetic
from .._solvers._threads import single_threaded_blas
from ._base import linear_scores

__all__ = ["release_base_rate_counts", "base_rate_fallback", "base_rate_word_source",
           "counts_sensitivity"]

#: largest score change of the fallback on rows within the public bound (logits)
FALLBACK_MARGIN = 1e-3


def counts_sensitivity(n_classes):
    """Replace-one L2 sensitivity of the released counts: ``sqrt 2`` for two classes
    (positives, rows right), ``sqrt 3`` for more (class counts, rows right)."""
    return math.sqrt(2.0) if int(n_classes) == 2 else math.sqrt(3.0)


#: rows of a non-float64 dense design converted to float64 at a time by :func:`_scores`
#: (at most, :func:`~skdp._mechanisms._clipping.block_rows`)
SCORE_BLOCK_ROWS = 4096


def _scores(X, coef, intercept):
    """``X coef^T + intercept``; a float32 (or integer) dense ``X`` a block of rows at a
    time, since ``X @ coef.T`` would first cast all of ``X`` to float64 (the fit's peak
    memory: +2x the size of a float32 ``X``).  Quiet: an overflowing row warns and raises
    nothing (module docstring)."""
    with quiet_private_arithmetic():
        if issparse(X) or X.dtype == np.float64:
            return linear_scores(X, coef.T, intercept)
        n = X.shape[0]
        out = np.empty((n, coef.shape[0]))
        M = np.ascontiguousarray(coef.T)
        matmul_in_blocks(X, M, out, block_rows(n, SCORE_BLOCK_ROWS))
        return out + intercept


def _block_margin(block, w):
    """``block @ w`` of one Dask block, on its worker; quiet as :func:`_scores`."""
    with quiet_private_arithmetic():
        return np.asarray(block @ w, dtype=np.float64).reshape(-1)


def _training_counts(X, y_enc, coef, intercept):
    """The exact counts (module docstring), as floats.

    ``coef`` of shape ``(1, d)`` (two classes, ``y_enc`` in +-1) or ``(K, d)`` (``y_enc`` the
    class index)."""
    from .._solvers._dask_objective import DaskDesign

    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    if isinstance(X, DaskDesign):
        import dask

        # block by block (dense or CSR blocks: a pipeline's basis)
        from .._dask import block_tasks, map_rows

        design = X.X[:, :X.shape[1]] if X.augmented else X.X
        if coef.shape[0] > 1:
            # each partition's class counts and right predictions: integers, so their sum
            # is the collected rows' counts
            return np.sum(dask.compute(*block_tasks(
                design, _multinomial_counts, X.y.to_delayed().ravel(),
                args=(coef, intercept))), axis=0)
        positive = X.y > 0
        predicted = map_rows(design, _block_margin, coef[0]) + intercept[0] > 0
        c, a = dask.compute(positive.sum(), (predicted == positive).sum())
        return np.array([float(c), float(a)])
    y_enc = np.asarray(y_enc)
    if coef.shape[0] == 1:
        positive = y_enc > 0
        predicted = _scores(X, coef, intercept)[:, 0] > 0
        return np.array([float(np.count_nonzero(positive)),
                         float(np.count_nonzero(predicted == positive))])
    return _multinomial_counts(X, y_enc, coef, intercept)


def _multinomial_counts(X, y_enc, coef, intercept):
    """``(c_1, ..., c_K, a)`` of rows ``X`` with class indices ``y_enc`` (floats)."""
    labels = np.asarray(y_enc).astype(np.int64)
    counts = np.bincount(labels, minlength=coef.shape[0]).astype(np.float64)
    right = np.count_nonzero(np.argmax(_scores(X, coef, intercept), axis=1) == labels)
    return np.append(counts, float(right))


def base_rate_word_source(random_state):
    """The ChaCha20 state of the check's noise, from the model's ``random_state``.

    An integer seed ``s`` keys it with :func:`skdp._mechanisms._exact.site_seed`
    (``SeedSequence(s, spawn_key=(0x5EC, 0xBA5E))``), a stream of its own: not the
    solver's (the first draws of ``default_rng(s)``) and not the DP transformers'
    (``SeedSequence(s, spawn_key=(0x5EC,))``).  It used to be the transformers' key, so
    ``Pipeline([DPOneHotEncoder(random_state=7), DPLogisticRegression(random_state=7)])``
    drew the counts' unit noises equal to the encoder's, which cancel in a scaled
    difference of the two releases that the accounting composed as independent.  A
    generator gives its next draws (after the solver's), None a key from the OS.
    """
    import numbers

    from .._mechanisms._exact import new_word_source, site_seed
    from ._base import _check_random_state

    if random_state is None:
        return new_word_source(None)
    if isinstance(random_state, numbers.Integral):
        return new_word_source(site_seed(random_state, "base_rate_check"))
    return new_word_source(_check_random_state(random_state))


def release_base_rate_counts(X, y_enc, coef, intercept, mu_f, source):
    """Noisy counts (module docstring) under ``mu_f``-GDP, exact discrete noise.

    Parameters
    ----------
    X : ndarray, sparse matrix or DaskDesign of shape (n, d)
        The training rows as the solver saw them (unclipped: the counts are bounded by 1
        per row whatever the row).
    y_enc : ndarray or Dask array of shape (n,)
        Labels encoded as +-1 (two classes) or class indices.
    coef : ndarray of shape (1, d) or (K, d)
    intercept : ndarray of shape (1,) or (K,)
        The *released* model.
    mu_f : float
        GDP parameter of the release (``> 0``).
    source : uint64 ndarray
        ChaCha20 word source (:func:`skdp._mechanisms.new_word_source`).

    Returns
    -------
    counts : ndarray of shape (2,) or (K + 1,)
        Released ``(c, a)`` or ``(c_1, ..., c_K, a)``.
    """
    from .._mechanisms._exact import exact_gaussian_noise, release_on_grid

    if not mu_f > 0.0:
        raise ValueError(f"mu_f must be > 0, got {mu_f!r}")
    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    k = 2 if coef.shape[0] == 1 else coef.shape[0] + 1
    sensitivity = counts_sensitivity(2 if coef.shape[0] == 1 else coef.shape[0])
    # noise drawn before the counts are read
    gamma, z, _ = exact_gaussian_noise(source, sensitivity / float(mu_f), sensitivity, k,
                                       bound=float(X.shape[0]))
    with single_threaded_blas():     # no spinning BLAS worker left for the next fit
        counts = _training_counts(X, y_enc, coef, intercept)
    return release_on_grid(counts, gamma, z)


def base_rate_fallback(coef, intercept, counts, n, data_norm):
    """``(coef, intercept, fell_back)`` after the decision of the module docstring.

    Post-processing of the released model and counts only.

    Parameters
    ----------
    coef : ndarray of shape (1, d) or (K, d)
    intercept : ndarray of shape (1,) or (K,)
    counts : ndarray of shape (2,) or (K + 1,)
        Released counts (:func:`release_base_rate_counts`).
    n : int
        Public number of rows.
    data_norm : float
        Public bound on the feature rows.

    Returns
    -------
    coef, intercept, fell_back : ndarray, ndarray, bool

    Examples
    --------
    >>> import numpy as np
    >>> coef, b, fell = base_rate_fallback(np.array([[3.0, -4.0]]), np.array([0.2]),
    ...                                    np.array([300.0, 550.0]), 1000, 1.0)
    >>> fell, round(float(b[0]), 3), float(np.abs(coef).max()) <= 1e-3
    (True, -0.847, True)
    """
    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    counts = np.asarray(counts, dtype=np.float64)
    classes, right = counts[:-1], float(counts[-1])
    if coef.shape[0] == 1:
        classes = np.array([n - classes[0], classes[0]])
    if not right < float(np.max(classes)):
        return coef, intercept, False
    norm = float(np.linalg.norm(coef))
    f = FALLBACK_MARGIN / (norm * float(data_norm)) if norm > 0.0 else 0.0
    rates = np.clip(classes / n, 0.5 / n, 1.0 - 0.5 / n)
    if coef.shape[0] == 1:
        new_intercept = np.array([math.log(rates[1] / (1.0 - rates[1]))])
    else:
        new_intercept = np.log(rates)
    return coef * f, new_intercept, True
