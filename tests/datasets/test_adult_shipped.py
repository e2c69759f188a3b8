"""Adult needs no network: ``load_adult`` falls back to the ``adult.data`` shipped in the
package, and the download and missing-file errors say where to put the files."""

import functools
import hashlib
import urllib.error

import pytest

from skdp.datasets import ChecksumError, DatasetNotFoundError, _uci, load_adult
from skdp.datasets import load_bank, load_wine_quality

from ._local_data import refuse_network
from .test_outputs_pinned import SHA256, _update


@pytest.fixture
def no_data_home(monkeypatch, tmp_path):
    """No SKDP_DATA, an empty cache folder, and a network that fails."""
    monkeypatch.delenv("SKDP_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    refuse_network(monkeypatch)

    def failing_fetch(url, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    import sklearn.datasets

    monkeypatch.setattr(sklearn.datasets, "fetch_file", failing_fetch)
    return tmp_path / "cache" / "skdp"


def _sha256(bunch):
    h = hashlib.sha256()
    _update(h, dict(bunch))
    return h.hexdigest()


@pytest.mark.parametrize("download", [False, True])
def test_adult_frame_reads_the_shipped_copy_offline(no_data_home, download):
    pytest.importorskip("pandas")
    bunch = load_adult(as_frame=True, download_if_missing=download)
    # bitwise the output pinned from the data home's adult.data
    assert _sha256(bunch) == SHA256["adult_frame"]
    assert not no_data_home.exists()   # nothing downloaded or written


def test_adult_encoded_reads_the_shipped_copy_offline(no_data_home):
    assert _sha256(load_adult(download_if_missing=True)) == SHA256["adult"]


def test_readme_call_works_offline(no_data_home):
    X, y = load_adult(as_frame=True, return_X_y=True, download_if_missing=True)
    assert X.shape == (32561, 14) and int(y.sum()) == 7841


def test_adult_test_download_failure_names_data_home_and_shipped_file(no_data_home):
    with pytest.raises(OSError) as excinfo:
        load_adult(subset="test", as_frame=True, download_if_missing=True)
    msg = str(excinfo.value)
    assert "Could not download" in msg and "name resolution" in msg
    assert "SKDP_DATA=" in msg and "'adult.test'" in msg
    assert str(no_data_home / "adult") in msg
    assert "adult.data.gz" in msg   # the shipped copy: the train subset needs no network


def test_adult_test_missing_names_data_home_and_shipped_file(no_data_home):
    with pytest.raises(DatasetNotFoundError) as excinfo:
        load_adult(subset="test")
    msg = str(excinfo.value)
    assert "SKDP_DATA=" in msg and "'adult.test'" in msg and "adult.data.gz" in msg


@pytest.mark.parametrize("loader, folder, files", [
    (load_bank, "bank", ["bank-full.csv"]),
    (functools.partial(load_wine_quality, color="red"), "wine", ["winequality-red.csv"]),
])
def test_other_loaders_say_where_to_put_their_files(no_data_home, loader, folder, files):
    for download in (False, True):
        with pytest.raises(OSError) as excinfo:
            loader(download_if_missing=download)
        msg = str(excinfo.value)
        assert "SKDP_DATA=/path/to/data" in msg and f"/path/to/data/{folder}/" in msg
        assert str(no_data_home / folder) in msg
        assert all(f"'{name}'" in msg for name in files)


def test_data_home_copy_is_preferred_and_still_verified(no_data_home, tmp_path):
    home = tmp_path / "home"
    (home / "adult").mkdir(parents=True)
    (home / "adult" / "adult.data").write_bytes(b"not the UCI file\n")
    with pytest.raises(ChecksumError, match="adult.data"):
        load_adult(data_home=home, as_frame=True)


def test_damaged_shipped_copy_is_refused(no_data_home, monkeypatch):
    import dataclasses

    monkeypatch.setattr(_uci, "_ADULT_DATA", dataclasses.replace(_uci._ADULT_DATA,
                                                                 sha256="0" * 64))
    with pytest.raises(ChecksumError, match="shipped copy"):
        load_adult(as_frame=True)

