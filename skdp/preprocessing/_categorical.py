r"""One-hot encoding of categorical columns with public or privately discovered categories
(``DPOneHotEncoder``).

Output layout and norm bound
----------------------------
Column ``j`` becomes ``len(categories_[j])`` indicator columns, then an ``other`` column
(a value not in the list: rare, unseen at fit time, or never released) and a ``missing``
column (``None``/``NaN``).  Exactly one of them is 1, so every output row of ``d`` columns
has L2 norm exactly ``sqrt(d)`` for *any* input row -- an unseen string or an empty one
included, never an error.  That is ``output_norm_bound_``.

Public categories (``categories=[[...], ...]``)
-----------------------------------------------
Nothing is learnt from the data: ``dp_event_`` is ``NoOpDpEvent`` and ``epsilon_ = 0``.

Private discovery (``categories="auto"``): thresholded noisy counts
--------------------------------------------------------------------
For every column the count of every value that occurs is released with Gaussian noise of
standard deviation ``sigma``, and only the values whose noisy count reaches the threshold
``tau`` are kept (their names are the release; the counts are dropped).  This is the
Gaussian sparse histogram with thresholding (Korolova et al. 2009; Wilson et al. 2020;
analysed exactly by Wilkins, Kifer, Zhang & Karrer 2024); we use the following bound.

*Sensitivity.*  Replacing a row changes, in each of the ``d`` columns, one value's count by
``-1`` and another's by ``+1``: on the counts of the values that occur in *both*
neighbours the L2 change is at most ``sqrt(2 d)``.

*Threshold.*  Let ``D, D'`` be neighbours, ``U`` the union of their supports, ``A`` the
values present only in ``D`` (count 1; at most one per column) and ``B`` those only in
``D'``.  Let ``M'`` be the mechanism that noises and thresholds *every* value of ``U``
(zero counts included): on ``D`` and ``D'`` it is a Gaussian mechanism on the same
coordinates, so ``P[M'(D) in T] <= e^eps P[M'(D') in T] + delta_G(eps)`` for every ``T``.
For any set ``S`` of outputs: ``P[M(D) in S] <= P[A released] + P[M(D) in S, no A
released]``.  The first term is at most ``|A| q_1`` with ``q_1 = P[1 + Z >= tau]``.  Coupling
``M(D)`` with ``M'(D)`` through the same noise, they differ only if a ``B`` value (count 0
in ``D``) passes, so the second term is at most ``P[M'(D) in S'] + |B| q_0`` with ``S'`` the
outputs of ``S`` that release no ``A`` value and ``q_0 = P[Z >= tau]``; and
``P[M'(D') in S'] = P[M(D') in S'] P[no A passes] <= P[M(D') in S]``.  Hence

.. math:: P[M(D) \in S] \le e^\varepsilon P[M(D') \in S] + \delta_G(\varepsilon)
          + d\,(q_0 + q_1),

for every ``eps`` -- the threshold adds ``delta_T = d (q_0 + q_1) <= 2 d q_1`` whatever
``eps``.  The discrete Gaussian ``N_Z(0, s^2)`` is ``s^2``-subgaussian (Canonne, Kamath &
Steinke 2020, Cor. 9), so ``q_1 <= exp(-(tau - 1)^2 / (2 sigma^2))``; the threshold

.. math:: \tau = 1 + \sigma \sqrt{2 \ln(2 d / \delta_T)}

makes the total ``delta_T``.  The fit splits its ``delta`` as ``delta_G = delta_T =
delta/2``, calibrates ``sigma`` to ``(epsilon, delta_G)`` (analytic Gaussian), and records
``ComposedDpEvent([GaussianDpEvent, DeltaDpEvent(delta_T)])``, which
:func:`skdp.accounting.get_epsilon` accounts by adding ``delta_T`` (basic composition with
a ``(0, delta_T)`` release, valid with any accountant of the rest).

Counts are integers, released on the public grid of :mod:`skdp._mechanisms._exact` (a
power of two at most 1, so ``rint(c/gamma) = c/gamma`` exactly: no rounding term) with exact
discrete Gaussian noise; the recorded Gaussian event dominates the discrete law.
"""

import math

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._common import DP_TRANSFORMER_CONSTRAINTS, gdp_mu, guarantee, word_source

__all__ = ["DPOneHotEncoder", "discovery_threshold"]


def discovery_threshold(sigma, n_columns, delta_threshold):
    """``tau = 1 + sigma sqrt(2 ln(2 d / delta_T))`` (module docstring)."""
    return 1.0 + sigma * math.sqrt(2.0 * math.log(2.0 * n_columns / delta_threshold))


def _is_missing(values):
    """Boolean mask of None / NaN / pandas NA entries of an object array."""
    try:
        import pandas as pd

        return np.asarray(pd.isna(values), dtype=bool)
    except ImportError:
        return np.array([v is None or (isinstance(v, float) and math.isnan(v))
                         for v in values], dtype=bool)


