"""Constructor parameters are keyword-only, as scikit-learn's are: ``DPLogisticRegression(
1.0, 1e-6)`` is refused, so the privacy parameters (``epsilon``, ``delta``,
``random_state``, ...) are always named at the call site and cannot be swapped.  The only
positional parameters are those that mirror a scikit-learn class's positional ones (a
search's estimator and grid, a pipeline's steps, a spline's ``n_knots`` and ``degree``,
a function transformer's ``func``), checked against that class."""

import importlib
import inspect

import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, SplineTransformer

MODULES = ["skdp", "skdp.accounting", "skdp.audit", "skdp.linear_model",
           "skdp.model_selection", "skdp.preprocessing"]
#: skdp class -> the scikit-learn class whose positional parameters it mirrors
MIRRORS = {
    "DPGridSearchCV": GridSearchCV,
    "DPRandomizedSearchCV": RandomizedSearchCV,
    "PrivatePipeline": Pipeline,
    "DPSplineTransformer": SplineTransformer,
    "RowwiseFunctionTransformer": FunctionTransformer,
}
PRIVACY_PARAMETERS = {"epsilon", "delta", "random_state", "privacy_ledger", "secure_noise",
                      "data_norm", "classes", "feature_bounds", "y_bound"}


def _public_classes():
    found = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and (issubclass(obj, BaseEstimator)
                                         or attr == "PrivacyLedger"):
                found[obj.__name__] = obj
    return found


def _positional(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p.name for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


CLASSES = _public_classes()


def test_every_estimator_transformer_and_search_is_found():
    assert {"DPLogisticRegression", "DPHuberRegressor", "DPNonconvexRegressor",
            "DPStandardScaler", "DPRobustScaler", "DPSplineTransformer", "DPOneHotEncoder",
            "DPGridSearchCV", "DPRandomizedSearchCV", "PrivatePipeline",
            "PrivacyLedger"} <= set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_constructor_parameters_are_keyword_only(name):
    positional = _positional(CLASSES[name])
    mirrored = _positional(MIRRORS[name]) if name in MIRRORS else []
    assert not set(mirrored[:len(positional)]) & PRIVACY_PARAMETERS
    # at most the mirrored class's positional parameters, in its order
    assert positional == mirrored[:len(positional)], (
        f"{name}.__init__ takes {positional} positionally; make them keyword-only "
        f"(def __init__(self, *, ...))")
    assert not set(positional) & PRIVACY_PARAMETERS


def test_positional_privacy_parameters_are_refused():
    from skdp import DPLogisticRegression
    from skdp.accounting import PrivacyLedger
    from skdp.preprocessing import DPOneHotEncoder, DPStandardScaler

    for make in (lambda: DPLogisticRegression(1.0, 1e-6), lambda: DPStandardScaler(1.0),
                 lambda: PrivacyLedger(1.0), lambda: DPOneHotEncoder("auto")):
        with pytest.raises(TypeError, match="positional argument"):
            make()


def test_make_private_pipeline_takes_only_the_estimator_positionally():
    from skdp import make_private_pipeline

    params = inspect.signature(make_private_pipeline).parameters.values()
    assert [p.name for p in params if p.kind != p.KEYWORD_ONLY] == ["estimator"]
