"""Thread settings for a solver run.

The kernels parallelise over fixed row chunks with numba (results do not depend on the
thread count).  Two measured effects are handled here:

* OpenBLAS threads left spinning by scipy's L-BFGS-B (which calls BLAS on tiny vectors)
  compete with numba's OpenMP threads: a 30-row fit took 32 ms instead of 1 ms on a
  2-core machine.  BLAS is therefore limited to one thread while a solver runs.
* Launching a parallel region costs tens of microseconds, more than a whole pass over a
  small design; below ``SERIAL_WORK`` entries the kernels run on one thread.
"""

from contextlib import contextmanager

import numba
from threadpoolctl import ThreadpoolController

SERIAL_WORK = 200_000
_CONTROLLER = None


def _controller():
    """One ThreadpoolController per process (building one scans the loaded libraries)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextmanager
def solver_threads(n_rows, n_cols):
    """Context for a solver on an ``n_rows x n_cols`` design."""
    previous = numba.get_num_threads()
    with _controller().limit(limits=1, user_api="blas"):
        if n_rows * n_cols < SERIAL_WORK:
            numba.set_num_threads(1)
        try:
            yield
        finally:
            numba.set_num_threads(previous)
