r"""Private spline and bin bases of numeric columns (``DPSplineTransformer``).

An additive model ``f(x) = sum_j f_j(x_j)`` is a linear model on a per-column basis.  Such
a basis brings its own public norm bound, whatever the data: a row of B-spline values of
one column is non-negative and sums to one (partition of unity), so its L2 norm is at most
1; a one-hot bin row has norm exactly 1.  With a missing-value indicator per column (1 for
NaN, the spline part then 0) every column contributes at most 1, and every output row of
``d`` columns has

.. math:: \|\phi(x)\|_2 \le \sqrt d ,

for *any* input row -- ``NaN``, ``+-inf`` and values far outside the knots included
(they are clamped to the boundary knots: constant extrapolation).  That bound is
``output_norm_bound_``; ``DPLogisticRegression(data_norm="auto")`` reads it at no cost.

Only the knots are learnt from the data, through one release: the count trees of every
column on the public log grid of :mod:`skdp._mechanisms._quantiles` (Gaussian mechanism,
replace-one L2 sensitivity ``sqrt(24 d)``, exact discrete noise), from which the knots are
the ``n_knots`` quantiles ``linspace(q_min, q_max, n_knots)`` of each column --
post-processing, at no further cost.  Coinciding knots (a column with few distinct values
or a point mass) are merged.  ``epsilon_``/``delta_``/``dp_event_`` record that one release.
"""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._dask import is_dask_collection
from .._raw_input import validate_numeric_data

from ._common import (DP_TRANSFORMER_CONSTRAINTS, _validate_fit_input, check_public_bounds,
                      dense_container_requested, gdp_mu, set_release_attributes,
                      target_event, word_source)

__all__ = ["DPSplineTransformer", "bspline_basis"]

#: the boundary knots stay ``KNOT_NOISE_MARGIN`` noise ranks inside the data
#: (:meth:`skdp._mechanisms._quantiles.TreeHistogram.rank_margin`)
KNOT_NOISE_MARGIN = 1.0


def _extended_knots(knots, degree):
    """Knot vector with ``degree`` equally spaced knots added beyond each end (as
    scikit-learn's ``SplineTransformer``), so the basis is a partition of unity on
    ``[knots[0], knots[-1]]``."""
    lo_step = knots[1] - knots[0]
    hi_step = knots[-1] - knots[-2]
    before = knots[0] - lo_step * np.arange(degree, 0, -1)
    after = knots[-1] + hi_step * np.arange(1, degree + 1)
    return np.concatenate([before, knots, after])


def bspline_basis(x, knots, degree, out=None):
    """B-spline design of the values ``x`` (finite, inside ``[knots[0], knots[-1]]``):
    ``(len(x), len(knots) + degree - 1)``, rows non-negative summing to 1; ``degree = 0``:
    one-hot bins ``(-inf, k_1), [k_1, k_2), ..., [k_last, inf)`` (``len(knots) + 1``).
    ``out``: a zeroed array (or view) of that shape to write into."""
    width = knots.shape[0] + (1 if degree == 0 else degree - 1)
    if out is None:
        out = np.zeros((x.shape[0], width))
    _scatter(out, *bspline_stencil(x, knots, degree))
    return out


def _scatter(out, first, values):
    """``out[i, first[i] + r] = values[r, i]``: stencils into a zeroed dense basis."""
    rows = np.arange(out.shape[0])
    for r in range(values.shape[0]):
        out[rows, first + r] = values[r]


def bspline_stencil(x, knots, degree):
    """The ``degree + 1`` non-zero B-spline values of every ``x`` and the index of the first:
    ``(first (n,), values (degree + 1, n))``, by the Cox-de Boor recursion (Piegl & Tiller,
    *The NURBS Book*, Alg. A2.2) on the knot vector extended by :func:`_extended_knots`;
    ``x`` in ``[knots[0], knots[-1]]`` (the last knot belongs to the last interval).

    With ``t`` the extended knots and ``s`` the span of ``x`` (``t[s] <= x < t[s + 1]``),
    ``N_0 = 1`` and for ``j = 1 .. degree``, with ``left_j = x - t[s + 1 - j]`` and
    ``right_j = t[s + j] - x``::

        saved = 0
        for r < j:  temp = N_r / (right_{r+1} + left_{j-r})
                    N_r = saved + right_{r+1} temp;  saved = left_{j-r} temp
        N_j = saved

    One numba pass (:func:`~skdp.preprocessing._spline_kernels.column_stencils`)."""
    first, values, _ = column_stencils(x, knots, degree)
    return first, values


