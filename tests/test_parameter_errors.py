"""Clear errors at the edges (issue 36, "Errors and edges").

Each refusal is a ``ValueError`` whose message names the parameter (and, for the numeric
ranges, the usable range), raised before the fit computes anything on the data, and the
estimator is left without fitted attributes.
"""

import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier, BaggingRegressor

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.model_selection import DPGridSearchCV


def _fitted_names(est):
    return [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def _binary(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


# ------------------------------------------------------------------ Dask, three classes
def test_dask_multiclass_fits_with_dpsgd_and_names_the_solvers_it_refuses():
    """Three classes on a Dask collection fit with the default (DP-SGD); the multinomial
    output perturbation (delta=0's solver) is refused before any noise, naming the solvers
    that do run there, and leaves nothing fitted."""
    da = pytest.importorskip("dask.array")
    X, _ = _binary()
    y = np.arange(X.shape[0]) % 3
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    fitted = DPLogisticRegression(data_norm=1.0, classes=[0, 1, 2], random_state=0).fit(Xd, yd)
    assert fitted.solver_ == "dpsgd" and fitted.coef_.shape[0] == 3
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1, 2], delta=0.0)
    with pytest.raises(ValueError) as info:
        est.fit(Xd, yd)
    msg = str(info.value)
    assert "'output_perturbation' does not fit the multinomial model on a Dask" in msg
    assert "['phased', 'dpsgd']" in msg and "in memory" in msg
    assert _fitted_names(est) == []


def test_dask_without_classes_asks_for_the_label_set():
    da = pytest.importorskip("dask.array")
    X, y = _binary()
    est = DPLogisticRegression(data_norm=1.0)
    with pytest.raises(ValueError, match=r"needs the public label set.*classes="):
        est.fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert _fitted_names(est) == []


# ------------------------------------------------------------------ bagging
@pytest.mark.parametrize("bootstrap", [True, False])
def test_bagging_explains_resampling(bootstrap):
    X, y = _binary()
    bag = BaggingClassifier(DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
                            n_estimators=2, bootstrap=bootstrap, max_samples=0.5,
                            random_state=0)
    with pytest.raises(ValueError) as info:
        bag.fit(X, y)
    msg = str(info.value)
    assert msg.startswith("sample_weight is not supported")
    assert "Bagging" in msg and "k-fold sensitivity" in msg and "bootstrap=False" in msg
    assert "disjoint blocks" in msg                       # what to do instead


def test_bagging_regressor_explains_resampling():
    X, y = _binary()
    bag = BaggingRegressor(DPHuberRegressor(data_norm=1.0), n_estimators=2, random_state=0)
    with pytest.raises(ValueError, match="row counts.*Bagging"):
        bag.fit(X, y.astype(float))


@pytest.mark.parametrize("weights", ["ones", "counts", "zero_one"])
@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
    lambda: DPHuberRegressor(data_norm=1.0),
], ids=["logistic", "huber"])
def test_whole_number_weights_outside_bagging_do_not_mention_bagging(make, weights):
    X, y = _binary()
    n = X.shape[0]
    w = {"ones": np.ones(n), "counts": np.arange(n) % 3,
         "zero_one": (np.arange(n) % 2).astype(int)}[weights]
    est = make()
    with pytest.raises(ValueError) as info:
        est.fit(X, y, sample_weight=w)
    msg = str(info.value)
    assert msg.startswith("sample_weight is not supported")
    assert "Bagging" not in msg and "bootstrap" not in msg and "ensemble" not in msg
    assert "row counts" in msg and "k-fold sensitivity" in msg
    assert "omit sample_weight" in msg                       # what to do instead
    assert _fitted_names(est) == []


def test_nonconvex_weights_outside_and_inside_bagging():
    from skdp import DPNonconvexRegressor

    X, y = _binary()
    with pytest.raises(ValueError) as info:
        DPNonconvexRegressor(data_norm=1.0).fit(X, y.astype(float),
                                                sample_weight=np.ones(X.shape[0]))
    assert "Bagging" not in str(info.value) and "row counts" in str(info.value)
    bag = BaggingRegressor(DPNonconvexRegressor(data_norm=1.0), n_estimators=2,
                           random_state=0)
    with pytest.raises(ValueError, match="row counts.*Bagging"):
        bag.fit(X, y.astype(float))


def test_real_valued_weights_keep_the_general_refusal():
    X, y = _binary()
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1])
    with pytest.raises(ValueError, match="per-sample weights change the sensitivity"):
        est.fit(X, y, sample_weight=np.full(X.shape[0], 0.5))
    assert _fitted_names(est) == []


