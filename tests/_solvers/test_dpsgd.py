"""Private SGD (BST14 baseline): per-example clipping on adversarial neighbours, the Poisson
sampler, the noise actually added, determinism, convergence without noise, enforcement."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import binom, chi2, chisquare

import skdp._solvers._dpsgd as dpsgd
from skdp._losses import HUBER, LOGISTIC, MULTINOMIAL, HuberLoss, LogisticLoss, MultinomialLoss
from skdp._mechanisms import clip_and_augment
from skdp._solvers._dpsgd import STEP_CAP_FACTOR, solve_dpsgd
from skdp._mechanisms._clipping import row_norms
from skdp._solvers._dpsgd_kernel import _clipped_batch_gradient, _sample_batch
from skdp._solvers._objective import Objective
from skdp.accounting import get_epsilon, poisson_gaussian_event


@dataclass(frozen=True)
class WrongLipschitzLogistic:
    """A loss spec whose Lipschitz constant is 100 times too small (logistic kernels)."""

    loss_id: int = LOGISTIC
    param: float = 0.0

    def lipschitz(self, data_norm):
        return 0.01 * float(data_norm)

    def smoothness(self, data_norm):
        return float(data_norm) ** 2 / 4.0

    def sup_loss_at_zero(self, y_bound=None):
        return math.log(2.0)


@pytest.fixture
def noise_multiplier(monkeypatch):
    """Replace the calibrated noise multiplier by a fixed value (0: noise-free runs)."""

    def set_value(z):
        monkeypatch.setattr(dpsgd, "_noise_multiplier", lambda *args: float(z))

    return set_value


def _batch_sum(X, y, W, idx, loss_id, param, clip):
    xnorm = np.empty(X.shape[0])
    row_norms(X, xnorm)
    K = W.shape[1]
    out = np.empty_like(W)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    dropped, _ = _clipped_batch_gradient(
        X, y, W, idx, idx.shape[0], loss_id, float(param), float(clip), xnorm, out,
        np.empty(K), np.empty(K),
    )
    return out, dropped


# --------------------------------------------------------------------------------------
# per-example clipping


def _adversarial_row(rng, d):
    kind = rng.integers(6)
    u = rng.normal(size=d)
    if kind == 0:
        return u * 1e200
    if kind == 1:
        return np.full(d, np.nan)
    if kind == 2:
        r = u.copy()
        r[0] = np.inf
        return r
    if kind == 3:
        return np.zeros(d)
    if kind == 4:
        return u * 1e6
    return u


def _adversarial_target(rng, loss_id, K):
    if loss_id == LOGISTIC:
        return float(rng.choice([1.0, -1.0, 1e300, -1e300, 7.0, np.nan]))
    if loss_id == HUBER:
        return float(rng.choice([0.0, 1e308, -1e308, 3.0, np.nan]))
    return float(rng.choice([0.0, K - 1.0, -1.0, float(K), 1.5, np.nan]))


@pytest.mark.parametrize("loss_id, param, K", [(LOGISTIC, 0.0, 1), (HUBER, 0.7, 1),
                                                (MULTINOMIAL, 0.0, 3)])
@pytest.mark.parametrize("clip", [1.0, 0.01])
def test_clipped_sum_moves_at_most_2clip_between_neighbours(loss_id, param, K, clip):
    """Unclipped, huge, non-finite rows and absurd targets; huge W; clip possibly far below
    the true gradient norms (a wrong Lipschitz constant): the batch sums of neighbouring
    datasets differ by at most 2 clip, and are finite."""
    rng = np.random.default_rng(100 + loss_id)
    worst = 0.0
    for _ in range(60):
        n, d = int(rng.integers(2, 12)), int(rng.integers(1, 6))
        X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-2, 3, size=(n, 1))
        if loss_id == MULTINOMIAL:
            y = rng.integers(0, K, size=n).astype(float)
        else:
            y = rng.choice([-1.0, 1.0], size=n) * (1.0 if loss_id == LOGISTIC else 5.0)
        W = rng.normal(size=(d, K)) * 10.0 ** rng.uniform(-3, 3)
        i = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        X2[i] = _adversarial_row(rng, d)
        y2[i] = _adversarial_target(rng, loss_id, K)
        if rng.random() < 0.5:
            X[i] = _adversarial_row(rng, d)
            y[i] = _adversarial_target(rng, loss_id, K)
        idx = rng.permutation(n)[: int(rng.integers(1, n + 1))]
        if i not in idx:
            idx = np.append(idx, i)
        s1, _ = _batch_sum(X, y, W, idx, loss_id, param, clip)
        s2, _ = _batch_sum(X2, y2, W, idx, loss_id, param, clip)
        assert np.all(np.isfinite(s1)) and np.all(np.isfinite(s2))
        diff = np.linalg.norm(s1 - s2)
        assert diff <= 2.0 * clip * (1.0 + 1e-12)
        # each single example is clipped too
        one, _ = _batch_sum(X2, y2, W, np.array([i]), loss_id, param, clip)
        assert np.linalg.norm(one) <= clip * (1.0 + 1e-12)
        worst = max(worst, diff / (2.0 * clip))
    assert worst > 0.5  # the bound is approached: the test could fail


def test_clipped_sum_attains_2clip_on_antipodal_neighbours():
    """The bound is tight, so a missing or loosened clip is caught."""
    x = np.array([[3.0, 4.0]])
    W = np.zeros((2, 1))
    clip = 0.05  # the true gradient norm is 2.5
    s1, _ = _batch_sum(x, np.array([1.0]), W, [0], LOGISTIC, 0.0, clip)
    s2, _ = _batch_sum(x, np.array([-1.0]), W, [0], LOGISTIC, 0.0, clip)
    assert np.linalg.norm(s1 - s2) == pytest.approx(2.0 * clip, rel=1e-9)


def test_non_finite_examples_contribute_zero():
    X = np.array([[1.0, 0.0], [np.nan, 1.0], [np.inf, 0.0]])
    y = np.array([0.0, 1.0, 2.0])
    W = np.ones((2, 3))
    out, dropped = _batch_sum(X, y, W, [1, 2], MULTINOMIAL, 0.0, 1.0)
    assert dropped == 2 and np.all(out == 0.0)
    y_bad = np.array([3.0, -1.0, 0.5])  # invalid class indices are dropped, not written
    out, dropped = _batch_sum(np.ones((3, 2)), y_bad, W, [0, 1, 2], MULTINOMIAL, 0.0, 1.0)
    assert dropped == 3 and np.all(out == 0.0)


def test_one_step_neighbours_with_wrong_lipschitz_constant(noise_multiplier):
    """Through the solver (clipping of rows, per-example clip to the spec's L, step, ball):
    noise-free single steps on neighbours with the same sampled batch differ by at most
    eta_1 * 2L / m, although the spec's L is 100 times too small."""
    noise_multiplier(0.0)
    loss = WrongLipschitzLogistic()
    C, alpha = 2.0, 0.5
    L = loss.lipschitz(C)
    eta1 = min(1.0 / alpha, STEP_CAP_FACTOR / (loss.smoothness(C) + alpha))
    rng = np.random.default_rng(3)
    n, d = 10, 3
    X = rng.normal(size=(n, d))
    y = rng.choice([-1.0, 1.0], size=n)
    X[0] = 1e6 * rng.normal(size=d)  # beyond the row bound
    y[0] = 1.0
    X2, y2 = X.copy(), y.copy()
    y2[0] = -1.0  # same row, flipped label: the clipped contributions are antipodal
    kw = dict(epsilon=1.0, delta=1e-5, alpha=alpha, data_norm=C, n_steps=1)
    for m in (n, 3):
        bound = eta1 * 2.0 * L / m
        diffs = []
        for seed in range(40 if m < n else 1):
            r1 = solve_dpsgd(X, y, loss, rng=np.random.default_rng(seed), batch_size=m, **kw)
            r2 = solve_dpsgd(X2, y2, loss, rng=np.random.default_rng(seed), batch_size=m, **kw)
            w1 = np.r_[r1.coef.ravel(), r1.intercept]
            w2 = np.r_[r2.coef.ravel(), r2.intercept]
            diffs.append(np.linalg.norm(w1 - w2))
            assert r1.n_gradient_evals == r2.n_gradient_evals  # same batch
        diffs = np.array(diffs)
        assert np.all(diffs <= bound * (1.0 + 1e-9))
        assert diffs.max() >= 0.999 * bound  # attained when row 0 is sampled
        if m < n:
            assert np.any(diffs == 0.0)  # and zero when it is not


# --------------------------------------------------------------------------------------
# Poisson sampler


def _draw_batches(n, q, n_draws, seed):
    rng = np.random.default_rng(seed)
    idx = np.empty(n, dtype=np.int64)
    perm = rng.permutation(n).astype(np.int64)  # any starting permutation
    stamp = np.zeros(n, dtype=np.int64)
    sizes = np.empty(n_draws, dtype=np.int64)
    incl = np.zeros((n_draws, n), dtype=bool)
    for t in range(1, n_draws + 1):
        B = _sample_batch(rng, n, q, idx, perm, stamp, t)
        batch = idx[:B]
        assert np.all((batch >= 0) & (batch < n))
        assert np.unique(batch).size == B  # distinct
        assert np.array_equal(np.sort(perm), np.arange(n))  # perm stays a permutation
        sizes[t - 1] = B
        incl[t - 1, batch] = True
    return sizes, incl


@pytest.mark.parametrize("q", [0.15, 0.6])  # mostly the rejection path / Fisher-Yates
def test_sampler_is_poisson(q):
    """Batch sizes ~ Binomial(n, q) (chi-square), every index included independently with
    probability q (chi-square over indices, pairwise check).  Fixed seed; each p-value
    threshold is 1e-4."""
    n, n_draws = 40, 20000
    sizes, incl = _draw_batches(n, q, n_draws, seed=11)
    # batch sizes: chi-square against the binomial pmf, tails pooled to expected >= 5
    ks = np.arange(n + 1)
    expected = n_draws * binom.pmf(ks, n, q)
    observed = np.bincount(sizes, minlength=n + 1).astype(float)
    keep = expected >= 5
    obs = np.r_[observed[keep], observed[~keep].sum()]
    exp = np.r_[expected[keep], expected[~keep].sum()]
    if exp[-1] < 5:
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()
    assert chisquare(obs, exp).pvalue > 1e-4
    assert sizes.mean() == pytest.approx(n * q, abs=5 * math.sqrt(n * q * (1 - q) / n_draws))
    # inclusion counts per index: independent Binomial(n_draws, q)
    counts = incl.sum(axis=0)
    stat = np.sum((counts - n_draws * q) ** 2) / (n_draws * q * (1 - q))
    assert chi2.sf(stat, n) > 1e-4
    # pairwise independence of two inclusions
    joint = np.mean(incl[:, 0] & incl[:, 1])
    assert abs(joint - q * q) < 5 * math.sqrt(q * q * (1 - q * q) / n_draws)
    # successive batches are independent: overlap of consecutive batches has mean n q^2
    overlap = np.sum(incl[1:] & incl[:-1], axis=1)
    assert overlap.mean() == pytest.approx(n * q * q, rel=0.05)


def test_sampler_full_rate_takes_every_row():
    sizes, incl = _draw_batches(7, 1.0, 3, seed=0)
    assert np.all(sizes == 7) and incl.all()


# --------------------------------------------------------------------------------------
# the solver


def _logistic_problem(seed=0, n=200, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.linspace(1.0, -1.0, d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def test_same_seed_bitwise_identical():
    X, y = _logistic_problem(n=60)
    kw = dict(epsilon=1.0, delta=1e-5, alpha=0.05, data_norm=2.0, batch_size=10)
    r1 = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(7), **kw)
    r2 = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(7), **kw)
    r3 = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(8), **kw)
    assert np.array_equal(r1.coef, r2.coef) and np.array_equal(r1.intercept, r2.intercept)
    assert r1.n_gradient_evals == r2.n_gradient_evals
    assert not np.array_equal(r1.coef, r3.coef)


