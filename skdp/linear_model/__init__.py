"""Differentially private linear models.

Each estimator's module is imported on first use (PEP 562): a user of one model does not
pay for the others' imports (``DPLogisticRegression`` needs parts of scikit-learn the
regressors do not).
"""

import importlib

_MODULES = {"DPHuberRegressor": "._huber", "DPLogisticRegression": "._logistic",
            "DPNonconvexRegressor": "._nonconvex"}

__all__ = ["DPHuberRegressor", "DPLogisticRegression", "DPNonconvexRegressor"]


def __getattr__(name):
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
