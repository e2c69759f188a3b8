"""Tests of the raw-column loaders (``as_frame=True``) of the UCI datasets.

The real files are read from ``$SKDP_DATA`` if set, else from ``../shared/data``
next to the repository root; tests that need a file skip when it is absent. No
test touches the network.
"""

import csv
import hashlib
import json
import shutil
import sys

import numpy as np
import pytest

from skdp.datasets import _uci, load_adult, load_bank, load_credit_card

from ._local_data import DATA_DIR, refuse_network, require  # noqa: E402

ADULT_FEATURES = [
    "age", "workclass", "fnlwgt", "education", "education-num",
    "marital-status", "occupation", "relationship", "race", "sex",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
]  # fmt: skip
ADULT_STRINGS = [
    "workclass", "education", "marital-status", "occupation", "relationship",
    "race", "sex", "native-country",
]  # fmt: skip
BANK_FEATURES = [
    "age", "job", "marital", "education", "default", "balance", "housing",
    "loan", "contact", "day", "month", "duration", "campaign", "pdays",
    "previous", "poutcome",
]  # fmt: skip
BANK_STRINGS = [
    "job", "marital", "education", "default", "housing", "loan", "contact",
    "month", "poutcome",
]  # fmt: skip
CREDIT_FEATURES = [f"X{i}" for i in range(1, 24)]
# columns where the CSV writes some round values as 5.00E+05: they parse as float
CREDIT_FLOATS = ["X1"] + [f"X{i}" for i in range(12, 24)]

# key: (loader, kwargs, n, feature names, string columns, target column,
#       target_names, n_positives, required files)
CASES = {
    "adult": (
        load_adult, {}, 32561, ADULT_FEATURES, ADULT_STRINGS, "income",
        ["<=50K", ">50K"], 7841, ["adult/adult.data"],
    ),
    "adult_test": (
        load_adult, {"subset": "test"}, 16281, ADULT_FEATURES, ADULT_STRINGS,
        "income", ["<=50K", ">50K"], 3846, ["adult/adult.data", "adult/adult.test"],
    ),
    "bank": (
        load_bank, {}, 45211, BANK_FEATURES, BANK_STRINGS, "y", ["no", "yes"],
        5289, ["bank/bank-full.csv"],
    ),
    "credit": (
        load_credit_card, {}, 30000, CREDIT_FEATURES, [], "Y",
        ["no_default", "default"], 6636, ["creditcard/UCI_Credit_Card.csv"],
    ),
}  # fmt: skip

