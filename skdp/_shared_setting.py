"""A process-wide setting held while any thread is inside, restored once by the last.

Python's warning filters and dask's configuration are process-wide, and the context
managers that change them (``warnings.catch_warnings``, ``dask.config.set``) save the
previous state on entry and restore it on exit.  Two threads that enter and leave such a
block interleaved restore each other's saved state: the change stays in force after both
have left, or is undone while the other still runs.  :class:`SharedSetting` enters the
context once, when the first thread comes in, and exits it once, when the last one leaves
(a lock and a count), so the state before the first entry is restored exactly.
"""

import contextlib
import threading

__all__ = ["SharedSetting"]


class SharedSetting:
    """Hold the context ``make()`` while any thread is inside :meth:`held`.

    Parameters
    ----------
    make : callable
        Returns a fresh context manager that applies the setting on ``__enter__`` and
        restores the previous state on ``__exit__``.

    Examples
    --------
    >>> import warnings
    >>> @contextlib.contextmanager
    ... def ignored():
    ...     with warnings.catch_warnings():
    ...         warnings.simplefilter("ignore")
    ...         yield
    >>> quiet = SharedSetting(ignored)
    >>> with quiet.held():
    ...     warnings.warn("not shown")
    """

    def __init__(self, make):
        self._make = make
        self._lock = threading.Lock()
        self._users = 0
        self._context = None

    @contextlib.contextmanager
    def held(self):
        with self._lock:
            if self._users == 0:
                context = self._make()
                context.__enter__()
                self._context = context
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    context, self._context = self._context, None
                    context.__exit__(None, None, None)
