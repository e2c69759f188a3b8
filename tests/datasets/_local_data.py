"""What the UCI loader tests share: where the real files are, skipping without them, and
refusing the network."""

import os
import urllib.request
from pathlib import Path

import pytest

from skdp.datasets import _base

#: ``$SKDP_DATA``, else ``../shared/data`` next to the repository root
DATA_DIR = Path(
    os.environ.get("SKDP_DATA")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data"
)


def require(*relpaths):
    """Skip the calling test unless every file ``relpaths`` (under DATA_DIR) exists."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"data folder {DATA_DIR} not found (set SKDP_DATA)")
    for rel in relpaths:
        if not (DATA_DIR / rel).is_file():
            pytest.skip(f"data file {DATA_DIR / rel} not found")


def refuse_network(monkeypatch):
    """Make any attempt to reach the network fail loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("tests must not touch the network")

    monkeypatch.setattr(_base, "_fetch_url", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
