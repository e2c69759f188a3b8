r"""Differentially private standardisation (``DPStandardScaler``).

Mechanism
---------
Public per-feature bounds ``a_j < b_j`` (``feature_bounds``); centre ``c_j = (a_j + b_j)/2``
and half-width ``r_j = (b_j - a_j)/2``.  Every value is clipped, ``x_ij <- min(max(x_ij,
a_j), b_j)``, and shifted, ``u_ij = x_ij - c_j`` in ``[-r_j, r_j]`` (bounds enforced, never
read from the data).  The statistics are the per-feature first and second moments of the
shifted values,

.. math:: m_j = \frac1n \sum_i u_{ij}, \qquad s_j = \frac1n \sum_i u_{ij}^2 ,

released *jointly* with independent Gaussian noise:

.. math:: M_j = m_j + \sigma^M_j \xi_j, \quad S_j = s_j + \sigma^S_j \zeta_j, \qquad
   \sigma^M_j = \kappa \frac{2 r_j}{n \sqrt{w}}, \quad
   \sigma^S_j = \kappa \frac{r_j^2}{n \sqrt{1 - w}},

``w = mean_share`` in (0, 1).  Everything else is post-processing: ``mean_ = c + clip(M,
-r, r)`` and ``var_ = clip(S - M^2, floor_j, r_j^2)`` with the positive floor
``floor_j = min(max(sigma^S_j, (1e-3 r_j)^2), r_j^2)`` (a variance below the noise level of
``S`` is not distinguishable from it; ``r_j^2`` is the largest variance of a variable in
``[-r_j, r_j]``); ``scale_ = sqrt(var_)``.

Sensitivity (replace-one)
-----------------------------------------
Divide every released coordinate by its noise standard deviation: the release becomes
``q(S) + N(0, I_{2d})`` with ``q = (m_j/sigma^M_j, s_j/sigma^S_j)_j``.  Replacing row ``i``
changes, in feature ``j``, ``m_j`` by ``(u - u')/n`` and ``s_j`` by ``(u^2 - u'^2)/n =
(u - u')(u + u')/n`` where ``u, u' in [-r_j, r_j]``.  Write ``u - u' = x r_j``; then
``|u + u'| <= (2 - x) r_j`` (``|s| + |t| <= 2r`` is the image of the box under
``(s, t) = (u - u', u + u')``), with equality at ``u = r_j``, ``u' = (1 - x) r_j``.  So
feature ``j`` contributes at most

.. math:: \max_{0 \le x \le 2} \frac{x^2 r_j^2}{n^2 (\sigma^M_j)^2}
          + \frac{x^2 (2-x)^2 r_j^4}{n^2 (\sigma^S_j)^2}
   = \frac{1}{\kappa^2} \max_{0 \le x \le 2} g_w(x), \qquad
   g_w(x) = \frac{w x^2}{4} + (1 - w) x^2 (2 - x)^2,

to the squared L2 change, the same for every feature (the noise is proportional to each
feature's range), and the row may pick its worst ``x`` in every feature independently, so
the replace-one L2 sensitivity of ``q`` is exactly

.. math:: \Delta = \sqrt{d\, h(w)} / \kappa, \qquad h(w) = \max_{[0, 2]} g_w .

``g_w'(x) = x (w/2 + 4 (1 - w)(2 - x)(1 - x))`` vanishes inside ``(0, 2)`` at
``x_\pm = (3 \pm \sqrt{1 - w / (2(1 - w))})/2`` when ``w <= 2/3`` (``x_-`` a local maximum,
``x_+`` a local minimum), so ``h(w) = max(g_w(2), g_w(x_-)) = max(w, g_w(x_-))``
(``h(w) = w`` for ``w > 2/3``).  ``h(w) <= 1`` (``g_w(x) <= w + (1 - w)`` since
``x(2 - x) <= 1``): the joint release is never noisier than two separate releases with the
sensitivities ``2 ||r||/n`` (means) and ``||r^2||/n`` (second moments) that a naive split
would use (at the default ``w = 1/2``, ``h = 0.6431``: 1.25x less noise).

Rounding.  The analysis above is for the exact means of the (computed) clipped values,
which lie in ``[-r_j, r_j]`` exactly (``c`` and ``r`` are powers of two, and rounding is
monotone).  The released numbers are float64 means: summed in blocks of 4096 rows per
level (depth ``d_s``), each computed mean is within ``gamma_{d_s+1} r_j`` of the exact one
(``gamma_{d_s+1} r_j^2`` for the second moments; ``gamma_k = k u/(1 - k u)``,
``u = 2^-53``; :mod:`skdp._mechanisms._summation`).  Two neighbours' errors differ by twice
that, which in noise units adds at most ``gamma_{d_s+1} n sqrt(d (w + 4(1 - w)))/kappa`` to
the L2 change; ``kappa`` is multiplied by ``1 + gamma_{d_s+1} n sqrt((w + 4(1 - w))/h(w))``
so that ``Delta <= mu`` holds for the float64 release (``1 + 2e-5`` at ``n = 10^7``).

Calibration (``delta > 0``): ``mu = gaussian_mu_for(epsilon, delta)`` (analytic Gaussian,
exact) and ``kappa = sqrt(d h(w) (1 + 1e-9)) / mu``, so ``Delta <= mu``: the release is
``mu``-GDP, hence ``(epsilon, delta)``-DP, and its event is ``gaussian_event(1, mu)``.
``mean_share`` is the share of ``mu^2`` the means would get in that naive split (the
rest goes to the second moments).  ``with_std=False`` releases the means only
(``w = 1``: ``h = 1``, ``sigma^M_j = kappa 2 r_j/n``).  ``delta = 0`` (pure DP) is not
available and raises.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from scipy.sparse import issparse
from sklearn.utils.validation import check_is_fitted

from .._dask import as_dask_array, check_dask_array, is_dask_collection
from .._raw_input import validate_numeric_data
from ..accounting import compose, gaussian_event, gaussian_mu_for, get_delta, get_epsilon
from ..accounting._ledger import PrivacyLedger, ledger_reservation
from ..exceptions import PrivacyLeakWarning
from .._fitted_attributes import atomic_fit
from .._mechanisms import new_word_source
from .._mechanisms._summation import BLOCK, blocked_depth, blocked_sum, gamma_k
from .._mechanisms._exact import (
    DOMINANCE_MARGIN,
    discrete_gaussian_noise,
    grid_for,
    release_on_grid,
)
from .._stacklevel import user_stacklevel

__all__ = ["DPStandardScaler", "moment_sensitivity_factor"]

#: Relative safety margin on ``h(w)`` (absorbs the rounding of the closed form).
H_MARGIN = 1e-9
#: Relative lower bound on the released standard deviation (``scale_ >= 1e-3 r``).
SCALE_FLOOR = 1e-3
#: ``feature_bounds="auto"``: the share of ``mu^2`` that releases the bounds, and the
#: quantile levels used as bounds (values beyond are clipped)
AUTO_BOUND_SHARE = 0.25
AUTO_FEATURE_QUANTILES = (0.01, 0.99)


def outward_power_of_two_bounds(lower, upper):
    """Data-derived per-feature bounds rounded outward to ``{-s, 0, s}``, ``s`` the power of
    two at or above ``max(|lower|, |upper|)`` (1 for an all-zero feature), so that no row's
    value is printed in ``feature_bounds_`` (used only when ``feature_bounds=None``, which
    is not private anyway).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing._scaler import outward_power_of_two_bounds
    >>> lo, hi = outward_power_of_two_bounds(np.array([-3.2, 100.0, 0.0]),
    ...                                      np.array([0.7, 101.0, 0.0]))
    >>> lo.tolist(), hi.tolist()
    ([-4.0, 0.0, 0.0], [4.0, 128.0, 1.0])
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    magnitude = np.maximum(np.abs(lower), np.abs(upper))
    s = np.exp2(np.ceil(np.log2(np.where(magnitude > 0, magnitude, 1.0))))
    lo = np.floor(lower / s) * s
    hi = np.ceil(upper / s) * s
    return lo, np.where(hi > lo, hi, lo + s)


