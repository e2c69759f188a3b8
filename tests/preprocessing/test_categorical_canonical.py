"""DPOneHotEncoder releases depend on the multiset of canonical values only: equal values of
different types (1 / 1.0 / True / np.int64(1) / Decimal("1.00"), -0.0 / 0.0, str / np.str_)
are one category, released in one canonical form whatever object came first, in every
input format (numpy object arrays, pandas, polars, Dask), and in a row-order-free order."""

import random
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from skdp.preprocessing import DPOneHotEncoder

pd = pytest.importorskip("pandas")


def _typed(categories):
    """A release with the types visible (``[1] == [1.0]`` in Python)."""
    return [[(type(v).__name__, repr(v)) for v in column] for column in categories]


def _release(enc):
    return _typed(enc.categories_), enc.get_feature_names_out(["c"]).tolist()


def _column(values):
    out = np.empty((len(values), 1), dtype=object)
    for i, v in enumerate(values):
        out[i, 0] = v
    return out


# ---------------------------------------------------------------- the reviewed finding


def test_neighbouring_pair_releases_the_same_canonical_category():
    """Row 0 is the int 1 in one neighbour and 2.0 in the other, the other 499 rows are
    1.0: both release the canonical int 1, named ``c_1`` (it used to be [[1]] against
    [[1.0]], deterministically: epsilon infinite)."""
    first = _column([1] + [1.0] * 499)
    second = _column([2.0] + [1.0] * 499)
    for seed in range(5):
        a = DPOneHotEncoder(random_state=seed).fit(first)
        b = DPOneHotEncoder(random_state=seed).fit(second)
        assert _release(a) == _release(b) == (
            [[("int", "1")]], ["c_1", "c_other", "c_missing"])


def _mixed_rows(seed=0):
    """A column whose frequent values each come in several types, near the threshold."""
    rng = np.random.default_rng(seed)
    pools = {1: [1, 1.0, True, np.int64(1), Decimal("1.00")], 0: [0, -0.0, 0.0, False],
             2.5: [2.5, np.float64(2.5), Decimal("2.50"), Fraction(5, 2)],
             "a": ["a", np.str_("a")], 7: [7, 7.0, np.uint8(7)]}
    counts = {1: 400, 0: 300, 2.5: 200, "a": 150, 7: 66}
    rows = [pool[int(rng.integers(len(pool)))] for key, pool in pools.items()
            for _ in range(counts[key])]
    return rows + [None, float("nan")] * 10


def test_release_and_noise_draws_do_not_depend_on_row_order(monkeypatch):
    """Shuffled rows (so other objects come first): the same categories and the same
    noisy counts, drawn in the canonical order, for the same seed."""
    from skdp._mechanisms import _exact

    drawn = []
    real = _exact.release_on_grid
    monkeypatch.setattr(_exact, "release_on_grid",
                        lambda *a, **k: drawn.append(real(*a, **k)) or drawn[-1])
    rows = _mixed_rows()
    ref = None
    for shuffle in range(6):
        random.Random(shuffle).shuffle(rows)
        drawn.clear()
        enc = DPOneHotEncoder(epsilon=0.5, random_state=3).fit(_column(rows))
        got = (_release(enc), [d.tolist() for d in drawn])
        if ref is None:
            ref = got
            assert _typed(enc.categories_)[0][:2] == [("int", "0"), ("int", "1")]
        assert got == ref


# ------------------------------------------------- equality classes, every input format

CLASSES = {
    "one": ([1, 1.0, True, np.int64(1), np.float64(1.0), np.bool_(True), Decimal("1"),
             Decimal("1.00"), Fraction(1)], ("int", "1"), "c_1"),
    "zero": ([-0.0, 0.0, np.float64(-0.0), 0, False, Decimal("-0.0")], ("int", "0"), "c_0"),
    "string": (["a", np.str_("a")], ("str", "'a'"), "c_a"),
    "decimal": ([Decimal("1.0"), Decimal("1.00")], ("int", "1"), "c_1"),
    "half": ([Decimal("0.50"), Decimal("0.5"), 0.5, np.float32(0.5), Fraction(1, 2)],
             ("float", "0.5"), "c_0.5"),
}


