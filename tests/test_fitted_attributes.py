"""The fitted-attribute inventory (skdp._fitted_attributes): every public fitted attribute of
every estimator, solver, search and the scaler is classified; the public ones do not move
between adversarial neighbouring datasets; the private searches return no unprotected
diagnostic; ``verbose=1`` prints nothing that depends on the data."""

import contextlib
import io
import warnings

import dp_accounting
import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
from skdp._fitted_attributes import (
    PUBLIC,
    RELEASED,
    UNPROTECTED_DIAGNOSTICS,
    fitted_attribute_names,
    strip_unprotected,
)
from skdp._solvers import CONVEX_SOLVERS, NONCONVEX_SOLVERS
from skdp.model_selection import (
    DPGridSearchCV,
    DPRandomizedSearchCV,
    dp_cross_validate,
    make_private_scorer,
)
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler, DPSplineTransformer,
                                DPStandardScaler)

N, D = 600, 3
CLASSIFIED = RELEASED | PUBLIC | UNPROTECTED_DIAGNOSTICS


def _neighbours(kind):
    """(X, y) and a replace-one neighbour whose row 0 is adversarial: 100x beyond the
    public bound, label flipped (classification) or target 1e6 (regression)."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (N, D)) / np.sqrt(D)
    if kind == "classification":
        y = (X @ np.arange(1, D + 1) + 0.3 * rng.normal(size=N) > 0).astype(int)
    else:
        y = X @ np.arange(1, D + 1) + 0.1 * rng.normal(size=N)
    X2, y2 = X.copy(), y.copy()
    X2[0] = 100.0 * np.ones(D)
    y2[0] = 1 - y[0] if kind == "classification" else 1e6
    return (X, y), (X2, y2)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, dp_accounting.DpEvent):
        return a == b
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a):
        return np.isnan(b)
    if hasattr(a, "get_params") or callable(a):
        return type(a) is type(b)
    return a == b


def _cases():
    cases = []
    for solver in sorted(CONVEX_SOLVERS):
        cases.append((f"logistic-{solver}", "classification", lambda s=solver: DPLogisticRegression(
            epsilon=2.0, data_norm=1.0, classes=[0, 1], solver=s, random_state=3)))
        cases.append((f"huber-{solver}", "regression", lambda s=solver: DPHuberRegressor(
            epsilon=2.0, data_norm=1.0, y_bound=5.0, solver=s, random_state=3)))
    cases.append(("multinomial-auto", "classification", lambda: DPLogisticRegression(
        epsilon=2.0, data_norm=1.0, classes=[0, 1, 2], random_state=3)))
    for solver in sorted(set(NONCONVEX_SOLVERS) | {"auto"}):
        eps = 20.0 if solver == "spider" else 2.0   # spider refuses small n at small epsilon
        cases.append((f"nonconvex-{solver}", "regression", lambda s=solver, e=eps:
                      DPNonconvexRegressor(epsilon=e, data_norm=1.0, y_bound=5.0, solver=s,
                                           alpha=0.01, random_state=3)))
    return cases


CASES = _cases()


@pytest.mark.parametrize("name,kind,make", CASES, ids=[c[0] for c in CASES])
def test_estimator_attributes_are_classified_and_public_ones_do_not_move(name, kind, make):
    assert not (RELEASED & PUBLIC) and not (PUBLIC & UNPROTECTED_DIAGNOSTICS)
    assert not (RELEASED & UNPROTECTED_DIAGNOSTICS)
    (X, y), (X2, y2) = _neighbours(kind)
    if name == "multinomial-auto":
        y, y2 = np.arange(N) % 3, np.r_[2, np.arange(1, N) % 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = make().fit(X, y), make().fit(X2, y2)
    names = fitted_attribute_names(a)
    assert names == fitted_attribute_names(b)
    unclassified = sorted(set(names) - CLASSIFIED)
    assert not unclassified, f"{name}: unclassified fitted attributes {unclassified}"
    moved = [k for k in names if k in PUBLIC and not _same(getattr(a, k), getattr(b, k))]
    assert not moved, f"{name}: public attributes differ between neighbours: {moved}"
    assert a.privacy_guaranteed_ and np.isfinite(a.epsilon_)


def test_verbose_1_prints_the_same_on_neighbouring_datasets():
    (X, y), (X2, y2) = _neighbours("classification")
    outs = []
    for Xi, yi in ((X, y), (X2, y2)):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="output_perturbation",
                                 random_state=0, verbose=1).fit(Xi, yi)
        outs.append(buf.getvalue())
    assert outs[0] == outs[1] and "solver=output_perturbation" in outs[0]
    assert "unprotected" not in outs[0]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="output_perturbation",
                             random_state=0, verbose=2).fit(X, y)
    assert "unprotected diagnostics" in buf.getvalue()


def test_output_perturbation_n_iter_is_an_unprotected_diagnostic():
    """The audit's finding: the certified minimiser's iteration count depends on the data."""
    iters = set()
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (200, D))
        y = (X @ [1, -2, 3] * rng.uniform(0.1, 5) + rng.normal(size=200) > 0).astype(int)
        iters.add(DPLogisticRegression(data_norm=2.0, classes=[0, 1], alpha=1e-3,
                                       solver="output_perturbation", random_state=0)
                  .fit(X, y).n_iter_)
    assert len(iters) > 1          # data-dependent: must not be in PUBLIC
    assert "n_iter_" in UNPROTECTED_DIAGNOSTICS and "n_iter_" not in PUBLIC


def _no_diagnostics(model):
    for obj in [model] + ([s for _, s in model.steps] if hasattr(model, "steps") else []):
        left = UNPROTECTED_DIAGNOSTICS & set(vars(obj))
        assert not left, f"{type(obj).__name__} still carries {sorted(left)}"


@pytest.mark.parametrize("refit,cv", [(True, None), (False, None), (False, 3)])
def test_searches_return_models_without_unprotected_diagnostics(refit, cv):
    (X, y), _ = _neighbours("classification")
    pipe = make_pipeline(DPStandardScaler(feature_bounds=(-1, 1)),
                         DPLogisticRegression(data_norm=2.0, classes=[0, 1],
                                              solver="output_perturbation"))
    search = DPGridSearchCV(pipe, {"dplogisticregression__alpha": [0.01, 0.1]}, epsilon=2.0,
                            delta=1e-6, refit=refit, cv=cv, random_state=0).fit(X, y)
    unclassified = sorted(set(fitted_attribute_names(search)) - CLASSIFIED)
    assert not unclassified
    assert search.privacy_guaranteed_ and search.epsilon_ <= 2.0
    if hasattr(search, "best_estimator_"):
        _no_diagnostics(search.best_estimator_)
        assert hasattr(search.best_estimator_[-1], "coef_")
    else:
        assert cv == 3   # k-fold without refit keeps no model
    mae = make_private_scorer(lambda t, p: abs(t - p), lower=0, upper=2,
                              greater_is_better=False)
    rand = DPRandomizedSearchCV(DPHuberRegressor(data_norm=1.0, solver="output_perturbation"),
                                {"alpha": [0.01, 0.1]}, n_iter=2, epsilon=2.0, scoring=mae,
                                random_state=0).fit(X, y.astype(float))
    _no_diagnostics(rand.best_estimator_)


def test_dp_cross_validate_returns_models_without_unprotected_diagnostics():
    (X, y), _ = _neighbours("classification")
    res = dp_cross_validate(DPLogisticRegression(data_norm=1.0, classes=[0, 1]), X, y,
                            epsilon=2.0, cv=3, random_state=0, return_estimator=True)
    assert len(res["estimator"]) == 3 and res["privacy_guaranteed"]
    for model in res["estimator"]:
        _no_diagnostics(model)
        assert set(fitted_attribute_names(model)) <= RELEASED | PUBLIC


def test_scaler_attributes_are_classified_and_public_ones_do_not_move():
    (X, _), (X2, _) = _neighbours("regression")
    a = DPStandardScaler(feature_bounds=(-1, 1), random_state=0).fit(X)
    b = DPStandardScaler(feature_bounds=(-1, 1), random_state=0).fit(X2)
    names = fitted_attribute_names(a)
    assert not sorted(set(names) - CLASSIFIED)
    assert not [k for k in names if k in PUBLIC and not _same(getattr(a, k), getattr(b, k))]


def test_strip_unprotected_walks_nested_estimators():
    (X, y), _ = _neighbours("classification")
    pipe = make_pipeline(DPLogisticRegression(data_norm=1.0, classes=[0, 1])).fit(X, y)
    assert hasattr(pipe[-1], "n_iter_")
    strip_unprotected(pipe)
    _no_diagnostics(pipe)
    assert hasattr(pipe[-1], "coef_")


@pytest.mark.parametrize("make", [
    lambda: DPSplineTransformer(random_state=0),
    lambda: DPOneHotEncoder(random_state=0),
    lambda: DPRobustScaler(random_state=0),
    lambda: DPStandardScaler(feature_bounds="auto", random_state=0),
], ids=["spline", "one-hot", "robust", "standard-auto"])
def test_raw_table_transformer_attributes_are_classified(make):
    (X, _), (X2, _) = _neighbours("regression")
    X2[0] = 1e300
    if isinstance(make(), DPOneHotEncoder):
        X = np.round(X * 3).astype(int)  # X2 is X but for row 0 (1e300 has no int)
        X2 = X.copy()
        X2[0] = 12345
    a, b = make().fit(X), make().fit(X2)
    names = fitted_attribute_names(a)
    assert not sorted(set(names) - CLASSIFIED)
    # with feature_bounds="auto" the bounds are released, and the noise scales that are
    # proportional to them follow (post-processing of the release)
    of_released_bounds = {"feature_bounds_", "mean_noise_std_", "moment_noise_std_"}
    assert not [k for k in names if k in PUBLIC and k not in of_released_bounds
                and not _same(getattr(a, k), getattr(b, k))]
