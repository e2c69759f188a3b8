"""Thread settings for a solver run.

The kernels parallelise over fixed row chunks with numba (results do not depend on the
thread count).  Two measured effects are handled here:

* OpenBLAS threads left spinning by scipy's L-BFGS-B (which calls BLAS on tiny vectors)
  compete with numba's OpenMP threads: a 30-row fit took 32 ms instead of 1 ms on a
  2-core machine.  BLAS is therefore limited to one thread while a solver runs, and in
  the passes a fit makes around it (:func:`single_threaded_blas`): an idle OpenBLAS
  worker spins for about 0.1 s after a threaded call, so one product at the end of a fit
  (the base-rate check's scores) slowed the next fit's parallel DP-SGD steps from 72 to
  115-150 ms (adult, 902 steps, 2 threads, fits back to back).
* Launching a parallel region costs tens of microseconds, more than a whole pass over a
  small design; below ``SERIAL_WORK`` entries the kernels run on one thread.
"""

import numbers
from contextlib import contextmanager

import numpy as np
from threadpoolctl import ThreadpoolController

from .._parallel import available_threads, current_threads, set_current_threads

SERIAL_WORK = 200_000
_CONTROLLER = None


def _controller():
    """One ThreadpoolController per process (building one scans the loaded libraries)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def resolve_n_jobs(n_jobs):
    """Numba threads asked for by a user's ``n_jobs``: ``None``/1 -> 1, ``-1`` -> all,
    ``k`` -> ``k`` (at most ``numba.config.NUMBA_NUM_THREADS``)."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral) \
            or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be None, -1 or a positive integer, got {n_jobs!r}")
    available = available_threads()
    return available if n_jobs == -1 else min(int(n_jobs), available)


def single_threaded_blas():
    """Context limiting BLAS to one thread (about 8 us to enter and leave): for the
    products of a fit, whose threaded workers would go on spinning after it (module
    docstring)."""
    return _controller().limit(limits=1, user_api="blas")


@contextmanager
def solver_threads(n_rows, n_cols, threads=None):
    """Context for a solver on an ``n_rows x n_cols`` design.

    ``threads``: an explicit numba thread count (from :func:`resolve_n_jobs`) that overrides
    the size rule; ``None`` keeps the default threads, or 1 below ``SERIAL_WORK`` entries.
    """
    previous = current_threads()
    with single_threaded_blas():
        if threads is not None:
            set_current_threads(threads)
        elif n_rows * n_cols < SERIAL_WORK:
            set_current_threads(1)
        try:
            yield
        finally:
            set_current_threads(previous)