def _class_rows(members, first):
    """``first`` in row 0, then the members in turn (400 rows)."""
    return [first] + [members[i % len(members)] for i in range(399)]


def _fit(kind, rows):
    enc = DPOneHotEncoder(random_state=0)
    if kind == "numpy":
        return enc.fit(_column(rows))
    frame = pd.DataFrame({"c": pd.Series(rows, dtype=object)})
    if kind == "pandas":
        return enc.fit(frame)
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return enc.fit(pl.DataFrame({"c": pl.Series(rows, dtype=pl.Object)}))
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    # dask would turn an object column into strings ("1", "1.0", "True"): keep the objects
    with dask.config.set({"dataframe.convert-string": False}):
        return enc.fit(dd.from_pandas(frame, npartitions=3, sort=False))


@pytest.mark.parametrize("kind", ["numpy", "pandas", "polars", "dask"])
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_equality_class_is_released_canonically_whatever_comes_first(name, kind):
    members, expected, feature = CLASSES[name]
    for first in members:
        enc = _fit(kind, _class_rows(members, first))
        assert _release(enc) == ([[expected]], [feature, "c_other", "c_missing"]), \
            (kind, first)


@pytest.mark.parametrize("kind", ["numpy", "pandas", "polars", "dask"])
def test_every_format_gives_the_same_release_for_one_multiset(kind):
    rows = _mixed_rows(1)
    assert _release(_fit(kind, rows)) == _release(_fit("numpy", rows[::-1]))


def test_typed_columns_are_canonical():
    """Native numeric, boolean and string columns (numpy, pandas, polars) release the
    canonical values: an integral float column releases ints, a boolean column 0 / 1."""
    pl = pytest.importorskip("polars")
    ones = [1.0] * 300 + [-0.0] * 300 + [np.nan]
    for X in (np.array([ones]).T, pd.DataFrame({"c": ones}),
              pl.DataFrame({"c": ones}).with_columns(pl.col("c").fill_nan(None))):
        assert _typed(DPOneHotEncoder(random_state=0).fit(X).categories_) == \
            [[("int", "0"), ("int", "1")]]
    flags = [True] * 300 + [False] * 300
    for X in (pd.DataFrame({"c": flags}), pd.DataFrame({"c": pd.array(flags + [None])}),
              pl.DataFrame({"c": flags})):
        assert _typed(DPOneHotEncoder(random_state=0).fit(X).categories_) == \
            [[("int", "0"), ("int", "1")]]
    words = ["x"] * 300 + ["nan"] * 300 + [None]
    for X in (pd.DataFrame({"c": words}), pd.DataFrame({"c": pd.array(words, "string")}),
              pl.DataFrame({"c": words}), _column([np.str_(w) if w else w for w in words])):
        assert _typed(DPOneHotEncoder(random_state=0).fit(X).categories_) == \
            [[("str", "'nan'"), ("str", "'x'")]]


def test_objects_of_other_types_never_merge_across_types():
    """``datetime`` and ``pd.Timestamp`` of one instant compare equal but are different
    values (type and repr): neither can decide the other's release."""
    import datetime

    when = datetime.datetime(2020, 1, 1)
    rows = [pd.Timestamp(when)] + [when] * 399
    enc = DPOneHotEncoder(random_state=0).fit(_column(rows))
    assert _typed(enc.categories_) == [[("datetime", repr(when))]]
    enc = DPOneHotEncoder(random_state=0).fit(_column(rows[::-1]))
    assert _typed(enc.categories_) == [[("datetime", repr(when))]]


# -------------------------------------------------------------------------- transform


