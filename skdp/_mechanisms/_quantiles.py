r"""Private quantiles of many columns at once, over a public domain that needs no range.

The domain: every float64, on a public grid
-------------------------------------------
Each column is histogrammed on a fixed, public, ordered set of ``LEAVES = 4096`` bins
(:class:`ValueGrid`) that covers *every* float64 value, missing values included:

* the default **signed log-scale grid**: ``-inf ... < 0``, ``0``, ``0 < ... +inf`` in
  octaves ``[2^k, 2^(k+1))`` for ``k = K_LOW .. K_LOW + OCTAVES - 1`` (``2^-63`` to
  ``2^64``), each split into ``SUB_BINS = 16`` equal sub-bins (a relative width of at most
  1/16).  Magnitudes below ``2^-63`` fall into the first bin of their sign, magnitudes at
  or above ``2^64`` (and ``+-inf``) into the last: every finite value has a bin, and only
  the resolution of the extreme bins is coarse.  No user input is needed;
* optionally, a **linear grid** on a public range ``[lo, hi]`` (a user's knowledge of the
  column): ``LEAVES - 2`` equal bins, values outside clamped to the end bins.  The range only
  tightens the resolution; it is never read from the data;
* ``NaN`` has its own bin, the last leaf: missing values are a public bucket (their share is
  released with the rest).

The mechanism: one Gaussian release of a binary tree of counts per column
--------------------------------------------------------------------------
For every column the counts of the ``LEAVES`` bins and of all the dyadic intervals above
them -- a complete binary tree of ``LEVELS = 12`` levels below its root (the root counts
``n``, which is public) -- are released with independent Gaussian noise of one standard
deviation ``sigma`` (Hay, Rastogi, Miklau & Suciu 2010; the tree of the continual-release
counters of Dwork et al. 2010 and Chan, Shi & Song 2011).

*Sensitivity (replace one row).*  Replacing a row moves, in every column, one value from a
leaf ``a`` to a leaf ``b``: at every level the node above ``a`` loses one and the node above
``b`` gains one (or both are the same node and nothing changes).  So each level changes by
at most ``sqrt(1^2 + 1^2) = sqrt 2`` in L2, each column by at most ``sqrt(2 LEVELS)``, and
the release of ``d`` columns by

.. math:: \Delta_2 = \sqrt{2\, \mathrm{LEVELS}\, d} = \sqrt{24 d},

whatever the values (``NaN``, ``+-inf``, ``1e300`` all land in a leaf).  The release is the
Gaussian mechanism with that sensitivity: ``mu``-GDP for ``sigma = Delta_2/mu``, recorded as
one ``GaussianDpEvent`` (:func:`skdp.accounting.gaussian_event`).  Every count is an integer
and is released exactly on the public grid of :mod:`skdp._mechanisms._exact` with discrete
Gaussian noise (the recorded event dominates it; rounding is included in the sensitivity).

*Post-processing (free).*  The noisy tree is made consistent by the least-squares estimate
of Hay et al. (2010, Thm 3: the weighted bottom-up pass, then the top-down pass that
splits each parent's surplus evenly between its two children), with the known root ``n``.
A quantile is read from the cumulative leaf
estimates of the non-missing bins and interpolated linearly inside its bin.  The rank error
of a quantile is about ``sigma sqrt(LEVELS/2)`` rows whatever the column's scale.

Why this mechanism: it releases *all* quantiles of *all* columns in one event, so a basis
of 16 knots per column costs the same as one median; and its sensitivity is independent of
the data and of the domain's size.  The exponential mechanism per quantile (or the joint
one of Gillenwater, Joseph & Kulesza 2021) composes over the ``d x m`` quantiles wanted,
and an AboveThreshold search (Durfee 2023) is sequential per quantile.

An audit of the release (a neighbour pair that moves one value from the lowest to the
highest bin in every column, and an under-noised variant that must be caught) is in
``tests/_mechanisms/test_quantiles.py``.
"""

import math

import numpy as np

from ._exact import DOMINANCE_MARGIN, exact_gaussian_noise, release_on_grid

__all__ = ["ValueGrid", "TreeHistogram", "release_tree_histogram", "tree_histogram_event",
           "tree_histogram_calibration", "rank_noise", "warn_if_unresolved",
           "UNRESOLVED_RANK_NOISE",
           "tree_sensitivity",
           "LEAVES", "LEVELS"]

