"""Output perturbation: sensitivity on adversarial neighbours, convergence, enforcement."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

import skdp._solvers._output_perturbation as op
from skdp._losses import HuberLoss, LogisticLoss, MultinomialLoss
from skdp._mechanisms import clip_and_augment
from skdp._solvers import solve_output_perturbation
from skdp._solvers._objective import Objective
from skdp._solvers._optimizers import certified_minimize


@pytest.fixture
def noiseless(monkeypatch):
    """Run the solver with its noise replaced by zeros (test-only switch)."""
    monkeypatch.setattr(op, "release_gaussian",
                        lambda values, sigma, *a, **k: (np.array(values), sigma))
    monkeypatch.setattr(op, "release_laplace",
                        lambda values, sens, eps, *a, **k: (np.array(values), sens / eps))

    def solve(X, y, loss, **kw):
        kw.setdefault("epsilon", 1.0)
        kw.setdefault("delta", 1e-6)
        kw.setdefault("rng", np.random.default_rng(0))
        res = solve_output_perturbation(X, y, loss, **kw)
        W = np.vstack([res.coef, res.intercept[None, :] / kw.get("intercept_scaling", 1.0)]) \
            if kw.get("fit_intercept", True) else res.coef
        return W, res

    return solve


def _random_problem(rng):
    n = int(rng.integers(5, 200))
    d = int(rng.integers(1, 10))
    C = float(rng.choice([0.5, 1.0, 3.0]))
    kind = rng.choice(["logistic", "huber", "multinomial"])
    X = rng.normal(size=(n, d)) * rng.choice([0.1, 1.0, 10.0])
    if kind == "logistic":
        loss, K = LogisticLoss(), 1
        y = rng.choice([-1.0, 1.0], size=n)
    elif kind == "huber":
        loss, K = HuberLoss(float(rng.choice([0.1, 1.0, 5.0]))), 1
        y = rng.normal(scale=rng.choice([0.1, 10.0]), size=n)
    else:
        K = int(rng.integers(3, 5))
        loss = MultinomialLoss(K)
        y = rng.integers(0, K, size=n).astype(float)
    return X, y, loss, K, C, n, d


def _neighbour(rng, X, y, loss, K, C):
    """Replace row 0 by an adversarial or a random row."""
    X2, y2 = X.copy(), y.copy()
    mode = rng.choice(["adversarial", "random"])
    if mode == "adversarial":
        u = rng.normal(size=X.shape[1])
        X[0] = 10 * C * u / np.linalg.norm(u)  # beyond the bound: clipping must hold
        X2[0] = -X[0]
        if K == 1 and loss.loss_id == 2:
            y[0], y2[0] = 1e6, -1e6  # far outside the Huber zone
        elif K == 1:
            y[0], y2[0] = 1.0, -1.0
        else:
            y[0], y2[0] = 0.0, float(K - 1)
    else:
        X2[0] = rng.normal(size=X.shape[1]) * 5
        y2[0] = y[rng.integers(len(y))]
    return X, y, X2, y2


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_empirical_sensitivity_never_exceeds_the_bound(noiseless, calibration):
    """>= 120 random problems (n, d, mu, loss, intercept, T varied), one row replaced by an
    adversarial or random row: the noise-free outputs differ by at most the Delta used."""
    rng = np.random.default_rng(11 if calibration == "tight" else 12)
    worst = 0.0
    for _ in range(120):
        X, y, loss, K, C, n, d = _random_problem(rng)
        X, y, X2, y2 = _neighbour(rng, X, y, loss, K, C)
        alpha = float(rng.choice([0.0, 0.01, 0.1, 1.0]))
        fit_intercept = bool(rng.integers(2))
        kw = dict(
            alpha=alpha, data_norm=C, n_outputs=K, fit_intercept=fit_intercept,
            intercept_scaling=0.3 * C, calibration=calibration,
            max_iter=int(rng.integers(1, 300)), max_coef_norm=float(rng.choice([0.5, 5.0])),
        )
        W1, r1 = noiseless(X, y, loss, **kw)
        W2, r2 = noiseless(X2, y2, loss, **kw)
        assert r1.sensitivity == r2.sensitivity
        gap = np.linalg.norm(W1 - W2)
        assert gap <= r1.sensitivity * (1 + 1e-9), (kw, gap, r1.sensitivity)
        worst = max(worst, gap / r1.sensitivity)
    assert worst > 0.2  # the adversarial rows do move the output


def test_tight_bound_is_attained_within_factor_3(noiseless):
    """Huber, far-outlier row flipped, other rows carry no signal: the gap reaches the bound
    2L/(n mu) (the certificate slack makes the ratio 1/1.01)."""
    n, C, h, mu = 20, 2.0, 1.0, 0.5
    X = np.zeros((n, 3))
    y = np.zeros(n)
    X[0] = [C, 0, 0]
    y[0] = 1e3
    X2, y2 = X.copy(), y.copy()
    y2[0] = -1e3
    kw = dict(alpha=mu, data_norm=C, fit_intercept=False)
    W1, r = noiseless(X, y, HuberLoss(h), **kw)
    W2, _ = noiseless(X2, y2, HuberLoss(h), **kw)
    ratio = np.linalg.norm(W1 - W2) / r.sensitivity
    assert 1 / 3 <= ratio <= 1.0
    assert ratio == pytest.approx(1 / 1.01, rel=1e-6)
    # logistic with a flipped label at the norm bound also comes within a factor 3
    y = np.ones(n)
    y2 = y.copy()
    y2[0] = -1.0
    W1, r = noiseless(X, y, LogisticLoss(), alpha=0.5, data_norm=C, fit_intercept=False)
    W2, _ = noiseless(X, y2, LogisticLoss(), alpha=0.5, data_norm=C, fit_intercept=False)
    assert np.linalg.norm(W1 - W2) / r.sensitivity >= 1 / 3


def test_sensitivity_formulas():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    y = np.sign(rng.normal(size=100))
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=2.0, rng=np.random.default_rng(0))
    L = 2.0
    r = solve_output_perturbation(X, y, LogisticLoss(), alpha=0.1, **kw)
    assert r.sensitivity == pytest.approx(2.02 * L / (100 * 0.1))
    r = solve_output_perturbation(X, y, LogisticLoss(), alpha=0.0, max_coef_norm=3.0,
                                  max_iter=50, **kw)
    eta = 1 / (L**2 / 4)
    assert r.sensitivity == pytest.approx(2 * eta * L * r.n_iter / 100)
    r = solve_output_perturbation(X, y, LogisticLoss(), alpha=0.1, calibration="paper", **kw)
    mu, beta = 0.1, L**2 / 4 + 0.1
    D = min(L / mu, math.sqrt(2 * math.log(2) / mu))
    Lp = L + 2 * mu * D
    assert r.sensitivity == pytest.approx(5 * Lp * (mu + beta) / (100 * mu * beta))
    r = solve_output_perturbation(X, y, LogisticLoss(), alpha=0.0, max_coef_norm=3.0,
                                  calibration="paper", max_iter=50, **kw)
    assert r.sensitivity == pytest.approx(3 * eta * L * r.n_iter / 100)


def test_paper_example_of_the_spec():
    """Spec §5: logistic, C = 1, mu = 0.1: D = 3.72, L = 1.745, Delta ~ 112/n (paper) vs
    ~20/n (tight)."""
    X = np.full((1000, 1), 0.1)
    y = np.ones(1000)
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, fit_intercept=False,
              rng=np.random.default_rng(0), alpha=0.1)
    paper = solve_output_perturbation(X, y, LogisticLoss(), calibration="paper", **kw)
    tight = solve_output_perturbation(X, y, LogisticLoss(), **kw)
    assert paper.details["coef_bound"] == pytest.approx(3.72, abs=0.01)
    assert paper.details["lipschitz_paper"] == pytest.approx(1.745, abs=0.001)
    assert paper.sensitivity * 1000 == pytest.approx(112, abs=1)
    assert tight.sensitivity * 1000 == pytest.approx(20.2, abs=0.1)


@pytest.mark.parametrize("K", [1, 3])
def test_noiseless_limit_equals_sklearn(noiseless, K):
    """Same objective (mean loss + mu/2 ||w||^2 <-> C = 1/(n mu), intercept regularised as a
    constant column): coefficients agree to 1e-6.  epsilon = 1e12 makes the (public) noise
    scale, hence the solver's stopping tolerance of 1 % of it, negligible."""
    rng = np.random.default_rng(K)
    n, d, mu, C = 300, 5, 0.05, 3.0
    X = rng.normal(size=(n, d))
    labels = rng.integers(0, max(K, 2), size=n)
    Xc = clip_and_augment(X, C, True, 1.0)
    ref = LogisticRegression(C=1 / (n * mu), fit_intercept=False, tol=1e-12,
                             max_iter=10_000).fit(Xc, labels)
    if K == 1:
        W, _ = noiseless(X, np.where(labels == 1, 1.0, -1.0), LogisticLoss(), alpha=mu,
                         data_norm=C, epsilon=1e12)
        np.testing.assert_allclose(W[:, 0], ref.coef_[0], atol=1e-6)
    else:
        W, _ = noiseless(X, labels.astype(float), MultinomialLoss(K), alpha=mu, data_norm=C,
                         n_outputs=K, epsilon=1e12)
        # softmax is invariant to a common shift; the L2 penalty pins it: compare directly
        np.testing.assert_allclose(W.T, ref.coef_, atol=1e-6)