def _check_data_bounds(lower, upper):
    """Refuse ranges read from the data (``feature_bounds=None``, already not private)
    that the fit's arithmetic cannot use (:func:`skdp.preprocessing._common.
    check_public_bounds`' limits), with a message that shows no value -- instead of an
    overflow deep in the release."""
    from ._common import check_public_bounds

    try:
        check_public_bounds(lower, upper)
    except ValueError:
        raise ValueError(
            "feature_bounds=None: the ranges read from the data are beyond what the fit "
            "can compute with (magnitudes up to 1e100, widths not collapsed); rescale the "
            "features or pass public feature_bounds") from None


def _guaranteed_steps(sigma, gamma):
    """``2^(e - 1)/gamma`` with ``sigma = f 2^e``, ``f in [1/2, 1)`` (``math.frexp``): a
    power of two at most ``sigma/gamma``, the noise std in steps of the grid ``gamma``.
    Exact (no logarithm is rounded): ``2^(e - 1) <= sigma`` and ``gamma`` is a power of
    two.  On :func:`grid_for`'s finest grid it is ``2^29``, on its coarsest ``2^12``."""
    return math.ldexp(1.0, math.frexp(float(sigma))[1] - 1) / float(gamma)


def _secure_inflation(mu, sigmas, gammas):
    """Factor ``c`` by which every coordinate's noise is inflated on the exact path.

    Coordinate ``i`` (noise ``sigma_i``) is released as ``gamma_i (rint(v_i/gamma_i) +
    Z_i)``, ``Z_i ~ N_Z(0, s_i^2)``, ``s_i = ceil(c sigma_i/gamma_i)``, on the grid
    ``gamma_i`` that :func:`grid_for` chose for it: ``2^29`` noise steps or more, but as
    few as ``2^12`` when the public bound on ``|v_i|`` is large against ``sigma_i`` (more
    than ``2^20 sigma_i``: a large ``n mu``).  In units of the discrete noise, the
    replace-one shift of coordinate ``i`` is at most ``|dv_i|/(s_i gamma_i) + 1/s_i``
    (rounding moves it by at most one step).  ``s_i gamma_i >= c sigma_i`` bounds the first
    term by ``(|dv_i|/sigma_i)/c``; ``c >= 1`` and ``sigma_i >= t_i gamma_i``, with ``t_i``
    the exact power of two of :func:`_guaranteed_steps`, bound the second by ``1/t_i``.
    So the L2 shift of the coordinates is at most ``Delta/c + rho``, ``rho = ||(1/t_i)_i||``,
    with ``Delta <= mu`` the normalised sensitivity (module docstring).  The release is
    dominated by a continuous Gaussian with noise ``1/(1 + m)`` (``m`` =
    ``DOMINANCE_MARGIN``, :mod:`skdp._mechanisms._exact`) on that shift; it is at most
    ``mu``-GDP, as recorded, when ``(Delta/c + rho)(1 + m) <= mu``, i.e. for
    ``c = (1 + m) mu/(mu - (1 + m) rho)``.  On grids of ``2^29`` steps everywhere ``rho =
    sqrt(k) 2^-29`` for ``k`` coordinates; each coarser grid adds its own larger term --
    assuming ``2^29`` steps for every coordinate, as this factor once did, fell short by
    up to ``1.6e-6`` relative at ``n = 10^9``."""
    m1 = 1.0 + DOMINANCE_MARGIN
    steps = [_guaranteed_steps(sigma, gamma) for sigma, gamma in zip(sigmas, gammas)]
    rounding = m1 * math.sqrt(math.fsum((1.0 / t) ** 2 for t in steps))
    if rounding > 0.5 * mu:
        raise ValueError(
            f"secure_noise: at mu = {mu:.3g} (epsilon too small for {len(steps)} released "
            "statistics) the grid rounding would need more than twice the noise; use a "
            "larger epsilon, or secure_noise=False")
    return m1 * mu / (mu - rounding)


