r"""Bounded validation scores that can be released with differential privacy.

A private search or cross-validation releases validation scores, so a score must have a
*public* bound on how much one row can move it.  :class:`PrivateScorer` computes the mean
of per-row terms clipped to a public interval ``[lower, upper]``:

.. math:: S(\hat w; V) = \frac{1}{m} \sum_{i \in V} \operatorname{clip}(s(\hat w, x_i, y_i),
   \mathrm{lower}, \mathrm{upper}), \qquad m = |V| \text{ (public)}.

Sensitivity (replace-one).  Fix the model ``w_hat`` (trained on rows outside ``V``, or
released beforehand by a DP mechanism, see :mod:`skdp.model_selection`).  Replacing one
row of ``V`` changes one clipped term, by at most ``upper - lower``, and leaves the others
unchanged, so ``|S(V) - S(V')| <= (upper - lower) / m``.  Non-finite per-row values are
mapped to the worst value of the interval before clipping, so no input can break the
bound.  Accuracy is the case ``s = 1[y_pred = y]``, ``[0, 1]``: sensitivity ``1/m``.

Extreme rows.  The validation rows are not clipped: ``predict`` computes ``x_i w`` on the
row as given, and a finite row like ``[1e308, -1e308, 1e308]`` overflows it (``+-inf``, or
``NaN`` from ``inf - inf``).  numpy would *report* that overflow -- a warning on stderr,
an exception under ``simplefilter("error")`` or ``np.seterr(all="raise")`` -- on the
neighbour with the row only: an observable outside the release, for which no ``epsilon``
holds.  So :meth:`PrivateScorer.row_values` runs ``predict`` and the row score under
:func:`skdp._mechanisms._quiet.quiet_private_arithmetic` (numpy errors ignored, warnings
suppressed).  A user's row score is not called on a row whose prediction is not finite
(``int(NaN)`` would raise): that row's value is ``NaN``; nor does an arithmetic error it
raises on a row (``math.exp(1e3)``: ``OverflowError``) escape: that row's value is ``NaN``
too.  The sensitivity is unchanged: ignoring a floating-point error changes how numpy
reports it, not the IEEE value computed, so every prediction is what it was; the
overflowed row's prediction and value are functions of that row alone (``x_i w``, the
model fixed), so it moves its own term only; and its value, non-finite or not, becomes a
term in ``[lower, upper]`` by the public rule above (the worst end for ``NaN``/``+-inf``),
so ``|S(V) - S(V')| <= (upper - lower)/m``, and
:meth:`PrivateScorer.released_sensitivity` (terms bounded by ``bound``) holds as derived.
Other exceptions of a user's function remain its own (like its purity, below).

The proof needs term ``i`` to depend on row ``i`` alone.  A user's ``row_score`` written
for arrays could instead compute each "per-row" value from the whole batch (``np.full(m,
mean(t == p) >= 0.5)``): then one replaced row moves all ``m`` terms, ``m`` times the
sensitivity the noise is calibrated to.  So a user's ``row_score`` is called once per row,
on fresh one-row copies of ``y_true[i]`` and ``y_pred[i]`` (copies, not views, so no
``.base`` reaches the batch), and must return one value -- the row-wise property holds by
construction, as for :class:`skdp.preprocessing.RowwiseFunctionTransformer`.  What skdp
cannot verify is that the function is *pure* (one that keeps state between calls is
outside the guarantee).  Only skdp's own row scores (accuracy) run vectorised.
"""

import numbers

import numpy as np
from sklearn.base import is_classifier

from .._mechanisms._quiet import quiet_private_arithmetic
from .._mechanisms._summation import gamma_k

__all__ = ["PrivateScorer", "make_private_scorer", "check_private_scoring"]