def test_noiseless_huber_equals_scipy(noiseless):
    rng = np.random.default_rng(4)
    n, d, mu, C, h = 400, 6, 0.02, 4.0, 0.8
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.standard_cauchy(size=n)
    Xc = clip_and_augment(X, C, True, 1.0)

    def f(w):
        r = Xc @ w - y
        a = np.abs(r)
        val = np.where(a <= h, 0.5 * r**2, h * (a - 0.5 * h)).mean() + 0.5 * mu * w @ w
        return val, Xc.T @ np.clip(r, -h, h) / n + mu * w

    ref = minimize(f, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-13, "ftol": 0, "maxiter": 10_000}).x
    W, _ = noiseless(X, y, HuberLoss(h), alpha=mu, data_norm=C, epsilon=1e12)
    np.testing.assert_allclose(W[:, 0], ref, atol=1e-6)


def test_gd_fallback_still_within_tau(monkeypatch):
    """If L-BFGS cannot certify (here: 1 iteration allowed, Newton after 10), the
    contraction fallback must still land within tau of the minimiser."""
    import skdp._solvers._optimizers as optimizers

    monkeypatch.setattr(optimizers, "NEWTON_EARLY", 10)
    rng = np.random.default_rng(5)
    X = clip_and_augment(rng.normal(size=(200, 3)), 2.0, True, 1.0)
    y = np.sign(rng.normal(size=200))
    obj = Objective(X, y, LogisticLoss(), 0.3, 1, 2.0)
    tau = 1e-4
    W, info = certified_minimize(obj, 0.3, tau, 1.0, 2.0 / 0.3, max_iter=1)
    assert info["inner_solver"] == "gd_fallback"
    W_star, info2 = certified_minimize(obj, 0.3, 1e-9, 1.0, 2.0 / 0.3, max_iter=1000)
    assert info2["inner_solver"] == "lbfgs"
    assert np.linalg.norm(W - W_star) <= tau + 1e-9