#: leaves of every column's tree (a power of two) and levels below the (public) root
LEAVES = 4096
LEVELS = 12
#: the log grid: octaves [2^k, 2^(k+1)) for k = K_LOW .. K_LOW + OCTAVES - 1, SUB_BINS each
K_LOW = -63
OCTAVES = 127
SUB_BINS = 16
_SIDE = OCTAVES * SUB_BINS            # bins of one sign: 2032
_ZERO = _SIDE                         # leaf of 0.0 (and -0.0)
_NAN = LEAVES - 1                     # leaf of NaN (the last)
#: linear grid: LEAVES - 2 bins on [lo, hi] (leaves 0 .. LEAVES - 3), one padding leaf
_LINEAR_BINS = LEAVES - 2


def tree_sensitivity(n_columns):
    """Replace-one L2 sensitivity of the trees of ``n_columns`` columns:
    ``sqrt(2 LEVELS n_columns)`` (module docstring)."""
    return math.sqrt(2.0 * LEVELS * n_columns)


class ValueGrid:
    """The public bins of one column: the signed log grid, or a linear grid on ``[lo, hi]``.

    Parameters
    ----------
    bounds : None or (float, float)
        None: the log grid covering every float64.  ``(lo, hi)`` with ``lo < hi`` finite:
        a linear grid on that public range (values outside go to the end bins).

    Examples
    --------
    >>> import numpy as np
    >>> g = ValueGrid()
    >>> leaves = g.leaf(np.array([-3.0, 0.0, 1.0, 1.5, np.nan, 1e300]))
    >>> [int(v) for v in leaves]
    [999, 2032, 3041, 3049, 4095, 4064]
    >>> [float(v) for v in g.edges(3041)]
    [1.0, 1.0625]
    """

    def __init__(self, bounds=None):
        if bounds is not None:
            lo, hi = (float(b) for b in bounds)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"a public range needs finite lo < hi, got {bounds!r}")
            bounds = (lo, hi)
        self.bounds = bounds

    def leaf(self, values):
        """Leaf index (int64) of every value; NaN -> the last leaf."""
        v = np.asarray(values, dtype=np.float64)
        out = np.empty(v.shape, dtype=np.int64)
        nan = np.isnan(v)
        if self.bounds is not None:
            lo, hi = self.bounds
            with np.errstate(invalid="ignore"):
                pos = (np.clip(v, lo, hi) - lo) / (hi - lo) * _LINEAR_BINS
            idx = np.minimum(np.floor(np.where(nan, 0.0, pos)), _LINEAR_BINS - 1)
            out[:] = idx.astype(np.int64)
        else:
            mag = np.abs(np.where(nan, 1.0, v))
            inf = np.isinf(mag)
            mant, expo = np.frexp(np.where(inf, 1.0, mag))            # mag = mant 2^expo, mant in [0.5, 1)
            octave = expo.astype(np.int64) - 1 - K_LOW   # mag in [2^(octave+K_LOW), 2x)
            sub = np.floor((2.0 * mant - 1.0) * SUB_BINS).astype(np.int64)
            low = octave < 0
            high = (octave >= OCTAVES) | inf
            side = np.where(low, 0, np.where(high, _SIDE - 1, octave * SUB_BINS + sub))
            side = np.clip(side, 0, _SIDE - 1)
            out[:] = np.where(v > 0, _ZERO + 1 + side, np.where(v < 0, _ZERO - 1 - side,
                                                                 _ZERO))
        out[nan] = _NAN
        return out

    def edges(self, leaf):
        """``(lower, upper)`` value edges of a leaf (finite: the extreme bins are cut at
        ``+-2^(K_LOW + OCTAVES)``, the lowest positive bin starts at 0)."""
        leaf = int(leaf)
        if leaf == _NAN:
            return (math.nan, math.nan)
        if self.bounds is not None:
            lo, hi = self.bounds
            leaf = min(leaf, _LINEAR_BINS - 1)
            w = (hi - lo) / _LINEAR_BINS
            return (lo + leaf * w, lo + (leaf + 1) * w)
        if leaf == _ZERO:
            return (0.0, 0.0)
        if leaf > _ZERO + _SIDE:        # padding leaves above the positive side
            top = 2.0 ** (K_LOW + OCTAVES)
            return (top, top)
        side = abs(leaf - _ZERO) - 1
        octave, sub = divmod(side, SUB_BINS)
        base = 2.0 ** (K_LOW + octave)
        a, b = base * (1.0 + sub / SUB_BINS), base * (1.0 + (sub + 1) / SUB_BINS)
        if side == 0:
            a = 0.0
        return (a, b) if leaf > _ZERO else (-b, -a)


