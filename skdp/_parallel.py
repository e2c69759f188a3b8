"""Thread counts and the chunk pool, without importing numba.

The default fits (objective perturbation, the Huber warm start of ``warm_gd``) evaluate
their objectives in numpy (:mod:`skdp._losses._vectorised`) and never call a numba
kernel; importing numba (0.1-0.2 s) only for its thread count would slow every first fit
(issue "first-run experience").  These helpers answer from numba when a kernel module has
imported it, and otherwise from the same rule numba's configuration uses, so that a
session that later imports numba sees the same numbers.

Results never depend on the thread count: every parallel pass splits its rows into
fixed chunks and adds their totals in chunk order.
"""

import os
import sys

__all__ = ["available_threads", "current_threads", "set_current_threads", "chunk_pool"]

_current = None
_POOL = None


def _numba():
    """numba's module if some kernel module has imported it, else None (never imports)."""
    return sys.modules.get("numba")


def available_threads():
    """``numba.config.NUMBA_NUM_THREADS``: the environment variable ``NUMBA_NUM_THREADS``,
    else the CPUs this process may run on (numba's ``num_threads_default``)."""
    numba = _numba()
    if numba is not None:
        return int(numba.config.NUMBA_NUM_THREADS)
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def current_threads():
    """``numba.get_num_threads()`` once numba is imported; before, the count set by
    :func:`set_current_threads` (a solver's thread context), else :func:`available_threads`."""
    numba = _numba()
    if numba is not None:
        return int(numba.get_num_threads())
    return available_threads() if _current is None else _current


def set_current_threads(threads):
    """Set the thread count the kernels and the numpy chunk passes use (numba's too, when
    it is imported); ``None`` restores the default."""
    global _current
    _current = None if threads is None else int(threads)
    numba = _numba()
    if numba is not None:
        numba.set_num_threads(available_threads() if threads is None else int(threads))


def chunk_pool():
    """One process-wide ``ThreadPoolExecutor`` of :func:`available_threads` workers for the
    chunked passes that release the GIL: the numpy loss chunks, the ``nogil`` loss kernels
    and the exact samplers' chunks (:func:`skdp._mechanisms._exact._draw`).  No task submits
    to the pool and waits, so callers on several threads (DP-SGD draws its next noise on a
    helper thread) share it without deadlock."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=available_threads(),
                                   thread_name_prefix="skdp-chunks")
    return _POOL
