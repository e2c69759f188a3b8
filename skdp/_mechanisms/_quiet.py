r"""Arithmetic on private rows that reports nothing but its result.

Some steps of a DP procedure compute on private rows *before* their results are bounded
and released: a search or cross-validation scores its validation rows with the model's
``predict`` (``X w`` on unclipped rows; :meth:`skdp.model_selection.PrivateScorer.
row_values`), the base-rate check of ``DPLogisticRegression`` counts the training rows the
released model classifies right (:mod:`skdp.linear_model._base_rate`).  Only the release
is covered by the guarantee; anything else the computation makes observable is not.

The side channel
----------------
A finite row such as ``[1e308, -1e308, 1e308]`` overflows ``X w``.  numpy then reports the
floating-point exception: by default a ``RuntimeWarning`` ("overflow encountered in
matmul") printed on stderr, an exception under ``warnings.simplefilter("error")`` or
``np.seterr(all="raise")``, a call under ``np.seterr(all="call")``.  On a dataset ``D``
without such a row this happens with probability 0, on its replace-one neighbour ``D'``
with the row (in a validation part) with probability up to 1: an event whose probability
ratio is unbounded, outside the mechanism -- no ``epsilon`` holds for the procedure's
observable behaviour.

The fix
-------
:func:`quiet_private_arithmetic` runs the computation with every numpy floating-point
error handled as ``"ignore"`` (:class:`numpy.errstate`, local to the thread and context)
and every Python warning filtered out (an ``"ignore"`` filter in front of the user's).
Then no warning is shown, logged or raised and no numpy error handler is called, whatever
the data: the procedure's observable behaviour is its release alone again.

The values are unchanged.  ``np.errstate`` decides how numpy *reports* a floating-point
exception, never what it computes: an overflow still gives the IEEE 754 default
``+-inf`` and an invalid operation (``inf - inf``) ``NaN``, bit for bit as before.  So
every bound the callers prove on their released quantities -- which already hold for
non-finite intermediate values -- holds unchanged (each caller derives its own).

Threads.  ``warnings.catch_warnings`` saves and restores the process-wide list of filters;
two threads that entered and left it interleaved (Dask's threaded scheduler scoring
partitions concurrently, a threading joblib backend) would restore each other's saved
list -- leaving the ``"ignore"`` filter installed after the procedure, or removing it
while the other thread still computes.  The filter is therefore installed by the first
thread to enter and removed by the last to leave (a lock and a count), so the user's
filters are restored exactly once, as they were.  Where the filters are local to each
thread and context (Python >= 3.14 with ``sys.flags.context_aware_warnings``, the default
of free-threaded builds), each block has its own ``catch_warnings``.
"""

import contextlib
import functools
import sys
import warnings

import numpy as np

from .._shared_setting import SharedSetting

__all__ = ["quiet_private_arithmetic", "silent_floating_point", "silent_floating_point_task"]


@contextlib.contextmanager
def quiet_private_arithmetic():
    """Run the block with numpy floating-point errors ignored and Python warnings
    suppressed (module docstring): a computation on private rows reports its result only.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error")
    ...     with quiet_private_arithmetic():
    ...         np.array([[1e308, 1e308]]) @ np.array([2.0, 2.0])
    array([inf])
    """
    with np.errstate(all="ignore"), _warnings_ignored():
        yield


def silent_floating_point():
    """``np.errstate(all="ignore")``: the floating-point half of
    :func:`quiet_private_arithmetic`, for a whole private fit.

    A composite fit (a :class:`~skdp.PrivatePipeline`, a private search's or
    cross-validation's fits) runs steps skdp verified as data-free but did not write --
    ``PolynomialFeatures`` squares a finite ``1e200`` to ``inf`` and numpy reports
    "overflow encountered in multiply" (an exception under ``np.seterr(all="raise")`` or
    ``warnings.simplefilter("error")``) on the dataset that holds that row only.  Under
    this context numpy reports no floating-point exception and computes the same IEEE
    values; the Python warnings a fit issues on public grounds (``PrivacyLeakWarning``, a
    parameter's deprecation) are left alone, unlike :func:`quiet_private_arithmetic`.
    The state is local to the thread (and context): a step that runs on other threads
    (Dask workers) keeps theirs, so the functions such a worker runs on private rows enter
    it themselves (:func:`silent_floating_point_task`)."""
    return np.errstate(all="ignore")


def silent_floating_point_task(task):
    r"""Decorator: ``task`` runs under :func:`silent_floating_point` on whichever thread or
    process calls it -- for the module-level functions that Dask workers run on private
    rows during a private fit (a step's transform of a partition, its float conversion).

    Why the fit's own context is not enough.  ``np.errstate`` belongs to the context
    (numpy 2; to the thread with numpy 1.26, where the threaded scheduler's threads do not
    inherit it either).  Dask's local threaded scheduler runs each task in a copy of the
    caller's context, so under numpy 2 a
    task computed inside :meth:`skdp.PrivatePipeline.fit` inherits its
    ``errstate(all="ignore")``; a ``dask.distributed`` worker thread (also of a
    ``LocalCluster(processes=False)``) and a worker process do not: they run the task under
    their own state, numpy's default ``"warn"``.  A data-free step that overflows on one
    row (``PolynomialFeatures`` squaring ``1e200``) then warns there -- on the dataset
    ``D'`` holding that row and never on its neighbour ``D`` -- a ``RuntimeWarning`` in
    the worker's log, an exception that fails the fit under
    ``warnings.simplefilter("error")``: an event of probability 0 under ``D`` and up to 1
    under ``D'``, for which no ``epsilon`` holds.

    The guarantee restored.  Inside the decorated task numpy reports no floating-point
    exception, wherever it runs: the fit's observable behaviour on the workers is its
    in-memory behaviour, the release alone.  ``errstate`` changes how numpy *reports* an
    exception, never the IEEE 754 result (an overflow is still ``+-inf``, ``inf - inf``
    still ``NaN``), so every value the task returns -- and every bound proved on the
    releases computed from them -- is unchanged.  Python warnings are left alone, as by
    :func:`silent_floating_point`.

    The wrapper keeps the function's module and qualified name (``functools.wraps``):
    applied at the definition, it is what the module holds under that name, so pickle
    sends it to a worker process by reference.

    Examples
    --------
    >>> import threading, warnings
    >>> @silent_floating_point_task
    ... def square(a):
    ...     return a * a
    >>> out = []
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error")
    ...     worker = threading.Thread(target=lambda: out.append(square(np.array([1e200]))))
    ...     worker.start(); worker.join()
    >>> out
    [array([inf])]
    """
    @functools.wraps(task)
    def silently(*args, **kwargs):
        with silent_floating_point():
            return task(*args, **kwargs)

    return silently


@contextlib.contextmanager
def _ignore_every_warning():
    """``catch_warnings`` with an ``"ignore"`` filter in front of the user's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


#: the process-wide filter, installed by the first thread in, removed by the last out
_PROCESS_FILTER = SharedSetting(_ignore_every_warning)


def _warnings_ignored():
    """An ``"ignore"`` filter in front of the process's warning filters while any thread
    is inside; the filters as they were once the last thread leaves
    (:class:`skdp._shared_setting.SharedSetting`).  Where the filters are local to each
    thread and context, each block has its own."""
    if getattr(sys.flags, "context_aware_warnings", False):
        return _ignore_every_warning()
    return _PROCESS_FILTER.held()
