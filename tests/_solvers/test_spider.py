"""Private SpiderBoost (Liu & Talwar v2): parameters, calibration, oracle sensitivities on
adversarial neighbours, single pass, escape from a planted saddle."""

import math

import dp_accounting
import numpy as np
import pytest

from skdp.accounting import gaussian_delta, gaussian_epsilon, get_epsilon
from skdp._losses import CauchyLoss, HuberLoss, TukeyLoss, WelschLoss, robust_derivatives
from skdp._solvers import SOLVERS
from skdp._solvers._spider import (
    FLAGS,
    choose_gamma,
    solve_spider,
    spider_parameters,
)
from skdp._solvers._spider_kernel import hessian_vector, oracle_difference, oracle_refresh

WELSCH_CONST = dict(G=1 / math.sqrt(2 * math.e), M=1.0, rho=1.9517830727699512, B=0.5)


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    "calibration,d,n,gamma,b",
    [("paper", 10, 10**5, 0.17, 4131), ("paper", 10, 10**6, 0.070, 13903),
     ("paper", 100, 10**6, 0.11, 25278), ("tight", 10, 10**5, 0.10, 1957),
     ("tight", 10, 10**6, 0.040, 6427)],
)
def test_gamma_rule_reproduces_the_spec_table(calibration, d, n, gamma, b):
    """Spec §7.4's table (Welsch c = 1, R = 1, epsilon = 1, delta = n^-1.1; its "gdp" is
    our "tight"): same gamma within 8 %, same refresh batch within 12 %."""
    P = choose_gamma(n, p=d, **WELSCH_CONST, epsilon=1.0, delta=n**-1.1, calibration=calibration)
    assert P.gamma == pytest.approx(gamma, rel=0.08)
    assert P.b == pytest.approx(b, rel=0.12)
    assert max(P.N, 4 * P.b) <= n
    # the next smaller grid value does not fit
    Q = spider_parameters(P.gamma / 1.02, p=d, **WELSCH_CONST, epsilon=1.0, delta=n**-1.1,
                          calibration=calibration)
    assert max(Q.N, 4 * Q.b) > n


def test_too_little_data_raises_naming_the_n_required():
    kw = dict(p=10, **WELSCH_CONST, epsilon=1.0, delta=1e-5, calibration="tight")
    with pytest.raises(ValueError, match=r"needs at least n = (\d+) training rows") as info:
        choose_gamma(500, **kw)
    need = int(info.value.args[0].split("n = ")[1].split(" ")[0])
    assert need > 500
    assert choose_gamma(need, **kw).gamma <= WELSCH_CONST["G"]  # that n is enough