def test_stalled_lbfgs_hands_over_to_newton_and_stays_certified(monkeypatch):
    """With the stall switch at its most eager (one evaluation without a better margin),
    L-BFGS hands over to Newton from the best point seen, and the result is still within
    tau of the minimiser (the path changes, never the certificate).  L-BFGS runs first
    with ``NEWTON_EARLY = 10``."""
    import skdp._solvers._optimizers as optimizers

    monkeypatch.setattr(optimizers, "NEWTON_EARLY", 10)

    rng = np.random.default_rng(8)
    X = clip_and_augment(rng.normal(size=(3000, 5)), 2.0, True, 1.0)
    y = np.sign(X[:, 0] + 0.5 * rng.normal(size=3000))
    obj = Objective(X, y, LogisticLoss(), 1e-4, 1, 2.0)
    W_star, done = certified_minimize(obj, 1e-4, 1e-8, 1.0, 2.0 / 1e-4, max_iter=1000)
    assert done["inner_solver"] != "gd_fallback"
    monkeypatch.setattr(optimizers, "STALL_EVALS", 1)
    calls = []
    polish = optimizers._newton_polish
    monkeypatch.setattr(optimizers, "_newton_polish",
                        lambda o, W, *a, **k: calls.append(W.copy()) or polish(o, W, *a, **k))
    tau = 1e-6
    W, info = certified_minimize(Objective(X, y, LogisticLoss(), 1e-4, 1, 2.0), 1e-4, tau,
                                 1.0, 2.0 / 1e-4, max_iter=1000)
    assert calls and info["inner_solver"] == "lbfgs+newton"
    assert np.linalg.norm(W - W_star) <= tau + 1e-8