class PrivateScorer:
    """Mean of clipped per-row scores, with its replace-one sensitivity.

    Parameters
    ----------
    row_score : callable
        ``row_score(y_true, y_pred) -> ndarray of shape (n,)``: one value per row.  It is
        called on one row at a time (arrays of length one, fresh copies), so that each
        term depends on its own row only (module docstring); it must return one value.
    lower, upper : float
        Public bounds; per-row values are clipped to ``[lower, upper]``.
    greater_is_better : bool, default=True
        If False the score is negated (scikit-learn convention: searches maximise).
    response_method : str, default="predict"
        Estimator method that produces ``y_pred``.
    name : str, optional

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.model_selection import PrivateScorer
    >>> mae = PrivateScorer(lambda t, p: np.abs(t - p), 0.0, 2.0, greater_is_better=False)
    >>> mae.sensitivity(100)
    0.02
    """

    def __init__(
        self, row_score, lower, upper, *, greater_is_better=True, response_method="predict",
        name=None,
    ):
        if not callable(row_score):
            raise TypeError("row_score must be a callable (y_true, y_pred) -> per-row values")
        lower, upper = float(lower), float(upper)
        if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
            raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
        self.row_score = row_score
        self.lower = lower
        self.upper = upper
        self.greater_is_better = bool(greater_is_better)
        self.response_method = response_method
        self.name = name or getattr(row_score, "__name__", "private_score")

    @property
    def score_range(self):
        """``upper - lower``: the most one row can move the sum of the terms."""
        return self.upper - self.lower

    @property
    def bound(self):
        """``max(|lower|, |upper|)``: a public bound on the magnitude of a mean score (it
        sets the grid of the exact score noise, :class:`skdp.model_selection._common.ScoreNoise`)."""
        return max(abs(self.lower), abs(self.upper))

    def sensitivity(self, n_rows):
        """Replace-one sensitivity of the mean of the clipped terms over ``n_rows`` rows.

        Parameters
        ----------
        n_rows : int
            Number of validation rows (public).

        Returns
        -------
        sensitivity : float
            ``(upper - lower) / n_rows``.
        """
        return self.score_range / int(n_rows)

    def released_sensitivity(self, n_rows):
        """Replace-one sensitivity of the mean *as computed in float64*: the terms are
        summed in some order (``np.sum`` per part, then the parts), a tree of depth
        ``<= n - 1``, and divided by ``n``, so each computed mean is within
        ``gamma_n n bound`` of the exact one over ``n`` (``gamma_k = k u/(1 - k u)``,
        :mod:`skdp._mechanisms._summation`), and two neighbours' means differ by at most
        ``(upper - lower)/n + 2 gamma_n bound``.  The noise is calibrated to this.

        Parameters
        ----------
        n_rows : int
            Number of validation rows (public).

        Returns
        -------
        sensitivity : float
            ``sensitivity(n_rows) (1 + 2 n gamma_n bound/(upper - lower))``.
        """
        n = int(n_rows)
        inflation = 1.0 + 2.0 * n * gamma_k(n) * self.bound / self.score_range
        return float(np.nextafter(self.sensitivity(n) * inflation, np.inf))

    def row_values(self, estimator, X, y):
        """Per-row clipped terms, sign-adjusted so that larger is better.

        Parameters
        ----------
        estimator : fitted estimator
            Provides ``response_method``.
        X : array-like of shape (n_rows, n_features)
            Validation rows.
        y : array-like of shape (n_rows,)
            Their targets.

        Returns
        -------
        values : ndarray of shape (n_rows,)
            ``clip(row_score(y, y_pred), lower, upper)`` (non-finite values mapped to the
            worst end first), negated if ``greater_is_better`` is False.

        Notes
        -----
        ``predict`` and the row score run under
        :func:`~skdp._mechanisms._quiet.quiet_private_arithmetic`: a row that overflows
        them warns and raises nothing and scores the worst value (module docstring,
        "Extreme rows": the sensitivity is unchanged).
        """
        with quiet_private_arithmetic():
            y_pred = np.asarray(getattr(estimator, self.response_method)(X))
            values = _row_terms(self.row_score, np.asarray(y), y_pred)
        worst = self.lower if self.greater_is_better else self.upper
        values = np.clip(np.where(np.isfinite(values), values, worst), self.lower, self.upper)
        return values if self.greater_is_better else -values

    def __repr__(self):
        return (
            f"PrivateScorer({self.name}, lower={self.lower}, upper={self.upper}, "
            f"greater_is_better={self.greater_is_better})"
        )


def _accuracy_rows(y_true, y_pred):
    return (np.asarray(y_true) == np.asarray(y_pred)).astype(np.float64)


#: row scores of skdp's own, verified to compute term ``i`` from row ``i`` alone: they run
#: on the whole batch at once; every other callable runs one row at a time
_VECTORISED_ROW_SCORES = (_accuracy_rows,)