# ------------------------------------------------------------------ search: refit_time_
def test_search_publishes_no_refit_time():
    X, y = _binary(n=400)
    search = DPGridSearchCV(DPLogisticRegression(classes=[0, 1], data_norm=1.0),
                            {"alpha": [0.01, 0.1]}, epsilon=2.0, refit=True, cv=0.5,
                            random_state=0)
    search.fit(X, y)
    assert hasattr(search, "best_estimator_")
    assert not hasattr(search, "refit_time_")
    assert not hasattr(search.best_estimator_, "n_iter_")


# ------------------------------------------------------------------ extreme public parameters
def _regression(n=300, d=3, seed=0):
    X, _ = _binary(n, d, seed)
    y = X @ np.arange(1.0, d + 1.0) + 0.1 * np.random.default_rng(seed).normal(size=n)
    return X, y


def _estimator(kind, **params):
    from skdp import DPNonconvexRegressor

    if kind == "logistic":
        return DPLogisticRegression(classes=[0, 1], **params)
    if kind == "huber":
        return DPHuberRegressor(**params)
    return DPNonconvexRegressor(**params)


def _nan_data(kind):
    """Data with a NaN: a check that runs before the data is read raises its own error
    first, not scikit-learn's "Input X contains NaN"."""
    X, y = _binary() if kind == "logistic" else _regression()
    X = X.copy()
    X[0, 0] = np.nan
    return X, y


ALL = ("logistic", "huber", "nonconvex")
SCALES = [
    # (estimators, parameter, value, other parameters)
    (ALL, "data_norm", 1e-300, {}),
    (ALL, "data_norm", 1e300, {}),
    (ALL, "data_norm", 1e154, {}),
    (ALL, "data_norm", 1e-300, {"fit_intercept": False}),
    (ALL, "intercept_scaling", 1e300, {"data_norm": 1.0}),
    (("huber", "nonconvex"), "y_bound", 1e300, {"data_norm": 1.0}),
    (("huber", "nonconvex"), "y_bound", 1e-300, {"data_norm": 1.0}),
    (("huber",), "huber_threshold", 1e300, {"data_norm": 1.0}),
    (("huber",), "huber_threshold", 1e-300, {"data_norm": 1.0}),
    (("nonconvex",), "loss_scale", 1e300, {"data_norm": 1.0}),
    (("nonconvex",), "loss_scale", 1e-300, {"data_norm": 1.0}),
    (ALL, "max_coef_norm", 1e300, {"data_norm": 1.0}),
    (("logistic", "huber"), "alpha", 1e300, {"data_norm": 1.0}),
    (("logistic", "huber", "nonconvex"), "alpha", 1e-300, {"data_norm": 1.0}),
]


@pytest.mark.parametrize(
    "kind, name, value, others",
    [(k, name, v, o) for kinds, name, v, o in SCALES for k in kinds],
    ids=lambda v: str(v))
def test_extreme_scale_is_a_clear_error_before_the_data(kind, name, value, others):
    est = _estimator(kind, **{**others, name: value})
    with pytest.raises(ValueError) as info:
        est.fit(*_nan_data(kind))
    msg = str(info.value)
    assert msg.startswith(f"{name}={value!r} is outside its usable range"), msg
    assert "[" in msg and "]" in msg                      # the range itself
    assert _fitted_names(est) == []


@pytest.mark.parametrize("kind", ["logistic", "huber"])
@pytest.mark.parametrize("epsilon", [1e6, 1e3, 709.9, 1e-300, 1e-20])
def test_pure_dp_epsilon_out_of_range(kind, epsilon):
    est = _estimator(kind, data_norm=1.0, epsilon=epsilon, delta=0.0)
    with pytest.raises(ValueError) as info:
        est.fit(*_nan_data(kind))
    msg = str(info.value)
    assert msg.startswith(f"epsilon={epsilon!r} with delta=0 is outside the usable range")
    assert "708.4" in msg and "2.328e-10" in msg
    assert _fitted_names(est) == []


@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("epsilon, delta", [(1e-300, 1e-300), (1e-20, 1e-20)])
def test_gaussian_out_of_range_names_epsilon_and_delta(kind, epsilon, delta):
    from skdp.accounting import gaussian_delta, gaussian_epsilon

    est = _estimator(kind, data_norm=1.0, epsilon=epsilon, delta=delta)
    with pytest.raises(ValueError) as info:
        est.fit(*_nan_data(kind))
    msg = str(info.value)
    assert f"(epsilon={epsilon:.3g}, delta={delta:.3g}) is out of the Gaussian" in msg
    # the usable values it names are usable
    eps_min = float(msg.split("epsilon >= ")[1].split(";")[0])
    assert gaussian_delta(eps_min * 1.01, np.exp(-30.0)) <= delta
    assert eps_min >= gaussian_epsilon(delta, np.exp(-30.0)) * 0.99
    assert _fitted_names(est) == []