def test_early_newton_by_public_shape_and_lagged_hessian(monkeypatch):
    """Small designs (p <= NEWTON_EARLY_MAX_COEF, n < WARM_START_MIN_ROWS) switch to Newton
    after NEWTON_EARLY L-BFGS iterations (none: Newton from 0), and Newton reuses a Hessian
    while it still gains
    LAGGED_HESSIAN_GAIN per step: fewer Hessians than steps, the same certified precision.
    A design past the coefficient cap keeps L-BFGS for NEWTON_AFTER iterations."""
    import skdp._solvers._optimizers as optimizers

    rng = np.random.default_rng(9)
    X = clip_and_augment(rng.normal(size=(4000, 8)), 2.0, True, 1.0)
    y = np.sign(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=4000))
    tau = 1e-6
    W_star, done = certified_minimize(Objective(X, y, LogisticLoss(), 1e-4, 1, 2.0), 1e-4,
                                      1e-8, 1.0, 2.0 / 1e-4, max_iter=1000)
    assert done["inner_solver"] != "gd_fallback"

    def run(X, y, alpha, tau):
        hessians = []
        obj = Objective(X, y, LogisticLoss(), alpha, 1, 2.0)
        hessian = obj.hessian
        obj.hessian = lambda W: hessians.append(1) or hessian(W)
        W, info = certified_minimize(obj, alpha, tau, 1.0, 2.0 / alpha, max_iter=1000)
        assert info["inner_solver"] == ("newton" if optimizers.NEWTON_EARLY == 0
                                        else "lbfgs+newton")
        return W, len(hessians), obj.n_evals

    W, _, evals = run(X, y, 1e-4, tau)
    assert np.linalg.norm(W - W_star) <= tau + 1e-8
    assert evals < 40          # L-BFGS alone stalls after ~80 evaluations on such designs
    # a design whose Newton phase takes two steps: the lagged Hessian serves both
    rng2 = np.random.default_rng(9)
    X2 = clip_and_augment(rng2.normal(size=(4000, 30)), 2.0, True, 1.0)
    y2 = np.sign(X2[:, 0] - X2[:, 1] + 0.5 * rng2.normal(size=4000))
    W_lagged, lagged, _ = run(X2, y2, 1e-5, 1e-7)
    monkeypatch.setattr(optimizers, "LAGGED_HESSIAN_GAIN", math.inf)   # always recompute
    W_fresh, fresh, _ = run(X2, y2, 1e-5, 1e-7)
    monkeypatch.undo()
    assert 1 <= lagged < fresh
    assert np.linalg.norm(W_lagged - W_fresh) <= 2e-7       # both within tau of the minimiser
    monkeypatch.setattr(optimizers, "NEWTON_EARLY_MAX_COEF", 5)   # p = 9 is now "large"
    obj = Objective(X, y, LogisticLoss(), 1e-4, 1, 2.0)
    calls = []
    polish = optimizers._newton_polish
    monkeypatch.setattr(optimizers, "_newton_polish",
                        lambda o, W, *a, **k: calls.append(o.n_evals) or polish(o, W, *a, **k))
    W, info = certified_minimize(obj, 1e-4, tau, 1.0, 2.0 / 1e-4, max_iter=1000)
    assert np.linalg.norm(W - W_star) <= tau + 1e-8
    assert not calls or calls[0] > optimizers.NEWTON_EARLY + 5


def test_rounding_allowance_covers_the_actual_error():
    """The allowance of the certificate exceeds the gradient's real rounding error (exact
    reference with math.fsum over the rows), with room to spare."""
    rng = np.random.default_rng(6)
    n, d = 20_000, 4
    X = clip_and_augment(rng.normal(size=(n, d)) * 3, 2.0, True, 1.0)
    y = np.sign(rng.normal(size=n))
    W = rng.normal(size=(d + 1, 1))
    obj = Objective(X, y, LogisticLoss(), 0.1, 1, 2.0)
    _, grad = obj.value_grad(W)
    z = (X @ W)[:, 0]
    g = -y / (1 + np.exp(y * z))
    exact = np.array([math.fsum(X[:, j] * g) / n for j in range(d + 1)]) + 0.1 * W[:, 0]
    err = np.linalg.norm(grad[:, 0] - exact)
    assert err <= obj.rounding_allowance(W)
    assert obj.rounding_allowance(W) < 1e-10