def test_transform_maps_equal_canonical_values_to_one_column():
    X = _column([1] * 300 + [0.0] * 300 + ["a"] * 300)
    for seed in range(3):
        enc = DPOneHotEncoder(random_state=seed).fit(X)
        assert _typed(enc.categories_) == [[("int", "0"), ("int", "1"), ("str", "'a'")]]
        rows = [1.0, True, np.int64(1), Decimal("1.00"), np.float32(1.0), -0.0, False,
                Decimal("-0"), np.str_("a"), "b", 1.5, None, float("nan"), pd.NA, pd.NaT,
                Decimal("NaN"), np.datetime64("NaT")]
        codes = enc.transform(_column(rows)).argmax(axis=1).tolist()
        assert codes == [1, 1, 1, 1, 1, 0, 0, 0, 2, 3, 3] + [4] * 6
        assert enc.transform(np.array([[1.0], [-0.0], [np.nan]])).argmax(axis=1).tolist() \
            == [1, 0, 4]
        on_frame = DPOneHotEncoder(random_state=seed).fit(pd.DataFrame({"c": X[:, 0]}))
        assert _typed(on_frame.categories_) == _typed(enc.categories_)
        frame = pd.DataFrame({"c": pd.Series(rows, dtype=object)})
        assert on_frame.transform(frame).argmax(axis=1).tolist() == codes
        typed = pd.DataFrame({"c": [True, False, None]}).astype("boolean")
        assert on_frame.transform(typed).argmax(axis=1).tolist() == [1, 0, 4]


# ------------------------------------------------------------------ public categories


def test_public_categories_are_canonicalised():
    enc = DPOneHotEncoder(categories=[[True, "b", 1, 1.0, np.str_("a"), "a", None,
                                       float("nan"), Decimal("2.50"), 2.5, -0.0, b"z"]])
    enc.fit(_column(["a", 1.0, -0.0]))
    assert _typed(enc.categories_) == [[("int", "0"), ("int", "1"), ("float", "2.5"),
                                        ("str", "'a'"), ("str", "'b'"),
                                        ("bytes", "b'z'")]]
    assert enc.get_feature_names_out(["c"]).tolist() == [
        "c_0", "c_1", "c_2.5", "c_a", "c_b", "c_b'z'", "c_other", "c_missing"]
    assert enc.epsilon_ == 0.0
    codes = enc.transform(_column([np.bool_(True), 0.0, Fraction(5, 2), "a", b"z", "c",
                                   None])).argmax(axis=1).tolist()
    assert codes == [1, 0, 2, 3, 5, 6, 7]


# ------------------------------------------------------- the canonical form itself


def test_canonical_value_definition():
    from skdp.preprocessing._categorical import canonical_value

    big = 2 ** 53 + 1
    cases = [(True, 1), (np.uint64(2 ** 63), 2 ** 63), (float(2 ** 60), 2 ** 60),
             (big, big), (Decimal(big), big), (Decimal("1e30"), 10 ** 30),
             (Fraction(6, 3), 2), (Fraction(1, 4), 0.25), (Decimal("0.1"), 0.1),
             (float("inf"), float("inf")), (Decimal("-Infinity"), float("-inf")),
             (-0.0, 0), (np.float16(1.5), 1.5), ("x", "x"), (np.bytes_(b"x"), b"x")]
    for value, expected in cases:
        got = canonical_value(value)
        assert type(got) is type(expected) and got == expected, (value, got)
        assert canonical_value(got) == got and type(canonical_value(got)) is type(got)
    assert canonical_value(float(2 ** 53)) != canonical_value(big)
    for missing in (None, float("nan"), np.nan, np.float32("nan"), pd.NA, pd.NaT,
                    Decimal("NaN"), np.datetime64("NaT"), np.timedelta64("NaT"),
                    complex(float("nan"), 0)):
        assert canonical_value(missing) is None, missing
    marker = object()
    assert canonical_value(marker) is marker