# SHA-256 of the default (as_frame=False) output -- data (shape, dtype, bytes),
# target (dtype, bytes), feature_names, numeric_min / numeric_max -- computed
# from the real files with the loaders as they were before as_frame was added.
DEFAULT_OUTPUT_SHA256 = {
    "bank": "ad728ad8250b753cf8b8244fa1e4472a64222c3467f1521f5c8ea804ded0d141",
    "adult": "9443de48b718bd83b82ccd8bb659d40cb99f99c6034e6766b5a14c7a46ca5c3f",
    "adult_test": "e7d8d53031337ae2693c2f08a275b845efebf1b36c249c1a8ff0c66285313d3f",
    "credit": "ea19271d4dc5543ab48dc3a0bc75a3366135224198044a7443bfb800fb08130b",
}


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail loudly if any code path tries to reach the network."""
    refuse_network(monkeypatch)


@pytest.fixture
def pd():
    return pytest.importorskip("pandas", reason="as_frame=True needs pandas")


@pytest.fixture(scope="module")
def loaded():
    """Load each dataset (raw or encoded) at most once per module."""
    cache = {}

    def get(key, as_frame=True):
        loader, kwargs, *_, files = CASES[key]
        require(*files)
        if as_frame:
            pytest.importorskip("pandas", reason="as_frame=True needs pandas")
        if (key, as_frame) not in cache:
            cache[key, as_frame] = loader(
                data_home=DATA_DIR, as_frame=as_frame, **kwargs
            )
        return cache[key, as_frame]

    return get


# ---------------------------------------------------------------------------
# Shapes, names, dtypes, targets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(CASES))
def test_frame_shape_names_and_dtypes(loaded, pd, key):
    _, _, n, names, strings, target_col, target_names, _, _ = CASES[key]
    bunch = loaded(key)
    assert set(bunch) == {
        "data", "target", "frame", "feature_names", "target_names", "DESCR"
    }  # fmt: skip
    data = bunch.data
    assert isinstance(data, pd.DataFrame)
    assert data.shape == (n, len(names))
    assert list(data.columns) == names
    assert bunch.feature_names == names
    assert isinstance(data.index, pd.RangeIndex) and len(data.index) == n
    for name, dtype in data.dtypes.items():
        if name in strings:
            # plain Python strings, not Categorical nor pandas' string dtype
            assert dtype == object, name
            values = data[name].dropna()
            assert all(type(v) is str for v in values), name
        elif key == "credit" and name in CREDIT_FLOATS:
            assert dtype == np.float64, name
        else:
            assert dtype == np.int64, name
    assert bunch.target.dtype == np.int64 and bunch.target.shape == (n,)
    assert set(np.unique(bunch.target)) == {0, 1}
    assert list(bunch.target_names) == target_names
    frame = bunch.frame
    assert list(frame.columns) == names + [target_col]
    assert frame[target_col].dtype == np.int64
    np.testing.assert_array_equal(frame[target_col].to_numpy(), bunch.target)
    pd.testing.assert_frame_equal(frame[names], data)


@pytest.mark.parametrize("key", list(CASES))
def test_target_equals_the_encoded_loaders_target(loaded, key):
    n_pos = CASES[key][7]
    raw, encoded = loaded(key), loaded(key, as_frame=False)
    assert raw.target.dtype == encoded.target.dtype == np.int64
    np.testing.assert_array_equal(raw.target, encoded.target)
    assert int(raw.target.sum()) == n_pos
    np.testing.assert_array_equal(raw.target_names, encoded.target_names)


@pytest.mark.parametrize("key", list(CASES))
def test_return_X_y(loaded, pd, key):
    loader, kwargs, *_ = CASES[key]
    bunch = loaded(key)
    X, y = loader(data_home=DATA_DIR, return_X_y=True, as_frame=True, **kwargs)
    assert isinstance(X, pd.DataFrame) and isinstance(y, np.ndarray)
    pd.testing.assert_frame_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)
    assert y.dtype == np.int64


@pytest.mark.parametrize("key", list(CASES))
def test_strings_are_stripped(loaded, key):
    strings = CASES[key][4]
    data = loaded(key).data
    for name in strings:
        values = data[name].dropna()
        assert (values == values.str.strip()).all(), name
        assert (values != "").all(), name


@pytest.mark.parametrize("key", list(CASES))
def test_descr_says_the_columns_are_raw(loaded, key):
    descr = loaded(key).DESCR
    assert "raw" in descr
    assert "learnt privately" in descr and "given publicly" in descr
    assert "skdp.preprocessing" in descr


# ---------------------------------------------------------------------------
# The values are the file's values
# ---------------------------------------------------------------------------


def test_adult_first_rows_are_the_files(loaded):
    train = loaded("adult").data
    assert train.iloc[0].tolist() == [
        39, "State-gov", 77516, "Bachelors", 13, "Never-married",
        "Adm-clerical", "Not-in-family", "White", "Male", 2174, 0, 40,
        "United-States",
    ]  # fmt: skip
    # adult.test: the "|1x3 Cross validator" line is not a row
    test = loaded("adult_test").data
    assert test.iloc[0].tolist() == [
        25, "Private", 226802, "11th", 7, "Never-married", "Machine-op-inspct",
        "Own-child", "Black", "Male", 0, 0, 40, "United-States",
    ]  # fmt: skip
    # no scaling or clipping: the files' ranges
    assert train["age"].min() == 17 and train["age"].max() == 90
    assert train["capital-gain"].max() == 99999


@pytest.mark.parametrize(
    "key, counts, n_rows",
    [
        (
            "adult",
            {"workclass": 1836, "occupation": 1843, "native-country": 583},
            2399,
        ),
        (
            "adult_test",
            {"workclass": 963, "occupation": 966, "native-country": 274},
            1221,
        ),
    ],
)
def test_adult_question_marks_become_nan(loaded, key, counts, n_rows):
    data = loaded(key).data
    na = data.isna().sum()
    assert na[na > 0].to_dict() == counts
    assert int(data.isna().any(axis=1).sum()) == n_rows
    for name in ADULT_STRINGS:
        assert not (data[name] == "?").any()
    # independent count of the '?' fields in the file itself
    filename = "adult.data" if key == "adult" else "adult.test"
    with open(DATA_DIR / "adult" / filename, newline="") as f:
        rows = [
            r
            for r in csv.reader(f, skipinitialspace=True)
            if len(r) == len(ADULT_FEATURES) + 1
        ]
    assert len(rows) == len(data)
    in_file = {
        name: sum(r[j] == "?" for r in rows) for j, name in enumerate(ADULT_FEATURES)
    }
    assert {k: v for k, v in in_file.items() if v} == counts


def test_adult_test_subset_reads_adult_test_only(pd, tmp_path):
    require("adult/adult.test")
    (tmp_path / "adult").mkdir()
    shutil.copyfile(
        DATA_DIR / "adult" / "adult.test", tmp_path / "adult" / "adult.test"
    )
    X, y = load_adult(
        subset="test", data_home=tmp_path, return_X_y=True, as_frame=True
    )
    assert X.shape == (16281, 14) and int(y.sum()) == 3846


def test_bank_unknown_is_a_category_value(loaded):
    data = loaded("bank").data
    assert not data.isna().any().any()
    unknown = (data == "unknown").sum()
    assert unknown[unknown > 0].to_dict() == {
        "job": 288, "education": 1857, "contact": 13020, "poutcome": 36959,
    }  # fmt: skip
    assert data.iloc[0].tolist() == [
        58, "management", "married", "tertiary", "no", 2143, "yes", "no",
        "unknown", 5, "may", 261, 1, -1, 0, "unknown",
    ]  # fmt: skip
    assert data["balance"].min() < 0  # unscaled


def test_credit_card_drops_id_and_keeps_numbers(loaded):
    data = loaded("credit").data
    assert "ID" not in data.columns and "Y" not in data.columns
    assert not data.isna().any().any()
    for name in CREDIT_FLOATS:  # float64 only because of the 5.00E+05 notation
        col = data[name].to_numpy()
        np.testing.assert_array_equal(col, np.round(col))
    assert data.iloc[0].tolist() == [
        20000, 2, 2, 1, 24, 2, 2, -1, -1, -2, -2,
        3913, 3102, 689, 0, 0, 0, 0, 689, 0, 0, 0, 0,
    ]  # fmt: skip
    assert sorted(data["X3"].unique()) == [0, 1, 2, 3, 4, 5, 6]


# ---------------------------------------------------------------------------
# The default output is unchanged
# ---------------------------------------------------------------------------


def _default_output_sha256(bunch):
    h = hashlib.sha256()
    h.update(repr(bunch.data.shape).encode())
    h.update(bunch.data.dtype.str.encode())
    h.update(np.ascontiguousarray(bunch.data).tobytes())
    h.update(bunch.target.dtype.str.encode())
    h.update(bunch.target.tobytes())
    h.update(json.dumps(list(bunch.feature_names)).encode())
    h.update(np.asarray(bunch.preprocessing["numeric_min"]).tobytes())
    h.update(np.asarray(bunch.preprocessing["numeric_max"]).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("key", list(CASES))
def test_default_output_is_bitwise_unchanged(loaded, key):
    bunch = loaded(key, as_frame=False)
    assert "frame" not in bunch
    assert isinstance(bunch.data, np.ndarray)
    assert _default_output_sha256(bunch) == DEFAULT_OUTPUT_SHA256[key]


def _encode(frame_data, numeric, levels, *, drop_first, bounds=None):
    """The documented rule, written again: min-max, one-hot, / sqrt(d)."""
    blocks = []
    for name in frame_data.columns:
        col = frame_data[name]
        if name in levels:
            codes = col.fillna("?").to_numpy() if col.dtype == object else col
            codes = np.asarray(codes)
            onehot = np.stack(
                [(codes == lv).astype(np.float64) for lv in levels[name]], axis=1
            )
            assert (onehot.sum(axis=1) == 1).all(), name
            blocks.append(onehot[:, 1:] if drop_first else onehot)
        elif name in numeric:
            v = col.to_numpy(dtype=np.float64)
            lo, hi = bounds[name] if bounds else (v.min(), v.max())
            scaled = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
            blocks.append(np.clip(scaled, 0.0, 1.0)[:, None])
    X = np.hstack(blocks)
    return X / np.sqrt(X.shape[1])


@pytest.mark.parametrize("key", list(CASES))
def test_raw_frame_encodes_to_the_default_design(loaded, key):
    """Encoding the raw frame by the documented rule gives the default output."""
    raw, encoded = loaded(key).data, loaded(key, as_frame=False)
    numeric = encoded.preprocessing["numeric_columns"]
    if key == "credit":
        raw = raw.set_axis(_uci._CREDIT_NAMES, axis=1)
        levels, drop_first = _uci._CREDIT_LEVELS, False
    elif key == "bank":
        levels, drop_first = _uci._BANK_LEVELS, True
    else:
        levels, drop_first = _uci._ADULT_LEVELS, False
    bounds = None
    if key == "adult_test":  # bounds of the training file
        train = loaded("adult").data
        bounds = {c: (train[c].min(), train[c].max()) for c in numeric}
    X = _encode(raw, numeric, levels, drop_first=drop_first, bounds=bounds)
    np.testing.assert_array_equal(X, encoded.data)


# ---------------------------------------------------------------------------
# pandas is optional
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("loader", [load_adult, load_bank, load_credit_card])
def test_missing_pandas_raises_an_actionable_import_error(
    monkeypatch, loader, tmp_path
):
    monkeypatch.setitem(sys.modules, "pandas", None)
    # raised before any file is looked for: tmp_path holds no data
    with pytest.raises(ImportError, match="pip install pandas"):
        loader(data_home=tmp_path, as_frame=True)
    with pytest.raises(ImportError, match="pip install pandas"):
        loader(data_home=tmp_path, as_frame=True, return_X_y=True)


def test_default_output_does_not_need_pandas(monkeypatch):
    require("bank/bank-full.csv")
    monkeypatch.setitem(sys.modules, "pandas", None)
    X, y = load_bank(data_home=DATA_DIR, return_X_y=True)
    assert X.shape == (45211, 42) and y.shape == (45211,)
