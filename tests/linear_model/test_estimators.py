"""Estimator behaviour: privacy attributes, bad input, determinism, sklearn workflow."""


import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.accounting import get_epsilon
from skdp.exceptions import PrivacyLeakWarning

ESTIMATORS = [DPLogisticRegression, DPHuberRegressor]
PRIVACY_ATTRS = [
    "epsilon_", "delta_", "dp_event_", "noise_scale_", "sensitivity_", "data_norm_",
    "row_bound_", "solver_", "alpha_", "privacy_guaranteed_", "n_gradient_evals_",
]


def _public(cls, n_classes=2):
    """The public label set of a classifier (passing it is the private way to fit)."""
    return {"classes": list(range(n_classes))} if cls is DPLogisticRegression else {}


def _data(cls, n=200, d=3, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if cls is DPLogisticRegression:
        y = rng.integers(0, n_classes, size=n)
    else:
        y = X @ np.ones(d) + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("delta", [1e-6, 0.0])
def test_privacy_attributes(cls, calibration, delta):
    X, y = _data(cls)
    est = cls(epsilon=0.7, delta=delta, data_norm=3.0, calibration=calibration,
              solver="output_perturbation", alpha=0.01, random_state=0, **_public(cls)).fit(X, y)
    _check_privacy_attributes(est, delta)
    assert est.solver_ == "output_perturbation" and est.alpha_ == 0.01


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_dpsgd_privacy_attributes(cls):
    X, y = _data(cls, n=500)
    # the classifier's base-rate check composes one more Gaussian into the event
    # (tests/linear_model/test_base_rate.py): off here, to test dpsgd's own event
    no_check = {"base_rate_fallback": False} if cls is DPLogisticRegression else {}
    est = cls(epsilon=0.7, delta=1e-6, data_norm=3.0, solver="dpsgd", batch_size=25,
              n_steps="bst14", random_state=0, **_public(cls), **no_check).fit(X, y)
    assert isinstance(est.dp_event_, dp_accounting.SelfComposedDpEvent)
    assert est.n_iter_ == 400  # ceil(n^2 / m^2)
    # the default schedule: batch max(64, 4 sqrt(n)) = 89, 20 epochs (5e8/(n p) > 20);
    # binary logistic at n mu < DPSGD_SMALL_SIZE (here 500 x 0.17): 5 epochs
    default = cls(epsilon=0.7, data_norm=3.0, solver="dpsgd", random_state=0,
                  **_public(cls), **no_check).fit(X, y)
    # binary logistic: dpsgd clips at half the Lipschitz bound (_auto.DPSGD_CLIP_FRACTION)
    clip = {"clip_fraction": 0.5} if cls is DPLogisticRegression else {}
    steps = 29 if cls is DPLogisticRegression else 113    # ceil(5 n/89), ceil(20 n/89)
    assert default.solver_params_ == {"batch_size": 89, "n_steps": steps, **clip}
    assert default.n_iter_ == steps
    assert est.sensitivity_ == pytest.approx(2 * est.noise_scale_ / est.dp_event_.event.event.noise_multiplier)
    assert 0.69 <= est.epsilon_ <= 0.7
    with pytest.raises(ValueError, match="delta"):
        cls(delta=0.0, data_norm=3.0, solver="dpsgd", **_public(cls)).fit(X, y)
    a = cls(data_norm=3.0, solver="dpsgd", batch_size=25, random_state=5,
            **_public(cls)).fit(X, y)
    b = cls(data_norm=3.0, solver="dpsgd", batch_size=25, random_state=5,
            **_public(cls)).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_)