def _secure_grids(mu, sigmas, bounds):
    """``(gammas, steps)`` of the exact release of coordinates with noise ``sigmas`` and
    public bounds ``bounds`` on their magnitudes (the clipped moments: ``r_j`` and
    ``r_j^2``): each coordinate's grid (:func:`grid_for`) and its number of noise steps
    ``s_i = ceil(c sigma_i/gamma_i)``, ``c`` from those very grids
    (:func:`_secure_inflation`).  Public quantities only."""
    sigmas = np.asarray(sigmas, dtype=np.float64)
    bounds = np.broadcast_to(np.asarray(bounds, dtype=np.float64), sigmas.shape)
    gammas = np.array([grid_for(float(sigma), float(bound))
                       for sigma, bound in zip(sigmas, bounds)])
    c = _secure_inflation(mu, sigmas, gammas)
    steps = np.array([int(math.ceil(c * sigma / gamma))
                      for sigma, gamma in zip(sigmas, gammas)], dtype=np.int64)
    return gammas, steps


def _exact_release(values, gammas, steps, source):
    """Each coordinate on its own grid ``gammas[i]`` with exact discrete Gaussian noise of
    ``steps[i]`` grid steps (:func:`_secure_grids`), drawn in order from ``source``."""
    out = np.empty(values.shape[0])
    for i, (v, gamma, s) in enumerate(zip(values, gammas, steps)):
        out[i] = release_on_grid(np.array([v]), float(gamma),
                                 discrete_gaussian_noise(source, int(s), 1))[0]
    return out


def moment_sensitivity_factor(mean_share):
    """``h(w) = max_{0 <= x <= 2} w x^2/4 + (1 - w) x^2 (2 - x)^2`` (module docstring).

    Parameters
    ----------
    mean_share : float in (0, 1]
        ``w``; ``1`` means "means only".

    Returns
    -------
    h : float
        In ``(0, 1]``.

    Examples
    --------
    >>> from skdp.preprocessing._scaler import moment_sensitivity_factor
    >>> round(moment_sensitivity_factor(0.5), 4), moment_sensitivity_factor(1.0)
    (0.6431, 1.0)
    """
    w = float(mean_share)
    if not 0.0 < w <= 1.0:
        raise ValueError(f"mean_share must be in (0, 1], got {mean_share!r}")

    def g(x):
        return w * x * x / 4.0 + (1.0 - w) * x * x * (2.0 - x) ** 2

    h = g(2.0)  # = w
    if w < 1.0:
        disc = 1.0 - w / (2.0 * (1.0 - w))
        if disc >= 0.0:
            h = max(h, g((3.0 - math.sqrt(disc)) / 2.0))
    return h


def summation_depth(X):
    """Bound on the depth of the summation trees of :func:`_clipped_moments` (rows of one
    partition in blocks, then the partitions' sums in blocks)."""
    n = X.shape[0]
    if is_dask_collection(X):
        return blocked_depth(n) + blocked_depth(len(X.chunks[0]))
    if issparse(X):
        # a column's non-zeros added in order (at most n terms), then one product and one
        # addition for its zeros (:func:`_sparse_clipped_moments`)
        return n + 2
    return blocked_depth(n)


