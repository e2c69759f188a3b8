"""The base-rate fallback of binary DPLogisticRegression (skdp/linear_model/_base_rate.py)."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skdp import DPLogisticRegression
from skdp._mechanisms import new_word_source
from skdp.accounting import gaussian_event
from skdp.accounting._objective_perturbation import objective_perturbation_delta
from skdp.linear_model._auto import FALLBACK_RATIO
from skdp.linear_model._base import planned_dp_event
from skdp.linear_model._base_rate import (
    FALLBACK_MARGIN,
    _training_counts,
    base_rate_fallback,
    counts_sensitivity,
    release_base_rate_counts,
)
from skdp._solvers._objective_perturbation import OUT_RATIO, objective_perturbation_plan
from skdp._losses import LogisticLoss


def _weak(n=3000, p=20, rate=0.2, seed=0):
    """Labels independent of the features (no signal), 20 % positive."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, p)) / math.sqrt(p)
    y = (rng.random(n) < rate).astype(int)
    return X, y


def _strong(n=3000, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / math.sqrt(p) / 2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X @ np.arange(1.0, p + 1.0) * 4 + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def test_decision_keeps_a_model_that_beats_the_majority():
    coef = np.array([[1.0, -2.0]])
    out = base_rate_fallback(coef, np.array([0.5]), np.array([400.0, 700.0]), 1000, 1.0)
    assert out[2] is False
    np.testing.assert_array_equal(out[0], coef)
    assert out[1][0] == 0.5


def test_fallback_predicts_the_majority_and_keeps_the_ranking():
    rng = np.random.default_rng(0)
    coef = rng.standard_normal(6) * 10
    new_coef, b, fell = base_rate_fallback(coef[None, :], np.array([0.3]),
                                           np.array([250.0, 600.0]), 1000, 1.0)
    new_coef, b = new_coef[0], b[0]
    assert fell
    assert b == pytest.approx(math.log(0.25 / 0.75))
    X = rng.standard_normal((500, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    old, new = X @ coef, X @ new_coef + b
    assert np.all(np.abs(new - b) <= FALLBACK_MARGIN * (1 + 1e-12))
    assert np.all(new < 0)                                   # the majority (negative) class
    np.testing.assert_array_equal(np.argsort(old, kind="stable"),
                                  np.argsort(new - b, kind="stable"))   # same ranking


def test_fallback_rate_is_clipped_inside_zero_one():
    _, b, fell = base_rate_fallback(np.ones((1, 2)), np.zeros(1), np.array([-5.0, -10.0]),
                                    100, 1.0)
    assert fell and b[0] == pytest.approx(math.log(0.005 / 0.995))


def test_multiclass_fallback_predicts_the_largest_class():
    rng = np.random.default_rng(3)
    coef = rng.standard_normal((4, 5)) * 20
    counts = np.array([100.0, 450.0, 250.0, 200.0, 300.0])     # class counts, then right
    new_coef, b, fell = base_rate_fallback(coef, np.zeros(4), counts, 1000, 1.0)
    assert fell
    np.testing.assert_allclose(b, np.log([0.1, 0.45, 0.25, 0.2]))
    X = rng.standard_normal((300, 5))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    assert np.all(np.argmax(X @ new_coef.T + b, axis=1) == 1)
    kept = base_rate_fallback(coef, np.zeros(4), counts + [0, 0, 0, 0, 200], 1000, 1.0)
    assert kept[2] is False


@pytest.mark.parametrize("seed", range(5))
def test_counts_sensitivity_on_adversarial_neighbours(seed):
    """Replace-one changes each count by at most 1, whatever the released model: the L2
    change is at most sqrt 2, and the bound is reached (a positive row classified right
    replaced by a negative row classified wrong... and the reverse)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((200, 4))
    y = np.where(rng.random(200) < 0.3, 1.0, -1.0)
    coef, b = rng.standard_normal((1, 4)) * 5, rng.standard_normal(1)
    base = np.array(_training_counts(X, y, coef, b))
    worst = 0.0
    candidates = [rng.standard_normal(4) * s for s in (0.01, 1.0, 100.0, 1e6)]
    candidates += [coef[0] * 1e3, -coef[0] * 1e3, np.zeros(4)]
    for i in range(0, 200, 7):
        for x_new in candidates:
            for y_new in (-1.0, 1.0):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = x_new, y_new
                change = np.array(_training_counts(X2, y2, coef, b)) - base
                assert np.all(np.abs(change) <= 1.0)
                worst = max(worst, float(np.linalg.norm(change)))
    assert worst == pytest.approx(counts_sensitivity(2))


@pytest.mark.parametrize("seed", range(3))
def test_multiclass_counts_sensitivity_on_adversarial_neighbours(seed):
    """K classes: a replaced row moves one class count down, one up, and the right count by
    at most 1: L2 change at most sqrt 3, reached."""
    rng = np.random.default_rng(seed)
    K = 4
    X = rng.standard_normal((150, 3))
    y = rng.integers(0, K, 150).astype(float)
    coef, b = rng.standard_normal((K, 3)) * 3, rng.standard_normal(K)
    base = _training_counts(X, y, coef, b)
    worst = 0.0
    candidates = [rng.standard_normal(3) * s for s in (0.1, 1.0, 1e4)] + [np.zeros(3)]
    for i in range(0, 150, 11):
        for x_new in candidates:
            for y_new in range(K):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = x_new, y_new
                change = _training_counts(X2, y2, coef, b) - base
                assert np.all(np.abs(change) <= 1.0)
                worst = max(worst, float(np.linalg.norm(change)))
    assert worst == pytest.approx(counts_sensitivity(K))


def test_counts_on_sparse_rows_equal_the_dense_ones():
    sp = pytest.importorskip("scipy.sparse")
    X, y = _weak(500, 8)
    y_pm = np.where(y == 1, 1.0, -1.0)
    coef = np.random.default_rng(1).standard_normal((1, 8))
    np.testing.assert_array_equal(_training_counts(sp.csr_matrix(X), y_pm, coef, [-0.2]),
                                  _training_counts(X, y_pm, coef, [-0.2]))


def test_released_counts_have_the_calibrated_noise():
    """The release's noise std is sqrt(2)/mu_f (not smaller: a smaller noise would void the
    accounting; a seeded repeat is reproducible)."""
    X, y = _weak(300, 3)
    y_pm = np.where(y == 1, 1.0, -1.0)
    coef = np.array([[1.0, -1.0, 0.5]])
    exact = np.array(_training_counts(X, y_pm, coef, [0.1]))
    mu_f = 0.5
    draws = np.array([release_base_rate_counts(X, y_pm, coef, [0.1], mu_f, new_word_source(s))
                      for s in range(1500)]) - exact
    sd = counts_sensitivity(2) / mu_f
    assert np.std(draws) == pytest.approx(sd, rel=0.06)
    assert abs(np.mean(draws)) < 4 * sd / math.sqrt(draws.size)
    np.testing.assert_array_equal(
        release_base_rate_counts(X, y_pm, coef, [0.1], mu_f, new_word_source(7)),
        release_base_rate_counts(X, y_pm, coef, [0.1], mu_f, new_word_source(7)))


def test_plan_accounts_the_follow_up_inside_the_profile():
    plan = objective_perturbation_plan(5000, 11, LogisticLoss(), epsilon=1.0, delta=1e-6,
                                       alpha=1e-3, row_bound=math.sqrt(2.0),
                                       follow_up_ratio=FALLBACK_RATIO)
    bare = objective_perturbation_plan(5000, 11, LogisticLoss(), epsilon=1.0, delta=1e-6,
                                       alpha=1e-3, row_bound=math.sqrt(2.0))
    mu = 2.0 * plan["L"] / plan["sigma"]
    assert plan["mu_follow_up"] == pytest.approx(FALLBACK_RATIO * mu)
    assert bare["mu_follow_up"] == 0.0
    # the profile with the follow-up's parameter in quadrature meets the target ...
    assert objective_perturbation_delta(1.0, mu, math.hypot(OUT_RATIO, FALLBACK_RATIO) * mu,
                                        plan["eps_j"]) <= 1e-6
    # ... and the check costs noise: without it the objective noise is smaller
    assert plan["sigma"] > bare["sigma"]
    assert plan["sigma"] < 1.1 * bare["sigma"]
    # the composable record adds the follow-up's Gaussian (GDP mu_f)
    extra = plan["dp_event"].events[-1]
    assert len(plan["dp_event"].events) == len(bare["dp_event"].events) + 1
    assert extra == gaussian_event(1.0 / plan["mu_follow_up"], 1.0)


def test_follow_up_needs_a_gaussian_calibrated_release():
    with pytest.raises(ValueError, match="follow-up"):
        objective_perturbation_plan(5000, 11, LogisticLoss(), epsilon=1.0, delta=0.0,
                                    alpha=1e-3, row_bound=1.0, follow_up_ratio=0.3)


def test_weak_signal_fit_falls_back_to_the_majority():
    X, y = _weak()
    fell, acc = 0, []
    for seed in range(6):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=seed).fit(X, y)
        assert clf.solver_params_["follow_up_ratio"] == FALLBACK_RATIO
        assert clf.epsilon_ <= 1.0
        fell += clf.base_rate_fallback_
        acc.append(np.mean(clf.predict(X) == y))
    assert fell >= 5
    assert np.mean(acc) >= max(y.mean(), 1 - y.mean()) - 0.005


def test_strong_signal_fit_keeps_its_model():
    X, y = _strong()
    for seed in range(3):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=seed).fit(X, y)
        assert not clf.base_rate_fallback_
        assert clf.score(X, y) > 0.85


def test_off_and_where_it_does_not_apply():
    X, y = _weak(800, 5)
    off = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=0,
                               base_rate_fallback=False).fit(X, y)
    assert not off.base_rate_fallback_ and "follow_up_ratio" not in off.solver_params_
    for kwargs in ({"delta": 0.0}, {"fit_intercept": False},
                   {"solver": "output_perturbation"}):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=0, **kwargs).fit(X, y)
        assert not clf.base_rate_fallback_ and "follow_up_ratio" not in clf.solver_params_
    y3 = np.arange(len(y)) % 3
    clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1, 2],
                               random_state=0, solver="output_perturbation").fit(X, y3)
    assert not clf.base_rate_fallback_ and "follow_up_ratio" not in clf.solver_params_


def test_planned_event_is_the_fitted_one_with_the_check():
    X, y = _weak(1500, 6)
    clf = DPLogisticRegression(epsilon=0.7, data_norm=1.0, classes=[0, 1], random_state=3)
    planned = planned_dp_event(clf, X.shape[0], X.shape[1])
    clf.fit(X, y)
    assert planned == clf.dp_event_


def test_invalid_setting_is_refused():
    X, y = _weak(100, 3)
    with pytest.raises(ValueError, match="base_rate_fallback"):
        DPLogisticRegression(data_norm=1.0, classes=[0, 1], base_rate_fallback=True).fit(X, y)


def test_dask_fit_runs_the_check_on_the_workers():
    da = pytest.importorskip("dask.array")
    import dask

    X, y = _weak(4000, 6, seed=2)
    with dask.config.set(scheduler="synchronous"):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=0).fit(da.from_array(X, chunks=1000),
                                                       da.from_array(y, chunks=1000))
    assert clf.solver_params_["follow_up_ratio"] == FALLBACK_RATIO
    assert isinstance(clf.base_rate_fallback_, bool)
    assert clf.epsilon_ <= 1.0


def test_multinomial_weak_signal_falls_back_and_the_event_is_planned():
    rng = np.random.default_rng(5)
    X = rng.uniform(0.0, 1.0, (3000, 8)) / math.sqrt(8)
    y = rng.choice(3, 3000, p=[0.6, 0.25, 0.15])
    fell = 0
    # no signal at all: a fit either falls back or already predicts (nearly) the majority
    # class (dpsgd's half-bound clip leaves it little noise); 6 seeds, the check fires in 4
    for seed in range(6):
        clf = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1, 2],
                                   random_state=seed)
        planned = planned_dp_event(clf, *X.shape)
        clf.fit(X, y)
        assert clf.solver_ == "dpsgd"
        assert clf.solver_params_["follow_up_ratio"] == FALLBACK_RATIO
        assert planned == clf.dp_event_
        assert clf.epsilon_ <= 1.0 * (1 + 1e-9)
        fell += clf.base_rate_fallback_
        if clf.base_rate_fallback_:
            assert np.all(clf.predict(X) == 0)
        assert np.mean(clf.predict(X) == y) >= np.mean(y == 0) - 0.005
    assert fell >= 2


def test_dpsgd_calibration_composes_the_follow_up():
    from skdp.accounting import (calibrate_poisson_gaussian, compose, get_epsilon,
                                 poisson_gaussian_event)

    q, T, mu_f = 0.02, 500, 0.1
    bare = calibrate_poisson_gaussian(1.0, 1e-6, q, T)
    z = calibrate_poisson_gaussian(1.0, 1e-6, q, T, follow_up_mu=mu_f)
    assert z > bare
    event = compose(poisson_gaussian_event(q, z, T), gaussian_event(1.0 / mu_f, 1.0))
    assert 0.99 < get_epsilon(event, 1e-6) <= 1.0


def test_no_check_where_its_comparison_would_be_noisy():
    """n mu < CHECK_MIN_SIZE: the counts' noise would throw good models away (300 rows at
    epsilon = 1: 2 of 5 seeds replaced a model 78-95 % right), so the check does not run
    and costs nothing; the same data at epsilon = 10 runs it."""
    from skdp.linear_model._auto import CHECK_MIN_SIZE
    from skdp.accounting import gaussian_mu_for

    X = np.random.default_rng(0).normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    assert 300 * gaussian_mu_for(1.0, 1e-6) < CHECK_MIN_SIZE <= 300 * gaussian_mu_for(10.0, 1e-6)
    for seed in range(5):
        clf = DPLogisticRegression(data_norm=3.0, classes=[0, 1], random_state=seed).fit(X, y)
        assert "follow_up_ratio" not in clf.solver_params_ and not clf.base_rate_fallback_
        assert planned_dp_event(clf, *X.shape) == clf.dp_event_
    clf = DPLogisticRegression(epsilon=10.0, data_norm=3.0, classes=[0, 1],
                               random_state=0).fit(X, y)
    assert clf.solver_params_["follow_up_ratio"] == FALLBACK_RATIO


def test_counts_are_computed_with_single_threaded_blas(monkeypatch):
    """The scores' product runs on one BLAS thread: a threaded one leaves an OpenBLAS
    worker spinning for about 0.1 s, on the cores of the next fit's parallel kernels."""
    from threadpoolctl import threadpool_info

    import skdp.linear_model._base_rate as base_rate

    seen = []
    counts = base_rate._training_counts

    def recording(*args):
        seen.append([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"])
        return counts(*args)

    monkeypatch.setattr(base_rate, "_training_counts", recording)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    release_base_rate_counts(X, np.where(X[:, 0] > 0, 1.0, -1.0), np.ones((1, 3)),
                             np.zeros(1), 1.0, new_word_source(0))
    assert seen and seen[0] and all(t == 1 for t in seen[0])


def test_check_draws_from_a_key_no_transformer_derives_from_the_same_seed(monkeypatch):
    """Audit finding (F2): in ``Pipeline([DPOneHotEncoder(random_state=7),
    DPLogisticRegression(solver="dpsgd", random_state=7)])`` the base-rate counts drew the
    encoder's unit noises (the check keyed ChaCha20 with ``new_word_source(7)``, as the
    DP transformers do), while the accounting composed the two releases as independent.
    The check now has a stream of its own: neither the transformers' key nor the
    solver's, and the same one on every fit with that seed."""
    from tests._noise_keys import record_keys

    from skdp.preprocessing._common import word_source

    X, y = _weak()
    keys = record_keys(monkeypatch)
    fits = []
    for _ in range(2):
        keys.clear()
        clf = DPLogisticRegression(classes=[0, 1], data_norm=1.0, solver="dpsgd",
                                   random_state=7).fit(X, y)
        assert "follow_up_ratio" in clf.solver_params_          # the check ran
        fits.append(list(keys))
    solver_key, check_key = fits[0]
    assert fits[1] == fits[0]                                   # reproducible
    transformers_key = tuple(int(w) for w in word_source(7)[4:12])
    assert check_key not in (transformers_key, solver_key)


#: a finite row whose product with a model of coefficients above 1 in magnitude overflows
EXTREME = np.finfo(np.float64).max


@pytest.mark.parametrize("n_classes", [2, 3])
def test_counts_on_an_overflowing_row_are_silent_and_move_by_one(n_classes):
    """Audit finding: the check computes ``X w + b`` on the unclipped training rows; a
    finite extreme row overflowed it and numpy warned ("overflow encountered in matmul")
    on that neighbour only, outside the release (an exception under
    ``simplefilter("error")`` or ``np.seterr(all="raise")``).  Now silent; the row counts
    as one row (NaN or infinite scores classify it like any score), so each count moves
    by at most 1 from the neighbour with an ordinary row."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = (rng.integers(0, 3, 200) if n_classes == 3
         else np.where(rng.random(200) < 0.3, 1.0, -1.0)).astype(float)
    coef = np.array([[2.0, 0.0, -2.0], [2.0, -2.0, 2.0], [1.0, 3.0, -2.0]])
    coef, b = coef[:1 if n_classes == 2 else 3], np.zeros(1 if n_classes == 2 else 3)
    base = np.array(_training_counts(X, y, coef, b))
    for row in ([EXTREME, -EXTREME, EXTREME], [EXTREME, EXTREME, -EXTREME]):
        X2 = X.copy()
        X2[5] = row
        with np.errstate(all="ignore"):     # the case is exercised: the scores overflow
            assert not np.all(np.isfinite(X2[5] @ coef.T))
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            change = np.array(_training_counts(X2, y, coef, b)) - base
        assert np.all(np.abs(change) <= 1.0)


def test_fits_with_an_overflowing_training_row_are_silent():
    """The audit's neighbour through the estimator: a default (objective perturbation,
    binary) and a multinomial (dpsgd) fit, both with the check, in memory and on Dask
    arrays whose partitions are counted on concurrent threads -- no warning, no
    exception."""
    da = pytest.importorskip("dask.array")
    import dask

    X, y = _strong(4000, 5, seed=2)
    y3 = np.digitize(X @ np.arange(1.0, 6.0), [-0.3, 0.3])
    X[17] = EXTREME
    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for target in (y, y3):
            est = DPLogisticRegression(data_norm=1.0, classes=np.unique(target),
                                       random_state=0)
            fits.append(clone(est).fit(X, target))
            with dask.config.set(scheduler="threads"):
                fits.append(clone(est).fit(da.from_array(X, chunks=(500, 5)),
                                           da.from_array(target, chunks=500)))
    for clf in fits:
        assert clf.solver_params_["follow_up_ratio"] == FALLBACK_RATIO
        # the case is exercised: the released model's scores of the row overflow
        assert clf.base_rate_fallback_ is False
        with np.errstate(all="ignore"):
            assert not np.all(np.isfinite(X[17] @ clf.coef_.T))
