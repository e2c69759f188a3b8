r"""The base-rate fallback of binary ``DPLogisticRegression``: never (much) worse than
predicting the majority class.

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
After the model ``(w, b)`` is released, one Gaussian release answers two counts on the
training rows:

* ``c = #{i : y_i = +1}`` (the positives), and
* ``a = #{i : sign(x_i.w + b) = y_i}`` (the rows the released model classifies right; the
  rule of ``predict``: positive iff the score is ``> 0``).

Replacing one row changes each count by at most 1 whatever the model, so the vector has
L2 sensitivity ``sqrt 2``; with exact discrete Gaussian noise of GDP parameter ``mu_f``
(:func:`skdp._mechanisms._exact.exact_gaussian_noise`, at least as private as the continuous
one).  The check is planned with the fit: objective perturbation accounts it inside its own
privacy profile as a Gaussian follow-up, ``mu_f = FALLBACK_RATIO mu`` with ``mu`` the
objective noise's parameter (:mod:`skdp.accounting._objective_perturbation`, point 7), so the
reported ``epsilon_`` covers model and check and costs the model about
``1 - sqrt((1 + r_out^2)/(1 + r_out^2 + r_f^2))`` of its ``mu`` (4 % at ``r_f = 0.3``).

The decision (post-processing of the two releases)
--------------------------------------------------
With ``m = max(c, n - c)`` the constant predictor's count: if ``a < m``, the released model
is replaced by its *base-rate fallback*:

* ``coef_ <- f w`` with ``f = FALLBACK_MARGIN/(||w|| data_norm)``: the scores of rows within
  the public bound move by at most ``FALLBACK_MARGIN``, so the model predicts the majority
  class (unless the base rate is within ``FALLBACK_MARGIN`` of 1/2) and keeps its ranking
  (the ROC AUC is unchanged);
* ``intercept_ <- logit(c/n)`` (``c/n`` clipped to ``[1/(2n), 1 - 1/(2n)]``): probabilities at
  the private base rate.

The noise std of ``a - m`` is ``2/mu_f`` rows; the training rows also flatter the model a
little (it was fitted on them).  Both only matter where the model and the majority are
close, and there either choice costs little.
"""

import math

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

__all__ = ["release_base_rate_counts", "base_rate_fallback"]

#: L2 sensitivity of ``(c, a)`` under replace-one
COUNTS_SENSITIVITY = math.sqrt(2.0)
#: largest score change of the fallback on rows within the public bound (logits)
FALLBACK_MARGIN = 1e-3


def _training_counts(X, y_pm, coef, intercept):
    """``(c, a)``: positives and rows classified right by ``sign(X w + b)``, as floats."""
    from .._solvers._dask_objective import DaskDesign

    if isinstance(X, DaskDesign):
        import dask

        design = X.X[:, :X.shape[1]] if X.augmented else X.X
        positive = X.y > 0
        predicted = (design @ coef + intercept) > 0
        c, a = dask.compute(positive.sum(), (predicted == positive).sum())
        return float(c), float(a)
    positive = np.asarray(y_pm) > 0
    predicted = np.asarray(safe_sparse_dot(X, coef, dense_output=True)).reshape(-1) \
        + intercept > 0
    return float(np.count_nonzero(positive)), float(np.count_nonzero(predicted == positive))


def release_base_rate_counts(X, y_pm, coef, intercept, mu_f, source):
    """Noisy ``(c, a)`` (module docstring) under ``mu_f``-GDP, exact discrete noise.

    Parameters
    ----------
    X : ndarray, sparse matrix or DaskDesign of shape (n, d)
        The training rows as the solver saw them (unclipped: the counts are bounded by 1
        per row whatever the row).
    y_pm : ndarray or Dask array of shape (n,)
        Labels encoded as +-1.
    coef : ndarray of shape (d,)
    intercept : float
        The *released* model.
    mu_f : float
        GDP parameter of the release (``> 0``).
    source : uint64 ndarray
        ChaCha20 word source (:func:`skdp._mechanisms.new_word_source`).

    Returns
    -------
    counts : ndarray of shape (2,)
        Released ``(c, a)``.
    """
    from .._mechanisms._exact import exact_gaussian_noise, release_on_grid

    if not mu_f > 0.0:
        raise ValueError(f"mu_f must be > 0, got {mu_f!r}")
    n = X.shape[0]
    sigma = COUNTS_SENSITIVITY / float(mu_f)
    # noise drawn before the counts are read
    gamma, z, _ = exact_gaussian_noise(source, sigma, COUNTS_SENSITIVITY, 2, bound=float(n))
    counts = np.array(_training_counts(X, y_pm, np.asarray(coef, dtype=np.float64),
                                       float(intercept)))
    return release_on_grid(counts, gamma, z)


def base_rate_fallback(coef, intercept, counts, n, data_norm):
    """``(coef, intercept, fell_back)`` after the decision of the module docstring.

    Post-processing of the released model and counts only.

    Parameters
    ----------
    coef : ndarray of shape (d,)
    intercept : float
    counts : ndarray of shape (2,)
        Released ``(c, a)`` (:func:`release_base_rate_counts`).
    n : int
        Public number of rows.
    data_norm : float
        Public bound on the feature rows.

    Returns
    -------
    coef, intercept, fell_back : ndarray, float, bool

    Examples
    --------
    >>> import numpy as np
    >>> coef, b, fell = base_rate_fallback(np.array([3.0, -4.0]), 0.2,
    ...                                    np.array([300.0, 550.0]), 1000, 1.0)
    >>> fell, round(b, 3), float(np.abs(coef).max()) <= 1e-3
    (True, -0.847, True)
    """
    c, a = float(counts[0]), float(counts[1])
    majority = max(c, n - c)
    if not a < majority:
        return coef, intercept, False
    norm = float(np.linalg.norm(coef))
    f = FALLBACK_MARGIN / (norm * float(data_norm)) if norm > 0.0 else 0.0
    rate = min(max(c / n, 0.5 / n), 1.0 - 0.5 / n)
    return coef * f, math.log(rate / (1.0 - rate)), True
