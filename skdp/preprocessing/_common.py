"""What the DP transformers of :mod:`skdp.preprocessing` share: privacy parameters, the
release's privacy attributes, and the public output norm bound a next step can read.

Every DP transformer has ``epsilon`` and ``delta`` (its own share of a pipeline's budget),
``random_state`` (seeds the exact noise; None: keys from the OS) and, once fitted,

* ``dp_event_`` -- the dp-accounting event of what ``fit`` released (replace-one
  neighbours, :mod:`skdp.accounting._events`), ``epsilon_``/``delta_`` its guarantee;
* ``privacy_guaranteed_`` -- True: nothing that shapes the output is read from the data
  outside the release;
* ``output_norm_bound_`` -- a public bound on the L2 norm of every row ``transform``
  returns, for any input row (a function of public parameters and of the release): a next
  step (``data_norm="auto"`` of the estimators) takes it at no privacy cost.
"""

import math
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval

__all__ = ["DP_TRANSFORMER_CONSTRAINTS", "BOUND_MAX", "BOUND_MIN_WIDTH", "BOUND_REL_WIDTH",
           "check_public_bounds", "dense_container_requested", "gdp_mu", "guarantee",
           "set_release_attributes", "target_event", "word_source"]

DP_TRANSFORMER_CONSTRAINTS = {
    "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
    "delta": [Interval(numbers.Real, 0, 1, closed="neither")],
    "random_state": ["random_state", np.random.Generator],
}


#: public feature ranges ``(lo, hi)``: ``-BOUND_MAX <= lo < hi <= BOUND_MAX`` and
#: ``hi - lo >= max(BOUND_REL_WIDTH max(|lo|, |hi|), BOUND_MIN_WIDTH)``
#: (:func:`check_public_bounds`)
BOUND_MAX = 1e100
BOUND_REL_WIDTH = 1e-10
BOUND_MIN_WIDTH = 1e-100
_BOUND_RULE = (f"each (lo, hi) must be finite with {-BOUND_MAX:g} <= lo < hi <= {BOUND_MAX:g} "
               f"and hi - lo >= max({BOUND_REL_WIDTH:g} * max(|lo|, |hi|), "
               f"{BOUND_MIN_WIDTH:g})")


def check_public_bounds(lower, upper, name="feature_bounds", first_column=0):
    """Refuse public feature ranges whose derived quantities would overflow or collapse,
    from the parameters alone (before any row is read), with an error naming the column.

    What the fits compute from a range ``(lo, hi)``: its width ``hi - lo``, centre
    ``(lo + hi)/2`` and squared half-width (``DPStandardScaler``: noise scales, variance
    floor ``(1e-3 r)^2``, output norm bound ``(max(|lo|, |hi|)/scale)^2``), or
    ``4094`` equal bins ``lo + k (hi - lo)/4094`` and B-spline knots up to a few widths
    beyond the range (``DPSplineTransformer``).  They are finite, positive and strictly
    increasing for every range with ``|lo|, |hi| <= BOUND_MAX = 1e100`` and
    ``hi - lo >= max(1e-10 max(|lo|, |hi|), 1e-100)`` (a bin is then more than a hundred
    float64 spacings wide at the range's magnitude); other ranges are refused, so whether
    a fit raises never depends on a row.

    Parameters
    ----------
    lower, upper : float or array-like
        Broadcast together; the column index in the error is the flat index.
    name : str
        The parameter's name in the error.
    first_column : int, default=0
        Column index of the first entry (for an error about one column's pair).

    Returns
    -------
    lower, upper : ndarray of float64 (broadcast, 1-d)

    Examples
    --------
    >>> check_public_bounds([0.0, -5.0], [1.0, 5.0])
    (array([ 0., -5.]), array([1., 5.]))
    >>> check_public_bounds([0.0, -1e308], [1.0, 1e308])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: feature_bounds for column 1 is (-1e+308, 1e+308), outside the allowed range: ...
    """
    lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=np.float64),
                                       np.asarray(upper, dtype=np.float64))
    lower, upper = lower.ravel().copy(), upper.ravel().copy()
    with np.errstate(all="ignore"):
        width = upper - lower
        magnitude = np.maximum(np.abs(lower), np.abs(upper))
        ok = (np.isfinite(lower) & np.isfinite(upper) & (lower < upper)
              & (magnitude <= BOUND_MAX)
              & (width >= np.maximum(BOUND_REL_WIDTH * magnitude, BOUND_MIN_WIDTH)))
    if not np.all(ok):
        k = int(np.flatnonzero(~ok)[0])
        lo, hi = float(lower[k]), float(upper[k])
        j = first_column + k
        if not (np.isfinite(lo) and np.isfinite(hi)):
            why = "a bound is not finite"
        elif not lo < hi:
            why = "it needs lo < hi (lower < upper)"
        elif max(abs(lo), abs(hi)) > BOUND_MAX:
            why = "a bound is too large in magnitude (its width, squares or bins would overflow)"
        else:
            why = "it is too narrow for its magnitude (its bins or variance would collapse)"
        raise ValueError(f"{name} for column {j} is ({lo!r}, {hi!r}), outside the allowed "
                         f"range: {_BOUND_RULE}; {why}")
    return lower, upper


