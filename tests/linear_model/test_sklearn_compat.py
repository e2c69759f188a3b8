"""scikit-learn's estimator checks over every skdp estimator."""

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.exceptions import PrivacyLeakWarning

# The checks fit on data without a public bound (data_norm=None is the default and reads
# the bound from the data, with a PrivacyLeakWarning); a large epsilon keeps their
# accuracy-based checks meaningful.  Noise at the default epsilon is exercised elsewhere.
ESTIMATORS = [
    DPLogisticRegression(epsilon=1e4, random_state=0),
    DPHuberRegressor(epsilon=1e4, random_state=0),
    DPLogisticRegression(epsilon=1e4, solver="dpsgd", batch_size=10, random_state=0),
    DPHuberRegressor(epsilon=1e4, solver="dpsgd", batch_size=10, random_state=0),
]

# fit() accepts ``sample_weight`` only to refuse it with an explanation (weights change the
# sensitivity of the fit), so every check that fits with sample weights fails by design.
_SAMPLE_WEIGHT_REFUSED = "sample_weight is refused: weights change the DP sensitivity"
_SAMPLE_WEIGHT_CHECKS = [
    "check_sample_weights_not_an_array",
    "check_sample_weights_list",
    "check_all_zero_sample_weights_error",
    "check_sample_weights_shape",
    "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
]
EXPECTED_FAILED = {
    "DPLogisticRegression": {
        **{name: _SAMPLE_WEIGHT_REFUSED for name in _SAMPLE_WEIGHT_CHECKS},
        "check_classifiers_one_label_sample_weights": _SAMPLE_WEIGHT_REFUSED,
    },
    "DPHuberRegressor": {name: _SAMPLE_WEIGHT_REFUSED for name in _SAMPLE_WEIGHT_CHECKS},
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.filterwarnings("ignore", message="delta=.*>= 1/n_samples")
        check(estimator)