@pytest.mark.parametrize("calibration", ["tight", "paper"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
@pytest.mark.parametrize("gamma", [0.02, 0.1, 0.3])
def test_calibration_is_certified(calibration, epsilon, delta, gamma):
    P = spider_parameters(gamma, p=20, **WELSCH_CONST, epsilon=epsilon, delta=delta,
                          calibration=calibration)
    mu2 = P.m * (P.s_g / P.sigma_tree) ** 2 + P.K * P.Gamma * (P.s_H * P.Xi / P.sigma_esc) ** 2
    assert P.mu == pytest.approx(math.sqrt(mu2), rel=1e-12)
    assert gaussian_delta(epsilon, P.mu) <= delta * (1 + 1e-9)
    if calibration == "tight":  # exact: the budget is spent
        assert gaussian_epsilon(delta, P.mu) == pytest.approx(epsilon, rel=1e-6)
    else:  # mu^2 <= 0.11 eps^2 / ln(2/delta)
        assert P.mu**2 <= 0.11 * epsilon**2 / math.log(2 / delta)
    # paper tree noise is Thm 2.2 at (eps/2, delta/2) with ln(max(Sigma, 2))
    if calibration == "paper":
        assert P.k_tree == pytest.approx(
            8 * math.sqrt(math.log(max(P.horizon, 2)) * math.log(2 / delta)) / epsilon)


# ------------------------------------------------------------------ oracle sensitivities
def _adversarial_rows(loss, R, x, xp, rng, n_rows):
    """Rows on the norm bound with residuals at the maximisers of |l'| and |l''| (and their
    sign flips) at x or x', along x - x' (where the differences are largest), plus random."""
    c = loss.loss_scale
    u_star = {3: 1 / math.sqrt(5), 4: 1 / math.sqrt(2), 5: 1.0}[loss.loss_id]
    dx = x - xp
    dirs = [dx / np.linalg.norm(dx), rng.normal(size=x.size)]
    rows = []
    for _ in range(n_rows):
        a = dirs[rng.integers(2)] if rng.random() < 0.7 else rng.normal(size=x.size)
        a = R * a / np.linalg.norm(a) * rng.choice([1.0, -1.0])
        target = rng.choice([0.0, u_star * c, -u_star * c, 1.7 * c, rng.normal(scale=3 * c)])
        at = rng.choice([0, 1])
        y = a @ (x if at == 0 else xp) - target
        rows.append((a, y))
    return rows


@pytest.mark.parametrize("loss", [TukeyLoss(1.0), WelschLoss(0.8), CauchyLoss(1.5)], ids=repr)
def test_oracle_sensitivities_on_adversarial_neighbours(loss):
    rng = np.random.default_rng(0)
    R, p = 1.5, 3
    G, M, rho = loss.constants(R)
    worst = np.zeros(4)
    for trial in range(300):
        x = rng.normal(scale=loss.loss_scale / R, size=p)
        xp = x + rng.normal(scale=rng.choice([1e-3, 1e-1]) * loss.loss_scale / R, size=p)
        D = np.linalg.norm(x - xp)
        b = int(rng.integers(1, 6))
        rows = _adversarial_rows(loss, R, x, xp, rng, b + 1)
        X = np.array([a for a, _ in rows])
        y = np.array([t for _, t in rows])
        norms = np.linalg.norm(X, axis=1)
        idx = np.arange(b + 1, dtype=np.int64)
        S, S2 = idx[:b].copy(), np.r_[idx[: b - 1], b].astype(np.int64)  # replace last row
        out = []
        for rows_ in (S, S2):
            g, wts = np.empty(p), np.zeros(b + 1)
            oracle_refresh(X, y, rows_, 0, b, x, loss.loss_id, loss.param, norms, G, M, g, wts)
            H = (X[rows_].T * wts[:b]) @ X[rows_]
            dg, dw = np.empty(p), np.zeros(b + 1)
            oracle_difference(X, y, rows_, 0, b, x, xp, loss.loss_id, loss.param, norms,
                              M * D, rho * D, dg, dw)
            dH = (X[rows_].T * dw[:b]) @ X[rows_]
            out.append((g, H, dg, dH))
        (g1, H1, d1, E1), (g2, H2, d2, E2) = out
        ratios = [np.linalg.norm(g1 - g2) / (2 * G / b),
                  np.linalg.norm(H1 - H2, 2) / (2 * M / b),
                  np.linalg.norm(d1 - d2) / (2 * M * D / b),
                  np.linalg.norm(E1 - E2, 2) / (2 * rho * D / b)]
        worst = np.maximum(worst, ratios)
    assert np.all(worst <= 1.0), worst
    assert np.all(worst >= [0.45, 0.4, 0.4, 0.2]), worst  # the construction is near-worst-case


def test_clipping_enforces_the_bound_whatever_the_loss_constants():
    """With a clip far below the true constants, a leaf still moves by <= 2 clip / b."""
    rng = np.random.default_rng(1)
    loss = WelschLoss(1.0)
    X = rng.normal(size=(6, 4)) * 3
    y = rng.normal(size=6) * 2
    norms = np.linalg.norm(X, axis=1)
    x, xp = rng.normal(size=4), rng.normal(size=4)
    rows1 = np.arange(5, dtype=np.int64)
    rows2 = np.array([0, 1, 2, 3, 5], dtype=np.int64)
    res = []
    for rows in (rows1, rows2):
        g, w = np.empty(4), np.zeros(6)
        oracle_refresh(X, y, rows, 0, 5, x, loss.loss_id, 1.0, norms, 1e-3, 1e-3, g, w)
        dg, dw = np.empty(4), np.zeros(6)
        oracle_difference(X, y, rows, 0, 5, x, xp, loss.loss_id, 1.0, norms, 2e-3, 2e-3, dg, dw)
        res.append((g, (X[rows].T * w[:5]) @ X[rows], dg, (X[rows].T * dw[:5]) @ X[rows]))
    assert np.linalg.norm(res[0][0] - res[1][0]) <= 2e-3 / 5
    assert np.linalg.norm(res[0][1] - res[1][1], 2) <= 2e-3 / 5 * (1 + 1e-12)
    assert np.linalg.norm(res[0][2] - res[1][2]) <= 4e-3 / 5
    assert np.linalg.norm(res[0][3] - res[1][3], 2) <= 4e-3 / 5 * (1 + 1e-12)
    # non-finite rows contribute nothing
    X[4, 0] = np.inf
    g, w = np.empty(4), np.zeros(6)
    norms[4] = np.inf
    oracle_refresh(X, y, rows1, 0, 5, x, loss.loss_id, 1.0, norms, 1.0, 1.0, g, w)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(w))


def test_hessian_vector_product_matches_the_explicit_matrix():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 5))
    rows = rng.permutation(50).astype(np.int64)
    w = rng.normal(size=50)
    v = rng.normal(size=5)
    out = np.empty(5)
    hessian_vector(X, rows, w, 10, 40, v, out)
    A = X[rows[10:40]]
    np.testing.assert_allclose(out, (A.T * w[10:40]) @ A @ v, rtol=1e-12)


