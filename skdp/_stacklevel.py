"""Warnings that point at the user's line, not at skdp's or scikit-learn's internals."""

import os
import sys

import joblib
import sklearn

#: packages whose frames are skipped: skdp, and the libraries that call a fit for the user
_INTERNAL_DIRS = tuple(
    os.path.dirname(os.path.abspath(mod.__file__)) + os.sep
    for mod in (sys.modules[__name__.split(".")[0]], sklearn, joblib)
)


def _is_internal(filename):
    # "<frozen importlib._bootstrap>": a warning raised while a module is imported
    return filename.startswith("<frozen importlib") or os.path.abspath(filename).startswith(
        _INTERNAL_DIRS)


def user_stacklevel():
    """``stacklevel`` for a ``warnings.warn`` made by the caller of this function, such that
    the warning is attributed to the first frame outside skdp, scikit-learn and joblib (the user's
    call to ``fit``, ``cross_val_score``, ``GridSearchCV.fit``...).

    Level 1 is the function that warns; each frame above it inside skdp or scikit-learn
    (validation wrappers, ``_fit_context``, pipelines) adds one.
    """
    level = 1
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level