def leaf_counts(X, grids):
    """Exact leaf counts ``(d, LEAVES)`` (int64) of the columns of ``X`` on ``grids``.

    A ``dask.array.Array`` is counted partition by partition on the workers; only the
    ``(d, LEAVES)`` sums travel to the client (counts are sums, so the release is the
    same as for the collected array)."""
    from .._dask import is_dask_collection

    if is_dask_collection(X):
        import dask.array as da

        blocks = X.rechunk({1: -1}).map_blocks(
            lambda b: leaf_counts(b, grids)[None], dtype=np.int64,
            chunks=((1,) * X.numblocks[0], (len(grids),), (LEAVES,)), new_axis=2)
        return da.sum(blocks, axis=0).compute()
    X = np.asarray(X)
    n, d = X.shape
    counts = np.empty((d, LEAVES), dtype=np.int64)
    for j in range(d):
        counts[j] = np.bincount(grids[j].leaf(X[:, j]), minlength=LEAVES)
    return counts


def tree_levels(leaves):
    """The node counts of every level below the root, leaves first: a list of ``LEVELS``
    arrays of shape ``(d, LEAVES / 2^l)``."""
    levels = [leaves]
    while levels[-1].shape[1] > 2:
        a = levels[-1]
        levels.append(a[:, 0::2] + a[:, 1::2])
    return levels


def consistent_leaves(noisy_levels, n):
    """Least-squares consistent leaf estimates of a noisy binary tree with exact root ``n``
    (Hay et al. 2010, Thm 3, equal noise on every node).

    Bottom-up: ``z_v = h_v`` at the leaves and, at height ``l`` (leaves: 1),
    ``z_v = (2^l - 2^(l-1))/(2^l - 1) h_v + (2^(l-1) - 1)/(2^l - 1) (z_left + z_right)``.
    Top-down from the root (set to ``n``): ``u_child = z_child + (u_parent - z_left -
    z_right)/2``."""
    z = [np.asarray(noisy_levels[0], dtype=np.float64)]
    for height, h in enumerate(noisy_levels[1:], start=2):
        below = z[-1][:, 0::2] + z[-1][:, 1::2]
        a = 2.0 ** height
        z.append(((a - a / 2) * h + (a / 2 - 1.0) * below) / (a - 1.0))
    u = np.full((z[-1].shape[0], 1), float(n))
    for zl in reversed(z):
        left, right = zl[:, 0::2], zl[:, 1::2]
        surplus = (u - left - right) / 2.0
        nxt = np.empty_like(zl)
        nxt[:, 0::2] = left + surplus
        nxt[:, 1::2] = right + surplus
        u = nxt
    return u


