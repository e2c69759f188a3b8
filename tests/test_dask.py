"""skdp/_dask.py: without_low_level_fusion switches dask's low-level fusion off while any
thread is inside and gives the user's setting back once, when the last one leaves."""

import threading

import pytest

dask = pytest.importorskip("dask")

from skdp._dask import without_low_level_fusion  # noqa: E402

KEY = "optimization.fuse.active"


def test_interleaved_fits_restore_the_users_setting_once():
    """Fit A enters, B enters, A leaves while B computes, B leaves: fusion stays off for B
    after A left, and afterwards the setting is the user's (a dask.config.set per fit
    would switch it back on under B, then leave it off for good)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen_by_b = []

    def fit_a():
        with without_low_level_fusion():
            a_in.set()
            b_in.wait()
        a_out.set()

    def fit_b():
        a_in.wait()
        with without_low_level_fusion():
            b_in.set()
            a_out.wait()
            seen_by_b.append(dask.config.get(KEY, None))

    with dask.config.set({KEY: True}):
        threads = [threading.Thread(target=fit_a), threading.Thread(target=fit_b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert dask.config.get(KEY) is True
    assert seen_by_b == [False]
