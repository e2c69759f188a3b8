r"""One-hot encoding of categorical columns with public or privately discovered categories
(``DPOneHotEncoder``).

Output layout and norm bound
----------------------------
Column ``j`` becomes ``len(categories_[j])`` indicator columns, then an ``other`` column
(a value not in the list: rare, unseen at fit time, or never released) and a ``missing``
column (``None``/``NaN``).  Exactly one of them is 1, so every output row of ``d`` columns
has L2 norm exactly ``sqrt(d)`` for *any* input row -- an unseen string or an empty one
included, never an error.  That is ``output_norm_bound_``.

Canonical values
----------------
Python and numpy let objects of different types compare (and hash) equal: ``1``, ``1.0``,
``True``, ``np.int64(1)``, ``Decimal("1.00")``; ``-0.0`` and ``0.0``; ``"a"`` and
``np.str_("a")``.  A hash table counts them as one value and keeps the *first* object it
meets as the key, so the object released (``[[1]]`` or ``[[1.0]]``, feature name ``c_1`` or
``c_1.0``) would be decided by one row -- with certainty, an infinite epsilon.  The encoder
therefore maps every entry to its canonical value (:func:`canonical_value`) *before*
counting, releasing, sorting and transforming: the candidate set, the counts, the noise
draws, ``categories_`` and the feature names are functions of the multiset of canonical
values only, never of row order, object identity or the type that came first.

* **Missing**: ``None``, float / numpy NaN, ``pd.NA``, ``pd.NaT``, numpy NaT,
  ``Decimal("NaN")`` and a complex with a NaN part are missing (the ``missing`` column),
  never a category.
* **Numbers** (``bool``, ``int``, numpy integers and booleans, ``float``, numpy floats,
  ``Decimal``, ``Fraction``): an integral finite value becomes the Python ``int`` of
  exactly that value (``1``, ``1.0``, ``True``, ``Decimal("1.00")`` are ``1``; ``-0.0``
  is ``0``; integers above ``2**53`` stay exact), any other value the Python ``float``
  nearest to it (``float(v)``; ``inf`` and ``-inf`` stay floats; a non-integral value
  beyond the float range becomes ``+-inf``), and a float that is integral is again an
  ``int``.  Equality of canonical numbers is numeric equality (exact for integers, of the
  nearest float64 otherwise): a boolean column is released as ``0`` / ``1``.
* **Strings** by value: ``str`` and ``np.str_`` become ``str``; ``bytes`` and
  ``np.bytes_`` become ``bytes`` (never equal to a string).
* **Anything else** (tuples, datetimes, complex numbers, user objects) is kept as it is,
  but two such values are the same value only when they have the same type and the same
  ``repr`` -- never by a cross-type ``==`` (``datetime`` and ``pd.Timestamp`` of the same
  instant, ``1`` and ``1 + 0j`` are different categories).  Of several objects with one
  type and one ``repr`` the first is kept: nothing tells them apart in a release.

*Order* (:func:`canonical_order`): numbers first, ordered numerically; then strings in code
point order; then bytes; then other values by (module-qualified type name, ``repr``).  It
is total on canonical values and sorts ``categories_`` and the per-value noise draws, so a
seeded fit is reproducible and independent of row order.

*Counting* stays vectorised: pandas' hash table counts (``value_counts``, at fit) or
factorises (:func:`canonical_column`, at transform) the raw column, then only its
*distinct* values are canonicalised, and the counts or codes of those that become equal
are merged.  That equals canonicalise-then-count because the hash table merges two
entries only when they compare equal, and equal strings or bytes, and equal numbers *of
one type*, have one canonical value (it never merges the string ``"nan"`` with NaN, nor a
string with a number).  Numbers of two types are not safe: numpy compares
``np.int64(2**53 + 1)`` with the float ``2.0**53`` in float64 and finds them equal,
although their canonical values differ, and the table then merges them only if one lies
in the other's probe sequence -- a function of the other rows and of row order.  A column
takes this path when its dtype is numeric, boolean or string, or when it is an object
column of strings, bytes, missing markers, booleans and numbers of a single type (pandas'
``infer_dtype``, one pass in C, then the set of its entries' types); any other object
column (numbers of two types such as ``int`` and ``float``; tuples, datetimes, user
objects: their ``==`` may cross types) is canonicalised entry by entry, and so is every
column without pandas.  Counts are integers below ``2**53``, so the float weights of the
merge are exact.

Public categories (``categories=[[...], ...]``)
-----------------------------------------------
Nothing is learnt from the data: ``dp_event_`` is ``NoOpDpEvent`` and ``epsilon_ = 0``.
The lists are canonicalised like the data: missing entries are dropped, entries with one
canonical value collapse to one category (``[1, 1.0, True]`` is ``[1]``), and the result is
sorted by :func:`canonical_order`.

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
import numbers
from decimal import Decimal
from fractions import Fraction

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._dask import is_dask_collection
from ._common import (DP_TRANSFORMER_CONSTRAINTS, dense_container_requested, gdp_mu,
                      guarantee, target_event, word_source)

__all__ = ["DPOneHotEncoder", "canonical_column", "canonical_order", "canonical_value",
           "discovery_threshold"]


def discovery_sensitivity(n_columns):
    """L2 sensitivity ``sqrt(2 d)`` of the counts of ``d`` columns (module docstring)."""
    return math.sqrt(2.0 * n_columns)


def threshold_factor(n_columns, delta_threshold):
    """``sqrt(2 ln(2 d / delta_T))``: the threshold's distance above 1 in noise units."""
    return math.sqrt(2.0 * math.log(2.0 * n_columns / delta_threshold))