def test_edges_of_the_ranges_fit():
    """The ends of the ranges are usable: finite models, epsilon_ within the budget."""
    X, y = _binary()
    Xr, yr = _regression()
    fits = [
        DPLogisticRegression(classes=[0, 1], data_norm=2.0 ** 100, random_state=0).fit(X, y),
        DPLogisticRegression(classes=[0, 1], data_norm=2.0 ** -100, fit_intercept=False,
                             random_state=0).fit(X, y),
        DPLogisticRegression(classes=[0, 1], data_norm=1.0, epsilon=708.39, delta=0.0,
                             random_state=0).fit(X, y),
        DPLogisticRegression(classes=[0, 1], data_norm=1.0, epsilon=2.0 ** -32, delta=0.0,
                             solver="output_perturbation", random_state=0).fit(X, y),
        DPHuberRegressor(data_norm=2.0 ** 100, huber_threshold=2.0 ** 100,
                         y_bound=2.0 ** 100, random_state=0).fit(Xr, yr),
        DPHuberRegressor(data_norm=1.0, alpha=2.0 ** -250, solver="phased",
                         random_state=0).fit(Xr, yr),
        DPHuberRegressor(data_norm=1.0, alpha=2.0 ** 250, solver="resque", n_epochs=2,
                         random_state=0).fit(Xr, yr),
    ]
    for est in fits:
        assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.intercept_))
        assert est.epsilon_ <= est.epsilon