def summation_inflation(n, depth, w):
    """``1 + gamma_{depth+1} n sqrt((w + 4(1 - w))/h(w))``: the factor on ``kappa`` that
    covers the rounding of the computed moments (module docstring, "Rounding")."""
    h = moment_sensitivity_factor(w)
    return 1.0 + gamma_k(depth + 1) * n * math.sqrt((w + 4.0 * (1.0 - w)) / h)


def _clipped_moments(X, lower, upper, centre, second):
    """``(mean(U), mean(U^2))`` over rows of ``U = clip(X, lower, upper) - centre`` (the
    second is None unless ``second``), summed in blocks (:func:`blocked_sum`, depth
    :func:`summation_depth`); partition by partition for a Dask array, in one pass that
    also checks that every entry is finite (raised before anything is released)."""
    n = X.shape[0]
    if is_dask_collection(X):
        import dask
        import dask.array as da

        U = (da.clip(X, lower, upper) - centre).rechunk({1: -1})

        def blocked_total(A):
            # each partition's blocked sum on its worker, then the partial sums BLOCK at a
            # time, still on the workers: the client receives one d-vector
            while True:
                nb = A.numblocks[0]
                A = A.map_blocks(lambda b: blocked_sum(b)[None, :],
                                 chunks=((1,) * nb, (A.shape[1],)), dtype=np.float64)
                if nb == 1:
                    return A[0]
                A = A.rechunk({0: BLOCK})

        parts = [da.isfinite(X).all(), blocked_total(U)]
        parts += [blocked_total(U * U)] if second else []
        finite, *sums = dask.compute(*parts)
        if not bool(finite):
            raise ValueError("Input X contains NaN or infinity.")
        return sums[0] / n, (sums[1] / n if second else None)
    if issparse(X):
        return _sparse_clipped_moments(X, lower, upper, centre, second)
    U = np.clip(X, lower, upper) - centre
    return blocked_sum(U) / n, (blocked_sum(U * U) / n if second else None)


def _sparse_clipped_moments(X, lower, upper, centre, second):
    """:func:`_clipped_moments` of a sparse ``X`` without densifying it: per column, the
    clipped and centred non-zeros added in order (``np.bincount``), plus the count of zeros
    times the zero's own clipped, centred value ``clip(0, lower, upper) - centre``."""
    X = X.tocsr()
    if not X.has_canonical_format:       # duplicates must be summed before clipping
        X = X.copy()
        X.sum_duplicates()
    n, d = X.shape
    cols = X.indices
    U = np.clip(X.data, lower[cols], upper[cols]) - centre[cols]
    zeros = n - np.bincount(cols, minlength=d)
    u0 = np.clip(0.0, lower, upper) - centre
    first = (np.bincount(cols, weights=U, minlength=d) + zeros * u0) / n
    if not second:
        return first, None
    return first, (np.bincount(cols, weights=U * U, minlength=d) + zeros * (u0 * u0)) / n


def _noise_generator(random_state):
    """The generator every random draw of a fit comes from (its bounds' key, its
    moments' ChaCha20 key, its float noise).

    An integer seed ``s`` seeds ``default_rng(site_seed(s, "standard_scaler"))``: a
    stream of the scaler's own (:func:`skdp._mechanisms._exact.site_seed`).  It used to
    be ``default_rng(s)``, the estimators' stream: ``Pipeline([DPStandardScaler(
    random_state=7), DPLogisticRegression(random_state=7)])`` drew the model's noise
    integers equal to the scaler's (and an ``"auto"`` bound's release equal to the
    model's ``data_norm="auto"`` release), which cancel in a scaled difference of the two
    releases that the accounting composed as independent.  A generator is used as is (its
    next draws), a ``RandomState`` seeds a fresh generator with one draw, None gives
    fresh OS entropy."""
    from .._mechanisms._exact import site_seed

    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if random_state is None:
        return np.random.default_rng()
    return np.random.default_rng(site_seed(random_state, "standard_scaler"))


class DPStandardScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Standardise features with differentially private means and variances.

    Clips every feature to public bounds, releases the per-feature means and second
    moments with the Gaussian mechanism (one joint release, calibrated exactly to
    ``(epsilon, delta)``), and standardises ``(x - mean_) / scale_`` like
    :class:`sklearn.preprocessing.StandardScaler`.  Put it in front of a DP estimator: the
    pipeline's guarantee is the composition of both steps
    (:func:`skdp.accounting.fitted_dp_event`).

    With ``c = (a + b)/2``, ``r = (b - a)/2`` the centre and half-width of each feature's
    bounds and ``u = clip(x, a, b) - c``, the release is

    .. math:: M_j = \bar u_j + \sigma^M_j \xi_j, \quad S_j = \overline{u^2}_j
       + \sigma^S_j \zeta_j, \quad \sigma^M_j = \kappa\frac{2r_j}{n\sqrt w},\quad
       \sigma^S_j = \kappa\frac{r_j^2}{n\sqrt{1-w}},

    whose replace-one sensitivity in noise units is exactly ``sqrt(d h(w))/kappa``
    (derivation in :mod:`skdp.preprocessing._scaler`), and ``kappa`` makes it
    ``mu``-GDP with ``mu = gaussian_mu_for(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon > 0.
    delta : float, default=1e-6
        Privacy parameter delta in (0, 1); should be << 1/n.  (0, pure DP, is not
        available: a clear error.)
    feature_bounds : tuple (lower, upper), array-like of shape (2, n_features), "auto" or None
        Public bounds of each feature; ``lower`` and ``upper`` are scalars or arrays of
        length ``n_features`` with ``lower < upper``.  Values are clipped to them.  Every
        column's range must have ``|lower|, |upper| <= 1e100`` and ``upper - lower >=
        max(1e-10 max(|lower|, |upper|), 1e-100)``, so its width, squares and variance
        floor stay finite and positive (checked before any row is read; ValueError
        naming the column otherwise).
        ``"auto"``: the 1 % and 99 % quantiles of each feature, released privately by the
        fit itself (a quarter of its Gaussian-DP budget ``mu^2``; the composition is
        ``(epsilon, delta)``-DP, and ``dp_event_`` records both releases).
        ``None`` reads them from the data, rounded outward to powers of two (not private:
        warns, ``privacy_guaranteed_ = False``, ``epsilon_ = inf``).
    with_mean : bool, default=True
        Centre the data (subtract ``mean_``) in :meth:`transform`.
    with_std : bool, default=True
        Scale the data to unit variance in :meth:`transform`.  ``False`` releases the
        means only (the whole budget goes to them).
    mean_share : float, default=0.5
        Share ``w`` in (0, 1) of the Gaussian-DP budget ``mu^2`` given to the means (the
        rest to the second moments), as in a naive split; the joint sensitivity then lowers
        both noises.  Ignored when ``with_std=False``.
    clip : bool, default=True
        Clip the data to the bounds in :meth:`transform` too (as the fit did).
    secure_noise : bool, default=True
        Release every statistic on a public power-of-two grid with exact discrete Gaussian
        noise (``doc/floating_point.rst``; the noise grows by about 0.1 %); ``False``: float
        noise, whose low-order bits leak.  Reported as ``secure_noise_``.  With an integer
        ``random_state`` the noise is reproducible and known to whoever knows the seed.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the noise.  Leave None in production.
    privacy_ledger : :class:`~skdp.accounting.PrivacyLedger` or None, default=None
        Ledger that accounts this fit (the event is reserved before the data is read).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Private means (clipped to the bounds).
    var_ : ndarray of shape (n_features,) or None
        Private variances, clamped to ``[min(max(sigma^S_j, (1e-3 r_j)^2), r_j^2), r_j^2]``;
        None when
        ``with_std=False``.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``; None when ``with_std=False``.
    feature_bounds_ : ndarray of shape (2, n_features)
        Bounds enforced (lower, upper): ``feature_bounds``, or -- when it is None -- the
        data's range rounded outward to powers of two (no row's value is printed).
    n_samples_seen_ : int
        Number of rows (public).
    output_norm_bound_ : float or None
        With ``clip=True``, a bound on the L2 norm of every row :meth:`transform` returns
        (from the bounds and the released statistics): a next step with
        ``data_norm="auto"`` takes it at no cost.  None with ``clip=False``.
    epsilon_ : float
        Epsilon this fit has at ``delta_`` (<= ``epsilon``; ``inf`` when
        ``feature_bounds=None``, with ``dp_event_ = NonPrivateDpEvent()``).
    delta_ : float
        Delta of the guarantee.
    dp_event_ : dp_accounting.DpEvent
        ``gaussian_event(1, mu)``: the joint release in noise units.
    noise_scale_ : float
        1.0: the noise standard deviation of the release in noise units.
    sensitivity_ : float
        Replace-one L2 sensitivity of the release in noise units (``mu``).
    mean_noise_std_ : ndarray of shape (n_features,)
        ``sigma^M``: noise standard deviation on each mean, in data units.
    moment_noise_std_ : ndarray of shape (n_features,) or None
        ``sigma^S``: noise standard deviation on each second moment.
    secure_noise_ : bool
        Whether the statistics were released with exact grid noise.
    privacy_guaranteed_ : bool
        False iff the bounds were read from the data.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray
        Defined when X has string feature names.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : the non-private version.

    Notes
    -----
    Neighbouring datasets differ by replacing one row; ``n`` is public.  With
    ``secure_noise=True`` (the default) the statistics are released on power-of-two grids
    with exact discrete Gaussian noise: the float precision attack has no bits to read.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPStandardScaler
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(5000, 2))
    >>> scaler = DPStandardScaler(epsilon=1.0, feature_bounds=(0, 10), random_state=0)
    >>> Z = scaler.fit_transform(X)
    >>> np.round(scaler.mean_, 1), np.round(scaler.scale_, 1), scaler.epsilon_ <= 1.0
    (array([5., 5.]), array([2.9, 2.9]), True)
    """

    #: where an integer random_state keys the noise (moments and "auto" bounds,
    #: _noise_generator): skdp._mechanisms._exact.RELEASE_SITES, read by fitted_dp_event
    _release_sites = ("standard_scaler",)

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "feature_bounds": ["array-like", StrOptions({"auto"}), None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "mean_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "clip": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "secure_noise": ["boolean"],
        "privacy_ledger": [PrivacyLedger, None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-6,
        feature_bounds=None,
        with_mean=True,
        with_std=True,
        mean_share=0.5,
        clip=True,
        random_state=None,
        privacy_ledger=None,
        secure_noise=True,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.feature_bounds = feature_bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.mean_share = mean_share
        self.clip = clip
        self.random_state = random_state
        self.privacy_ledger = privacy_ledger
        self.secure_noise = secure_noise

    def _check_public_params(self):
        """Parameter checks that need no data (run before ``X`` is read)."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}")
        if self.delta == 0:
            raise ValueError(
                "DPStandardScaler uses the Gaussian mechanism and needs delta > 0 "
                "(pure epsilon-DP is not available)"
            )
        if not (self.with_mean or self.with_std):
            raise ValueError(
                "with_mean=False and with_std=False release nothing; use 'passthrough'"
            )

    def _check_n_samples(self, n_samples):
        if n_samples < 2:
            raise ValueError(
                f"a DP fit needs at least 2 samples; got n_samples = {n_samples} (1 sample)"
            )
        if self.delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={self.delta:g} >= 1/n_samples={1.0 / n_samples:g}: such a delta allows "
                "releasing a whole row with probability delta; use delta << 1/n",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    def _bound_pair(self, n_features=None):
        """``(lower, upper)`` float arrays of ``feature_bounds`` as given (broadcast to
        ``n_features`` when it is known), or the error saying what the parameter takes."""
        fb = self.feature_bounds
        try:
            if isinstance(fb, np.ndarray):
                if fb.ndim != 2 or fb.shape[0] != 2:
                    raise ValueError
                lower, upper = fb[0], fb[1]
            else:
                lower, upper = fb
            lower = np.asarray(lower, dtype=np.float64)
            upper = np.asarray(upper, dtype=np.float64)
            if lower.ndim > 1 or upper.ndim > 1:
                raise ValueError
            shape = np.broadcast_shapes(lower.shape, upper.shape)
            if n_features is not None:
                shape = (n_features,)
            lower = np.broadcast_to(lower, shape)
            upper = np.broadcast_to(upper, shape)
        except (ValueError, TypeError):
            d = "n_features" if n_features is None else f"n_features={n_features}"
            raise ValueError(
                "feature_bounds must be a pair (lower, upper) of scalars or arrays of length "
                f"{d}, or an array of shape (2, n_features); got {fb!r}"
            ) from None
        return lower, upper

    def _check_public_bounds(self):
        """Public ``feature_bounds``: the range of every column checked from the parameter
        alone, before any row is read
        (:func:`skdp.preprocessing._common.check_public_bounds`)."""
        from ._common import check_public_bounds

        if self.feature_bounds is None or isinstance(self.feature_bounds, str):
            return
        check_public_bounds(*self._bound_pair())

    def _public_bounds(self, n_features):
        """(lower, upper) arrays from ``feature_bounds``; never looks at the data."""
        from ._common import check_public_bounds

        return check_public_bounds(*self._bound_pair(n_features))

    def _width_free_event(self):
        """The event that dominates this release at every input width:
        ``gaussian_event(1, mu)`` at the budget's ``mu``, what it records with public
        bounds.  With ``feature_bounds="auto"`` it records the bounds' count trees under
        ``sqrt(AUTO_BOUND_SHARE) mu`` (noise multiplier at least its inverse, rounded up
        with the width, :func:`~skdp.preprocessing._common.target_event`) and the moments
        under ``sqrt(1 - AUTO_BOUND_SHARE) mu``: Gaussian-DP parameters whose squares sum
        to at most ``mu^2``.  What a pipeline composes when an earlier step released this
        step's input width."""
        return gaussian_event(1.0, gaussian_mu_for(float(self.epsilon), float(self.delta)))

    def _planned_event(self):
        import dp_accounting

        if self.feature_bounds is None:
            return dp_accounting.NonPrivateDpEvent()
        mu = gaussian_mu_for(float(self.epsilon), float(self.delta))
        return gaussian_event(1.0, mu)

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y=None):
        """Release the private means and variances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        self : DPStandardScaler
            Fitted scaler.
        """
        self._check_public_params()
        self._check_public_bounds()   # before anything reads X
        dask_input = is_dask_collection(X)
        if dask_input:
            # rows stay on the workers: only per-partition sums reach the client (_release)
            X, names = as_dask_array(X)
            if self.feature_bounds is None or isinstance(self.feature_bounds, str):
                # before min/max or the bounds' release; else checked in the sums' pass
                check_dask_array(X)
            self.n_features_in_ = int(X.shape[1])
            if names is not None:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            X = validate_numeric_data(self, X, accept_sparse=("csr", "csc", "coo"),
                                      dtype=np.float64)
        n, d = X.shape
        self._check_n_samples(n)
        auto = isinstance(self.feature_bounds, str)
        if issparse(X):
            self._check_sparse_params(d)
        if self.feature_bounds is not None and not auto:
            lower, upper = self._public_bounds(d)  # before anything reads X
        import dp_accounting

        with ledger_reservation(
            self.privacy_ledger, self._planned_event(), type(self).__name__
        ) as reservation:
            guaranteed = self.feature_bounds is not None
            if not guaranteed:
                warnings.warn(
                    "feature_bounds is None: the bounds are read from the private data, "
                    "which breaks the differential-privacy guarantee "
                    "(privacy_guaranteed_ = False, epsilon_ = inf). Pass public "
                    "feature_bounds.",
                    PrivacyLeakWarning,
                    stacklevel=user_stacklevel(),
                )
                lo, hi = X.min(axis=0), X.max(axis=0)
                if issparse(X):
                    lo, hi = lo.toarray().ravel(), hi.toarray().ravel()
                if dask_input:
                    import dask

                    lo, hi = dask.compute(lo, hi)
                lower, upper = outward_power_of_two_bounds(lo, hi)
                _check_data_bounds(lower, upper)
            bound_event = None
            mu = gaussian_mu_for(float(self.epsilon), float(self.delta))
            if auto:
                lower, upper, bound_event = self._release_bounds(X, mu)
                mu = math.sqrt(1.0 - AUTO_BOUND_SHARE) * mu
            attrs = self._release(X, lower, upper, mu)
            if auto:
                attrs["dp_event_"] = compose(bound_event, attrs["dp_event_"])
                attrs["epsilon_"] = min(float(self.epsilon), float(
                    get_epsilon(attrs["dp_event_"], float(self.delta))))
            attrs["privacy_guaranteed_"] = guaranteed
            if not guaranteed:
                attrs["epsilon_"] = math.inf
                attrs["dp_event_"] = dp_accounting.NonPrivateDpEvent()
            reservation.commit(
                attrs["dp_event_"] if guaranteed else dp_accounting.NonPrivateDpEvent()
            )
        for name, value in attrs.items():
            setattr(self, name, value)
        return self

    def _check_sparse_params(self, n_features):
        """Sparse input keeps its zeros, as scikit-learn's ``StandardScaler`` does: no
        centring (``with_mean=False``), and public bounds that contain 0 (clipping a zero
        to a range without 0 would fill the matrix).  Public parameters only."""
        if self.with_mean:
            raise ValueError("Cannot center sparse matrices: pass `with_mean=False` instead "
                             "(centring would make every entry non-zero).")
        if isinstance(self.feature_bounds, str):
            raise ValueError("feature_bounds='auto' is not available for sparse input yet; "
                             "pass public feature_bounds")
        if self.feature_bounds is not None and self.clip:
            lower, upper = self._public_bounds(n_features)
            if np.any(lower > 0.0) or np.any(upper < 0.0):
                raise ValueError("sparse input needs feature_bounds that contain 0 (the "
                                 "implicit zeros are clipped to them too)")

    def _release_bounds(self, X, mu):
        """``feature_bounds="auto"``: the quantiles ``AUTO_FEATURE_QUANTILES`` of every
        feature (kept one noise rank inside the data), released by one Gaussian release of
        count trees (:mod:`skdp._mechanisms._quantiles`, replace-one L2 sensitivity
        ``sqrt(24 d)``) at ``sqrt(AUTO_BOUND_SHARE) mu``; the moments get the rest of
        ``mu^2``, so the whole fit is ``mu``-GDP.  A feature whose two quantiles coincide
        gets ``[q, q + max(|q|, 1)]``.  Returns ``(lower, upper, event)``."""
        from .._mechanisms._quantiles import release_tree_histogram, warn_if_unresolved
        from ._common import word_source

        lo_q, hi_q = AUTO_FEATURE_QUANTILES
        bounds_mu = math.sqrt(AUTO_BOUND_SHARE) * mu
        warn_if_unresolved("feature_bounds='auto'", X.shape[0], X.shape[1], bounds_mu,
                           "pass public feature_bounds, or spend a larger epsilon")
        seed = None if self.random_state is None else \
            _noise_generator(self.random_state).integers(2**63)
        hist, event, noise, _ = release_tree_histogram(X, bounds_mu, word_source(seed))
        q = hist.inner_quantiles([lo_q, hi_q], noise)
        lower = q[:, 0]
        upper = np.where(q[:, 1] > lower, q[:, 1], lower + np.maximum(np.abs(lower), 1.0))
        return lower, upper, event

    def _release(self, X, lower, upper, mu):
        """The Gaussian mechanism of the module docstring at ``mu``-GDP; returns the fitted
        attributes."""
        n, d = X.shape
        epsilon, delta = float(self.epsilon), float(self.delta)
        # 1. Calibrate from public quantities (epsilon, delta, n, d, bounds, mean_share).
        centre = (lower + upper) / 2.0
        radius = (upper - lower) / 2.0
        w = float(self.mean_share) if self.with_std else 1.0
        kappa = math.sqrt(d * moment_sensitivity_factor(w) * (1.0 + H_MARGIN)) / mu
        kappa *= summation_inflation(n, summation_depth(X), w)
        sigma_m = kappa * 2.0 * radius / (n * math.sqrt(w))
        sigma_s = kappa * radius**2 / (n * math.sqrt(1.0 - w)) if self.with_std else None
        # 2. Statistics of the clipped, centred data (for a Dask array the clip runs in each
        #    partition and only the two d-vectors of sums reach the client).
        m, s = _clipped_moments(X, lower, upper, centre, self.with_std)
        # 3. Noise, drawn serially: means first, then second moments.
        rng = _noise_generator(self.random_state)
        source = new_word_source(None if self.random_state is None else rng) \
            if self.secure_noise else None
        if source is not None:
            # every coordinate's grid, and the inflation those grids need, before any draw
            pairs = [(sigma_m, radius)] + ([(sigma_s, radius**2)] if self.with_std else [])
            gammas, steps = _secure_grids(
                mu, np.concatenate([np.broadcast_to(sigma, (d,)) for sigma, _ in pairs]),
                np.concatenate([np.broadcast_to(bound, (d,)) for _, bound in pairs]))
        M = m + sigma_m * rng.standard_normal(d) if source is None else \
            _exact_release(m, gammas[:d], steps[:d], source)
        M = np.clip(M, -radius, radius)
        attrs = {"mean_": centre + M, "var_": None, "scale_": None}
        if self.with_std:
            S = s + sigma_s * rng.standard_normal(d) if source is None else \
                _exact_release(s, gammas[d:], steps[d:], source)
            floor = np.minimum(np.maximum(sigma_s, (SCALE_FLOOR * radius) ** 2), radius**2)
            var = np.clip(S - M * M, floor, radius**2)
            attrs["var_"] = var
            attrs["scale_"] = np.sqrt(var)
        event = gaussian_event(1.0, mu)
        if self.clip:
            low, high = lower - centre - M, upper - centre - M      # of x - mean_, clipped
            div = attrs["scale_"] if self.with_std else 1.0
            if not self.with_mean:
                low, high = lower, upper
            attrs["output_norm_bound_"] = float(np.sqrt(np.sum(
                np.maximum(np.abs(low), np.abs(high)) ** 2 / np.square(div))))
        else:
            attrs["output_norm_bound_"] = None
        eps = get_epsilon(event, delta)
        if eps > epsilon and get_delta(event, epsilon) <= delta:
            eps = epsilon
        attrs.update(
            feature_bounds_=np.vstack([lower, upper]),
            n_samples_seen_=int(n),
            epsilon_=float(eps),
            delta_=delta,
            dp_event_=event,
            noise_scale_=1.0,
            sensitivity_=float(mu),
            mean_noise_std_=sigma_m,
            moment_noise_std_=sigma_s,
            secure_noise_=bool(self.secure_noise),
        )
        return attrs

    def transform(self, X):
        """Standardise ``X`` with the private statistics (post-processing: no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to transform (clipped to ``feature_bounds_`` first when ``clip=True``).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            ``(x - mean_) / scale_`` (each part only when enabled).
        """
        check_is_fitted(self)
        if is_dask_collection(X):   # lazy, partition by partition
            X, _ = as_dask_array(X)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} "
                                 f"is expecting {self.n_features_in_} features as input.")
            if self.clip:
                X = X.clip(self.feature_bounds_[0], self.feature_bounds_[1])
            if self.with_mean:
                X = X - self.mean_
            return X / self.scale_ if self.with_std else X
        X = validate_numeric_data(self, X, accept_sparse=("csr", "csc"), reset=False,
                                  dtype=np.float64, copy=True)
        if issparse(X):      # fitted with_mean=False (a dense fit may have centred)
            cols = self._sparse_columns(X, "center")
            if self.clip:
                X.data = np.clip(X.data, self.feature_bounds_[0][cols],
                                 self.feature_bounds_[1][cols])
            if self.with_std:
                X.data /= self.scale_[cols]
            return X
        if self.clip:
            X = np.clip(X, self.feature_bounds_[0], self.feature_bounds_[1])
        if self.with_mean:
            X -= self.mean_
        if self.with_std:
            X /= self.scale_
        return X

    def _sparse_columns(self, X, verb):
        """The column of every stored entry of a CSR/CSC ``X`` (the scaler's vectors are
        indexed by it); refuses a scaler fitted with ``with_mean=True``."""
        if self.with_mean:
            raise ValueError(f"Cannot {verb} sparse matrices: this scaler was fitted with "
                             "with_mean=True")
        if X.format == "csr":
            return X.indices
        return np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))

    def inverse_transform(self, X):
        """Undo the standardisation (not the clipping).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardised data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``x * scale_ + mean_`` (each part only when enabled); a lazy Dask array for a
            Dask ``X``.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            from .._dask_predict import lazy_rowwise

            return lazy_rowwise(self.inverse_transform, X, (self.n_features_in_,),
                                np.float64)
        X = validate_numeric_data(self, X, accept_sparse=("csr", "csc"), reset=False,
                                  dtype=np.float64, copy=True)
        if issparse(X):
            cols = self._sparse_columns(X, "uncenter")
            if self.with_std:
                X.data *= self.scale_[cols]
            return X
        if self.with_std:
            X *= self.scale_
        if self.with_mean:
            X += self.mean_
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self.with_mean     # as StandardScaler
        tags.non_deterministic = False
        return tags