def discovery_threshold(sigma, n_columns, delta_threshold):
    """``tau = 1 + sigma sqrt(2 ln(2 d / delta_T))`` (module docstring)."""
    return 1.0 + sigma * threshold_factor(n_columns, delta_threshold)


def _canonical_float(x):
    """A Python float as a canonical number: None for NaN, ``int`` when integral."""
    if x != x:
        return None
    return int(x) if x.is_integer() else x


def canonical_value(value):
    """The canonical value of one entry (module docstring, "Canonical values").

    Parameters
    ----------
    value : object
        Any entry of a column.

    Returns
    -------
    canonical : int, float, str, bytes, other object, or None
        None when ``value`` is missing; an ``int`` for an integral finite number, else a
        ``float`` for a number; ``str`` / ``bytes`` for strings; ``value`` itself
        otherwise.  Idempotent.

    Examples
    --------
    >>> from decimal import Decimal
    >>> import numpy as np
    >>> [canonical_value(v) for v in (1.0, True, np.int64(1), Decimal("1.00"), -0.0, 0.5)]
    [1, 1, 1, 1, 0, 0.5]
    >>> canonical_value(np.str_("a")), canonical_value(float("nan"))
    ('a', None)
    """
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, (np.datetime64, np.timedelta64)):  # timedelta64 is "Integral"
        return None if np.isnat(value) else value
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _canonical_float(float(value))
    if isinstance(value, Decimal):
        if value.is_nan():
            return None
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        return _canonical_float(float(value))
    if isinstance(value, numbers.Rational):
        if value.denominator == 1:
            return int(value.numerator)
        try:
            return _canonical_float(float(value))
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, (complex, np.complexfloating)):
        return None if value != value else value
    if (type(value).__name__ in ("NAType", "NaTType")
            and type(value).__module__.startswith("pandas")):
        return None
    return value


def _key(canonical):
    """The hash key of a canonical value: the value itself for a number or a string, else
    ``(type, repr)`` (no cross-type ``==``, one key per printed value)."""
    if type(canonical) in (int, float, str, bytes):
        return canonical
    return (type(canonical), repr(canonical))