class TreeHistogram:
    """The released (consistent, post-processed) leaf counts of ``d`` columns.

    Attributes
    ----------
    counts : ndarray of shape (d, LEAVES)
        Consistent noisy leaf counts (unbiased, so they may be negative: clipping the
        thousands of empty leaves at zero would add their positive noise as mass).
    grids : list of ValueGrid
    n_samples : int
        The public number of rows.
    """

    def __init__(self, counts, grids, n_samples):
        self.counts = np.asarray(counts, dtype=np.float64)
        self.grids = grids
        self.n_samples = int(n_samples)

    def missing_fraction(self):
        """Estimated share of NaN per column, clipped to [0, 1]."""
        return np.clip(self.counts[:, _NAN] / max(self.n_samples, 1), 0.0, 1.0)

    def rank_margin(self, noise_std, z=1.0):
        """Per column, the share of the non-missing rows within which a quantile cannot be
        told from the noise of the empty grid beyond the data: ``z noise_std sqrt(LEVELS)
        / n_nonmissing`` (a prefix sum of the consistent tree carries noise of about
        ``noise_std sqrt(LEVELS)`` rows), capped at 1/4.  Public: a function of the noise
        scale, ``n`` and the released missing counts."""
        present = np.maximum(self.n_samples - np.maximum(self.counts[:, _NAN], 0.0), 1.0)
        return np.minimum(z * noise_std * math.sqrt(LEVELS) / present, 0.25)

    def inner_quantiles(self, qs, noise_std, z=1.0):
        """:meth:`quantiles` at the levels ``qs`` moved into ``[margin, 1 - margin]`` per
        column (:meth:`rank_margin`): a bound, a clip or a boundary knot stays where the
        data are rather than in the noise of the empty grid beyond them."""
        margin = self.rank_margin(noise_std, z)[:, None]
        qs = np.asarray(qs, dtype=np.float64)
        qs = np.broadcast_to(qs, (self.counts.shape[0],) + qs.shape[-1:])
        return self.quantiles(np.clip(qs, margin, 1.0 - margin))

    def quantiles(self, qs):
        """Quantiles ``qs`` (in [0, 1]) of the non-missing values of every column:
        ``(d, len(qs))``, non-decreasing along ``qs``; ``qs`` may also be ``(d, m)``, one
        row of levels per column.

        The cumulative count of the non-missing leaves is made non-decreasing by isotonic
        (least-squares) regression, which unlike a running maximum does not push the
        noise of long empty ranges upward; quantile ``q`` is the first leaf where it
        reaches ``q`` times the non-missing total (exact: the root is), interpolated
        linearly inside that leaf's value range.  A column with no estimated non-missing
        mass gets 0."""
        from sklearn.isotonic import isotonic_regression

        d = self.counts.shape[0]
        qs = np.asarray(qs, dtype=np.float64)
        if qs.ndim == 1:
            qs = np.broadcast_to(qs, (d, qs.shape[0]))
        if qs.ndim != 2 or qs.shape[0] != d or np.any(~(qs >= 0.0) | ~(qs <= 1.0)):
            raise ValueError("quantile levels must be in [0, 1], of shape (m,) or (d, m)")
        out = np.zeros(qs.shape)
        for j, grid in enumerate(self.grids):
            raw = np.cumsum(self.counts[j, :_NAN])
            total = raw[-1]                 # = n - (NaN count): the root is exact
            cum = np.maximum.accumulate(isotonic_regression(raw))   # monotone after rounding
            if not total > 0.0:
                continue
            targets = qs[j] * total
            leaves = np.searchsorted(cum, targets, side="left")
            for k, (leaf, target) in enumerate(zip(leaves, targets)):
                leaf = int(min(leaf, _NAN - 1))
                before = cum[leaf - 1] if leaf > 0 else min(cum[0], 0.0)
                mass = cum[leaf] - before
                frac = 1.0 if mass <= 0.0 else min(max((target - before) / mass, 0.0), 1.0)
                lo, hi = grid.edges(leaf)
                out[j, k] = lo + frac * (hi - lo)
        return np.maximum.accumulate(out, axis=1)


def tree_histogram_event(n_rows, n_columns, mu):
    """The recorded event of :func:`release_tree_histogram` on ``n_rows`` rows of
    ``n_columns`` columns under ``mu``-GDP: a function of public quantities only, so that a
    composite can plan it before any row is read (the release records exactly this)."""
    return tree_histogram_calibration(n_rows, n_columns, mu)[0]


def tree_histogram_calibration(n_rows, n_columns, mu):
    """``(event, noise_std)`` of :func:`release_tree_histogram` on ``n_rows`` rows of
    ``n_columns`` columns under ``mu``-GDP: the recorded event (:func:`tree_histogram_event`)
    and the standard deviation ``s gamma`` of the discrete noise on every node, the same
    numbers :func:`~skdp._mechanisms._exact.exact_gaussian_noise` computes in the release
    (public quantities only: a composite plans a spline basis's width from it)."""
    from ..accounting import gaussian_event
    from ._exact import gaussian_grid

    if not mu > 0.0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    sensitivity = tree_sensitivity(n_columns)
    size = sum(n_columns * (LEAVES >> level) for level in range(LEVELS))
    gamma, s, _, _ = gaussian_grid(sensitivity / mu, sensitivity, size, float(n_rows))
    recorded_sens = sensitivity + gamma * math.sqrt(size)
    return gaussian_event(s * gamma / (1.0 + DOMINANCE_MARGIN), recorded_sens), \
        float(s * gamma)