# --------------------------------------------------------------------------- full runs
def _planted(n, seed):
    """Spec §9 test 7: Welsch c = 1, a uniform on the unit circle, y = s a.x* + 0.05 N(0, 1),
    s = +-1, ||x*|| = 1.5: 0 is a saddle (lambda_min ~ -0.18), minima +-x*."""
    rng = np.random.default_rng(seed)
    th = rng.uniform(0, 2 * np.pi, n)
    A = np.c_[np.cos(th), np.sin(th)]
    y = rng.choice([-1.0, 1.0], n) * (A @ np.array([1.5, 0.0])) + 0.05 * rng.normal(size=n)
    return A, y


def _welsch_F(w, A, y):
    r = A @ w - y
    return float(np.mean(0.5 * (1 - np.exp(-r * r))))


def _run(A, y, seed, **kw):
    args = dict(epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=1.0, fit_intercept=False,
                rng=np.random.default_rng(seed))
    args.update(kw)
    return solve_spider(A, y, WelschLoss(1.0), **args)


def test_registered():
    assert SOLVERS["spider"] is solve_spider


def test_single_pass_and_public_batch_sizes():
    """The data-use counter proves the single pass (consecutive disjoint slices of one
    random order, never beyond the training rows); every batch size is recomputed from the
    released transcript alone (the iterates); every leaf and Hessian sensitivity implied by
    the logged (b_t, D_t) is within s_g, s_H."""
    A, y = _planted(30_000, 1)
    res = _run(A, y, 0, calibration="paper")
    d = res.details
    assert d["stride"] == 1
    bt, D, flag, ptr = d["log_bt"], d["log_D"], d["log_flag"], d["log_ptr"]
    assert np.array_equal(np.diff(np.r_[0, ptr]), bt)
    assert ptr[-1] == d["rows_used"] == bt.sum() <= d["n_train"] == 30_000
    assert d["rows_used"] > 0.9 * 30_000  # ran until the data was (almost) used up
    traj = np.vstack([np.zeros(2), d["trajectory"]])
    refresh = (flag & FLAGS["refresh"]) != 0
    assert refresh[0] and refresh.sum() == d["n_refreshes"]
    for t in range(len(bt)):
        if refresh[t]:
            assert bt[t] == d["b"]
        else:
            Dt = np.linalg.norm(traj[t] - traj[t - 1])
            assert D[t] == pytest.approx(Dt, rel=1e-12, abs=1e-15)
            assert bt[t] == max(1, math.ceil(d["bt_coef"] * Dt))
    M, rho = d["M"], d["rho"]
    assert 2 * d["G"] / d["b"] <= d["s_g"] and 2 * M / d["b"] <= d["s_H"]
    assert np.all(2 * M * D[~refresh] / bt[~refresh] <= d["s_g"] * (1 + 1e-12))
    assert np.all(2 * rho * D[~refresh] / bt[~refresh] <= d["s_H"] * (1 + 1e-12))
    # epochs never exceed the tree horizon; escapes per epoch <= K
    starts = np.flatnonzero(refresh)
    lengths = np.diff(np.r_[starts, len(bt)])
    assert lengths.max() <= d["horizon"]
    anchors = (flag & FLAGS["anchor"]) != 0
    assert anchors.sum() == d["n_escapes"] >= 1
    per_epoch = np.add.reduceat(anchors.astype(int), starts)
    assert per_epoch.max() <= d["K"]
    # escape phases last <= Gamma steps and stay within Xi of the anchor while running
    esc = (flag & FLAGS["escape"]) != 0
    run = 0
    for t in range(len(esc)):
        run = run + 1 if esc[t] and not anchors[t] else (1 if anchors[t] else 0)
        assert run <= d["Gamma"]