def canonical_order(canonical):
    """Sort key of canonical values: numbers numerically, then strings, then bytes, then
    other values by (module-qualified type name, ``repr``) -- a total order that depends
    on the values only.

    Examples
    --------
    >>> sorted(["b", 2, b"x", -1.5, "a", (1,)], key=canonical_order)
    [-1.5, 2, 'a', 'b', b'x', (1,)]
    """
    kind = type(canonical)
    if kind is int or kind is float:
        return (0, canonical)
    if kind is str:
        return (1, canonical)
    if kind is bytes:
        return (2, canonical)
    return (3, f"{kind.__module__}.{kind.__qualname__}", repr(canonical))


#: the types of a mixed object column on which pandas' hash table is exact: numbers,
#: strings, bytes, and missing markers (dropped by the table)
#: numpy floats narrower or wider than float64 are left out: numpy compares them with a
#: Python float in their own precision (``np.float32(0.1) == 0.1`` is True) while their
#: hashes differ, so the table merged them -- or not -- as their hashes happened to share a
#: bucket (a function of the other entries and of the process's string hash seed)
_EXACT_TYPES = frozenset(
    {str, np.str_, bytes, np.bytes_, bool, int, float, Decimal, Fraction, type(None)}
    | {t for t in np.sctypeDict.values()
       if (issubclass(t, (np.bool_, np.integer)) or t is np.float64)
       and not issubclass(t, np.timedelta64)})
#: kinds of ``infer_dtype`` whose entries cannot be numbers of two types (strings, bytes,
#: booleans, nothing): the table is exact on them without looking at the entries' types
_SINGLE_KIND = frozenset({"string", "bytes", "boolean", "empty"})
#: booleans (0 and 1, exact in every number type) and non-numbers: they never make a
#: column's numbers "of two types"
_NOT_MIXING_TYPES = frozenset({bool, np.bool_, str, np.str_, bytes, np.bytes_, type(None)})


def _numbers_of_one_type(types):
    """True when the numbers among ``types`` (booleans aside) all have one type, counting
    ``np.float64`` (a subclass of ``float``) as ``float``.

    numpy compares numbers of two types in a common precision: ``np.int64(2**53 + 1) ==
    2.0**53`` is True (the integer is rounded to float64), so is ``2**53 + 1 ==
    np.float64(2**53)``, although their canonical values (``2**53 + 1``, ``2**53``)
    differ; numpy 1.x compares ``np.int64`` with ``np.uint64`` (or with a Python int
    beyond int64) in float64 too, and ``Decimal == np.int64`` raises.  Of numbers of one
    type, ``==`` is that type's exact equality (two doubles, two int64, two Python ints,
    two Decimals), and a boolean is 0 or 1, exact in every type."""
    return len({float if t is np.float64 else t for t in types} - _NOT_MIXING_TYPES) <= 1


def _exact_series(values):
    """``values`` as a pandas Series when pandas' hash table on the raw entries is exact
    (it merges two entries only when they have one canonical value), else None (also
    without pandas, or for a plain iterable).

    The table merges entries that compare equal; equal numbers, strings or bytes have
    one canonical value *when the numbers have one type*.  So the table is exact on a
    column of a numeric, boolean or string dtype, and on an object column that holds only
    strings, bytes, missing markers, booleans and numbers of one type: checked by
    ``infer_dtype`` (one pass in C), then, unless it found only strings, bytes or
    booleans, by the set of the entries' types.  Any other object (a tuple, a datetime, a
    user type: its ``==`` may cross types) and numbers of two types (an ``np.int64`` and
    a float, which numpy compares in float64: :func:`_numbers_of_one_type`) send the
    column entry by entry.  Whether two entries of such a column compared equal used to
    depend on whether one lay in the other's probe sequence -- on the other rows and on
    row order."""
    try:
        import pandas as pd
        from pandas.api.types import infer_dtype
    except ImportError:
        return None
    if isinstance(values, np.ndarray):
        values = pd.Series(values, dtype=object if values.dtype == object else None,
                           copy=False)
    if not isinstance(values, pd.Series):
        return None
    kind = infer_dtype(values, skipna=True) if values.dtype == object else None
    if values.dtype == object and kind not in _SINGLE_KIND:
        na = {type(pd.NA), type(pd.NaT)}
        types = set(map(type, values.to_numpy(dtype=object, copy=False))) - na
        if not (types <= _EXACT_TYPES and _numbers_of_one_type(types)):
            return None
    return values