def test_result_fields_and_accounting():
    X, y = _logistic_problem(n=60)
    eps, delta, m, C = 1.0, 1e-5, 10, 2.0
    res = solve_dpsgd(X, y, LogisticLoss(), epsilon=eps, delta=delta, alpha=0.05,
                      data_norm=C, rng=np.random.default_rng(0), batch_size=m, max_iter=3)
    T = math.ceil(60**2 / m**2)
    q = m / 60
    z = res.details["noise_multiplier"]
    assert res.n_iter == T == res.details["n_steps"]  # max_iter does not cap T
    assert res.coef.shape == (3, 1) and res.intercept.shape == (1,)
    assert res.sensitivity == pytest.approx(2.0 * C)
    assert res.noise_scale == pytest.approx(z * C)
    assert res.data_norm == C
    assert res.dp_event == poisson_gaussian_event(q, z, T)
    assert 0.98 * eps <= get_epsilon(res.dp_event, delta) <= eps
    assert abs(res.n_gradient_evals - T * m) <= 6 * math.sqrt(T * m)
    assert res.details["full_gradient_equivalents"] == pytest.approx(res.n_gradient_evals / 60)


def test_paper_calibration_uses_bst14_noise():
    X, y = _logistic_problem(n=60)
    eps, delta = 1.0, 1e-5
    res = solve_dpsgd(X, y, LogisticLoss(), epsilon=eps, delta=delta, alpha=0.05,
                      data_norm=2.0, rng=np.random.default_rng(0), batch_size=10,
                      calibration="paper")
    z = math.sqrt(32.0 * math.log(60 / delta) * math.log(1 / delta)) / eps
    assert res.details["noise_multiplier"] == pytest.approx(z)
    assert get_epsilon(res.dp_event, delta) <= eps
    tight = solve_dpsgd(X, y, LogisticLoss(), epsilon=eps, delta=delta, alpha=0.05,
                        data_norm=2.0, rng=np.random.default_rng(0), batch_size=10)
    assert tight.details["noise_multiplier"] < z


