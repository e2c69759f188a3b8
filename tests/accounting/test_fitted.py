import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skdp import DPLogisticRegression
from skdp.accounting import (
    compose,
    fitted_dp_event,
    fitted_privacy_guaranteed,
    get_epsilon,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 3))
    return X, (X[:, 0] > 0).astype(int)


def test_single_estimator_event_is_its_own(data):
    clf = DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0).fit(*data)
    assert fitted_dp_event(clf) is clf.dp_event_
    assert fitted_privacy_guaranteed(clf)


def test_pipeline_composes_every_dp_step(data):
    X, y = data
    a = DPLogisticRegression(classes=[0, 1], epsilon=0.5, data_norm=2.0, random_state=0).fit(X, y)
    pipe = make_pipeline(PolynomialFeatures(1), a)
    pipe.fit(X, y)
    ev = fitted_dp_event(pipe)
    assert get_epsilon(ev, 1e-6) == pytest.approx(get_epsilon(pipe[-1].dp_event_, 1e-6))
    # two DP fits in sequence cost more than one, exactly as composition says
    twice = compose(pipe[-1].dp_event_, pipe[-1].dp_event_)
    assert get_epsilon(twice, 1e-6) > get_epsilon(ev, 1e-6)


def test_non_private_step_is_refused(data):
    pipe = make_pipeline(
        StandardScaler(), DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0)
    ).fit(*data)
    with pytest.raises(TypeError, match="StandardScaler"):
        fitted_dp_event(pipe)
    assert not fitted_privacy_guaranteed(pipe)


def test_leaky_bound_is_not_guaranteed(data):
    with pytest.warns(Warning):
        clf = DPLogisticRegression(random_state=0).fit(*data)
    assert not fitted_privacy_guaranteed(clf)


def test_unfitted_is_refused():
    with pytest.raises(TypeError, match="no dp_event_"):
        fitted_dp_event(DPLogisticRegression())