def _entries(values):
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _factorize_entries(values):
    """``(distinct canonical values, codes)`` of an iterable, entry by entry (-1: missing)."""
    index, distinct, codes = {}, [], []
    for value in values:
        c = canonical_value(value)
        if c is None:
            codes.append(-1)
            continue
        j = index.setdefault(_key(c), len(distinct))
        if j == len(distinct):
            distinct.append(c)
        codes.append(j)
    return distinct, np.asarray(codes, dtype=np.int64)


def _merge_canonical(distinct):
    """Canonicalise ``distinct`` values (idempotent) and merge those that become equal:
    ``(canonical values, remap)``, ``remap[i]`` the position of ``distinct[i]``'s value
    (-1: missing), with ``remap[-1] = -1`` for a missing entry's code."""
    index, merged = {}, []
    remap = np.empty(len(distinct) + 1, dtype=np.int64)
    remap[-1] = -1
    for i, value in enumerate(distinct):
        c = canonical_value(value)
        if c is None:
            remap[i] = -1
            continue
        j = index.setdefault(_key(c), len(merged))
        if j == len(merged):
            merged.append(c)
        remap[i] = j
    return merged, remap


def _sorted(values):
    """``(values sorted by canonical_order, rank)``, ``rank[j]`` the new position of
    ``values[j]`` and ``rank[-1] = -1`` (missing stays missing)."""
    order = sorted(range(len(values)), key=lambda j: canonical_order(values[j]))
    rank = np.empty(len(values) + 1, dtype=np.int64)
    rank[order] = np.arange(len(values))
    rank[-1] = -1
    return [values[j] for j in order], rank


def canonical_column(values):
    """The distinct canonical values of a column and the code of every entry.

    Parameters
    ----------
    values : 1-d ndarray, pandas Series or iterable
        One column (any dtype).

    Returns
    -------
    categories : list
        Distinct canonical values of the non-missing entries, sorted by
        :func:`canonical_order`.
    codes : ndarray of int64
        Position of every entry's canonical value in ``categories``, -1 when missing.

    Examples
    --------
    >>> import numpy as np
    >>> canonical_column(np.array([1.0, "a", True, None, -0.0, np.str_("a")], dtype=object))
    ([0, 1, 'a'], array([ 1,  2,  1, -1,  0,  2]))
    """
    series = _exact_series(values)
    if series is None:
        distinct, codes = _factorize_entries(_entries(values))
    else:
        import pandas as pd

        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        distinct = uniques.tolist()
    merged, remap = _merge_canonical(distinct)
    categories, rank = _sorted(merged)
    return categories, rank[remap][codes]


def _merge_counts(parts):
    """Canonicalise and sum ``(values, counts)`` pairs (one per partition) exactly:
    ``(canonical values sorted by canonical_order, their counts)``, missing dropped."""
    distinct = [v for values, _ in parts for v in values]
    counts = np.array([c for _, part in parts for c in np.asarray(part).tolist()],
                      dtype=np.int64)
    merged, remap = _merge_canonical(distinct)
    categories, rank = _sorted(merged)
    codes = rank[remap[:-1]]
    return categories, np.bincount(codes[codes >= 0], weights=counts[codes >= 0],
                                   minlength=len(categories)).astype(np.int64)


def _value_counts(values):
    """``(canonical values sorted by canonical_order, their counts)`` of the non-missing
    entries of a column: pandas' ``value_counts`` when exact (:func:`_exact_series`), its
    distinct values then canonicalised and merged; else entry by entry."""
    series = _exact_series(values)
    if series is None:
        distinct, codes = _factorize_entries(_entries(values))
        return _merge_counts([(distinct, np.bincount(codes[codes >= 0],
                                                     minlength=len(distinct)))])
    counts = series.value_counts(dropna=True, sort=False)
    return _merge_counts([(counts.index.tolist(), counts.to_numpy())])