#: A release whose prefix counts carry noise above this share of the rows
#: (:func:`rank_noise`) cannot resolve a quantile: the fits that release bounds or scales
#: from it warn before they run (:func:`warn_if_unresolved`).  Measured at epsilon 1, 40
#: seeds per cell, Gaussian rows, the share of fits whose release was more than 3 times
#: the data's: ``data_norm="auto"`` (0.95 quantile of the row norms) 0 % at rank noise
#: 0.30-0.36, 10-15 % at 0.50-0.54, 28-42 % at 1.07-1.51; ``DPStandardScaler(
#: feature_bounds="auto")`` (0.01 and 0.99 quantiles) 0 % at 0.41, 60 % at 0.83;
#: ``DPRobustScaler`` (the interquartile range, a difference of two quantiles) 15 % at
#: 0.41, 57 % at 0.62, 0 % at 0.21; the worst scale released on 300 rows was 2.5e15 times
#: the data's.
UNRESOLVED_RANK_NOISE = 0.4


def rank_noise(n_rows, n_columns, mu):
    """The share of the rows a prefix count of the released (consistent) tree is off by,
    about ``noise_std sqrt(LEVELS) / n`` (:meth:`TreeHistogram.rank_margin` without its
    cap), for :func:`release_tree_histogram` on ``n_rows`` rows of ``n_columns`` columns
    under ``mu``-GDP.  Public: ``n``, the number of columns and ``mu``."""
    _, noise_std = tree_histogram_calibration(n_rows, n_columns, mu)
    return noise_std * math.sqrt(LEVELS) / n_rows


def warn_if_unresolved(what, n_rows, n_columns, mu, advice):
    """Warn (``UserWarning``, at the user's line) when :func:`rank_noise` of a release
    about to run exceeds ``UNRESOLVED_RANK_NOISE``: ``what`` names the released statistic,
    ``advice`` what to do instead.  Public quantities only; call before the release."""
    import warnings

    from .._stacklevel import user_stacklevel

    share = rank_noise(n_rows, n_columns, mu)
    if share > UNRESOLVED_RANK_NOISE:
        warnings.warn(
            f"{what} on {n_rows} rows: the quantile release's noise is about {share:.0%} of "
            "the rows, so a released quantile can be far from the data's (a bound or scale "
            f"many times too large makes what follows as noisy); {advice}",
            UserWarning, stacklevel=user_stacklevel())


def release_tree_histogram(X, mu, source, bounds=None):
    """Release the count trees of the columns of ``X`` under ``mu``-GDP (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d)
        Numeric columns (any float64 value, NaN included).
    mu : float
        GDP parameter of the release (``> 0``).
    source : uint64 ndarray
        ChaCha20 word source (:func:`skdp._mechanisms.new_word_source`).
    bounds : None or list of (None or (lo, hi))
        Public ranges per column (None: the log grid).

    Returns
    -------
    histogram : TreeHistogram
    event : dp_accounting.GaussianDpEvent
        The recorded (dominating) event of the exact release.
    noise_std : float
        The discrete noise's standard deviation in counts.
    sensitivity : float
        ``sqrt(2 LEVELS d)``.
    """
    n, d = X.shape
    if not mu > 0.0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    if bounds is None:
        bounds = [None] * d
    grids = [ValueGrid(b) for b in bounds]
    sensitivity = tree_sensitivity(d)
    sigma = sensitivity / mu
    sizes = [d * (LEAVES >> level) for level in range(LEVELS)]
    # noise for every node of every column, drawn before the counts are read
    gamma, z, noise_std = exact_gaussian_noise(source, sigma, sensitivity, sum(sizes),
                                               bound=float(n))
    levels = tree_levels(leaf_counts(X, grids))
    noisy, start = [], 0
    for lv, size in zip(levels, sizes):
        noisy.append(release_on_grid(lv, gamma, z[start:start + size]))
        start += size
    event = tree_histogram_event(n, d, mu)
    counts = consistent_leaves(noisy, n)
    return TreeHistogram(counts, grids, n), event, noise_std, sensitivity
