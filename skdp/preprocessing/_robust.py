r"""Private robust scaling (``DPRobustScaler``): centre on a private median, scale by a
private quantile range, clip to private outer quantiles.

One release: the count trees of every column on the public log grid
(:mod:`skdp._mechanisms._quantiles`; replace-one L2 sensitivity ``sqrt(24 d)`` whatever
the values, NaN a public bucket), at ``mu``-GDP for ``(epsilon, delta)``.  Everything else
is post-processing of it: per column the quantiles ``clip_range`` (kept one noise rank
inside the data), ``quantile_range`` and the median give

.. math:: z = \frac{\mathrm{clip}(x, a, b) - m}{s}, \qquad s = q_{hi} - q_{lo}
   \;(\text{or } (b - a)/2 \text{ if that is } 0),

and a missing value becomes 0 (the centre).  So every output coordinate lies in
``[(a - m)/s, (b - m)/s]`` and every output row has norm at most
``output_norm_bound_ = sqrt(sum_j max(|a_j - m_j|, |b_j - m_j|)^2 / s_j^2)`` for *any*
input -- the bound a next ``data_norm="auto"`` step takes at no cost.
"""

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .._dask import is_dask_collection
from .._raw_input import validate_numeric_data

from ._common import (DP_TRANSFORMER_CONSTRAINTS, _validate_fit_input, gdp_mu,
                      set_release_attributes, target_event, word_source)

__all__ = ["DPRobustScaler"]


def _check_levels(name, pair):
    lo, hi = (float(v) for v in pair)
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(f"{name} must satisfy 0 < low < high < 1, got {pair!r}")
    return lo, hi


class DPRobustScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale features by private quantiles: ``(clip(x, a, b) - median) / (q_hi - q_lo)``.

    The DP counterpart of scikit-learn's ``RobustScaler`` (plus clipping, which makes the
    output bounded): every statistic comes from one private release of quantiles over a
    public domain that needs no range (module docstring).

    Parameters
    ----------
    quantile_range : (float, float), default=(0.25, 0.75)
        Levels whose difference is the scale.
    clip_range : (float, float), default=(0.01, 0.99)
        Levels of the clipping bounds ``a, b`` (moved inward by the noise margin).
    epsilon : float, default=1.0
    delta : float, default=1e-6
    random_state : int, Generator or None, default=None

    Attributes
    ----------
    center_, scale_ : ndarray of shape (n_features,)
    clip_bounds_ : ndarray of shape (2, n_features)
    output_norm_bound_ : float
    epsilon_, delta_ : float
    dp_event_ : dp_accounting.DpEvent
    noise_scale_, sensitivity_ : float
    privacy_guaranteed_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPRobustScaler
    >>> X = np.random.default_rng(0).lognormal(3, 1, (20000, 1))
    >>> rs = DPRobustScaler(random_state=0).fit(X)
    >>> bool(abs(rs.center_[0] - np.median(X)) < 1.0), rs.epsilon_ <= 1.0
    (True, True)
    """

    #: where an integer random_state keys the noise (the quantiles' stream,
    #: word_source): skdp._mechanisms._exact.RELEASE_SITES, read by fitted_dp_event
    _release_sites = ("dp_transformers",)

    _parameter_constraints: dict = {
        "quantile_range": [tuple, list],
        "clip_range": [tuple, list],
        **DP_TRANSFORMER_CONSTRAINTS,
    }

    def __init__(self, *, quantile_range=(0.25, 0.75), clip_range=(0.01, 0.99),
                 epsilon=1.0, delta=1e-6, random_state=None):
        self.quantile_range = quantile_range
        self.clip_range = clip_range
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state

    def _width_free_event(self):
        """The event that dominates this release at every input width (its calibration
        target, :func:`~skdp.preprocessing._common.target_event`): what a pipeline composes
        when an earlier step released this step's input width."""
        return target_event(gdp_mu(self.epsilon, self.delta))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the quantiles of every column (one Gaussian release).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NaN and +-inf allowed.
        y : ignored

        Returns
        -------
        self : DPRobustScaler
        """
        from .._mechanisms._quantiles import release_tree_histogram, warn_if_unresolved

        q_lo, q_hi = _check_levels("quantile_range", self.quantile_range)
        c_lo, c_hi = _check_levels("clip_range", self.clip_range)
        mu = gdp_mu(self.epsilon, self.delta)
        X = _validate_fit_input(self, X)
        warn_if_unresolved("DPRobustScaler's quantiles", X.shape[0], X.shape[1], mu,
                           "spend a larger epsilon, or use DPStandardScaler with public "
                           "feature_bounds")
        hist, event, noise, sens = release_tree_histogram(X, mu,
                                                          word_source(self.random_state))
        q = hist.inner_quantiles(np.sort([c_lo, q_lo, 0.5, q_hi, c_hi]), noise)
        a, b = q[:, 0], np.maximum(q[:, 4], q[:, 0])
        center = np.clip(q[:, 2], a, b)
        scale = q[:, 3] - q[:, 1]
        fallback = np.where(b > a, (b - a) / 2.0, 1.0)
        scale = np.where(scale > 0.0, scale, fallback)
        self.center_, self.scale_ = center, scale
        self.clip_bounds_ = np.vstack([a, b])
        reach = np.maximum(np.abs(a - center), np.abs(b - center)) / scale
        self.output_norm_bound_ = float(np.sqrt(np.sum(reach ** 2)))
        set_release_attributes(self, event, noise, sens)
        return self

    def transform(self, X):
        """``(clip(x, a, b) - center_) / scale_``, missing values to 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        XT : ndarray of shape (n_samples, n_features_in_)
            A lazy Dask array for a Dask ``X`` (each block transformed on its worker).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            from .._dask_predict import lazy_rowwise

            return lazy_rowwise(self.transform, X, (self.n_features_in_,), np.float64)
        X = validate_numeric_data(self, X, dtype=np.float64, ensure_all_finite=False,
                                  reset=False)
        Z = (np.clip(X, self.clip_bounds_[0], self.clip_bounds_[1]) - self.center_) \
            / self.scale_
        return np.where(np.isnan(Z), 0.0, Z)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = True
        return tags