def test_canonical_order_is_total_and_type_stable():
    from skdp.preprocessing._categorical import canonical_order

    values = ["b", 2 ** 60, float("-inf"), b"x", 0.5, "a", (1,), -3, float("inf"), b"a"]
    expected = [float("-inf"), -3, 0.5, 2 ** 60, float("inf"), "a", "b", b"a", b"x", (1,)]
    for seed in range(5):
        random.Random(seed).shuffle(values)
        assert sorted(values, key=canonical_order) == expected


def _pool():
    return [1, 1.0, True, np.int64(1), np.float64(1.0), Decimal("1.00"), 0, -0.0, False,
            2 ** 53, float(2 ** 53), 2 ** 53 + 1, 0.1, Decimal("0.1"), np.float32(0.1),
            float("inf"), Decimal("Infinity"), "a", np.str_("a"), "nan", "1", "None", None,
            float("nan"), pd.NA, Decimal("NaN"), b"a", np.bytes_(b"a"), 7, 7.5]


#: the subsets whose columns are counted entry by entry: objects whose ``==`` may cross
#: types, and numbers of two types (numpy compares ``np.int64(2**53 + 1) == 2.0**53``)
_ENTRY_BY_ENTRY = ("numbers", "mixed", "objects")


@pytest.mark.parametrize("subset", ["numbers", "strings", "mixed", "objects", "floats",
                                    "ints"])
def test_hash_table_path_equals_canonicalise_then_count(subset):
    """The vectorised path (pandas' hash table on the raw column, then the distinct
    values canonicalised and merged) gives exactly the entry-by-entry result, codes and
    counts: the hash table never merges two values of different canonical forms.  It is
    taken for strings and numbers of one type (with booleans, bytes and missing markers),
    not for numbers of several types."""
    from skdp.preprocessing._categorical import (_exact_series, _factorize_entries,
                                                 _value_counts, canonical_column)

    # narrow numpy floats send a column entry by entry (next test): left out here, where
    # the hash table is what is tested
    pool = [v for v in _pool() if not isinstance(v, np.float32)]
    if subset == "numbers":
        pool = [v for v in pool if not isinstance(v, (str, bytes))]
    elif subset == "strings":
        pool = [v for v in pool if v is None or isinstance(v, str)]
    elif subset == "objects":
        pool = pool + [(1,), (1.0,), 1 + 0j]
    elif subset == "floats":
        pool = [v for v in pool if not isinstance(v, (int, np.integer, Decimal))
                or isinstance(v, bool)] + [np.float64(2.0 ** 53), np.float64(-0.0)]
    elif subset == "ints":
        pool = [v for v in pool if not isinstance(v, (float, np.number, Decimal))]
    rng = np.random.default_rng(0)
    for _ in range(20):
        rows = [pool[i] for i in rng.integers(len(pool), size=200)]
        column = _column(rows)[:, 0]
        assert (_exact_series(column) is None) == (subset in _ENTRY_BY_ENTRY)
        categories, codes = canonical_column(column)
        distinct, ref_codes = _factorize_entries(rows)
        got = [None if c < 0 else categories[c] for c in codes]
        ref = [None if c < 0 else distinct[c] for c in ref_codes]
        assert _typed([got]) == _typed([ref])
        values, counts = _value_counts(column)
        assert _typed([values]) == _typed([categories])
        assert counts.tolist() == np.bincount(codes[codes >= 0]).tolist()


def test_without_pandas_the_same_canonical_release(monkeypatch):
    rows = _mixed_rows(2)
    ref = DPOneHotEncoder(random_state=0).fit(_column(rows))
    monkeypatch.setitem(sys.modules, "pandas", None)
    enc = DPOneHotEncoder(random_state=0).fit(_column(rows[::-1]))
    assert _release(enc) == _release(ref)
    np.testing.assert_array_equal(enc.transform(_column(rows)),
                                  ref.transform(_column(rows)))