def test_noise_is_drawn_after_everything_it_depends_on(monkeypatch):
    """The noise scale used equals the one computed from the *final* sensitivity."""
    seen = {}

    def spy(values, sigma, *args, **kw):
        seen["sigma"] = sigma
        return np.array(values), sigma

    monkeypatch.setattr(op, "release_gaussian", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = np.sign(rng.normal(size=50))
    r = solve_output_perturbation(X, y, LogisticLoss(), epsilon=0.5, delta=1e-6, alpha=0.0,
                                  data_norm=1.0, max_coef_norm=2.0, max_iter=40,
                                  fit_intercept=False, rng=rng)
    assert seen["sigma"] == r.noise_scale
    from skdp.accounting import calibrate_gaussian_sigma

    assert r.noise_scale == pytest.approx(calibrate_gaussian_sigma(0.5, 1e-6, r.sensitivity))


def test_paper_mode_refuses_a_sigma_that_is_not_private():
    X = np.ones((10, 1))
    y = np.ones(10)
    with pytest.raises(ValueError, match="paper"):
        solve_output_perturbation(X, y, LogisticLoss(), epsilon=60.0, delta=0.5, alpha=0.1,
                                  data_norm=2.0, calibration="paper",
                                  rng=np.random.default_rng(0))


def test_alpha_zero_needs_max_coef_norm():
    with pytest.raises(ValueError, match="max_coef_norm"):
        solve_output_perturbation(np.ones((10, 1)), np.ones(10), LogisticLoss(), epsilon=1.0,
                                  delta=1e-6, alpha=0.0, data_norm=2.0,
                                  rng=np.random.default_rng(0))


def test_utility_excess_risk_bounded_by_smoothness_times_noise():
    """Spec §8.6: E F(w + z) - F(w) <= (beta/2) E||z||^2 (+ 4 SE) over 2000 noise draws."""
    rng = np.random.default_rng(7)
    n, d, C, mu = 500, 3, 1.5, 0.1
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=n))
    Xc = clip_and_augment(X, C, True, 1.0)
    obj = Objective(Xc, y, LogisticLoss(), mu, 1, C)
    W, _ = certified_minimize(obj, mu, 1e-8, C**2 / 4, C / mu, 1000)
    F0 = obj.value_grad(W)[0]
    sigma = 0.3
    diffs = np.array([obj.value_grad(W + sigma * rng.normal(size=W.shape))[0] - F0
                      for _ in range(2000)])
    beta = C**2 / 4 + mu
    bound = beta / 2 * (d + 1) * sigma**2
    assert diffs.mean() <= bound + 4 * diffs.std() / np.sqrt(2000)


def test_warm_start_path_is_certified(monkeypatch):
    """Large designs start from a subsample solution (then Newton steps with the
    subsample's Hessian); the certificate still holds and the warm start's gradients are
    counted."""
    import skdp._solvers._optimizers as opt

    monkeypatch.setattr(opt, "WARM_START_MIN_ROWS", 20_000)
    monkeypatch.setattr(opt, "WARM_START_ROWS", 2_000)
    rng = np.random.default_rng(8)
    n = 40_000
    X = clip_and_augment(rng.normal(size=(n, 4)), 2.0, True, 1.0)
    y = np.sign(X[:, 0] + rng.normal(size=n))
    mu = 0.01
    tau = 0.01 * 2.0 / (n * mu)
    obj = Objective(X, y, LogisticLoss(), mu, 1, 2.0)
    W, info = certified_minimize(obj, mu, tau, 1.0, 2.0 / mu, 1000)
    assert info["inner_solver"] == "subsampled_newton"
    assert obj.extra_example_gradients > 0
    assert obj.n_example_gradients == obj.n_evals * n + obj.extra_example_gradients
    W_star, _ = certified_minimize(Objective(X, y, LogisticLoss(), mu, 1, 2.0), mu, tau / 100,
                                   1.0, 2.0 / mu, 1000)
    assert np.linalg.norm(W - W_star) <= tau * 1.01


