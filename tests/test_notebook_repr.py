"""An estimator shown in a notebook renders without a warning.  scikit-learn's HTML repr
parses the class docstring with (its copy of) numpydoc, which warned ``Unknown section
Privacy`` for every DP estimator while their guarantee had a section of its own; it is
now a "Privacy" rubric under the standard "Notes" heading."""

import warnings

import pytest

from skdp import (DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor,
                  make_private_pipeline)
from skdp.model_selection import DPGridSearchCV, DPRandomizedSearchCV
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler, DPSplineTransformer,
                                DPStandardScaler)

SHOWN = {
    "DPLogisticRegression": lambda: DPLogisticRegression(classes=[0, 1]),
    "DPHuberRegressor": DPHuberRegressor,
    "DPNonconvexRegressor": DPNonconvexRegressor,
    "DPStandardScaler": DPStandardScaler,
    "DPRobustScaler": DPRobustScaler,
    "DPSplineTransformer": DPSplineTransformer,
    "DPOneHotEncoder": DPOneHotEncoder,
    "DPGridSearchCV": lambda: DPGridSearchCV(DPLogisticRegression(classes=[0, 1]),
                                             {"alpha": [0.1, 1.0]}),
    "DPRandomizedSearchCV": lambda: DPRandomizedSearchCV(
        DPLogisticRegression(classes=[0, 1]), {"alpha": [0.1, 1.0]}, n_iter=2),
    "make_private_pipeline": lambda: make_private_pipeline(
        DPLogisticRegression(classes=[0, 1]), epsilon=1.0),
}


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_html_repr_renders_without_warnings(name):
    estimator = SHOWN[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        html = estimator._repr_html_()
    assert type(estimator).__name__ in html


def test_the_guarantee_is_still_in_the_docstrings():
    for cls in (DPLogisticRegression, DPHuberRegressor, DPNonconvexRegressor):
        doc = cls.__doc__
        assert "    Notes\n    -----\n    .. rubric:: Privacy\n" in doc
        assert "**replacing one row**" in doc
        assert "\n    Privacy\n    -------" not in doc
