"""Tests of the bounded-row synthetic data generators."""

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.linear_model import LogisticRegression

from skdp.datasets import make_private_classification, make_private_regression


def _row_norms(X):
    return np.linalg.norm(X, axis=1)


# ---------------------------------------------------------------------------
# make_private_classification
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n_samples, n_features", [(1, 1), (50, 1), (300, 2), (500, 40)]
)
@pytest.mark.parametrize("n_classes", [2, 3, 7])
def test_classification_shapes_and_labels(n_samples, n_features, n_classes):
    X, y = make_private_classification(
        n_samples, n_features, n_classes=n_classes, random_state=0
    )
    assert X.shape == (n_samples, n_features)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (n_samples,) and y.dtype == np.int64
    assert y.min() >= 0 and y.max() < n_classes
    counts = np.bincount(y, minlength=n_classes)
    assert counts.max() - counts.min() <= 1  # balanced


@pytest.mark.parametrize("data_norm", [1e-3, 0.5, 1.0, 7.3])
@pytest.mark.parametrize("class_sep", [0.0, 1.0, 3.0, 100.0])
@pytest.mark.parametrize("n_features", [1, 3, 50])
def test_classification_norm_bound(data_norm, class_sep, n_features):
    X, _ = make_private_classification(
        2000, n_features, data_norm=data_norm, class_sep=class_sep, random_state=1
    )
    assert np.all(np.isfinite(X))
    assert _row_norms(X).max() <= data_norm


def test_classification_few_rows_projected():
    # the fixed scaling radius keeps most rows strictly inside the ball
    X, _ = make_private_classification(20000, 10, data_norm=2.0, random_state=3)
    on_sphere = np.mean(_row_norms(X) >= 2.0 * (1 - 1e-12))
    assert on_sphere < 0.01
    assert _row_norms(X).mean() > 0.5  # and they are not squashed to the origin


@pytest.mark.parametrize("class_sep", [0.5, 1.0, 2.0])
def test_classification_class_sep_controls_bayes_error(class_sep):
    # two classes: the linear rule through the origin has error Phi(-class_sep);
    # a fitted logistic model on 20,000 rows gets within ~1.5 points of it
    # (binomial sd of the accuracy at n = 20,000 is < 0.0036).
    X, y = make_private_classification(
        20000, 5, class_sep=class_sep, data_norm=1.0, random_state=4
    )
    clf = LogisticRegression(fit_intercept=False, C=1e4).fit(X, y)
    acc = clf.score(X, y)
    assert acc == pytest.approx(norm.cdf(class_sep), abs=0.015)