def test_subsampled_newton_switches_to_the_exact_hessian_when_it_pays(monkeypatch):
    """From the warm start, Newton steps with the subsample's Hessian divide the gradient
    by a fixed rate; when the steps left at that rate cost more passes than one exact
    Hessian and two steps, the exact Hessian takes over: fewer passes, the same certified
    precision.  Priced out (a huge Hessian cost), the subsample's Hessian serves to the
    end."""
    import skdp._solvers._optimizers as opt

    monkeypatch.setattr(opt, "WARM_START_MIN_ROWS", 20_000)
    monkeypatch.setattr(opt, "WARM_START_ROWS", 2_500)
    rng = np.random.default_rng(12)
    n, d = 40_000, 20
    X = clip_and_augment(rng.normal(size=(n, d)) / np.sqrt(d), 2.0, True, 1.0)
    y = np.sign(X @ rng.normal(size=d + 1) * 3 + rng.logistic(size=n))
    mu, tau = 1e-5, 1e-6

    def fit():
        obj = Objective(X, y, LogisticLoss(), mu, 1, 2.0)
        exact = []
        hessian = obj.hessian
        obj.hessian = lambda W: exact.append(1) or hessian(W)
        W, info = certified_minimize(obj, mu, tau, 1.0, 2.0 / mu, 1000)
        assert info["inner_solver"] == "subsampled_newton"
        _, grad = obj.value_grad(W)
        assert np.linalg.norm(grad) + obj.rounding_allowance(W) <= mu * tau
        return W, len(exact), obj.n_example_gradients

    W_switch, exact_switch, passes_switch = fit()
    monkeypatch.setattr(opt, "HESSIAN_COLUMNS_PER_PASS", 1e-9)     # priced out
    W_sub, exact_sub, passes_sub = fit()
    assert exact_switch == 1 and exact_sub == 0
    assert passes_switch < passes_sub
    assert np.linalg.norm(W_switch - W_sub) <= 2 * tau


def test_exact_hessian_is_never_chosen_on_sparse_designs():
    """A sparse design's Hessian has no cost model: the subsample's is kept."""
    import skdp._solvers._optimizers as opt

    class Sparse:
        sparse = True
        shape = (10, 1)

    sub = opt._SubsampledHessian(Sparse(), None)
    sub.consider_exact_hessian(1e-3, 5e-4, 1e-15)
    assert opt.exact_hessian_passes(Sparse()) == np.inf and not sub.exact
    Sparse.sparse = False
    sub.consider_exact_hessian(1e-3, 5e-4, 1e-15)     # 34 steps left at rate 2
    assert sub.exact


