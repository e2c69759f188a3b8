"""skdp: scikit-learn compatible differentially private estimators.

Every estimator's ``fit`` is (epsilon, delta)-differentially private with respect to
*replacing one row* of ``(X, y)`` (``n`` public), provided its public bounds
(``data_norm``, ``y_bound``) are given as parameters.  The guarantee actually achieved is
reported on the fitted model (``epsilon_``, ``delta_``, ``dp_event_``,
``privacy_guaranteed_``).

Heavy submodules (numba kernels, dp-accounting) are imported lazily so that
``import skdp`` stays cheap.
"""

__version__ = "0.1.0"

_LAZY = {
    "DPLogisticRegression": "skdp.linear_model",
    "DPHuberRegressor": "skdp.linear_model",
    "DPNonconvexRegressor": "skdp.linear_model",
    "PrivacyLeakWarning": "skdp.exceptions",
    "BudgetExceededError": "skdp.exceptions",
    "DPStandardScaler": "skdp.preprocessing",
    "PrivacyLedger": "skdp.accounting",
    "DPGridSearchCV": "skdp.model_selection",
    "DPRandomizedSearchCV": "skdp.model_selection",
    "make_private_pipeline": "skdp._pipeline",
    "PrivatePipeline": "skdp._pipeline",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'skdp' has no attribute {name!r}")


def __dir__():
    return __all__