def test_paper_calibration_refused_when_not_certified():
    X, y = _logistic_problem(n=20)
    with pytest.raises(ValueError, match="not certified"):
        solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.05,
                    data_norm=2.0, rng=np.random.default_rng(0), batch_size=20,
                    n_steps=2000, calibration="paper")


def test_noise_has_the_stated_scale(noise_multiplier):
    """One full-batch step from W = 0: W_1 = -eta_1 (s + sigma xi)/m, so over seeds the
    coordinates have standard deviation eta_1 sigma / m.  400 seeds: the sample standard
    deviation is within 15 % (> 4 standard errors)."""
    noise_multiplier(3.0)
    X, y = _logistic_problem(n=20, d=2)
    C, alpha, m = 2.0, 1.0, 20
    eta1 = min(1.0 / alpha, STEP_CAP_FACTOR / (C * C / 4.0 + alpha))
    Ws = []
    for seed in range(400):
        res = solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=alpha,
                          data_norm=C, rng=np.random.default_rng(seed), batch_size=m,
                          n_steps=1)
        assert res.noise_scale == pytest.approx(3.0 * C)
        Ws.append(np.r_[res.coef.ravel(), res.intercept])
    std = np.std(np.array(Ws), axis=0, ddof=1)
    np.testing.assert_allclose(std, eta1 * 3.0 * C / m, rtol=0.15)