def _columns(estimator, X, reset):
    """The columns of ``X``: a DataFrame's own columns (pandas Series, not converted: its
    width and feature names checked by scikit-learn), else 1-d object arrays of an array
    validated by scikit-learn (2-d, not sparse, not complex, the fitted width)."""
    if hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} "
                             "feature(s) (shape=%s) while a minimum of 1 is required."
                             % (X.shape,))
        return [X.iloc[:, j] for j in range(X.shape[1])]
    X = validate_data(estimator, X, dtype=None, ensure_all_finite=False, reset=reset)
    X = np.asarray(X, dtype=object)
    return [X[:, j] for j in range(X.shape[1])]


def _sort_key(value):
    return (type(value).__name__, str(value))


class DPOneHotEncoder(TransformerMixin, BaseEstimator):
    """One-hot encoder of categorical columns with public or privately discovered categories.

    Every output row has exactly one 1 per input column (its category, ``other`` or
    ``missing``): L2 norm ``sqrt(n_features_in_)`` for any input, unseen values included
    (module docstring for the mechanism and its proof).

    Parameters
    ----------
    categories : "auto" or list of lists, default="auto"
        Public category lists per column (costs no privacy), or ``"auto"``: discovered by
        thresholded noisy counts under (``epsilon``, ``delta``)-DP.
    epsilon : float, default=1.0
        Budget of the discovery (ignored with public categories).
    delta : float, default=1e-6
        Its delta, half of it for the threshold.
    random_state : int, Generator or None, default=None
        Seeds the exact noise (None: keys from the OS).
    sparse_output : bool, default=False
        Return a CSR matrix with one stored entry per column and row (as scikit-learn's
        ``OneHotEncoder(sparse_output=True)``), the dense output's values.

    Attributes
    ----------
    categories_ : list of lists
        Released (or given) categories per column, sorted.
    n_features_in_ : int
    output_norm_bound_ : float
        ``sqrt(n_features_in_)``.
    threshold_ : float or None
        The public threshold ``tau`` on the noisy counts (None with public categories).
    epsilon_, delta_ : float
    dp_event_ : dp_accounting.DpEvent
    noise_scale_ : float
        Standard deviation of the count noise (0 with public categories).
    sensitivity_ : float
        ``sqrt(2 n_features_in_)`` (0 with public categories).
    privacy_guaranteed_ : bool
        Always True.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPOneHotEncoder
    >>> X = np.array([["a"] * 900 + ["b"] * 600 + ["rare"] * 3]).T
    >>> enc = DPOneHotEncoder(epsilon=1.0, random_state=0).fit(X)
    >>> enc.categories_, enc.transform([["b"], ["unseen"], [None]]).tolist()
    ([['a', 'b']], [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    """

    _parameter_constraints: dict = {
        "categories": [StrOptions({"auto"}), list],
        "sparse_output": ["boolean"],
        **DP_TRANSFORMER_CONSTRAINTS,
    }

    def __init__(self, categories="auto", *, epsilon=1.0, delta=1e-6, random_state=None,
                 sparse_output=False):
        self.categories = categories
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.sparse_output = sparse_output

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Take the public categories, or discover them privately.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Any hashable values; None/NaN are missing.
        y : ignored

        Returns
        -------
        self : DPOneHotEncoder
        """
        from ..accounting import _lazy_dp_accounting as dp_accounting

        from .._dask import is_dask_collection

        if is_dask_collection(X):
            counted, n = self._dask_value_counts(X)
        else:
            columns = _columns(self, X, reset=True)
            counted = [self._value_counts(col) for col in columns]
            n = columns[0].shape[0]
        d = len(counted)
        if self.categories != "auto":
            if len(self.categories) != d:
                raise ValueError(f"categories has {len(self.categories)} lists for {d} "
                                 "columns")
            cats = [sorted(set(c), key=_sort_key) for c in self.categories]
            event, eps, noise, sens, tau = dp_accounting.NoOpDpEvent(), 0.0, 0.0, 0.0, None
        else:
            cats, event, noise, sens, tau = self._discover(counted, n)
            eps = guarantee(event, self.delta)[0]
        self.categories_ = cats
        self._index = [{v: i for i, v in enumerate(c)} for c in cats]
        self.output_norm_bound_ = float(math.sqrt(d))
        self.threshold_ = tau
        self.dp_event_ = event
        self.epsilon_, self.delta_ = eps, float(self.delta) if eps > 0 else 0.0
        self.noise_scale_, self.sensitivity_ = float(noise), float(sens)
        self.privacy_guaranteed_ = True
        return self

    def _dask_value_counts(self, X):
        """Per-column counts of the non-missing values of a Dask DataFrame, counted
        partition by partition on the workers (only ``(value, count)`` pairs travel)."""
        import dask

        if not hasattr(X, "columns"):
            raise TypeError("DPOneHotEncoder fits a Dask DataFrame (not a Dask array)")
        names = [str(c) for c in X.columns]
        if not names:
            raise ValueError("DPOneHotEncoder needs at least one column")
        self.n_features_in_ = len(names)
        self.feature_names_in_ = np.asarray(names, dtype=object)
        n, *series = dask.compute(X.shape[0], *[X[c].dropna().value_counts()
                                                  for c in X.columns])
        counted = []
        for counts in series:
            keys = sorted(counts.index.tolist(), key=_sort_key)
            counted.append((keys, np.array([int(counts[k]) for k in keys], dtype=np.int64)))
        return counted, int(n)

    def _discover(self, counted, n):
        from ..accounting import DeltaDpEvent, compose, gaussian_event
        from .._mechanisms._exact import (DOMINANCE_MARGIN, discrete_gaussian_noise,
                                          grid_for, release_on_grid)

        d = len(counted)
        delta_g = delta_t = float(self.delta) / 2.0
        sens = math.sqrt(2.0 * d)
        sigma = sens / gdp_mu(self.epsilon, delta_g)
        gamma = grid_for(sigma, float(n))
        if gamma > 1.0:
            raise ValueError(f"epsilon={self.epsilon!r} is too small for a count release "
                             "(noise above 2^30 counts)")
        s = int(math.ceil(sigma * (1.0 + DOMINANCE_MARGIN) / gamma))
        noise_std = s * gamma
        tau = discovery_threshold(noise_std, d, delta_t)
        source = word_source(self.random_state)
        cats = []
        for values, counts in counted:
            z = discrete_gaussian_noise(source, s, len(values))
            noisy = release_on_grid(counts.astype(np.float64), gamma, z)
            cats.append(sorted((v for v, c in zip(values, noisy) if c >= tau), key=_sort_key))
        event = compose(gaussian_event(noise_std / (1.0 + DOMINANCE_MARGIN), sens),
                        DeltaDpEvent(delta_t))
        return cats, event, noise_std, sens, tau

    @staticmethod
    def _value_counts(values):
        """``(sorted distinct values, their counts)`` of the non-missing entries of a
        column (pandas' hash table when pandas is installed; a dict otherwise)."""
        try:
            import pandas as pd
        except ImportError:
            counts = {}
            for v in values[~_is_missing(values)].tolist():
                counts[v] = counts.get(v, 0) + 1
        else:
            if not isinstance(values, pd.Series):
                values = pd.Series(values, dtype=object)
            vc = values.value_counts(dropna=True, sort=False)
            counts = dict(zip(vc.index.tolist(), vc.to_numpy().tolist()))
        # a fixed order of the draws (sorted), so a seeded fit is reproducible
        keys = sorted(counts, key=_sort_key)
        return keys, np.array([counts[k] for k in keys], dtype=np.int64)

    def transform(self, X):
        """One-hot rows: the categories, then ``other``, then ``missing`` per column.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        XT : ndarray or CSR matrix (``sparse_output``) of shape (n_samples, n_features_out_)
        """
        check_is_fitted(self)
        columns = _columns(self, X, reset=False)
        n = columns[0].shape[0]
        widths = [len(index) + 2 for index in self._index]
        if self.sparse_output:
            return self._transform_csr(columns, n, widths)
        out = np.zeros((n, sum(widths)))
        rows = np.arange(n)
        start = 0
        for col, index, width in zip(columns, self._index, widths):
            out[rows, start + self._codes(col, index)] = 1.0
            start += width
        return out

    def _transform_csr(self, columns, n, widths):
        """:meth:`transform` as CSR: one entry (1.0) per column and row, in increasing
        column order (canonical)."""
        import scipy.sparse as sp

        d = len(widths)
        total = sum(widths)
        dtype = np.int32 if max(total, n * d) < 2**31 - 1 else np.int64
        indices = np.empty((n, d), dtype=dtype)
        start = 0
        for j, (col, index, width) in enumerate(zip(columns, self._index, widths)):
            indices[:, j] = start + self._codes(col, index)
            start += width
        out = sp.csr_matrix((np.ones(n * d), indices.ravel(),
                             np.arange(0, n * d + 1, d, dtype=dtype)), shape=(n, total))
        out.has_sorted_indices = True
        return out

    @staticmethod
    def _codes(col, index):
        """Position of every value in ``index``; ``len(index)`` for any other value
        ("other"), ``len(index) + 1`` for missing."""
        k = len(index)
        missing = _is_missing(col)
        try:
            import pandas as pd
        except ImportError:
            codes = np.array([index.get(v, k) for v in col.tolist()], dtype=np.int64)
        else:
            known = pd.Index(list(index), dtype=object)
            codes = known.get_indexer(pd.Index(col)).astype(np.int64)
            codes[codes < 0] = k
        codes[missing] = k + 1
        return codes

    @property
    def n_features_out_(self):
        check_is_fitted(self)
        return sum(len(c) + 2 for c in self.categories_)

    def get_feature_names_out(self, input_features=None):
        """``<column>_<category>``, ``<column>_other``, ``<column>_missing``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input column names (default: ``feature_names_in_``, else ``x0, x1, ...``).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        if input_features is None:
            input_features = getattr(self, "feature_names_in_",
                                     [f"x{j}" for j in range(self.n_features_in_)])
        out = []
        for name, cats in zip(input_features, self.categories_):
            out.extend(f"{name}_{c}" for c in cats)
            out.extend([f"{name}_other", f"{name}_missing"])
        return np.asarray(out, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = True
        return tags
