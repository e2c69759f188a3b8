"""Tests of the UCI loaders and of the checksummed file access.

The real files are read from ``$SKDP_DATA`` if set, else from ``../shared/data``
next to the repository root; tests that need a file skip when it is absent.
No test touches the network: ``urlopen`` is replaced by a function that raises, and
the download tests serve their archives from a local HTTP server.
"""

import dataclasses
import functools
import hashlib
import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from skdp.datasets import (
    ChecksumError,
    DatasetNotFoundError,
    get_data_home,
    load_adult,
    load_airfoil,
    load_bank,
    load_bike_sharing,
    load_concrete,
    load_credit_card,
    load_wine_quality,
)
from skdp.datasets import _base, _uci

from ._local_data import DATA_DIR, refuse_network, require, serve_locally

# key: (loader, kwargs, n_samples, d, n_positives or None, required files)
CASES = {
    "bank": (load_bank, {}, 45211, 42, 5289, ["bank/bank-full.csv"]),
    "adult": (load_adult, {}, 32561, 108, 7841, ["adult/adult.data"]),
    "adult_test": (
        load_adult,
        {"subset": "test"},
        16281,
        108,
        3846,
        ["adult/adult.data", "adult/adult.test"],
    ),
    "credit": (
        load_credit_card,
        {},
        30000,
        33,
        6636,
        ["creditcard/UCI_Credit_Card.csv"],
    ),
    "wine": (
        load_wine_quality,
        {},
        6497,
        12,
        None,
        ["wine/winequality-red.csv", "wine/winequality-white.csv"],
    ),
    "wine_red": (
        load_wine_quality,
        {"color": "red"},
        1599,
        11,
        None,
        ["wine/winequality-red.csv"],
    ),
    "wine_white": (
        load_wine_quality,
        {"color": "white"},
        4898,
        11,
        None,
        ["wine/winequality-white.csv"],
    ),
    "bike": (load_bike_sharing, {}, 17379, 61, None, ["bike/hour.csv"]),
    "airfoil": (load_airfoil, {}, 1503, 5, None, ["airfoil/airfoil_self_noise.dat"]),
    "concrete": (load_concrete, {}, 1030, 8, None, ["concrete/Concrete_Data.csv"]),
}
CLASSIFICATION = [k for k, c in CASES.items() if c[4] is not None]
REGRESSION = [k for k, c in CASES.items() if c[4] is None]