def _check_privacy_attributes(est, delta):
    for name in PRIVACY_ATTRS:
        assert hasattr(est, name), name
    assert est.privacy_guaranteed_ is True
    assert 0 < est.epsilon_ <= 0.7
    assert est.delta_ == delta
    assert est.data_norm_ == 3.0
    assert est.row_bound_ == pytest.approx(np.hypot(3.0, 1.0)) and est.row_bound_ >= np.hypot(3.0, 1.0)
    assert est.epsilon_ == pytest.approx(get_epsilon(est.dp_event_, delta), abs=1e-9)
    p = est.coef_.size + np.size(est.intercept_)
    if delta == 0:
        assert isinstance(est.dp_event_, dp_accounting.RandomizedResponseDpEvent)
        if est.secure_noise_:   # per-coordinate discrete Laplace on the L1 bound sqrt(p) Delta
            assert est.noise_scale_ == pytest.approx(
                np.sqrt(p) * est.sensitivity_ / est.epsilon, rel=1e-6)
        else:
            assert est.noise_scale_ == pytest.approx(est.sensitivity_ / est.epsilon)
    else:
        assert isinstance(est.dp_event_, dp_accounting.GaussianDpEvent)
        recorded = est.dp_event_.noise_multiplier * est.sensitivity_ / 2
        if est.secure_noise_:   # the exact noise is <= 0.2 % above the recorded sigma
            assert recorded <= est.noise_scale_ <= recorded * 1.002
        else:
            assert recorded == pytest.approx(est.noise_scale_)
    assert est.n_gradient_evals_ >= 1
    assert not hasattr(est, "outliers_")


def test_multinomial_is_one_model_without_epsilon_split():
    X, y = _data(DPLogisticRegression, n=300, n_classes=4)
    est = DPLogisticRegression(classes=[0, 1, 2, 3],
                               epsilon=1.0, data_norm=3.0, random_state=0).fit(X, y)
    assert est.solver_ == "dpsgd"   # the auto rule for three or more classes
    assert est.coef_.shape == (4, 3) and est.intercept_.shape == (4,)
    assert est.epsilon_ <= 1.0
    est = DPLogisticRegression(classes=[0, 1, 2, 3],
                               epsilon=1.0, data_norm=3.0, alpha=0.01, random_state=0,
                               solver="output_perturbation").fit(X, y)
    R = np.hypot(3.0, 1.0)
    assert est.sensitivity_ == pytest.approx(2.02 * np.sqrt(2) * R / (300 * 0.01))
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(est.predict(X)) <= set(range(4))


