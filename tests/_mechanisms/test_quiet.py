"""quiet_private_arithmetic (skdp/_mechanisms/_quiet.py): computations on private rows
report their result only -- no warning, no numpy error -- and leave the user's warning
filters as they were, also when threads enter and leave it interleaved."""

import threading
import warnings

import numpy as np
import pytest

from skdp._mechanisms._quiet import (quiet_private_arithmetic, silent_floating_point,
                                     silent_floating_point_task)

ROW = np.array([[1e308, -1e308, 1e308]])


def test_no_warning_no_error_and_the_ieee_values():
    with np.errstate(all="ignore"):
        expected = ROW @ np.array([[2.0, 2.0], [0.0, -2.0], [-2.0, 2.0]])
    assert np.isnan(expected[0, 0]) and np.isinf(expected[0, 1])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        with quiet_private_arithmetic():
            got = ROW @ np.array([[2.0, 2.0], [0.0, -2.0], [-2.0, 2.0]])
            warnings.warn("a warning of the computation", UserWarning)
        # outside the block the user's settings hold again
        with pytest.raises(FloatingPointError):
            ROW @ np.array([2.0, 2.0, 2.0])
        with pytest.raises(UserWarning):
            warnings.warn("after", UserWarning)
    np.testing.assert_array_equal(got, expected)


def test_interleaved_threads_restore_the_filters_once():
    """Thread A enters, B enters, A leaves while B computes, B leaves: B stays quiet after
    A left, and afterwards the filters are the user's (a catch_warnings per thread would
    restore A's saved list under B, then B's -- the "ignore" filter -- for good)."""
    from tests._interleaving import run_interleaved

    def quiet_in_b():
        try:
            warnings.warn("inside B after A left", UserWarning)
            return True
        except UserWarning:
            return False

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        b_quiet = run_interleaved(quiet_private_arithmetic, quiet_in_b)
        assert warnings.filters == before
    assert b_quiet is True


def _square(a):
    return a * a


@silent_floating_point_task
def _silent_square(a):
    return a * a


@silent_floating_point_task
def _warns_on_public_grounds():
    warnings.warn("a parameter's deprecation", UserWarning)


def _on_a_fresh_thread(fn, *args):
    """``fn(*args)`` on a new thread, which does not inherit the caller's numpy error
    state (as a dask.distributed worker thread): its result or the exception it raised."""
    out = []

    def run():
        try:
            out.append(fn(*args))
        except Exception as exc:  # noqa: BLE001 -- handed back to the test
            out.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return out[0]


def test_a_task_is_silent_on_a_thread_without_the_callers_state():
    """silent_floating_point() in the caller does not reach another thread: there an
    overflow is reported (an exception under simplefilter("error")).  A function wrapped
    by silent_floating_point_task enters the state itself: the same IEEE value, no
    report; Python warnings are left alone, and it pickles by reference (a worker
    process receives it by name)."""
    import pickle

    row = np.array([1e200, -3.0])
    with warnings.catch_warnings(), silent_floating_point():
        warnings.simplefilter("error")
        assert isinstance(_on_a_fresh_thread(_square, row), RuntimeWarning)
        got = _on_a_fresh_thread(_silent_square, row)
        assert isinstance(_on_a_fresh_thread(_warns_on_public_grounds), UserWarning)
    np.testing.assert_array_equal(got, [np.inf, 9.0])
    assert pickle.loads(pickle.dumps(_silent_square)) is _silent_square
    assert _silent_square.__name__ == "_silent_square"
