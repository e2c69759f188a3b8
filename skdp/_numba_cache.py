"""How skdp compiles its numba kernels (:func:`kernel`), and numba's on-disk cache of them
on a read-only install.

Every kernel is ``numba.njit`` with ``KERNEL_OPTIONS``: cached on disk, and without the
*cfunc wrapper*.  numba builds that second entry point for each compiled function so that
it can be passed to other jitted code as a first-class function value; skdp never does (its
kernels call each other directly, and a user's loss is compiled into a specialised kernel
by name), so the wrapper was pure compilation time: a fresh process that fits every solver
once compiled 1.2 s less without it (20.4 against 21.6 s, and 21.9 against 23.1 s, on 2
cores).  The compiled bodies are the same, so results are bitwise unchanged.  (Dropping
the CPython wrapper of kernels called only from other kernels saved 2-3 s more, but such a
kernel *segfaults* if anything calls it from Python: not worth it.)

The kernels are cached on disk (``cache=True``).  numba stores the compiled code in the
first writable place among: ``NUMBA_CACHE_DIR``, the ``__pycache__`` next to the module, and
the user-wide cache directory (``~/.cache/numba``).  When the package is installed
read-only (by root, used by another user) and HOME is not writable either, numba finds no
place and the *decorator* raises ``RuntimeError: cannot cache function ...: no locator
available`` -- ``from skdp import DPLogisticRegression`` would fail.

:func:`ensure_cache_locator` runs before the decorators of each kernel module: if none of
numba's places is writable it points numba at a fresh temporary directory (removed at
exit) and warns once.  The kernels then work, and are recompiled in each new process; set
``NUMBA_CACHE_DIR`` to a writable directory to keep them.
"""

import atexit
import os
import shutil
import tempfile
import warnings

from ._stacklevel import user_stacklevel

__all__ = ["ensure_cache_locator", "kernel", "KERNEL_OPTIONS", "with_defaults"]

#: numba options of every skdp kernel (module docstring)
KERNEL_OPTIONS = {"cache": True, "no_cfunc_wrapper": True}


def kernel(function=None, **options):
    """``numba.njit(**KERNEL_OPTIONS, **options)``: ``@kernel`` or ``@kernel(parallel=True)``.

    The kernel's module must call :func:`ensure_cache_locator` before its first ``@kernel``.
    """
    from numba import njit

    decorator = njit(**KERNEL_OPTIONS, **options)
    return decorator if function is None else decorator(function)

_checked = {}


def with_defaults(given, defaults):
    """The trailing optional arguments of a kernel call: ``given`` completed by the rest of
    ``defaults`` (the kernel's own default values), so that the call passes every one.
    numba types an omitted argument by its default *object*, which the on-disk cache does
    not find again in another process: a kernel called with an array argument left out was
    compiled anew in every session (2.2-2.8 s before the first DP-SGD, resque or spider
    fit with a warm cache; 0.5-0.7 s with every argument given)."""
    given = tuple(given)
    return given + tuple(defaults[len(given):])


def _writable_dir(path):
    """Whether numba could cache into ``path`` (its own test: create it, write a file)."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _user_wide_cache_dir():
    from numba.misc.appdirs import AppDirs

    return AppDirs(appname="numba", appauthor=False).user_cache_dir


def ensure_cache_locator(module_file):
    """Ensure numba can cache the kernels of ``module_file`` (call with ``__file__``).

    Returns the cache directory chosen for the fallback, or None when one of numba's own
    places is writable.
    """
    from numba.core import config

    directory = os.path.dirname(os.path.abspath(module_file))
    if directory in _checked:
        return _checked[directory]
    fallback = None
    if config.CACHE_DIR and _writable_dir(config.CACHE_DIR):
        pass
    elif _writable_dir(os.path.join(directory, "__pycache__")):
        pass
    elif _writable_dir(_user_wide_cache_dir()):
        pass
    else:
        fallback = tempfile.mkdtemp(prefix="skdp-numba-cache-")
        atexit.register(shutil.rmtree, fallback, True)
        config.CACHE_DIR = fallback
        warnings.warn(
            f"numba cannot cache skdp's compiled kernels: neither {directory}/__pycache__ "
            f"nor the user cache {_user_wide_cache_dir()} is writable (a read-only install "
            f"with a read-only HOME). Using the temporary cache {fallback} for this process: "
            "the kernels are recompiled in every new process. Set NUMBA_CACHE_DIR to a "
            "writable directory to keep them.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    _checked[directory] = fallback
    return fallback