def test_string_labels_and_declared_classes():
    X, y = _data(DPLogisticRegression)
    labels = np.where(y == 1, "yes", "no")
    with pytest.warns(PrivacyLeakWarning, match="classes is None"):
        est = DPLogisticRegression(data_norm=3.0, random_state=0).fit(X, labels)
    assert list(est.classes_) == ["no", "yes"] and est.privacy_guaranteed_ is False
    assert set(est.predict(X)) <= {"no", "yes"}
    est = DPLogisticRegression(data_norm=3.0, classes=["no", "yes"], random_state=0)
    est.fit(X, np.full(len(y), "yes"))  # one class present, label set public
    assert list(est.classes_) == ["no", "yes"]
    with pytest.raises(ValueError, match="not in classes"):
        DPLogisticRegression(data_norm=3.0, classes=["a", "b"]).fit(X, labels)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_same_random_state_same_model(cls):
    X, y = _data(cls)
    a = cls(data_norm=3.0, random_state=42, **_public(cls)).fit(X, y)
    b = cls(data_norm=3.0, random_state=42, **_public(cls)).fit(X, y)
    c = cls(data_norm=3.0, random_state=43, **_public(cls)).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert not np.array_equal(a.coef_, c.coef_)
    g = cls(data_norm=3.0, random_state=np.random.default_rng(42), **_public(cls)).fit(X, y)
    assert np.array_equal(g.coef_, a.coef_)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clipping_is_enforced_on_out_of_bound_rows(cls):
    """Rows far beyond data_norm give the same model as the same rows pre-clipped."""
    X, y = _data(cls)
    X[:10] *= 1e6
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    radius = 3.0  # data_norm bounds the features; the intercept column comes after
    X_clipped = X * np.minimum(1.0, radius * (1 - 1e-12) / norms)
    a = cls(data_norm=3.0, random_state=0, **_public(cls)).fit(X, y)
    b = cls(data_norm=3.0, random_state=0, **_public(cls)).fit(X_clipped, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_missing_data_norm_warns_and_flags(cls):
    X, y = _data(cls)
    est = cls(random_state=0, **_public(cls))
    with pytest.warns(PrivacyLeakWarning, match="data_norm is None"):
        est.fit(X, y)
    assert est.privacy_guaranteed_ is False
    assert est.data_norm is None  # never written back
    assert est.epsilon_ == np.inf
    assert isinstance(est.dp_event_, dp_accounting.NonPrivateDpEvent)
    top = np.sqrt(np.max(np.sum(X**2, axis=1)))
    # rounded outward to a power of two: no row's norm is printed
    assert est.data_norm_ >= top and np.log2(est.data_norm_) == np.round(np.log2(est.data_norm_))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_delta_above_one_over_n_warns(cls):
    X, y = _data(cls, n=50)
    with pytest.warns(UserWarning, match="1/n_samples"):
        cls(delta=0.05, data_norm=3.0, random_state=0, **_public(cls)).fit(X, y)


BAD_PARAMS = [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("inf")}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"delta": -1e-9}, "delta"),
    ({"data_norm": 0.0}, "data_norm"),
    ({"data_norm": -2.0}, "data_norm"),
    ({"data_norm": float("inf")}, "data_norm"),
    ({"alpha": -0.1}, "alpha"),
    ({"alpha": 0.0, "solver": "output_perturbation"}, "max_coef_norm"),
    ({"alpha": "big"}, "alpha"),
    ({"n_steps": "n2"}, "n_steps"),
    ({"solver": "sgd"}, "solver"),
    ({"calibration": "loose"}, "calibration"),
    ({"batch_size": 0}, "batch_size"),
    ({"n_steps": 0}, "n_steps"),
]


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("params,match", BAD_PARAMS)
def test_bad_parameters_raise_before_any_fit(cls, params, match):
    X, y = _data(cls)
    kwargs = {"data_norm": 3.0, **_public(cls), **params}
    est = cls(**kwargs)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_data_raises_clear_errors(cls):
    X, y = _data(cls)
    est = cls(data_norm=3.0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        est.fit(Xi, y)
    with pytest.raises(ValueError, match="0 sample"):
        est.fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="1 sample"):
        est.fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="3"):
        est.fit(X[:, :, None], y)
    Xs = sp.csr_matrix(Xn)         # sparse input is taken, and checked like dense input
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xs, y)
    with pytest.raises(ValueError, match="sample_weight"):
        est.fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="inconsistent"):
        est.fit(X, y[:-1])
    assert not hasattr(est, "coef_")


def test_one_class_is_refused():
    X, _ = _data(DPLogisticRegression)
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression(data_norm=3.0).fit(X, np.zeros(len(X)))