def _row_terms(row_score, y_true, y_pred):
    """``row_score``'s value for each row, each computed from its own row only.

    skdp's own row scores (``_VECTORISED_ROW_SCORES``) see the batch; any other callable
    is called once per row on fresh one-row copies (module docstring: a function of the
    batch would move every term when one row is replaced) whose prediction is finite;
    a row whose prediction is not, or on which it raises an ``ArithmeticError``, gets
    ``NaN`` (scored as the worst end; module docstring, "Extreme rows")."""
    m = y_true.shape[0]
    if y_pred.shape[:1] != (m,):
        raise ValueError(
            f"the estimator returned {y_pred.shape[:1]} predictions for {m} rows")
    if any(row_score is verified for verified in _VECTORISED_ROW_SCORES):
        return np.asarray(row_score(y_true, y_pred), dtype=np.float64).reshape(m)
    values = np.full(m, np.nan)
    for i in np.flatnonzero(_finite_predictions(y_pred)):
        # fresh copies: the function sees one row, not a view whose .base is the batch
        value = _one_row_term(row_score, y_true[i:i + 1].copy(), y_pred[i:i + 1].copy())
        if value.shape[0] != 1:
            raise ValueError(
                f"row_score returned {value.shape[0]} values for one row; it must return "
                "one value per row (it is called on one row at a time)"
            )
        values[i] = value[0]
    return values


def _finite_predictions(y_pred):
    """Per row: whether its predictions (one, or a row of ``predict_proba``) are all finite
    numbers; True for labels that are not floating-point numbers."""
    if y_pred.dtype.kind not in "fc":
        return np.ones(y_pred.shape[0], dtype=bool)
    return np.isfinite(y_pred.reshape(y_pred.shape[0], -1)).all(axis=1)


def _one_row_term(row_score, y_true_row, y_pred_row):
    """``row_score`` on one row as a flat float array; ``[NaN]`` if it raises an
    ``ArithmeticError`` (a value of that row alone, scored as the worst end)."""
    try:
        return np.asarray(row_score(y_true_row, y_pred_row), dtype=np.float64).ravel()
    except ArithmeticError:
        return np.array([np.nan])


def make_private_scorer(row_score, *, lower, upper, greater_is_better=True,
                        response_method="predict"):
    """Build a :class:`PrivateScorer` (a bounded, privately releasable validation score).

    Parameters
    ----------
    row_score : callable
        ``row_score(y_true, y_pred) -> per-row values``.
    lower, upper : float
        Public clipping bounds of each row's value; the score's replace-one sensitivity on
        ``m`` validation rows is ``(upper - lower) / m``.
    greater_is_better : bool, default=True
    response_method : str, default="predict"

    Returns
    -------
    PrivateScorer

    Examples
    --------
    Mean absolute error of a regressor, each row's error clipped to 1 (public bound):

    >>> import numpy as np
    >>> from skdp.model_selection import make_private_scorer
    >>> scorer = make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=1.0,
    ...                              greater_is_better=False)
    >>> scorer.sensitivity(50)
    0.02
    """
    return PrivateScorer(
        row_score, lower, upper, greater_is_better=greater_is_better,
        response_method=response_method,
    )


def check_private_scoring(scoring, estimator):
    """The :class:`PrivateScorer` for ``scoring`` (None, "accuracy" or a PrivateScorer)."""
    if isinstance(scoring, PrivateScorer):
        return scoring
    if scoring is None:
        if not is_classifier(estimator):
            raise ValueError(
                "scoring=None uses accuracy, which needs a classifier; for a regressor pass "
                "a bounded scorer, e.g. skdp.model_selection.make_private_scorer("
                "lambda t, p: abs(t - p), lower=0, upper=B, greater_is_better=False)"
            )
        scoring = "accuracy"
    if isinstance(scoring, str):
        if scoring == "accuracy":
            return PrivateScorer(_accuracy_rows, 0.0, 1.0, name="accuracy")
        raise ValueError(
            f"scoring={scoring!r} is not a bounded score with a known sensitivity; use "
            "'accuracy' or skdp.model_selection.make_private_scorer(...)"
        )
    if isinstance(scoring, (dict, list, tuple, set)) or isinstance(scoring, numbers.Number):
        raise ValueError(
            "private searches release one score per run; multi-metric scoring would cost "
            "one release per metric and is not supported: pass a single scorer"
        )
    raise TypeError(
        f"scoring must be None, 'accuracy' or a skdp PrivateScorer, got {scoring!r}: a "
        "scikit-learn scorer has no public sensitivity"
    )