def test_classification_determinism():
    a = make_private_classification(100, 4, n_classes=3, random_state=42)
    b = make_private_classification(100, 4, n_classes=3, random_state=42)
    c = make_private_classification(100, 4, n_classes=3, random_state=43)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    # Generators and legacy RandomState are accepted and reproducible
    g1 = make_private_classification(50, 3, random_state=np.random.default_rng(7))
    g2 = make_private_classification(50, 3, random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(g1[0], g2[0])
    r1 = make_private_classification(50, 3, random_state=np.random.RandomState(7))
    r2 = make_private_classification(50, 3, random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(r1[0], r2[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_samples": 0},
        {"n_features": 0},
        {"n_classes": 1},
        {"data_norm": 0.0},
        {"data_norm": -1.0},
        {"class_sep": -0.1},
        {"random_state": "seed"},
    ],
)
def test_classification_invalid_parameters(kwargs):
    with pytest.raises(ValueError):
        make_private_classification(**kwargs)


# ---------------------------------------------------------------------------
# make_private_regression
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n_samples, n_features", [(1, 1), (100, 1), (300, 7), (200, 60)]
)
def test_regression_shapes(n_samples, n_features):
    X, y, w = make_private_regression(n_samples, n_features, coef=True, random_state=0)
    assert X.shape == (n_samples, n_features)
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (n_samples,) and y.dtype == np.float64
    assert w.shape == (n_features,)
    assert np.linalg.norm(w) == pytest.approx(1.0)
    out = make_private_regression(n_samples, n_features, random_state=0)
    assert len(out) == 2


@pytest.mark.parametrize("data_norm", [1e-3, 1.0, 12.5])
@pytest.mark.parametrize("n_features", [1, 2, 30])
def test_regression_norm_bound(data_norm, n_features):
    X, y = make_private_regression(
        3000, n_features, data_norm=data_norm, outlier_fraction=0.2, random_state=5
    )
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    assert _row_norms(X).max() <= data_norm


def test_regression_rows_uniform_in_ball():
    # uniform in the 2-d disc: P(||x|| <= r/2) = 1/4; sd at n = 20,000 is 0.003
    X, _ = make_private_regression(20000, 2, data_norm=3.0, random_state=6)
    assert np.mean(_row_norms(X) <= 1.5) == pytest.approx(0.25, abs=0.015)


def test_regression_noiseless_is_linear():
    X, y, w = make_private_regression(500, 4, noise=0.0, coef=True, random_state=7)
    np.testing.assert_allclose(y, X @ w, rtol=0, atol=1e-14)
    assert np.abs(y).max() <= 1.0 + 1e-12  # |x.w| <= data_norm


def test_regression_noise_level():
    X, y, w = make_private_regression(20000, 3, noise=0.3, coef=True, random_state=8)
    assert np.std(y - X @ w) == pytest.approx(0.3, rel=0.03)


@pytest.mark.parametrize(
    "fraction, expected", [(0.0, 0), (0.1, 100), (0.25, 250), (1.0, 1000)]
)
def test_regression_outliers(fraction, expected):
    data_norm = 2.0
    X, y, w = make_private_regression(
        1000,
        5,
        data_norm=data_norm,
        noise=0.0,
        outlier_fraction=fraction,
        coef=True,
        random_state=9,
    )
    resid = np.abs(y - X @ w)
    is_outlier = resid > 1e-12
    assert is_outlier.sum() == expected
    assert np.all(resid[is_outlier] >= 5 * data_norm - 1e-12)
    assert np.all(resid[is_outlier] <= 10 * data_norm + 1e-12)


@pytest.mark.parametrize("y_bound", [0.05, 0.5, 3.0])
def test_regression_y_bound(y_bound):
    _, y = make_private_regression(
        2000, 3, noise=0.5, outlier_fraction=0.1, y_bound=y_bound, random_state=10
    )
    assert np.abs(y).max() <= y_bound
    # with outliers of size >= 5 the bound is attained on both sides
    assert y.max() == y_bound and y.min() == -y_bound
    _, y_free = make_private_regression(
        2000, 3, noise=0.5, outlier_fraction=0.1, random_state=10
    )
    assert np.abs(y_free).max() > 3.0
    np.testing.assert_array_equal(y, np.clip(y_free, -y_bound, y_bound))


def test_regression_determinism():
    a = make_private_regression(100, 4, outlier_fraction=0.1, coef=True, random_state=3)
    b = make_private_regression(100, 4, outlier_fraction=0.1, coef=True, random_state=3)
    c = make_private_regression(100, 4, outlier_fraction=0.1, coef=True, random_state=4)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[1], c[1])
    g1 = make_private_regression(30, 2, random_state=np.random.default_rng(11))
    g2 = make_private_regression(30, 2, random_state=np.random.default_rng(11))
    np.testing.assert_array_equal(g1[1], g2[1])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_samples": 0},
        {"n_features": 0},
        {"data_norm": 0.0},
        {"noise": -0.1},
        {"outlier_fraction": 1.5},
        {"outlier_fraction": -0.1},
        {"y_bound": 0.0},
        {"coef": "yes"},
    ],
)
def test_regression_invalid_parameters(kwargs):
    with pytest.raises(ValueError):
        make_private_regression(**kwargs)