def test_label_messages_never_print_a_label_read_from_y():
    """Errors and warnings travel in logs like any output: the labels of y are private
    (one row's label can be the only one of its kind), so no message shows them; the
    public classes the user gave may be shown.  They used to print the unknown labels
    ("y contains labels ['secret-9f1'] not in classes"), the single class of y, and the
    label set read from y as a suggested classes=[...]."""
    import warnings

    X, y = _data(DPLogisticRegression)
    secret = "secret-9f1"
    labels = np.where(y == 1, "yes", "no").astype(object)
    labels[7] = secret                      # one row with a label outside the public set
    with pytest.raises(ValueError, match=r"not in classes=\['no', 'yes'\]") as err:
        DPLogisticRegression(data_norm=3.0, classes=["no", "yes"]).fit(X, labels)
    assert secret not in str(err.value)
    with pytest.raises(ValueError, match="at least 2 classes") as err:
        DPLogisticRegression(data_norm=3.0).fit(X, np.full(len(X), secret))
    assert secret not in str(err.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLogisticRegression(data_norm=3.0, random_state=0).fit(
            X, np.where(y == 1, secret, "other"))
    texts = [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert texts and all(secret not in t and "other" not in t for t in texts), texts


def test_nan_target_refused_for_regression():
    X, y = _data(DPHuberRegressor)
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPHuberRegressor(data_norm=3.0).fit(X, y)
    with pytest.raises(ValueError):
        DPHuberRegressor(data_norm=3.0).fit(X, np.array(["a"] * len(X)))


def test_huber_absolute_loss_needs_another_solver():
    X, y = _data(DPHuberRegressor)
    with pytest.raises(ValueError, match="nonsmooth"):
        DPHuberRegressor(data_norm=3.0, huber_threshold=0.0,
                         solver="output_perturbation").fit(X, y)
    est = DPHuberRegressor(data_norm=3.0, huber_threshold=0.0, random_state=0).fit(X, y)
    assert est.solver_ == "phased"   # the auto rule for the absolute loss


def test_failed_refit_keeps_the_previous_model():
    X, y = _data(DPLogisticRegression)
    est = DPLogisticRegression(classes=[0, 1], data_norm=3.0, random_state=0).fit(X, y)
    coef = est.coef_.copy()
    est.set_params(alpha=0.0, solver="output_perturbation")  # needs max_coef_norm
    with pytest.raises(ValueError):
        est.fit(X, y)
    assert np.array_equal(est.coef_, coef) and est.alpha == 0.0


def test_huber_y_bound_clips_targets_and_is_optional():
    X, y = _data(DPHuberRegressor)
    y_far = y.copy()
    y_far[:5] = 1e9
    y_clip = np.clip(y_far, -4.0, 4.0)
    a = DPHuberRegressor(data_norm=3.0, y_bound=4.0, random_state=0).fit(X, y_far)
    b = DPHuberRegressor(data_norm=3.0, y_bound=4.0, random_state=0).fit(X, y_clip)
    assert np.array_equal(a.coef_, b.coef_)
    c = DPHuberRegressor(data_norm=3.0, random_state=0).fit(X, y_far)
    assert c.privacy_guaranteed_ and c.sensitivity_ == a.sensitivity_


def test_private_model_is_useful_at_moderate_epsilon():
    """n = 20000, epsilon = 1: the private classifier is close to the noiseless one."""
    rng = np.random.default_rng(0)
    n, d = 20_000, 5
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X @ np.array([3, -2, 1, 0, 0.5]) + 0.3 * rng.normal(size=n) > 0).astype(int)
    dp = DPLogisticRegression(classes=[0, 1],
                              epsilon=1.0, data_norm=2.0, alpha=1e-3, random_state=0)
    ref = DPLogisticRegression(classes=[0, 1],
                               epsilon=1e6, data_norm=2.0, alpha=1e-3, random_state=0)
    assert dp.fit(X, y).score(X, y) >= ref.fit(X, y).score(X, y) - 0.03
    assert ref.score(X, y) > 0.85


def test_works_in_pipeline_gridsearch_and_clone():
    X, y = _data(DPLogisticRegression, n=400)
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z / 4.0),
                         DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0))
    grid = GridSearchCV(pipe, {"dplogisticregression__alpha": [0.01, 0.1]}, cv=3)
    grid.fit(X, y)
    assert grid.best_estimator_[-1].privacy_guaranteed_
    scores = cross_val_score(DPHuberRegressor(data_norm=3.0, random_state=0),
                             *_data(DPHuberRegressor), cv=3)
    assert scores.shape == (3,)
    est = DPHuberRegressor(epsilon=0.3, data_norm=3.0)
    assert clone(est).get_params() == est.get_params()


@pytest.mark.parametrize("value", [1e154, 1.5e308])
def test_a_data_read_norm_beyond_range_raises_a_clear_error(value):
    """Audit finding (robustness): data_norm=None (not private) with one huge finite row
    raised OverflowError (34, 'Numerical result out of range') in the loss constants; now
    a clear error that shows no value, before any fit."""
    X = np.random.default_rng(0).uniform(-1, 1, (400, 3))
    y = (X[:, 0] > 0).astype(int)
    X[5, 1] = value
    with pytest.warns(Warning), pytest.raises(ValueError, match="rescale the features") as e:
        DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    assert "e+" not in str(e.value) and "154" not in str(e.value)