def test_narrow_numpy_floats_leave_the_hash_table():
    """numpy compares ``np.float32(0.1) == 0.1`` in float32 (True) while the two hash
    differently: pandas' table merged them or not as their hashes happened to share a
    bucket (it depended on the process's string hash seed: the hash-table test above
    failed under some seeds).  Such a column is counted entry by entry."""
    from skdp.preprocessing._categorical import _exact_series, _value_counts

    column = np.array([0.1] * 7 + [np.float32(0.1)] * 5 + [np.float64(0.25)], dtype=object)
    assert _exact_series(column) is None
    assert _exact_series(np.array([0.1, np.float64(0.25), True], dtype=object)) is not None
    values, counts = _value_counts(column)
    assert values == [0.1, float(np.float32(0.1)), 0.25] and counts.tolist() == [7, 5, 1]


def test_polars_integer_column_with_a_null_keeps_its_exact_values():
    """Fitted on a polars frame directly, the encoder read an Int64 column with one null
    as float64 (2**53 + 1 became 2**53 in every other row); it now reads each value
    exactly, so both neighbours release the same category."""
    pl = pytest.importorskip("polars")
    rows = [2**53 + 1] * 300 + [7] * 300
    released = [DPOneHotEncoder(random_state=0).fit(
        pl.DataFrame({"c": r}, schema={"c": pl.Int64})).categories_
        for r in (rows, rows[:-1] + [None])]
    assert _typed(released[0]) == _typed(released[1]) == \
        [[("int", "7"), ("int", str(2**53 + 1))]]


# ------------------------- the audit's finding: an int and a float numpy compares equal

_B = 2**53
#: fillers under which pandas' hash table kept np.int64(2**53 + 1) and 2.0**53 apart, and
#: the neighbour (last filler replaced) under which it merged them (onehot_hash_merge.py)
_FILLERS = [850624.0, 636961.0, 511136.0, 269786.0, 307829.0]
_NEIGHBOUR_FILLERS = _FILLERS[:-1] + [1000000.0]


def _big_rows(fillers, big_int, big_float, int_first):
    first, last = (big_int, big_float) if int_first else (big_float, big_int)
    return [first] * 30 + list(fillers) + [last] * 30


def _exact_counts(rows):
    """Counts of the canonical values, entry by entry (the definition)."""
    from collections import Counter

    from skdp.preprocessing._categorical import canonical_value

    counts = Counter(canonical_value(v) for v in rows)
    return sorted(counts.items())


@pytest.mark.parametrize("big_int, big_float", [
    (np.int64(_B + 1), float(_B)), (_B + 1, np.float64(_B)), (np.uint64(_B + 1), float(_B)),
    (np.int64(_B + 1), np.float64(_B))])
def test_integers_and_floats_numpy_calls_equal_are_counted_apart(big_int, big_float):
    """``np.int64(2**53 + 1) == 2.0**53`` in numpy although their canonical values differ;
    pandas' hash table merged them or not depending on a filler row and on which came
    first (the release changed with one row: epsilon infinite).  A column mixing integer
    and float types is now counted entry by entry: the exact canonical counts, the same
    categories on both neighbours and in both row orders, and transform tells them apart."""
    from skdp.preprocessing._categorical import _value_counts

    releases = set()
    for fillers in (_FILLERS, _NEIGHBOUR_FILLERS):
        for int_first in (True, False):
            rows = _big_rows(fillers, big_int, big_float, int_first)
            values, counts = _value_counts(_column(rows)[:, 0])
            assert sorted(zip(values, counts.tolist())) == _exact_counts(rows)
            for seed in range(3):
                enc = DPOneHotEncoder(epsilon=4.0, random_state=seed).fit(_column(rows))
                releases.add(repr([[c for c in enc.categories_[0] if c >= _B]]))
                codes = enc.transform(_column([big_int, big_float])).argmax(axis=1)
                assert codes[0] != codes[1]
    assert releases == {repr([[_B, _B + 1]])}