def test_event_and_reported_quantities():
    A, y = _planted(20_000, 2)
    res = _run(A, y, 0)
    d = res.details
    eps = get_epsilon(res.dp_event, 1e-6)
    assert eps == pytest.approx(gaussian_epsilon(1e-6, d["mu"]), rel=1e-9)
    assert eps <= 1.0 * (1 + 1e-9)
    assert res.noise_scale == d["sigma_tree"] and res.sensitivity == d["s_g"]
    assert res.n_iter == d["steps"] and res.n_gradient_evals >= d["rows_used"]
    again = _run(A, y, 0)
    assert np.array_equal(again.coef, res.coef)  # same seed: bitwise identical
    assert not np.array_equal(_run(A, y, 1).coef, res.coef)


def test_escapes_the_planted_saddle():
    """Spec §9 (issue 4): started at the saddle 0, eps = 1, n = 1e5, the last iterate has
    F <= F(0) - 0.06 in >= 9 of 10 seeds (prototype: all escape)."""
    A, y = _planted(100_000, 3)
    F0 = _welsch_F(np.zeros(2), A, y)
    escaped = 0
    for seed in range(10):
        res = _run(A, y, seed)
        w = res.coef[:, 0]
        if _welsch_F(w, A, y) <= F0 - 0.06 and res.details["n_escapes"] >= 1:
            escaped += 1
    assert escaped >= 9


def test_private_selection_uses_a_disjoint_held_out_split():
    A, y = _planted(50_000, 4)
    res = _run(A, y, 0, selection="private")
    d = res.details
    assert d["n_validation"] == 5_000 and d["n_train"] == 45_000
    assert d["rows_used"] <= d["n_train"]
    assert 1 <= d["selected_step"] <= d["steps"]
    assert _welsch_F(res.coef[:, 0], A, y) <= _welsch_F(np.zeros(2), A, y) - 0.05
    # the event is the training run's (parallel composition, same mu for both parts)
    assert get_epsilon(res.dp_event, 1e-6) <= 1.0 * (1 + 1e-9)


def test_no_escape_variant_has_no_escape_releases():
    A, y = _planted(20_000, 5)
    res = _run(A, y, 0, escape=False)
    d = res.details
    assert d["n_escapes"] == 0
    assert not np.any(d["log_flag"] & (FLAGS["escape"] | FLAGS["anchor"]))
    # only the tree is released: sqrt(m) s_g / sigma_tree-GDP, half the tight budget
    assert isinstance(res.dp_event, dp_accounting.SelfComposedDpEvent)
    assert res.dp_event.count == d["m"]
    mu = math.sqrt(d["m"]) * d["s_g"] / d["sigma_tree"]
    assert get_epsilon(res.dp_event, 1e-6) == pytest.approx(gaussian_epsilon(1e-6, mu))
    assert get_epsilon(res.dp_event, 1e-6) < 0.8


def test_input_errors():
    A, y = _planted(1000, 6)
    with pytest.raises(ValueError, match="delta"):
        _run(A, y, 0, delta=0.0)
    with pytest.raises(ValueError, match="Hessian-Lipschitz"):
        solve_spider(A, y, HuberLoss(1.0), epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=1.0,
                     fit_intercept=False, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="y_bound"):
        solve_spider(A, y, CauchyLoss(1.0), epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=1.0,
                     fit_intercept=False, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs at least n"):
        _run(A, y, 0)
    with pytest.raises(ValueError, match="selection"):
        _run(A, y, 0, selection="best")


def test_loss_kernel_is_the_shared_one():
    """The solver's per-row terms come from skdp._losses (no duplicated loss code)."""
    import skdp._solvers._spider_kernel as k
    from skdp._losses import _kernels

    assert k._robust_row is _kernels._robust_row
    out = np.empty((1, 4))
    robust_derivatives(np.array([0.3]), WelschLoss().loss_id, 1.0, out)
    assert out[0, 1] == pytest.approx(0.3 * math.exp(-0.09))


def test_noisy_selection_frequencies_match_the_gaussian_law():
    """Spec §9 test 8 for our selection rule (Gaussian report-noisy-min): with two
    candidates the probability of picking the worse one is Phi(-gap / (sigma sqrt 2)),
    sigma = sqrt(2) Delta / mu (binomial 5-sigma band, fixed seed)."""
    from scipy.stats import norm

    from skdp._solvers._spider import noisy_argmin

    rng = np.random.default_rng(0)
    delta_s, mu, gap = 0.01, 0.5, 0.03
    sigma = math.sqrt(2) * delta_s / mu
    trials = 20_000
    worse = sum(noisy_argmin(np.array([gap, 0.0]), delta_s, mu, rng) == 0
                for _ in range(trials))
    p = norm.cdf(-gap / (sigma * math.sqrt(2)))
    assert abs(worse / trials - p) < 5 * math.sqrt(p * (1 - p) / trials)


def test_large_epsilon_is_not_refused_by_rounding():
    """At epsilon = 50 the split of the GDP budget between tree and escapes used to land an
    ulp above the (epsilon, delta) boundary, and the guard refused the run."""
    import warnings

    from skdp import DPNonconvexRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (600, 2)) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # nearly vacuous at this n: warned
        est = DPNonconvexRegressor(solver="spider", epsilon=50.0, data_norm=1.0,
                                   random_state=0).fit(X, X @ [1.0, -1.0])
    assert 50.0 * (1 - 1e-6) <= est.epsilon_ <= 50.0