def _partition_counts(frame):
    """Rows and per-column ``(canonical values, counts)`` of one pandas partition."""
    return len(frame), [_value_counts(frame.iloc[:, j]) for j in range(frame.shape[1])]


def _columns(estimator, X, reset):
    """The columns of ``X``: a DataFrame's own columns (pandas Series, not converted: its
    width and feature names checked by scikit-learn), else 1-d object arrays of an array
    validated by scikit-learn (2-d, not sparse, not complex, the fitted width).  A polars
    frame is converted column by column first (:func:`~skdp.preprocessing._rowwise.
    as_pandas`): read as one numpy array, an integer column with one null became float64
    and rounded the other rows' integers above ``2**53``."""
    from ._rowwise import as_pandas

    X = as_pandas(X)
    if hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} "
                             "feature(s) (shape=%s) while a minimum of 1 is required."
                             % (X.shape,))
        return [X.iloc[:, j] for j in range(X.shape[1])]
    X = validate_data(estimator, X, dtype=None, ensure_all_finite=False, reset=reset)
    if X.dtype.kind not in "biuf":
        X = np.asarray(X, dtype=object)
    return [X[:, j] for j in range(X.shape[1])]


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
        ``OneHotEncoder(sparse_output=True)``), the dense output's values.  Under
        ``set_output(transform="pandas")`` the output is a dense DataFrame instead.

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

    #: where an integer random_state keys the noise (the category counts' stream,
    #: word_source): skdp._mechanisms._exact.RELEASE_SITES, read by fitted_dp_event
    _release_sites = ("dp_transformers",)

    _parameter_constraints: dict = {
        "categories": [StrOptions({"auto"}), list],
        "sparse_output": ["boolean"],
        **DP_TRANSFORMER_CONSTRAINTS,
    }

    def __init__(self, *, categories="auto", epsilon=1.0, delta=1e-6, random_state=None,
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
            counted = [_value_counts(col) for col in columns]
            n = columns[0].shape[0]
        d = len(counted)
        if self.categories != "auto":
            if len(self.categories) != d:
                raise ValueError(f"categories has {len(self.categories)} lists for {d} "
                                 "columns")
            cats = [canonical_column(list(c))[0] for c in self.categories]
            event, eps, noise, sens, tau = dp_accounting.NoOpDpEvent(), 0.0, 0.0, 0.0, None
        else:
            cats, event, noise, sens, tau = self._discover(counted, n)
            eps = guarantee(event, self.delta)[0]
        self.categories_ = cats
        self._index = [{_key(v): i for i, v in enumerate(c)} for c in cats]
        self.output_norm_bound_ = float(math.sqrt(d))
        self.threshold_ = tau
        self.dp_event_ = event
        self.epsilon_, self.delta_ = eps, float(self.delta) if eps > 0 else 0.0
        self.noise_scale_, self.sensitivity_ = float(noise), float(sens)
        self.privacy_guaranteed_ = True
        return self

    def _dask_value_counts(self, X):
        """Per-column ``(canonical values, counts)`` of a Dask DataFrame, canonicalised and
        counted partition by partition on the workers (only ``(value, count)`` pairs
        travel), then summed exactly: the in-memory fit's counts."""
        import dask

        if not hasattr(X, "columns"):
            raise TypeError("DPOneHotEncoder fits a Dask DataFrame (not a Dask array)")
        names = [str(c) for c in X.columns]
        if not names:
            raise ValueError("DPOneHotEncoder needs at least one column")
        self.n_features_in_ = len(names)
        self.feature_names_in_ = np.asarray(names, dtype=object)
        parts = dask.compute(*[dask.delayed(_partition_counts)(p) for p in X.to_delayed()])
        counted = [_merge_counts([counts[j] for _, counts in parts])
                   for j in range(len(names))]
        return counted, int(sum(rows for rows, _ in parts))

    def planned_event(self, n_samples, n_features):
        """The event a fit on ``n_samples`` rows of ``n_features`` columns records: with
        public categories none (``NoOpDpEvent``), else the discovery's (:meth:`_calibration`,
        the arithmetic of the release itself).  A :class:`~skdp.PrivatePipeline` plans
        with it and checks after the fit that the release recorded exactly this event.
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
        from ..accounting import _lazy_dp_accounting as dp_accounting

        self._check_planned(n_features)
        if self.categories != "auto":
            return dp_accounting.NoOpDpEvent()
        return self._calibration(int(n_samples), int(n_features))[-1]

    def planned_output(self, n_samples, n_features):
        """``(lowest, nominal, norm_bound)`` of a fit on ``n_features`` columns: with public
        categories both widths are ``sum(len(c) + 2)`` (distinct categories, plus
        ``other`` and ``missing``).  A discovery can release no category, so its lowest
        width is ``2 n_features``; its nominal one, what a plan pins the model's
        width-dependent choices at, counts :meth:`planned_categories` per column, a
        public estimate (never a bound) of what the release will hold.  The norm bound is
        ``sqrt(n_features)``.

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
        self._check_planned(n_features)
        d = int(n_features)
        if self.categories != "auto":
            width = sum(len(canonical_column(list(c))[0]) + 2 for c in self.categories)
            return width, width, float(math.sqrt(d))
        k = self.planned_categories(n_samples, d)
        return 2 * d, (k + 2) * d, float(math.sqrt(d))

    def planned_categories(self, n_samples, n_features):
        """Public estimate of the categories a discovery on ``n_samples`` rows of
        ``n_features`` columns releases per column
        (:func:`skdp.linear_model._auto.planned_categories` of ``n`` and the threshold
        :meth:`_calibration` computes); 0 with public categories (nothing is discovered).
        A function of the parameters, ``n`` and the schema only: a plan reads it before
        any row.

        Parameters
        ----------
        n_samples : int
            Number of rows of the fit (public).
        n_features : int
            Number of input columns (public schema).

        Returns
        -------
        k : int
        """
        from ..linear_model._auto import planned_categories

        self._check_planned(n_features)
        if self.categories != "auto":
            return 0
        tau = self._calibration(int(n_samples), int(n_features))[4]
        return planned_categories(int(n_samples), tau)

    def _check_planned(self, n_features):
        """The parameter checks of :meth:`fit` that need no row (a plan raises them)."""
        self._validate_params()
        if self.categories != "auto" and len(self.categories) != n_features:
            raise ValueError(f"categories has {len(self.categories)} lists for "
                             f"{n_features} columns")

    def _delta_parts(self):
        """``(delta_g, delta_t)``: the discovery's ``delta`` halved between its Gaussian
        counts and its threshold."""
        return float(self.delta) / 2.0, float(self.delta) / 2.0

    def _width_free_event(self):
        """The event that dominates this release at every input width: ``NoOpDpEvent``
        with public categories, else the counts' calibration target
        (:func:`~skdp.preprocessing._common.target_event`; :meth:`_calibration` rounds the
        noise up to at least ``sigma (1 + DOMINANCE_MARGIN)``) with the threshold's
        ``delta``.  What a pipeline composes when an earlier step released this step's
        input width."""
        from ..accounting import DeltaDpEvent, compose
        from ..accounting import _lazy_dp_accounting as dp_accounting

        if self.categories != "auto":
            return dp_accounting.NoOpDpEvent()
        delta_g, delta_t = self._delta_parts()
        return compose(target_event(gdp_mu(self.epsilon, delta_g)), DeltaDpEvent(delta_t))

    def _calibration(self, n, d):
        """``(gamma, s, noise_std, sensitivity, tau, event)`` of the discovery on ``n``
        rows of ``d`` columns: public quantities only (module docstring)."""
        from ..accounting import DeltaDpEvent, compose, gaussian_event
        from .._mechanisms._exact import DOMINANCE_MARGIN, grid_for

        delta_g, delta_t = self._delta_parts()
        sens = discovery_sensitivity(d)
        sigma = sens / gdp_mu(self.epsilon, delta_g)
        gamma = grid_for(sigma, float(n))
        if gamma > 1.0:
            raise ValueError(f"epsilon={self.epsilon!r} is too small for a count release "
                             "(noise above 2^30 counts)")
        s = int(math.ceil(sigma * (1.0 + DOMINANCE_MARGIN) / gamma))
        noise_std = s * gamma
        tau = discovery_threshold(noise_std, d, delta_t)
        event = compose(gaussian_event(noise_std / (1.0 + DOMINANCE_MARGIN), sens),
                        DeltaDpEvent(delta_t))
        return gamma, s, noise_std, sens, tau, event

    def _discover(self, counted, n):
        from .._mechanisms._exact import discrete_gaussian_noise, release_on_grid

        gamma, s, noise_std, sens, tau, event = self._calibration(n, len(counted))
        source = word_source(self.random_state)
        cats = []
        for values, counts in counted:
            z = discrete_gaussian_noise(source, s, len(values))
            noisy = release_on_grid(counts.astype(np.float64), gamma, z)
            # ``values`` are sorted (canonical order): so are the draws and the release
            cats.append([v for v, c in zip(values, noisy) if c >= tau])
        return cats, event, noise_std, sens, tau

    def transform(self, X):
        """One-hot rows: the categories, then ``other``, then ``missing`` per column.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features_in_)

        Returns
        -------
        XT : ndarray, DataFrame or CSR matrix of shape (n_samples, n_features_out_)
            CSR with ``sparse_output`` unless ``set_output`` asks for a DataFrame.  A Dask
            ``X`` gives a lazy Dask array of dense blocks, each computed on its worker.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            from .._dask_predict import lazy_rowwise

            return lazy_rowwise(self.transform, X, (self.n_features_out_,), np.float64,
                                dense=True)
        columns = _columns(self, X, reset=False)
        n = columns[0].shape[0]
        widths = [len(index) + 2 for index in self._index]
        if self.sparse_output and not dense_container_requested(self):
            return self._transform_csr(columns, n, widths)
        out = np.zeros((n, sum(widths)))
        rows = np.arange(n)
        start = 0
        for code, width in zip(self._column_codes(columns).T, widths):
            out[rows, start + code] = 1.0
            start += width
        return out

    def _column_codes(self, columns, dtype=np.int64):
        """``(n, n_features_in_)``: column ``j``'s entry is the position of the row's 1 in
        that column's one-hot block (:meth:`_codes`)."""
        out = np.empty((columns[0].shape[0], len(columns)), dtype=dtype)
        for j, (col, index) in enumerate(zip(columns, self._index)):
            out[:, j] = self._codes(col, index)
        return out

    def _basis_codes(self, X, dtype=np.int64):
        """:meth:`_column_codes` of ``X``: what a Dask fit keeps of a partition
        (:mod:`~skdp.preprocessing._compact_basis`)."""
        check_is_fitted(self)
        return self._column_codes(_columns(self, X, reset=False), dtype)

    def _transform_csr(self, columns, n, widths):
        """:meth:`transform` as CSR: one entry (1.0) per column and row, in increasing
        column order (canonical)."""
        import scipy.sparse as sp

        d = len(widths)
        total = sum(widths)
        dtype = np.int32 if max(total, n * d) < 2**31 - 1 else np.int64
        indices = self._column_codes(columns, dtype)
        indices += np.cumsum([0] + widths[:-1]).astype(dtype)   # each block's start
        out = sp.csr_matrix((np.ones(n * d), indices.ravel(),
                             np.arange(0, n * d + 1, d, dtype=dtype)), shape=(n, total))
        out.has_sorted_indices = True
        return out

    @staticmethod
    def _codes(col, index):
        """Position of every entry's canonical value in ``index`` (keys of
        ``categories_``); ``len(index)`` for any other value ("other"), ``len(index) + 1``
        for missing."""
        k = len(index)
        distinct, codes = canonical_column(col)
        lookup = np.array([index.get(_key(v), k) for v in distinct] + [k + 1],
                          dtype=np.int64)
        return lookup[codes]

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
        from sklearn.utils.validation import _check_feature_names_in

        check_is_fitted(self)
        input_features = _check_feature_names_in(self, input_features)
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