def _wide_sparse_design(seed, n, d=2500, nnz=5):
    """``(S, y)``: ``n`` CSR rows of ``nnz`` entries 0.4 among ``d`` columns (wider than
    the dense-Hessian cap of 2000 coefficients) and logistic labels in +-1."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = np.concatenate([np.sort(rng.choice(d, nnz, replace=False)) for _ in range(n)])
    S = sp.csr_matrix((np.full(n * nnz, 0.4), cols, np.arange(0, n * nnz + 1, nnz)),
                      shape=(n, d))
    return S, np.sign(S @ rng.normal(size=d) + rng.logistic(size=n))


@pytest.mark.parametrize("newton_cg_first", [True, False])
def test_wide_sparse_designs_certify_by_newton_cg(newton_cg_first, monkeypatch):
    """More than 2000 coefficients (no dense Hessian): Hessian-free Newton steps certify
    the point -- from 0 (NEWTON_CG_FIRST, the default) or when L-BFGS stops short -- and it
    is within tau of the minimiser (the contraction fallback would need ~10^5 passes
    here)."""
    import skdp._solvers._optimizers as optimizers

    monkeypatch.setattr(optimizers, "NEWTON_CG_FIRST", newton_cg_first)
    from skdp._mechanisms._clipped_rows import ClippedRows

    S, y = _wide_sparse_design(7, 4000)
    mu, tau = 1e-4, 1e-6
    objective = Objective(ClippedRows(S, 1.5, True, 1.0), y, LogisticLoss(), mu, 1, 1.5)
    W, info = certified_minimize(objective, mu, tau, 0.25 * 1.5**2, 1.5 / mu, max_iter=30)
    assert info["inner_solver"] == ("newton_cg" if newton_cg_first else "lbfgs+newton_cg")
    # the certificate, recomputed: ||grad|| + rounding allowance <= mu tau, hence
    # ||W - W_hat|| <= tau by mu-strong convexity
    _, grad = objective.value_grad(W)
    assert np.linalg.norm(grad) + objective.rounding_allowance(W) <= mu * tau


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(1.0)])
def test_large_designs_certify_by_newton_with_the_subsample_hessian(loss):
    """From the warm start, Newton steps with the subsample's Hessian certify the full
    objective in a few passes (the certificate, recomputed on all rows, holds)."""
    from skdp._mechanisms._clipped_rows import ClippedRows
    from skdp._solvers._optimizers import WARM_START_MIN_ROWS

    rng = np.random.default_rng(8)
    n, d = WARM_START_MIN_ROWS, 5
    X = rng.normal(size=(n, d)) * 0.3
    y = (np.sign(X @ rng.normal(size=d) + rng.logistic(size=n))
         if isinstance(loss, LogisticLoss) else X @ rng.normal(size=d) + rng.normal(size=n))
    mu, tau = 1e-5, 1e-5
    objective = Objective(ClippedRows(X, 1.5, True, 1.0), y, loss, mu, 1, 1.5)
    W, info = certified_minimize(objective, mu, tau, 2.25, 1.5 / mu, max_iter=1000)
    assert info["inner_solver"] == "subsampled_newton"
    assert objective.n_example_gradients <= 10 * n            # passes, counted
    _, grad = objective.value_grad(W)
    assert np.linalg.norm(grad) + objective.rounding_allowance(W) <= mu * tau


class _SwitchingHessianQuadratic:
    """``F(w) = w'Aw/2`` whose first ``hessian`` is a wrong positive definite ``B`` (as a
    Huber generalised Hessian is once residuals cross the threshold), the true ``A`` after:
    along ``d = B^{-1} g`` the gradient norm rises for every step size (``g'AB^{-1}g < 0``)
    while ``F`` falls (``g'B^{-1}g > 0``)."""

    def __init__(self):
        self.A = np.diag([1.0, 100.0])
        rot = np.array([[np.cos(0.5), -np.sin(0.5)], [np.sin(0.5), np.cos(0.5)]])
        self.B = rot @ np.diag([1.0, 400.0]) @ rot.T
        self.calls = 0

    def value_grad(self, W):
        g = self.A @ W
        return 0.5 * float(np.sum(W * g)), g

    def hessian(self, W):
        self.calls += 1
        return self.B if self.calls == 1 else self.A


def test_newton_polish_falls_back_to_armijo_when_the_gradient_norm_rises():
    """Huber with a small threshold on one-hot data (bike sharing, huber_threshold=0.1,
    eps=10) made every halved Newton step raise the gradient norm: the polish gave up and
    the fit ran the contraction fallback's 5e6 steps (minutes).  Armijo's test on the value
    takes the step; the next (true) Hessian certifies."""
    from skdp._solvers import _optimizers as optimizers

    obj = _SwitchingHessianQuadratic()
    W = np.array([[1.0], [-0.01]])
    g = obj.A @ W
    d = np.linalg.solve(obj.B, g)
    assert (g.T @ d).item() > 0                               # a descent direction ...
    for t in 0.5 ** np.arange(40):                            # ... no halving of which
                                                              # lowers the gradient norm
        assert np.linalg.norm(obj.A @ (W - t * d)) > np.linalg.norm(g)

    def margin(W, grad):
        return float(np.linalg.norm(grad))

    W_out, ok = optimizers._newton_polish(obj, W, 1e-12, margin, 10)
    assert ok and np.linalg.norm(W_out) < 1e-10


def test_newton_reuses_the_last_lbfgs_gradient(monkeypatch):
    """Newton polishing starts from L-BFGS's final point with the gradient L-BFGS computed
    there: the same certified point bit for bit as re-evaluating it, one pass fewer
    (L-BFGS first: ``NEWTON_EARLY = 10``)."""
    import skdp._solvers._optimizers as optimizers

    monkeypatch.setattr(optimizers, "NEWTON_EARLY", 10)

    rng = np.random.default_rng(9)
    X = clip_and_augment(rng.normal(size=(4000, 8)), 2.0, True, 1.0)
    y = np.sign(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=4000))

    def fit():
        obj = Objective(X, y, LogisticLoss(), 1e-4, 1, 2.0)
        W, info = certified_minimize(obj, 1e-4, 1e-6, 1.0, 2.0 / 1e-4, max_iter=1000)
        return W, info, obj.n_evals

    W_reuse, info, evals_reuse = fit()
    assert info["inner_solver"] == "lbfgs+newton"
    polish = optimizers._newton_polish
    monkeypatch.setattr(optimizers, "_newton_polish",
                        lambda o, W, *a, grad=None: polish(o, W, *a))   # re-evaluates
    W_again, _, evals_again = fit()
    assert np.array_equal(W_reuse, W_again)
    assert evals_again == evals_reuse + 1


def test_newton_cg_computes_its_preconditioner_once(monkeypatch):
    """The Jacobi preconditioner of the first Newton-CG step serves the later ones (a pass
    a step less): one diagonal however many steps, and the point is still certified."""
    from skdp._mechanisms._clipped_rows import ClippedRows

    S, y = _wide_sparse_design(7, 4000)
    mu, tau = 1e-4, 1e-6
    objective = Objective(ClippedRows(S, 1.5, True, 1.0), y, LogisticLoss(), mu, 1, 1.5)
    calls = {"diagonal": 0}
    original = Objective.hessian_diagonal

    def diagonal(self, curv):
        calls["diagonal"] += 1
        return original(self, curv)

    monkeypatch.setattr(Objective, "hessian_diagonal", diagonal)
    W, info = certified_minimize(objective, mu, tau, 0.25 * 1.5**2, 1.5 / mu, max_iter=30)
    assert info["inner_solver"] == "newton_cg"
    steps = objective.n_evals - 1          # one evaluation a step after the first
    assert steps >= 3 and calls["diagonal"] == 1
    _, grad = objective.value_grad(W)
    assert np.linalg.norm(grad) + objective.rounding_allowance(W) <= mu * tau


def test_wide_sparse_designs_go_from_the_warm_start_to_newton_cg(monkeypatch):
    """A wide design with enough rows for a warm start goes straight to Hessian-free Newton
    steps (no L-BFGS in between), certifies, and lands within tau of the minimiser, the
    minimiser Newton-CG from 0 finds on the same design below the warm-start size."""
    import skdp._solvers._optimizers as optimizers
    from skdp._mechanisms._clipped_rows import ClippedRows

    S, y = _wide_sparse_design(11, 6000)
    n = S.shape[0]
    mu, tau = 1e-3, 1e-6

    def fit():
        objective = Objective(ClippedRows(S, 1.5, True, 1.0), y, LogisticLoss(), mu, 1, 1.5)
        W, info = certified_minimize(objective, mu, tau, 0.25 * 1.5**2, 1.5 / mu, 1000)
        _, grad = objective.value_grad(W)
        assert np.linalg.norm(grad) + objective.rounding_allowance(W) <= mu * tau
        return W, info, objective.n_example_gradients / n

    W_cold, info, _ = fit()
    assert info["inner_solver"] == "newton_cg"        # below the warm-start size
    monkeypatch.setattr(optimizers, "WIDE_WARM_START_MIN_ROWS", 5000)
    monkeypatch.setattr(optimizers, "WARM_START_ROWS", 300)
    W, info, _ = fit()
    assert info["inner_solver"] == "warm_start+newton_cg"
    assert np.linalg.norm(W - W_cold) <= 2 * tau


def test_sparse_products_do_not_depend_on_the_threads():
    """The CSR margins and transposed products (Newton-CG's Hessian-vector products) run
    in the fixed chunks on the thread pool: bitwise the same on 1 and 2 threads, and
    scipy's products to rounding."""
    import scipy.sparse as sp

    from skdp._mechanisms._clipped_rows import ClippedRows
    from skdp._parallel import current_threads, set_current_threads

    rng = np.random.default_rng(12)
    S = sp.random(70000, 300, density=0.05, format="csr", random_state=12) * 3.0
    design = ClippedRows(S, 1.5, True, 1.0)
    w, g = rng.normal(size=301), rng.normal(size=70000)
    previous = current_threads()
    try:
        out = []
        for threads in (1, 2):
            set_current_threads(threads)
            out.append((design.matvec(w), design.rmatvec(g)))
    finally:
        set_current_threads(previous)
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
    scaled = sp.diags(design.scale) @ S
    np.testing.assert_allclose(out[0][0], scaled @ w[:300] + w[300], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[0][1][:300], scaled.T @ g, rtol=1e-11, atol=1e-11)
    assert out[0][1][300] == pytest.approx(g.sum(), rel=1e-12)