def test_exact_noise_default_path():
    """secure_noise='auto' runs spider on exact grid noise (tree node sums, escapes, the
    private selection): same event as the float path, reproducible bit for bit, and it
    learns as much as the float run on an easy problem."""
    import warnings

    from skdp import DPNonconvexRegressor
    from skdp._solvers._spider import exact_sensitivities, spider_plan

    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (60_000, 2)) / 2
    y = X @ [2.0, -2.0]
    kw = dict(solver="spider", epsilon=8.0, data_norm=1.0, selection="private")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = DPNonconvexRegressor(random_state=0, **kw).fit(X, y)
        b = DPNonconvexRegressor(random_state=0, **kw).fit(X, y)
        f = DPNonconvexRegressor(random_state=0, secure_noise=False, **kw).fit(X, y)
    assert a.secure_noise_ is True and f.secure_noise_ is False
    assert a.dp_event_ == f.dp_event_
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
    assert a.score(X, y) > 0.5 and abs(a.score(X, y) - f.score(X, y)) < 0.2
    from skdp._losses import WelschLoss

    P = spider_plan(60_000, 3, WelschLoss(1.0), epsilon=8.0, delta=a.delta, alpha=0.0,
                    data_norm=a.row_bound_)[0]
    s_tree, s_esc = exact_sensitivities(P, 60_000)
    # the node-sum rounding bound uses the only public leaf bound, s_g b_t/2 <= s_g n/2:
    # 1 + h^2 n 2^-53 (0.1 % here, horizon h ~ 1e4)
    assert P.s_g < s_tree < P.s_g * (1 + 1e-2) and P.s_H * P.Xi < s_esc


def test_float_path_noise_covers_the_rounding_of_the_computed_releases(monkeypatch):
    """secure_noise=False: the kernel's tree and escape noises are the plan's times the
    rounding-inclusive sensitivities over the nominal ones (exact_sensitivities), the
    factors of the grid releases; the float tree releases node sums
    (tree_float_release), whose computed sums have that sensitivity."""
    import warnings

    import skdp._solvers._spider as sp
    from skdp import DPNonconvexRegressor
    from skdp._losses import WelschLoss
    from skdp._solvers._spider import exact_sensitivities, spider_plan
    from skdp._solvers._spider_kernel import F_SIGMA_ESC, F_SIGMA_TREE

    seen = {}
    original = sp.spider_loop

    def kernel(*args):
        fpar = args[6]
        seen["tree"], seen["esc"] = float(fpar[F_SIGMA_TREE]), float(fpar[F_SIGMA_ESC])
        return original(*args)

    monkeypatch.setattr(sp, "spider_loop", kernel)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (20_000, 2)) / 2
    y = X @ [2.0, -2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        f = DPNonconvexRegressor(solver="spider", epsilon=8.0, data_norm=1.0, random_state=0,
                                 secure_noise=False).fit(X, y)
    n = 20_000
    P = spider_plan(n, 3, WelschLoss(1.0), epsilon=8.0, delta=f.delta, alpha=0.0,
                    data_norm=f.row_bound_)[0]
    s_tree, s_esc = exact_sensitivities(P, n)
    assert seen["tree"] >= P.sigma_tree * s_tree / P.s_g > P.sigma_tree
    assert seen["esc"] >= P.sigma_esc * s_esc / (P.s_H * P.Xi) > P.sigma_esc