def _optimum(Xc, y, loss, alpha, K, C):
    obj = Objective(Xc, y, loss, alpha, K, C)
    res = minimize(obj.value_grad_flat, np.zeros(Xc.shape[1] * K), jac=True,
                   method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    return res.x.reshape(Xc.shape[1], K), obj


@pytest.mark.parametrize("kind", ["logistic", "multinomial", "huber"])
def test_noise_free_run_approaches_the_optimum(kind, noise_multiplier):
    noise_multiplier(0.0)
    rng = np.random.default_rng(5)
    n, d, C, alpha = 200, 3, 2.0, 0.1
    X = rng.normal(size=(n, d))
    if kind == "logistic":
        loss, K = LogisticLoss(), 1
        y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    elif kind == "multinomial":
        loss, K = MultinomialLoss(3), 3
        y = np.argmax(X @ rng.normal(size=(d, 3)) + 0.3 * rng.normal(size=(n, 3)), axis=1)
        y = y.astype(float)
    else:
        loss, K = HuberLoss(0.5), 1
        y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n), -1, 1)
    res = solve_dpsgd(X, y, loss, epsilon=1.0, delta=1e-5, alpha=alpha, data_norm=C,
                      n_outputs=K, y_bound=1.0, rng=np.random.default_rng(0),
                      batch_size=20, n_steps=20000)
    W = np.vstack([res.coef, res.intercept[None, :]])
    W_star, obj = _optimum(clip_and_augment(X, C, True, 1.0), y, loss, alpha, K, C)
    assert np.linalg.norm(W - W_star) < 0.01
    assert obj.value_grad(W)[0] - obj.value_grad(W_star)[0] < 1e-4


