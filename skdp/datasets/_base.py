"""Data-home resolution and checksummed access to dataset files.

Every dataset file that :mod:`skdp.datasets` reads is described by a
:class:`RemoteFileMetadata` record that holds its folder, its UCI file name, its
SHA-256 and, when the file can be recreated from the official UCI archive, the
archive URL and the archive member. :func:`_fetch_files` is the single entry
point the loaders use: it resolves the path of each file under ``data_home``,
downloads missing files when asked to, and verifies the SHA-256 of every file
*before* it is parsed.

Downloads go through :func:`sklearn.datasets.fetch_file` (in :func:`_download`),
the only network access of the package.
"""

# Authors: skdp developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DATA_HOME_ENV_VAR",
    "ChecksumError",
    "DatasetNotFoundError",
    "RemoteFileMetadata",
    "get_data_home",
]

#: Environment variable that sets the data home when no ``data_home`` is given.
DATA_HOME_ENV_VAR = "SKDP_DATA"

_CHUNK = 1 << 20
#: retries of a failed download (sklearn.datasets.fetch_file waits 1 s between)
_N_RETRIES = 3


class ChecksumError(OSError):
    """A dataset file's SHA-256 differs from the published one.

    Raised before any parsing, both for files already on disk and for freshly
    downloaded files (which are then not written). The message names the file,
    the expected and the actual SHA-256.

    Examples
    --------
    >>> from skdp.datasets import ChecksumError
    >>> issubclass(ChecksumError, OSError)
    True
    """


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is absent from the data home and was not downloaded.

    The message names the missing path, the :envvar:`SKDP_DATA` environment
    variable and how to obtain the file.

    Examples
    --------
    >>> import tempfile
    >>> from skdp.datasets import DatasetNotFoundError, load_airfoil
    >>> with tempfile.TemporaryDirectory() as empty:
    ...     try:
    ...         load_airfoil(data_home=empty)
    ...     except DatasetNotFoundError:
    ...         print("not found, nothing downloaded")
    not found, nothing downloaded
    """


@dataclass(frozen=True)
class RemoteFileMetadata:
    """Where a dataset file lives locally and how it can be recreated.

    Parameters
    ----------
    folder : str
        Sub-folder of the data home, e.g. ``"bank"``.
    filename : str
        File name inside ``folder``; the name used by the UCI distribution.
    sha256 : str
        Lower-case hex SHA-256 of the file as skdp expects it.
    url : str or None
        Official UCI archive (zip) that contains the file, or None when the
        file cannot be recreated byte-for-byte from the archive.
    members : tuple of str
        Path of the file inside the archive. More than one entry means nested
        archives: ``("bank.zip", "bank-full.csv")`` reads ``bank.zip`` from the
        outer archive and then ``bank-full.csv`` from it. A member that is not
        found under its exact path is looked up by base name.
    transform : {None, "lf_newlines"}
        Lossless normalisation applied to the extracted bytes before the
        checksum is verified: ``"lf_newlines"`` turns CRLF and CR line ends
        into LF and makes the file end with one LF.
    landing_page : str
        Human-readable UCI page of the dataset.
    no_download_reason : str or None
        Why ``url`` is None; shown in the error when a download is requested.
    offline_note : str or None
        What works without a network (e.g. a copy shipped with the package);
        appended to the errors for a missing file and for a failed download.
    """

    folder: str
    filename: str
    sha256: str
    url: str | None
    members: tuple = ()
    transform: str | None = None
    landing_page: str = ""
    no_download_reason: str | None = None
    offline_note: str | None = None


def _default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "skdp"


def get_data_home(data_home=None) -> Path:
    """Return the folder that holds the skdp dataset files.

    The folder is, in order of precedence:

    1. the ``data_home`` argument;
    2. the environment variable ``SKDP_DATA``;
    3. ``$XDG_CACHE_HOME/skdp`` if ``XDG_CACHE_HOME`` is set, else
       ``~/.cache/skdp``.

    Dataset files live at ``<data_home>/<folder>/<UCI file name>``, e.g.
    ``<data_home>/bank/bank-full.csv``. The folder is not created here; it is
    created only when a file is downloaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit data home. ``~`` is expanded.

    Returns
    -------
    data_home : pathlib.Path
        The resolved data home (absolute).

    Examples
    --------
    >>> from skdp.datasets import get_data_home
    >>> str(get_data_home("/tmp/skdp_data"))
    '/tmp/skdp_data'
    """
    if data_home is None:
        env = os.environ.get(DATA_HOME_ENV_VAR)
        data_home = Path(env) if env else _default_cache_dir()
    return Path(os.fspath(data_home)).expanduser().absolute()


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify_checksum(path: Path, meta: RemoteFileMetadata, source=None) -> None:
    actual = _sha256(path)
    if actual == meta.sha256:
        return
    if source is None:
        what = f"dataset file {path}"
        advice = (
            f"The file is corrupted or is not the expected version of "
            f"'{meta.filename}'. Delete it and obtain a verified copy "
            f"(download_if_missing=True where supported, or the UCI page "
            f"{meta.landing_page})."
        )
    else:
        what = f"'{meta.filename}' extracted from {source}"
        advice = (
            "The file was not written. The download may be corrupted, or UCI "
            "may have changed the archive."
        )
    raise ChecksumError(
        f"Checksum mismatch for {what}: expected SHA-256 {meta.sha256}, got "
        f"{actual}. {advice}"
    )


def _where_to_put(metas, data_home: Path) -> str:
    """Where the files of ``metas`` must be placed to be found without a download."""
    files = ", ".join(f"'{m.filename}'" for m in metas)
    folder = metas[0].folder
    return (
        f"Put {files} in {data_home / folder}, or set {DATA_HOME_ENV_VAR}=/path/to/data "
        f"with the file{'s' if len(metas) > 1 else ''} in /path/to/data/{folder}/."
    )


def _missing_message(path: Path, data_home: Path, meta: RemoteFileMetadata) -> str:
    if meta.url is not None:
        how = (
            f"pass download_if_missing=True to download {meta.url} (the official "
            f"UCI archive; the extracted file is SHA-256 verified), or download "
            f"it yourself from {meta.landing_page} and place '{meta.filename}' "
            f"at the path above"
        )
    else:
        how = (
            f"this file cannot be downloaded automatically: "
            f"{meta.no_download_reason} Place a copy with SHA-256 {meta.sha256} "
            f"at the path above"
        )
    note = f" {meta.offline_note}" if meta.offline_note else ""
    return (
        f"Dataset file not found: {path}. Dataset files are looked up under "
        f"data_home (the argument), else the {DATA_HOME_ENV_VAR} environment "
        f"variable, else {_default_cache_dir()}; the resolved data_home is "
        f"{data_home}. To obtain the file, {how}. "
        f"{_where_to_put([meta], data_home)}{note}"
    )


def _read_member(archive_path, members) -> bytes:
    """The bytes of ``members`` (nested archives) inside the zip ``archive_path``."""
    data = Path(archive_path).read_bytes()
    for member in members:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            found = [member] if member in names else [
                n for n in names if n.rsplit("/", 1)[-1] == member
            ]
            if len(found) != 1:
                raise OSError(
                    f"Archive member '{member}' not found (or ambiguous) in the "
                    f"downloaded archive; members are {names}."
                )
            data = archive.read(found[0])
    return data


def _download(metas, data_home: Path) -> None:
    """Download the archive that ``metas`` share, extract and verify their files.

    :func:`sklearn.datasets.fetch_file` downloads the archive (with retries) into
    a temporary folder next to the files; each file is extracted there, verified
    and only then moved into place, so a failure leaves nothing behind.
    """
    from sklearn.datasets import fetch_file  # only downloads need sklearn.datasets

    url, folder = metas[0].url, data_home / metas[0].folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download.") as tmp:
        try:
            archive = fetch_file(url, folder=tmp, n_retries=_N_RETRIES, delay=1)
        except OSError as exc:  # URLError, HTTPError, TimeoutError
            notes = "".join(f" {m.offline_note}" for m in metas if m.offline_note)
            raise OSError(
                f"Could not download {url}: {exc}. Without a network: "
                f"{_where_to_put(metas, data_home)}{notes}"
            ) from exc
        for meta in metas:
            data = _read_member(archive, meta.members)
            if meta.transform == "lf_newlines":
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                data = data.rstrip(b"\n") + b"\n"
            (Path(tmp) / meta.filename).write_bytes(data)
            _verify_checksum(Path(tmp) / meta.filename, meta, source=url)
        for meta in metas:
            os.replace(Path(tmp) / meta.filename, folder / meta.filename)


def _fetch_files(metas, *, data_home=None, download_if_missing=False):
    """Return verified local paths for ``metas``, downloading if allowed.

    Parameters
    ----------
    metas : sequence of RemoteFileMetadata
    data_home : str or path-like, default=None
        See :func:`get_data_home`.
    download_if_missing : bool, default=False
        Download missing files from their UCI archive (one download per
        archive). Files that cannot be recreated raise
        :class:`DatasetNotFoundError`.

    Returns
    -------
    paths : list of pathlib.Path
        Paths of the files, in the order of ``metas``; each file's SHA-256
        has been verified.
    """
    home = get_data_home(data_home)
    paths = [home / m.folder / m.filename for m in metas]
    missing = [m for m, p in zip(metas, paths) if not p.is_file()]
    if missing:
        if not download_if_missing:
            meta = missing[0]
            raise DatasetNotFoundError(
                _missing_message(home / meta.folder / meta.filename, home, meta)
            )
        for meta in missing:
            if meta.url is None:
                raise DatasetNotFoundError(
                    _missing_message(home / meta.folder / meta.filename, home, meta)
                )
        by_url = {}
        for meta in missing:
            by_url.setdefault(meta.url, []).append(meta)
        for group in by_url.values():
            _download(group, home)
    for meta, path in zip(metas, paths):
        _verify_checksum(path, meta)
    return paths