def column_stencils(col, knots, degree, first=None, values=None, missing=None):
    """``(first, values, missing)`` of a raw column (NaN: missing, at the first knot;
    values outside the knots: clamped), written into the given arrays when passed."""
    from ._spline_kernels import column_stencils as kernel

    n = col.shape[0]
    first = np.empty(n, dtype=np.int64) if first is None else first
    values = np.empty((1 if degree == 0 else degree + 1, n)) if values is None else values
    missing = np.empty(n, dtype=bool) if missing is None else missing
    knots = np.ascontiguousarray(knots, dtype=np.float64)
    kernel(np.ascontiguousarray(col, dtype=np.float64), knots,
           _extended_knots(knots, degree), int(degree), missing, first, values)
    return first, values, missing


def _merge_knots(values):
    """Sorted knots, those within ``1e-6`` of the span of their predecessor merged (a point
    mass read through the interpolation inside its bin); a single value ``k`` becomes
    ``[k, k + max(|k|, 1)]`` (two knots are needed for a basis)."""
    values = np.sort(np.asarray(values, dtype=np.float64))
    tol = 1e-6 * (values[-1] - values[0])
    kept = [values[0]]
    for v in values[1:]:
        if v - kept[-1] > tol:
            kept.append(v)
    knots = np.array(kept)
    if knots.shape[0] < 2:
        k = float(knots[0])
        knots = np.array([k, k + max(abs(k), 1.0)])
    return knots


#: a released range end more than ``DECADE_SNAP`` decades below the range's largest
#: magnitude counts as 0 for :func:`decade_spares` (the quantiles interpolate inside the
#: log grid's leaves: a point mass at 0 can come out as -2e-17 or 3e-4)
DECADE_SNAP = 2


def decade_spares(low, high):
    """The two public knots that extend a column's released range ``[low, high]`` by one
    step of the decade grid ``{0} U {+-10^k : k integer}``: the largest grid point below
    ``low`` and the smallest above ``high``.  With ``10^e`` the largest power of ten at or
    below ``max(|low|, |high|)`` (``e = 0`` for a range at 0), a step from 0 goes to
    ``-+10^e``, the range's own scale, and an end within ``10^(e - DECADE_SNAP)`` of 0
    counts as 0.  A value from 0 to the spare then activates the spare's basis fully at
    ``10^e`` (an integer column at -1 and 0: 1 on the spare for every value from 1 up).
    Post-processing of two released quantiles: no further privacy cost.

    Added to the quantile knots (``tail_knots`` of :class:`DPSplineTransformer`), they keep
    a column's tails in the basis -- linearly, between the boundary quantile and the next
    power of ten -- instead of clamping them to a boundary knot that noise pushed inward:
    at small ``n/sigma`` the quantile knots sit within the interquartile range
    (:meth:`skdp._mechanisms._quantiles.TreeHistogram.rank_margin`) and clamp away the tail
    that carries a rare class (the credit-card column ``pay_0`` ranks its defaults at AUC
    0.73 on its own, 0.57 clamped at its median 0).

    Examples
    --------
    >>> from skdp.preprocessing._spline import decade_spares
    >>> decade_spares(-1.0, 0.0), decade_spares(60000.0, 240000.0), decade_spares(0.0, 0.0)
    ((-10.0, 1.0), (10000.0, 1000000.0), (-1.0, 1.0))
    >>> decade_spares(-1.02, 3.4e-4), decade_spares(28.0, 47.0)
    ((-10.0, 1.0), (10.0, 100.0))
    """
    low, high = float(low), float(max(high, low))
    top = max(abs(low), abs(high))
    e = int(min(max(math.floor(math.log10(top)), -300), 307)) if top > 0.0 else 0
    low, high = (0.0 if abs(v) < 10.0 ** (e - DECADE_SNAP) else v for v in (low, high))
    return _decade_step(low, e, -1.0), _decade_step(high, e, 1.0)


