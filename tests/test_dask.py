"""skdp/_dask.py: without_low_level_fusion switches dask's low-level fusion off while any
thread is inside and gives the user's setting back once, when the last one leaves."""

import pytest

dask = pytest.importorskip("dask")

from skdp._dask import without_low_level_fusion  # noqa: E402

KEY = "optimization.fuse.active"


def test_interleaved_fits_restore_the_users_setting_once():
    """Fit A enters, B enters, A leaves while B computes, B leaves: fusion stays off for B
    after A left, and afterwards the setting is the user's (a dask.config.set per fit
    would switch it back on under B, then leave it off for good)."""
    from tests._interleaving import run_interleaved

    with dask.config.set({KEY: True}):
        seen_by_b = run_interleaved(without_low_level_fusion,
                                    lambda: dask.config.get(KEY, None))
        assert dask.config.get(KEY) is True
    assert seen_by_b is False