def test_multinomial_output_perturbation_with_huge_alpha():
    """alpha far above the smoothness: the certified minimiser's fallback step count
    (rate beta/(beta + 2 alpha) rounds to 0) used to raise 'math domain error'."""
    X, _ = _binary()
    y = np.arange(X.shape[0]) % 3
    est = DPLogisticRegression(classes=[0, 1, 2], data_norm=1.0, alpha=1e20,
                               solver="output_perturbation", random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


def test_arithmetic_error_in_the_calibration_is_a_value_error():
    """A combination inside every single range that still leaves float64 (zeroth_order's
    zCDP rho of epsilon = 1e-300 underflows): a ValueError naming the public numbers,
    raised by the public plan before the solver runs."""
    from skdp import DPNonconvexRegressor

    X, y = _regression()
    est = DPNonconvexRegressor(data_norm=1.0, epsilon=1e-300, solver="zeroth_order")
    with pytest.raises(ValueError, match=r"the public parameters \(epsilon=1e-300, "
                                         r"delta=1e-06.*outside float64"):
        est.fit(X, y)
    assert _fitted_names(est) == []


@pytest.mark.parametrize("epsilon, delta", [(1e6, 0.0), (1e-300, 0.0), (1e-300, 1e-300)])
def test_search_and_cross_validation_budget_ranges(epsilon, delta):
    from skdp.model_selection import dp_cross_validate

    X, y = _binary()
    base = DPLogisticRegression(classes=[0, 1], data_norm=1.0, solver="output_perturbation")
    search = DPGridSearchCV(base, {"alpha": [0.1, 1.0]}, epsilon=epsilon, delta=delta,
                            random_state=0)
    with pytest.raises(ValueError, match=r"epsilon=(1000000.0|1e-300)"):
        search.fit(X, y)
    assert _fitted_names(search) == []
    with pytest.raises(ValueError, match=r"epsilon=(1000000.0|1e-300)"):
        dp_cross_validate(base, X, y, epsilon=epsilon, delta=delta, random_state=0)


def test_checked_dpsgd_epsilon_range():
    """dpsgd with the base-rate check: the accountant's grid for the check's Gaussian grows
    like epsilon (at 1e300 numpy refused the array, at 1e8 memory ran out)."""
    X, _ = _binary()
    y = np.arange(X.shape[0]) % 3
    est = DPLogisticRegression(classes=[0, 1, 2], data_norm=1.0, epsilon=1e300)
    with pytest.raises(ValueError, match=r"^epsilon=1e\+300 is above 100000.*"
                                         r"base_rate_fallback=False"):
        est.fit(X, y)
    assert _fitted_names(est) == []
    est.set_params(base_rate_fallback=False, random_state=0).fit(X, y)   # the remedy
    assert np.all(np.isfinite(est.coef_)) and est.epsilon_ <= est.epsilon


@pytest.mark.parametrize("kind", ALL)
def test_objective_perturbation_out_of_range_names_epsilon_and_delta(kind):
    """Inside the Gaussian range, outside objective perturbation's (the default of all
    three: warm_gd starts from it): it said only 'no noise level meets the privacy
    target'."""
    est = _estimator(kind, data_norm=1.0, epsilon=1e-11, delta=1e-300)
    X, y = _binary() if kind == "logistic" else _regression()
    with pytest.raises(ValueError, match=r"^\(epsilon=1e-11, delta=1e-300\) is out of "
                                         r"objective perturbation's calibration range"):
        est.fit(X, y)
    assert _fitted_names(est) == []


# ------------------------------------------------------------------ smoothing radius
@pytest.mark.parametrize("smoothing", [1e308, 1e101, 5e-324, 1e-101, -1.0])
@pytest.mark.parametrize("solver", ["phased", "resque"])
def test_smoothing_outside_its_range_is_refused(solver, smoothing):
    """A radius whose derived smoothness, steps or ReSQue block lengths overflow is refused
    up front with the usable range (it hung ``resque`` at 1e308 and raised a raw error in
    ``phased``)."""
    X, y = _binary()
    est = DPHuberRegressor(data_norm=1.0, y_bound=2.0, solver=solver, smoothing=smoothing,
                           huber_threshold=0.0, random_state=0)
    with pytest.raises(ValueError, match=r"smoothing.*\[1e-100, 1e\+100\].*0\.0"):
        est.fit(X, y.astype(float))
    assert _fitted_names(est) == []


@pytest.mark.parametrize("radius", [1e308, 1e101, 5e-324, 1e-101, 0.0, -1.0])
@pytest.mark.parametrize("solver", ["zeroth_order", "zeroth_order_naive"])
def test_smoothing_radius_outside_its_range_is_refused(solver, radius):
    """DPNonconvexRegressor's ``smoothing_radius`` has the range of ``smoothing``: it was
    only checked positive, so 1e150 fitted coefficients of 1e149 and 1e308 or 5e-324 ended
    in an error about the noise calibration that did not name the radius."""
    from skdp import DPNonconvexRegressor

    X, y = _regression()
    est = DPNonconvexRegressor(data_norm=1.0, y_bound=2.0, solver=solver,
                               smoothing_radius=radius, random_state=0)
    with pytest.raises(ValueError, match=r"smoothing_radius.*1e-100.*1e\+100"):
        est.fit(X, y)
    assert _fitted_names(est) == []


@pytest.mark.parametrize("radius", [1e100, 1e-100])
@pytest.mark.parametrize("solver", ["zeroth_order", "zeroth_order_naive"])
def test_smoothing_radius_at_the_ends_of_its_range_fits(solver, radius):
    from skdp import DPNonconvexRegressor

    X, y = _regression()
    est = DPNonconvexRegressor(data_norm=1.0, y_bound=2.0, solver=solver,
                               smoothing_radius=radius, random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("smoothing", [1e100, 1e-100, 0.0])
@pytest.mark.parametrize("solver", ["phased", "resque"])
def test_smoothing_at_the_ends_of_its_range_fits(solver, smoothing):
    X, y = _binary()
    huber_threshold = 0.0 if smoothing > 0 or solver == "resque" else 1.0
    est = DPHuberRegressor(data_norm=1.0, y_bound=2.0, solver=solver, smoothing=smoothing,
                           huber_threshold=huber_threshold, random_state=0)
    est.fit(X, y.astype(float))
    assert np.all(np.isfinite(est.coef_))


# ------------------------------------------------------------------ large sparse designs
def _large_sparse():
    import scipy.sparse as sp

    # a dense copy would take 200000 x 1001 x 8 bytes = 1.5 GiB (> DENSE_COPY_MAX_BYTES)
    X = sp.random(200_000, 1000, density=1e-5, format="csr", random_state=0)
    return X, np.zeros(X.shape[0])


def test_nonconvex_on_a_large_sparse_design_suggests_its_own_solvers():
    from skdp import DPNonconvexRegressor
    from skdp._solvers import NONCONVEX_SOLVERS, SPARSE_SOLVERS

    X, y = _large_sparse()
    est = DPNonconvexRegressor(solver="warm_gd", data_norm=1.0, y_bound=1.0,
                               random_state=0)
    with pytest.raises(ValueError, match="dense copy of this sparse X") as info:
        est.fit(X, y)
    msg = str(info.value)
    assert "solver='warm_gd' reads dense rows" in msg
    suggested = [s for s in SPARSE_SOLVERS if f"solver={s!r}" in msg]
    assert suggested == ["dpsgd"] and set(suggested) <= set(NONCONVEX_SOLVERS)
    assert "objective_perturbation" not in msg and "output_perturbation" not in msg
    assert _fitted_names(est) == []


def test_convex_model_on_a_large_sparse_design_suggests_its_sparse_solvers():
    X, y = _large_sparse()
    est = DPHuberRegressor(solver="phased", data_norm=1.0, y_bound=1.0, random_state=0)
    with pytest.raises(ValueError, match="dense copy of this sparse X") as info:
        est.fit(X, y)
    msg = str(info.value)
    for solver in ("objective_perturbation", "output_perturbation", "dpsgd"):
        assert f"solver={solver!r}" in msg