def _decade_step(v, e, direction):
    """The first point of the decade grid strictly beyond ``v`` in ``direction`` (+-1);
    from 0 to ``direction 10^e`` (at most ``1e308`` in magnitude)."""
    if v == 0.0:
        return direction * 10.0 ** e
    a = abs(v)
    k = min(math.floor(math.log10(a)), 307)
    k += (10.0 ** (k + 1) <= a) - (10.0 ** k > a)      # log10's rounding at powers of ten
    if (v > 0.0) == (direction > 0.0):                  # away from 0: the next power up
        return math.copysign(10.0 ** min(k + 1, 308), v)
    return math.copysign(10.0 ** (k if 10.0 ** k < a else k - 1), v)   # toward 0


class DPSplineTransformer(TransformerMixin, BaseEstimator):
    """Private B-spline (or one-hot bin) basis of numeric columns, knots at private quantiles.

    The DP version of scikit-learn's ``SplineTransformer(knots="quantile")``: the knots are
    quantiles released under replace-one (``epsilon``, ``delta``)-DP over a public domain
    that needs no range (every float64 value; NaN is a public bucket), and every output row
    has L2 norm at most ``sqrt(n_features_in_)`` whatever the input (module docstring).

    Parameters
    ----------
    n_knots : int or "auto", default="auto"
        Knots per column (before merging coinciding ones), at the quantiles
        ``linspace(quantile_range[0], quantile_range[1], n_knots)``.  ``"auto"``: a public
        rule of the rows per unit of noise, ``n/sigma`` (:func:`skdp.linear_model._auto.
        spline_knots`): 3 knots where the noise is large, up to 16 where it is small (at
        most 6 below 20,000 rows); 2 (the boundary quantiles) where ``tail_knots`` adds
        its two public knots.
    degree : int, default=3
        Spline degree; ``0`` gives one-hot bins between the knots (a private
        ``KBinsDiscretizer(strategy="quantile", encode="onehot")``).  Before a private
        linear model, ``1`` (piecewise linear) measured better than the default 3, as
        scikit-learn's: its rows use more of the public norm bound that scales the
        model's noise (``make_private_pipeline`` uses 1;
        :data:`skdp.linear_model._auto.PIPELINE_SPLINE_DEGREE`).
    quantile_range : (float, float), default=(0.01, 0.99)
        Levels of the boundary knots.  Values beyond are clamped to them (constant
        extrapolation).  The extreme levels 0 and 1 are refused: a private minimum is
        dominated by noise.
    feature_bounds : None or list of (None or (float, float)), default=None
        Optional public ranges per column; they only make the grid finer (a linear grid on
        the range instead of the log grid).  Values outside are still handled.  Each
        ``(lo, hi)`` must have ``|lo|, |hi| <= 1e100`` and ``hi - lo >= max(1e-10
        max(|lo|, |hi|), 1e-100)`` (checked before any row is read; ValueError otherwise).
    handle_missing : {"indicator"}, default="indicator"
        NaN gives a row of zeros on the column's spline part and 1 on its own indicator
        column (always present: the output layout is public).
    tail_knots : bool or "auto", default=False
        Add to every column's knots the two public knots of :func:`decade_spares`: one
        step of the decade grid ``{0, +-10^k}`` beyond the boundary quantiles, so that the
        values beyond them are still told apart (linearly, up to the next power of ten)
        instead of clamped.  ``"auto"``: where ``n/sigma`` is small
        (:func:`skdp.linear_model._auto.spline_tail_knots`).  Post-processing of the same
        release: no privacy cost.  ``make_private_pipeline`` sets ``"auto"`` before a
        DP-SGD classifier (:func:`skdp.linear_model._auto.pipeline_tail_knots`).
    epsilon : float, default=1.0
        Privacy budget of the knot release.
    delta : float, default=1e-6
        Its delta (Gaussian release: ``delta > 0``).
    random_state : int, Generator or None, default=None
        Seeds the exact noise (None: keys from the OS; use None in production).
    sparse_output : bool, default=False
        Return a CSR matrix (as scikit-learn's ``SplineTransformer(sparse_output=True)``):
        ``degree + 2`` stored entries per column and row (the basis values, zeros
        included, and the indicator), the dense output's values in the same places, in a
        fraction of its memory (10^6 rows of 20 columns with 15 knots at degree 1: 0.5 GB
        instead of 2.6 GB).  ``dpsgd``, objective and output perturbation fit it without
        densifying.  Under ``set_output(transform="pandas")`` the output is a dense
        DataFrame (a DataFrame cannot hold CSR), with the same values.

    Attributes
    ----------
    knots_ : list of ndarray
        Released knots per column (with ``tail_knots``, the two public tail knots).
    n_features_in_ : int
    n_features_out_ : int
    output_norm_bound_ : float
        ``sqrt(n_features_in_)``: public bound on the norm of every output row.
    epsilon_, delta_ : float
        The guarantee of the fit.
    dp_event_ : dp_accounting.DpEvent
        ``GaussianDpEvent`` of the count trees.
    noise_scale_ : float
        Standard deviation of the noise on every tree node (counts).
    sensitivity_ : float
        ``sqrt(24 n_features_in_)``.
    privacy_guaranteed_ : bool
        Always True.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPSplineTransformer
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.normal(40, 12, 5000), rng.lognormal(10, 1, 5000)])
    >>> spl = DPSplineTransformer(n_knots=8, epsilon=0.5, random_state=0).fit(X)
    >>> spl.transform(X).shape, spl.output_norm_bound_, spl.epsilon_ <= 0.5
    ((5000, 22), 1.4142135623730951, True)
    """

    #: where an integer random_state keys the noise (the knots' stream, word_source):
    #: skdp._mechanisms._exact.RELEASE_SITES, read by fitted_dp_event
    _release_sites = ("dp_transformers",)

    _parameter_constraints: dict = {
        "n_knots": [Interval(numbers.Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "degree": [Interval(numbers.Integral, 0, 5, closed="both")],
        "quantile_range": [tuple, list],
        "feature_bounds": [list, None],
        "handle_missing": [StrOptions({"indicator"})],
        "sparse_output": ["boolean"],
        "tail_knots": ["boolean", StrOptions({"auto"})],
        **DP_TRANSFORMER_CONSTRAINTS,
    }

    def __init__(self, n_knots="auto", degree=3, *, quantile_range=(0.01, 0.99),
                 feature_bounds=None, handle_missing="indicator", tail_knots=False,
                 epsilon=1.0, delta=1e-6, random_state=None, sparse_output=False):
        self.n_knots = n_knots
        self.degree = degree
        self.quantile_range = quantile_range
        self.feature_bounds = feature_bounds
        self.handle_missing = handle_missing
        self.tail_knots = tail_knots
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.sparse_output = sparse_output

    def _adds_tail_knots(self, n_samples, noise_std):
        """Whether the fit adds :func:`decade_spares` to every column's knots:
        ``tail_knots=True``, or ``"auto"`` and the public rule of ``n/sigma``
        (:func:`skdp.linear_model._auto.spline_tail_knots`)."""
        from ..linear_model._auto import spline_tail_knots

        if self.tail_knots == "auto":
            return spline_tail_knots(n_samples, noise_std)
        return bool(self.tail_knots)

    def _levels(self, n_samples, noise_std):
        from ..linear_model._auto import TAIL_QUANTILE_KNOTS, spline_knots

        lo, hi = (float(v) for v in self.quantile_range)
        if not 0.0 < lo < hi < 1.0:
            raise ValueError(
                f"quantile_range must satisfy 0 < low < high < 1, got {self.quantile_range!r}")
        if self.n_knots != "auto":
            n_knots = self.n_knots
        elif self._adds_tail_knots(n_samples, noise_std):
            n_knots = TAIL_QUANTILE_KNOTS
        else:
            n_knots = spline_knots(n_samples, noise_std)
        return np.linspace(lo, hi, n_knots)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the knots of every column (one Gaussian release of count trees).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric columns; NaN and +-inf are allowed.
        y : ignored

        Returns
        -------
        self : DPSplineTransformer
        """
        from .._mechanisms._quantiles import release_tree_histogram

        self._levels(2, 1.0)          # parameter checks before anything reads the data
        mu = gdp_mu(self.epsilon, self.delta)
        bounds = self._public_bounds()
        X = _validate_fit_input(self, X)
        d = X.shape[1]
        if bounds is not None and len(bounds) != d:
            raise ValueError(f"feature_bounds has {len(bounds)} entries for {d} columns")
        hist, event, noise, sens = release_tree_histogram(
            X, mu, word_source(self.random_state), bounds)
        levels = self._levels(X.shape[0], noise)
        margin = hist.rank_margin(noise, KNOT_NOISE_MARGIN)
        lo = np.maximum(levels[0], margin)
        hi = np.minimum(levels[-1], 1.0 - margin)
        quantiles = hist.quantiles(lo[:, None] + (hi - lo)[:, None] * np.linspace(
            0.0, 1.0, levels.shape[0]))
        if self._adds_tail_knots(X.shape[0], noise):
            # one public decade step beyond each boundary quantile keeps the tails
            # (post-processing of the same release)
            quantiles = [np.concatenate([row, decade_spares(row[0], row[-1])])
                         for row in quantiles]
        self.knots_ = [_merge_knots(row) for row in quantiles]
        self.n_features_out_ = sum(self._width(k) + 1 for k in self.knots_)
        self.output_norm_bound_ = float(np.sqrt(d))
        set_release_attributes(self, event, noise, sens)
        return self

    def _width_free_event(self):
        """The event that dominates this release at every input width (its calibration
        target, :func:`~skdp.preprocessing._common.target_event`): what a pipeline composes
        when an earlier step released this step's input width."""
        return target_event(gdp_mu(self.epsilon, self.delta))

    def planned_event(self, n_samples, n_features):
        """The event a fit on ``n_samples`` rows of ``n_features`` columns records: a
        function of the parameters, ``n`` and ``d`` only
        (:func:`skdp._mechanisms._quantiles.tree_histogram_event`, the same arithmetic as
        the release).  A :class:`~skdp.PrivatePipeline` plans with it and checks, after the
        fit, that the release recorded exactly this event (a wrong plan fails loudly).
        Raises the fit's errors on invalid parameters (before any row is read).

        Parameters
        ----------
        n_samples : int
            Number of rows of the fit (public).
        n_features : int
            Number of input columns (public schema).

        Returns
        -------
        event : dp_accounting.DpEvent
            The event :meth:`fit` records as ``dp_event_``.
        """
        from .._mechanisms._quantiles import tree_histogram_event

        self._check_planned(n_features)
        return tree_histogram_event(int(n_samples), int(n_features),
                                    gdp_mu(self.epsilon, self.delta))

    def planned_output(self, n_samples, n_features):
        """``(lowest, nominal, norm_bound)`` of a fit on ``n_samples`` rows of
        ``n_features`` columns, from public quantities only.

        Per column the basis has ``k + (1 if degree == 0 else degree - 1)`` columns for
        ``k`` released knots, plus the missing indicator.  Merging never leaves fewer than
        2 knots (:func:`_merge_knots`): the lowest width has ``k = 2`` in every column; the
        nominal one ``k = n_knots`` (``"auto"``: :func:`skdp.linear_model._auto.
        spline_knots` of ``n`` and the release's noise, which is public:
        :func:`skdp._mechanisms._quantiles.tree_histogram_calibration`), every knot kept.
        The norm bound is ``sqrt(n_features)`` (module docstring).

        Parameters
        ----------
        n_samples : int
            Number of rows of the fit (public).
        n_features : int
            Number of input columns (public schema).

        Returns
        -------
        lowest, nominal : int
            The least output width any release can give, and the width with every
            knot/category the plan counts on.
        norm_bound : float
            ``output_norm_bound_`` of the fit.
        """
        from .._mechanisms._quantiles import tree_histogram_calibration

        self._check_planned(n_features)
        n, d = int(n_samples), int(n_features)
        if self.n_knots == "auto" or self.tail_knots == "auto":
            _, noise = tree_histogram_calibration(n, d, gdp_mu(self.epsilon, self.delta))
        else:
            noise = 1.0
        k = self._levels(n, noise).shape[0] + 2 * self._adds_tail_knots(n, noise)
        extra = 1 if self.degree == 0 else self.degree - 1
        return d * (2 + extra + 1), d * (k + extra + 1), float(np.sqrt(d))

    def _check_planned(self, n_features):
        """The parameter checks of :meth:`fit` that need no row (a plan raises them)."""
        self._validate_params()
        self._levels(2, 1.0)
        bounds = self._public_bounds()
        if bounds is not None and len(bounds) != n_features:
            raise ValueError(f"feature_bounds has {len(bounds)} entries for {n_features} "
                             "columns")

    def _public_bounds(self):
        """``feature_bounds`` checked from the parameter alone (before any row is read):
        each entry None or a pair in the range of
        :func:`skdp.preprocessing._common.check_public_bounds`."""
        bounds = self.feature_bounds
        if bounds is None:
            return None
        out = []
        for j, pair in enumerate(bounds):
            if pair is None:
                out.append(None)
                continue
            try:
                lo, hi = (float(v) for v in pair)
            except (TypeError, ValueError):
                raise ValueError(f"feature_bounds for column {j} must be None or a pair "
                                 f"(lo, hi) of floats, got {pair!r}") from None
            check_public_bounds(lo, hi, name="feature_bounds", first_column=j)
            out.append((lo, hi))
        return out

    def _width(self, knots):
        return knots.shape[0] + (1 if self.degree == 0 else self.degree - 1)

    def transform(self, X):
        """The basis of every column followed by its missing indicator (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        XB : ndarray, DataFrame or CSR matrix of shape (n_samples, n_features_out_)
            CSR with ``sparse_output`` unless ``set_output`` asks for a DataFrame.  Every
            row has L2 norm at most ``output_norm_bound_``.  A Dask ``X`` gives a lazy
            Dask array of dense blocks, each computed on its worker.
        """
        if is_dask_collection(X):
            from .._dask_predict import lazy_rowwise

            check_is_fitted(self)
            return lazy_rowwise(self.transform, X, (self.n_features_out_,), np.float64,
                                dense=True)
        X = self._basis_input(X)
        if self.sparse_output and not dense_container_requested(self):
            return self._transform_csr(X)
        out = np.zeros((X.shape[0], self.n_features_out_))
        start = 0
        for j, knots in enumerate(self.knots_):
            first, values, missing = column_stencils(X[:, j], knots, self.degree)
            width = self._width(knots)
            _scatter(out[:, start:start + width], first, values)
            out[missing, start:start + width] = 0.0
            out[:, start + width] = missing
            start += width + 1
        return out

    def _basis_input(self, X):
        """The float64 columns the basis is a function of (validated as in ``transform``;
        NaN is missing): what a Dask fit keeps of a partition
        (:mod:`~skdp.preprocessing._compact_basis`)."""
        check_is_fitted(self)
        return validate_numeric_data(self, X, dtype=np.float64, ensure_all_finite=False,
                                     reset=False)

    def _transform_csr(self, X):
        """:meth:`transform` as CSR: per column ``degree + 1`` basis entries (the stencil of
        :func:`bspline_stencil`; one bin entry at degree 0) and the indicator, column
        indices increasing (canonical CSR, no sort needed); the entries that are 0 -- a
        present value's indicator, a missing value's stencil, a stencil's vanishing end --
        are not stored (a third of them on an Adult-shaped table: the memory of a Dask
        fit's persisted basis, the work of every pass; zeros add nothing to a sum).  The
        stencils (:func:`column_stencils`) and the assembly
        (:func:`~skdp.preprocessing._csr_assembly.stencil_csr`) are numba passes."""
        from ._csr_assembly import stencil_csr

        n, n_cols = X.shape[0], len(self.knots_)
        n_values = 1 if self.degree == 0 else self.degree + 1
        first = np.empty((n_cols, n), dtype=np.int64)
        values = np.empty((n_cols, n_values, n))
        missing = np.empty((n_cols, n), dtype=bool)
        starts = np.empty(n_cols, dtype=np.int64)
        widths = np.empty(n_cols, dtype=np.int64)
        start = 0
        for j, knots in enumerate(self.knots_):
            column_stencils(X[:, j], knots, self.degree, first[j], values[j], missing[j])
            widths[j], starts[j] = self._width(knots), start
            start += widths[j] + 1
        return stencil_csr(first, values, missing, starts, widths, self.n_features_out_)

    def get_feature_names_out(self, input_features=None):
        """``<column>_sp<k>`` for the basis and ``<column>_missing`` for the indicator.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input column names (default: ``feature_names_in_``, else ``x0, x1, ...``).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        out = []
        for name, knots in zip(names, self.knots_):
            out.extend(f"{name}_sp{k}" for k in range(self._width(knots)))
            out.append(f"{name}_missing")
        return np.asarray(out, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = True
        return tags