def test_noise_free_convex_run_with_ball(noise_multiplier):
    """alpha = 0: steps R/(G sqrt t) on the ball ||W|| <= R = max_coef_norm."""
    noise_multiplier(0.0)
    rng = np.random.default_rng(6)
    n, d, C, R = 200, 3, 2.0, 3.0
    X = rng.normal(size=(n, d))
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n), -1, 1)
    loss = HuberLoss(0.5)
    res = solve_dpsgd(X, y, loss, epsilon=1.0, delta=1e-5, alpha=0.0, data_norm=C,
                      max_coef_norm=R, rng=np.random.default_rng(0), batch_size=20,
                      n_steps=20000)
    W = np.vstack([res.coef, res.intercept[None, :]])
    assert np.linalg.norm(W) <= R * (1 + 1e-12)
    Xc = clip_and_augment(X, C, True, 1.0)
    W_star, obj = _optimum(Xc, y, loss, 0.0, 1, C)
    assert np.linalg.norm(W_star) < R  # the ball holds the minimiser
    assert obj.value_grad(W)[0] - obj.value_grad(W_star)[0] < 1e-3
    assert res.details["step_schedule"] == "R / (G sqrt(t))"


def test_without_intercept(noise_multiplier):
    noise_multiplier(0.5)
    X, y = _logistic_problem(n=30)
    res = solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.1,
                      data_norm=1.0, fit_intercept=False, rng=np.random.default_rng(0),
                      batch_size=5)
    assert res.coef.shape == (3, 1) and np.all(res.intercept == 0.0)
    assert np.all(np.isfinite(res.coef))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(delta=0.0), "0 < delta < 1"),
        (dict(alpha=0.0), "max_coef_norm"),
        (dict(batch_size=0), "batch_size"),
        (dict(batch_size=31), "batch_size"),
        (dict(batch_size=2.5), "batch_size"),
        (dict(n_steps=0), "n_steps"),
        (dict(calibration="fast"), "calibration"),
        (dict(max_coef_norm=-1.0), "max_coef_norm"),
    ],
)
def test_invalid_settings_raise(kwargs, match):
    X, y = _logistic_problem(n=30)
    kw = dict(epsilon=1.0, delta=1e-5, alpha=0.1, data_norm=2.0,
              rng=np.random.default_rng(0), batch_size=5)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        solve_dpsgd(X, y, LogisticLoss(), **kw)


def test_single_row_refused():
    with pytest.raises(ValueError, match="at least 2"):
        solve_dpsgd(np.ones((1, 2)), np.ones(1), LogisticLoss(), epsilon=1.0, delta=1e-5,
                    alpha=0.1, data_norm=2.0, rng=np.random.default_rng(0), batch_size=1)


def test_zero_lipschitz_loss_refused():
    X, y = _logistic_problem(n=30)
    with pytest.raises(ValueError, match="Lipschitz"):
        solve_dpsgd(X, y, HuberLoss(0.0), epsilon=1.0, delta=1e-5, alpha=0.1,
                    data_norm=2.0, rng=np.random.default_rng(0), batch_size=5)