AIRFOIL = "airfoil/airfoil_self_noise.dat"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail loudly if any code path tries to reach the network."""
    refuse_network(monkeypatch)


@pytest.fixture(scope="module")
def loaded():
    """Load each dataset at most once per module."""
    cache = {}

    def get(key):
        loader, kwargs, *_, files = CASES[key]
        require(*files)
        if key not in cache:
            cache[key] = loader(data_home=DATA_DIR, **kwargs)
        return cache[key]

    return get


def _copy(rel, home):
    dest = Path(home) / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA_DIR / rel, dest)
    return dest


# ---------------------------------------------------------------------------
# Shapes, bounds, targets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(CASES))
def test_shape_dtype_and_metadata(loaded, key):
    _, _, n, d, _, _ = CASES[key]
    bunch = loaded(key)
    X, y = bunch.data, bunch.target
    assert X.shape == (n, d)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (n,)
    assert len(bunch.feature_names) == d
    assert len(set(bunch.feature_names)) == d
    assert bunch.preprocessing["n_features"] == d
    assert bunch.preprocessing["column_scale"] == pytest.approx(1 / np.sqrt(d))
    assert "privacy_note" in bunch.preprocessing
    assert "DOI 10.24432/" in bunch.DESCR and f"d = {d}" in bunch.DESCR


@pytest.mark.parametrize("key", list(CASES))
def test_finite_and_row_norms_bounded(loaded, key):
    bunch = loaded(key)
    X, y = bunch.data, bunch.target
    d = X.shape[1]
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 1 + 1e-12
    assert norms.max() <= bunch.preprocessing["row_norm_bound_tight"] + 1e-12
    # every column lies in [0, 1/sqrt(d)] (min-max or one-hot, then / sqrt(d))
    assert X.min() >= 0.0
    assert X.max() <= 1 / np.sqrt(d) + 1e-15


@pytest.mark.parametrize("key", [k for k in CASES if k != "adult_test"])
def test_numeric_columns_span_the_unit_interval(loaded, key):
    # min-max over the file: each numeric column reaches 0 and 1 (before /sqrt(d))
    bunch = loaded(key)
    X = bunch.data * np.sqrt(bunch.data.shape[1])
    for name in bunch.preprocessing["numeric_columns"]:
        col = X[:, bunch.feature_names.index(name)]
        assert col.min() == pytest.approx(0.0, abs=1e-12)
        assert col.max() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("key", list(CASES))
def test_one_hot_groups(loaded, key):
    bunch = loaded(key)
    prep = bunch.preprocessing
    X = bunch.data * np.sqrt(bunch.data.shape[1])
    for name, levels in prep["categorical_levels"].items():
        cols = [
            i for i, f in enumerate(bunch.feature_names) if f.startswith(f"{name}_")
        ]
        k_minus = 1 if name in prep["dropped_levels"] else 0
        assert len(cols) == len(levels) - k_minus
        block = X[:, cols]
        assert set(np.unique(np.round(block, 12))) <= {0.0, 1.0}
        sums = np.round(block.sum(axis=1), 12)
        if k_minus:
            assert set(np.unique(sums)) <= {0.0, 1.0}
        else:
            np.testing.assert_array_equal(sums, 1.0)


@pytest.mark.parametrize("key", CLASSIFICATION)
def test_class_balance(loaded, key):
    _, _, n, _, n_pos, _ = CASES[key]
    bunch = loaded(key)
    assert bunch.target.dtype == np.int64
    assert set(np.unique(bunch.target)) == {0, 1}
    assert int(bunch.target.sum()) == n_pos
    assert len(bunch.target_names) == 2


@pytest.mark.parametrize(
    "key, lo, hi",
    [
        ("wine", 3.0, 9.0),
        ("wine_red", 3.0, 8.0),
        ("bike", 1.0, 977.0),
        ("airfoil", 103.38, 140.987),
        ("concrete", 2.331807832, 82.5992248),
    ],
)
def test_regression_target_raw_by_default(loaded, key, lo, hi):
    bunch = loaded(key)
    assert bunch.target.dtype == np.float64
    assert bunch.target.min() == pytest.approx(lo)
    assert bunch.target.max() == pytest.approx(hi)
    assert bunch.preprocessing["target_scale"] is None


@pytest.mark.parametrize("key", ["credit", "airfoil", "wine_red", "concrete"])
def test_return_X_y(loaded, key):
    loader, kwargs, *_ = CASES[key]
    bunch = loaded(key)
    X, y = loader(data_home=DATA_DIR, return_X_y=True, **kwargs)
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)


# ---------------------------------------------------------------------------
# Dataset-specific rules
# ---------------------------------------------------------------------------


def test_bank_encoding(loaded):
    bunch = loaded("bank")
    prep = bunch.preprocessing
    assert len(prep["numeric_columns"]) == 7
    assert prep["dropped_levels"] == {
        name: sorted(levels)[0] for name, levels in prep["categorical_levels"].items()
    }
    assert "job_admin." not in bunch.feature_names
    assert "month_apr" not in bunch.feature_names and "month_may" in bunch.feature_names
    # first row: age 58, min/max age 18/95 (UCI description)
    assert prep["numeric_min"][0] == 18 and prep["numeric_max"][0] == 95
    age = bunch.data[0, bunch.feature_names.index("age")]
    assert age == pytest.approx((58 - 18) / (95 - 18) / np.sqrt(42))
    assert bunch.target[0] == 0  # first row is 'no'
    assert list(bunch.target_names) == ["no", "yes"]


def test_adult_train_and_test_share_encoding(loaded):
    train, test = loaded("adult"), loaded("adult_test")
    assert train.feature_names == test.feature_names
    np.testing.assert_array_equal(
        train.preprocessing["numeric_min"], test.preprocessing["numeric_min"]
    )
    np.testing.assert_array_equal(
        train.preprocessing["numeric_max"], test.preprocessing["numeric_max"]
    )
    assert "workclass_?" in train.feature_names
    assert "native-country_Holand-Netherlands" in test.feature_names
    # '?' kept as a level: 1,836 train rows have workclass '?' (UCI description)
    idx = train.feature_names.index("workclass_?")
    assert int(np.count_nonzero(train.data[:, idx])) == 1836
    assert list(train.target_names) == ["<=50K", ">50K"]


def test_credit_card_encoding(loaded):
    bunch = loaded("credit")
    names = bunch.feature_names
    assert "ID" not in names and names[0] == "LIMIT_BAL"
    assert len(bunch.preprocessing["numeric_columns"]) == 20
    assert bunch.preprocessing["dropped_columns"] == ["ID"]
    # first row: X2 (SEX) = 2, X3 (EDUCATION) = 2, X4 (MARRIAGE) = 1, Y = 1
    row = bunch.data[0] * np.sqrt(33)
    for name in ["SEX_2", "EDUCATION_2", "MARRIAGE_1"]:
        assert row[names.index(name)] == pytest.approx(1.0)
    assert bunch.target[0] == 1


def test_wine_indicator(loaded):
    bunch = loaded("wine")
    assert bunch.feature_names[-1] == "is_red"
    is_red = bunch.data[:, -1] * np.sqrt(12)
    np.testing.assert_allclose(is_red[:1599], 1.0)
    np.testing.assert_allclose(is_red[1599:], 0.0)
    red = loaded("wine_red")
    assert "is_red" not in red.feature_names
    np.testing.assert_array_equal(red.target, bunch.target[:1599])


def test_bike_drops_leaky_columns(loaded):
    bunch = loaded("bike")
    names = set(bunch.feature_names)
    for dropped in ["instant", "dteday", "casual", "registered", "cnt"]:
        assert not any(n == dropped or n.startswith(dropped + "_") for n in names)
    assert len(bunch.preprocessing["categorical_levels"]) == 8
    numeric = bunch.preprocessing["numeric_columns"]
    assert numeric == ["temp", "atemp", "hum", "windspeed"]
    assert bunch.target[0] == 16.0  # first hour: cnt = 16


def test_airfoil_first_row(loaded):
    bunch = loaded("airfoil")
    assert bunch.target[0] == pytest.approx(126.201)
    assert bunch.preprocessing["numeric_min"][0] == 200.0
    assert bunch.preprocessing["numeric_max"][0] == 20000.0


def test_target_scale(loaded):
    require(AIRFOIL)
    raw = loaded("airfoil").target
    y = load_airfoil(data_home=DATA_DIR, target_scale="minmax").target
    assert y.min() == 0.0 and y.max() == 1.0
    np.testing.assert_allclose(y, (raw - raw.min()) / (raw.max() - raw.min()))
    bunch = load_airfoil(data_home=DATA_DIR, target_scale=200.0)
    np.testing.assert_allclose(bunch.target, raw / 200.0)
    assert bunch.preprocessing["target_scale"] == 200.0
    for bad in ["zscore", 0.0, -1.0, np.inf, True]:
        with pytest.raises(ValueError, match="target_scale"):
            load_airfoil(data_home=DATA_DIR, target_scale=bad)


def test_invalid_options():
    with pytest.raises(ValueError, match="subset"):
        load_adult(subset="validation", data_home=DATA_DIR)
    with pytest.raises(ValueError, match="color"):
        load_wine_quality(color="rose", data_home=DATA_DIR)


# ---------------------------------------------------------------------------
# data_home resolution
# ---------------------------------------------------------------------------


def test_get_data_home_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("SKDP_DATA", str(tmp_path / "env"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert get_data_home() == tmp_path / "env"
    monkeypatch.delenv("SKDP_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert get_data_home() == tmp_path / "xdg" / "skdp"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == tmp_path / "home" / ".cache" / "skdp"
    assert not (tmp_path / "home").exists()  # resolution creates nothing


def test_data_home_argument_is_honoured(loaded, monkeypatch, tmp_path):
    require(AIRFOIL)
    _copy(AIRFOIL, tmp_path)
    monkeypatch.setenv("SKDP_DATA", str(tmp_path / "does-not-exist"))
    X, y = load_airfoil(data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X, loaded("airfoil").data)
    with pytest.raises(DatasetNotFoundError):
        load_airfoil()  # the env var points to an empty place


def test_env_var_is_honoured(loaded, monkeypatch, tmp_path):
    require(AIRFOIL)
    _copy(AIRFOIL, tmp_path)
    monkeypatch.setenv("SKDP_DATA", str(tmp_path))
    X, y = load_airfoil(return_X_y=True)
    np.testing.assert_array_equal(y, loaded("airfoil").target)


# ---------------------------------------------------------------------------
# Checksums and missing files
# ---------------------------------------------------------------------------


def test_corrupted_file_is_refused(tmp_path):
    require(AIRFOIL)
    path = _copy(AIRFOIL, tmp_path)
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    with pytest.raises(ChecksumError) as excinfo:
        load_airfoil(data_home=tmp_path)
    msg = str(excinfo.value)
    assert str(path) in msg
    assert _uci._AIRFOIL.sha256 in msg and actual in msg
    assert isinstance(excinfo.value, OSError)


def test_truncated_wine_file_is_refused(tmp_path):
    require("wine/winequality-red.csv", "wine/winequality-white.csv")
    _copy("wine/winequality-red.csv", tmp_path)
    white = _copy("wine/winequality-white.csv", tmp_path)
    white.write_bytes(white.read_bytes()[:-40])
    with pytest.raises(ChecksumError, match="winequality-white.csv"):
        load_wine_quality(data_home=tmp_path)
    # the red file alone is intact
    assert load_wine_quality(color="red", data_home=tmp_path).data.shape == (1599, 11)


@pytest.mark.parametrize(
    "loader, filename, url",
    [
        (load_bank, "bank-full.csv", "222/bank+marketing.zip"),
        (functools.partial(load_adult, subset="test"), "adult.test", "2/adult.zip"),
        (load_wine_quality, "winequality-red.csv", "186/wine+quality.zip"),
        (load_bike_sharing, "hour.csv", "275/bike+sharing+dataset.zip"),
        (load_airfoil, "airfoil_self_noise.dat", "291/airfoil+self+noise.zip"),
    ],
)
def test_missing_file_error(tmp_path, loader, filename, url):
    with pytest.raises(DatasetNotFoundError) as excinfo:
        loader(data_home=tmp_path)
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, FileNotFoundError)
    assert filename in msg and str(tmp_path) in msg
    assert "SKDP_DATA" in msg and "download_if_missing=True" in msg
    assert f"https://archive.ics.uci.edu/static/public/{url}" in msg
    assert not any(tmp_path.iterdir())  # nothing was created


@pytest.mark.parametrize(
    "loader, filename",
    [(load_credit_card, "UCI_Credit_Card.csv"), (load_concrete, "Concrete_Data.csv")],
)
@pytest.mark.parametrize("download", [False, True])
def test_content_verified_csv_cannot_be_downloaded(
    tmp_path, loader, filename, download
):
    # the autouse fixture makes any fetch attempt an AssertionError
    with pytest.raises(DatasetNotFoundError) as excinfo:
        loader(data_home=tmp_path, download_if_missing=download)
    msg = str(excinfo.value)
    assert filename in msg and "SKDP_DATA" in msg
    assert "cannot be downloaded automatically" in msg and "Excel" in msg


# ---------------------------------------------------------------------------
# Download path: sklearn.datasets.fetch_file against a local HTTP server
# ---------------------------------------------------------------------------


def _zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def server(monkeypatch):
    """A local HTTP server that ``urlopen`` may reach (nothing else)."""
    srv = serve_locally(monkeypatch)
    yield srv
    srv.close()


def _serve(monkeypatch, server, name, archive):
    """Point the registry entry ``_uci.<name>`` at ``archive`` on the local server."""
    path = "/static/public/" + _uci.__dict__[name].url.rsplit("/", 1)[-1]
    server.files[path] = archive
    meta = dataclasses.replace(_uci.__dict__[name], url=server.url(path))
    monkeypatch.setattr(_uci, name, meta)
    return meta


def _leftovers(folder):
    return [p.name for p in Path(folder).iterdir() if p.name.startswith(".")]


def test_registry_urls_are_the_official_https_archives():
    metas = [v for v in vars(_uci).values() if isinstance(v, _base.RemoteFileMetadata)]
    assert len(metas) == 9
    for meta in metas:
        if meta.url is not None:
            assert meta.url.startswith("https://archive.ics.uci.edu/static/public/")
            assert meta.url.endswith(".zip") and meta.members
        assert len(meta.sha256) == 64


def test_download_airfoil_normalises_newlines(loaded, monkeypatch, server, tmp_path):
    require(AIRFOIL)
    original = (DATA_DIR / AIRFOIL).read_bytes()
    crlf = original.replace(b"\n", b"\r\n")  # the UCI original may use CRLF
    meta = _serve(
        monkeypatch, server, "_AIRFOIL", _zip_bytes({"airfoil_self_noise.dat": crlf})
    )
    bunch = load_airfoil(data_home=tmp_path, download_if_missing=True)
    assert server.requests == [meta.url[len(server.base) :]]
    written = tmp_path / AIRFOIL
    assert written.read_bytes() == original
    np.testing.assert_array_equal(bunch.data, loaded("airfoil").data)
    assert _leftovers(written.parent) == []
    assert sorted(p.name for p in written.parent.iterdir()) == [written.name]
    # a second load uses the file on disk and does not fetch again
    load_airfoil(data_home=tmp_path, download_if_missing=True)
    assert len(server.requests) == 1


def test_download_with_bad_checksum_writes_nothing(monkeypatch, server, tmp_path):
    require(AIRFOIL)
    tampered = (DATA_DIR / AIRFOIL).read_bytes().replace(b"126.201", b"126.202", 1)
    meta = _serve(
        monkeypatch, server, "_AIRFOIL", _zip_bytes({"airfoil_self_noise.dat": tampered})
    )
    with pytest.raises(ChecksumError) as excinfo:
        load_airfoil(data_home=tmp_path, download_if_missing=True)
    msg = str(excinfo.value)
    assert meta.sha256 in msg and meta.url in msg
    assert hashlib.sha256(tampered).hexdigest() in msg
    assert len(server.requests) == 1
    # no partial file: neither the data file nor the archive nor a temporary folder
    assert list((tmp_path / "airfoil").iterdir()) == []


def test_download_nested_bank_archive(monkeypatch, server, tmp_path):
    require("bank/bank-full.csv")
    original = (DATA_DIR / "bank/bank-full.csv").read_bytes()
    inner = _zip_bytes(
        {"bank-full.csv": original, "bank.csv": b"x", "bank-names.txt": b"y"}
    )
    outer = _zip_bytes(
        {"bank.zip": inner, "bank-additional.zip": _zip_bytes({"a": b""})}
    )
    meta = _serve(monkeypatch, server, "_BANK_FULL", outer)
    (path,) = _base._fetch_files([meta], data_home=tmp_path, download_if_missing=True)
    assert path == tmp_path / "bank" / "bank-full.csv"
    assert path.read_bytes() == original
    assert server.requests == ["/static/public/bank+marketing.zip"]
    assert list(path.parent.iterdir()) == [path]


def test_download_fetches_each_archive_once(monkeypatch, server, tmp_path):
    require("adult/adult.data", "adult/adult.test")
    members = {
        f"adult/{name}": (DATA_DIR / "adult" / name).read_bytes()
        for name in ["adult.data", "adult.test"]
    }  # members in a sub-folder are found by base name
    data = _serve(monkeypatch, server, "_ADULT_DATA", _zip_bytes(members))
    test = dataclasses.replace(_uci._ADULT_TEST, url=data.url)
    paths = _base._fetch_files([data, test], data_home=tmp_path, download_if_missing=True)
    assert server.requests == ["/static/public/adult.zip"]
    assert [p.name for p in paths] == ["adult.data", "adult.test"]
    assert all(p.is_file() for p in paths)
    assert _leftovers(tmp_path / "adult") == []


def test_download_missing_member(monkeypatch, server, tmp_path):
    _serve(monkeypatch, server, "_AIRFOIL", _zip_bytes({"other.dat": b"1 2 3\n"}))
    with pytest.raises(OSError, match="airfoil_self_noise.dat"):
        load_airfoil(data_home=tmp_path, download_if_missing=True)
    assert list((tmp_path / "airfoil").iterdir()) == []


def test_download_http_error_names_the_url(monkeypatch, server, tmp_path):
    meta = _serve(monkeypatch, server, "_AIRFOIL", b"")
    server.files.clear()  # the server answers 404
    monkeypatch.setattr(_base, "_N_RETRIES", 0)
    with pytest.raises(OSError, match="Could not download .*airfoil.*404"):
        load_airfoil(data_home=tmp_path, download_if_missing=True)
    assert server.requests == [meta.url[len(server.base) :]]
    assert list((tmp_path / "airfoil").iterdir()) == []