def target_event(mu):
    """The Gaussian event of a release's calibration target ``mu`` (noise multiplier
    ``1/mu``), which dominates what the release records at every input width.

    An exact Gaussian release on a grid (:func:`skdp._mechanisms._exact.gaussian_grid`)
    records a dominating continuous event whose sensitivity carries the grid's rounding
    term ``gamma sqrt(p)`` over its ``p`` coordinates, and rounds its noise up to an integer
    number of grid steps so that the noise multiplier is *at least* ``sigma/sensitivity =
    1/mu``.  The recorded multiplier therefore moves with the input's width in its ninth
    digit and is never below ``1/mu``: behind a width an earlier step released, a
    pipeline composes this event instead (:mod:`skdp.accounting._released_width`)."""
    from ..accounting import gaussian_event

    return gaussian_event(1.0, float(mu))


def gdp_mu(epsilon, delta):
    """``mu`` of the Gaussian release that is exactly ``(epsilon, delta)``-DP (analytic
    Gaussian mechanism, Balle & Wang 2018), with a clear error for unusable values."""
    from ..accounting import gaussian_mu_for

    if not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite, got {epsilon!r}")
    try:
        return gaussian_mu_for(float(epsilon), float(delta))
    except (OverflowError, ZeroDivisionError) as exc:
        raise ValueError(
            f"epsilon={epsilon!r}, delta={delta!r} is outside the range a Gaussian release "
            "can be calibrated for; use epsilon in [1e-4, 1e3] and 0 < delta < 1") from exc


def guarantee(event, delta):
    """``(epsilon_, delta_)`` of a recorded event at the requested ``delta``."""
    from ..accounting import get_epsilon

    return float(get_epsilon(event, delta)), float(delta)


def set_release_attributes(transformer, event, noise_std, sensitivity):
    """The privacy attributes of a DP transformer's fit (module docstring)."""
    transformer.dp_event_ = event
    transformer.epsilon_, transformer.delta_ = guarantee(event, transformer.delta)
    transformer.noise_scale_ = float(noise_std)
    transformer.sensitivity_ = float(sensitivity)
    transformer.privacy_guaranteed_ = True


def dense_container_requested(transformer):
    """True when ``set_output(transform="pandas"|"polars")`` (on the transformer, a parent,
    or ``sklearn.set_config(transform_output=...)``) asks for a DataFrame.

    scikit-learn cannot wrap a sparse matrix in a DataFrame (its ``OneHotEncoder`` raises
    there and asks for ``sparse_output=False``); a transformer with ``sparse_output=True``
    then returns its dense output instead -- the same values in the same places, so what
    a next step fits (and the model a private pipeline releases) is unchanged.  Reads a
    public configuration only."""
    from sklearn.utils._set_output import _get_output_config

    return _get_output_config("transform", transformer)["dense"] in ("pandas", "polars")


def word_source(random_state):
    """The ChaCha20 key of a release: from the OS when ``random_state`` is None."""
    from .._mechanisms import new_word_source

    if random_state is None or isinstance(random_state, (np.random.Generator,
                                                          np.random.RandomState)):
        return new_word_source(random_state)
    return new_word_source(int(random_state))


def _validate_fit_input(estimator, X):
    """``X`` of a numeric DP transformer's fit: an in-memory array validated by
    scikit-learn (NaN and +-inf allowed: they have public bins), or a Dask array/DataFrame
    kept on the workers (:func:`skdp._dask.as_dask_array`; its feature names recorded)."""
    from .._dask import as_dask_array, is_dask_collection
    from .._raw_input import validate_numeric_data

    if is_dask_collection(X):
        X, names = as_dask_array(X)
        estimator.n_features_in_ = int(X.shape[1])
        if names is not None:
            estimator.feature_names_in_ = np.asarray([str(c) for c in names], dtype=object)
        if X.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        return X
    return validate_numeric_data(estimator, X, dtype=np.float64, ensure_all_finite=False)
