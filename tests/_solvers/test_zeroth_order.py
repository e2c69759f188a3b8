"""solver='zeroth_order' (Zhang, Tran & Cutkosky 2024; spec private_zeroth_order.md §7).

Statistical tests use fixed seeds; a Monte-Carlo comparison at 4 standard errors fails
with probability ~6e-5 per coordinate under the null (~1 % over all of this file's
coordinates for a random seed).
"""

import contextlib
import math
import warnings

import numpy as np
import pytest
from numba import njit
from scipy.special import betainc
from scipy.stats import beta as beta_dist

from skdp import DPNonconvexRegressor
from skdp._losses._kernels import ABSOLUTE, CAPPED_ABSOLUTE
from skdp._losses._nonsmooth import CappedAbsoluteLoss
from skdp._mechanisms._tree import tree_dp_event
from skdp._solvers._zeroth_order import (
    kernel_parameters,
    rho_from_epsilon_delta,
    solve_zeroth_order,
    solve_zeroth_order_naive,
    zeroth_order_plan,
)
from skdp._solvers._zeroth_order_kernel import (
    N_STATS,
    SAFE,
    batch_estimate,
    row_estimate,
    specialised_kernels,
    zo_run,
)
from skdp.accounting import get_delta, get_epsilon

EPS, DELTA = 1.0, 1e-6
DS = 0.5  # smoothing radius of the Monte-Carlo tests


def _row_draws(X, y, wa, wb, diff, p, fast, loss_id, c, n_draws, seed, lip=1.0):
    """n_draws independent row estimates of row 0 (python loop over the cached kernel)."""
    rng = np.random.default_rng(seed)
    na = float(np.linalg.norm(X[0]))
    u, out = np.zeros(p), np.zeros(p)
    res = np.empty((n_draws, p))
    bound = 1e300
    for k in range(n_draws):
        row_estimate(X, 0, y[0], na, wa, wb, diff, DS, lip, bound, p, fast, loss_id, c, rng,
                     u, out)
        res[k] = out
    return res


def _smoothed_abs_grad(a, w, y, d):
    """grad of E|a.(w + DS v) - y|, v ~ Unif(ball in R^d)."""
    nu = np.linalg.norm(a)
    s = np.clip((a @ w - y) / (DS * nu), -1.0, 1.0)
    return a * (2.0 * betainc((d + 1) / 2, (d + 1) / 2, (s + 1) / 2) - 1.0)


def _smoothed_capped_grad(a, w, y, d, tau):
    """grad of E min(|a.(w + DS v) - y|, tau): a [P(0 < r < tau) - P(-tau < r < 0)]."""
    nu = np.linalg.norm(a)
    r0 = a @ w - y
    cdf = beta_dist((d + 1) / 2, (d + 1) / 2).cdf

    def P_lt(v):  # P(r0 + DS nu t < v), (t+1)/2 ~ Beta
        return cdf(np.clip(((v - r0) / (DS * nu) + 1) / 2, 0, 1))

    return a * ((P_lt(tau) - P_lt(0.0)) - (P_lt(0.0) - P_lt(-tau)))


def _assert_mean(draws, expected, n_se=4.0):
    mean = draws.mean(0)
    se = draws.std(0, ddof=1) / math.sqrt(draws.shape[0])
    z = np.abs(mean - expected) / np.maximum(se, 1e-300)
    assert np.all(z < n_se), (mean, expected, z.max())


def _setup(p, seed=0, r0=0.4 * DS * 0.8, y=0.0):
    """A row ``a`` (norm 0.8) and a point ``w`` with residual ``a.w - y = r0``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=p)
    a *= 0.8 / np.linalg.norm(a)
    X = np.ascontiguousarray(a[None, :])
    w = rng.normal(size=p)
    w -= (w @ a) / (a @ a) * a
    w += (r0 + y) / (a @ a) * a
    return X, a, w


@pytest.mark.parametrize("p,fast", [(2, 1), (7, 1), (50, 1), (7, 0), (50, 0)])
def test_grad_unbiased_absolute(p, fast):
    y = np.array([0.1 * DS])
    X, a, w = _setup(p, y=y[0], r0=0.5 * DS * 0.8 / math.sqrt(p))  # t ~ 1/sqrt(p)
    draws = _row_draws(X, y, w, w, 0, p, fast, ABSOLUTE, 1.0, 20_000, seed=p + fast)
    expected = _smoothed_abs_grad(a, w, y[0], p)
    assert 0.05 < abs(expected @ a) / (a @ a) < 0.95  # not saturated: a sensitive test
    _assert_mean(draws, expected)


@pytest.mark.parametrize("fast", [1, 0])
def test_grad_unbiased_capped(fast):
    p, tau = 7, 0.15
    y = np.array([-0.05])
    X, a, w = _setup(p, seed=3, r0=0.1, y=y[0])
    draws = _row_draws(X, y, w, w, 0, p, fast, CAPPED_ABSOLUTE, tau, 20_000, seed=10 + fast)
    _assert_mean(draws, _smoothed_capped_grad(a, w, y[0], p, tau))


@pytest.mark.parametrize("fast", [1, 0])
def test_diff_unbiased(fast):
    """E DIFF(x, x') = grad F_hat(x) - grad F_hat(x') (one-point estimators, shared u)."""
    p = 7
    X, a, w = _setup(p, seed=5, r0=0.2 * DS * 0.8)
    w2 = w - 0.4 * a
    y = np.array([0.0])
    draws = _row_draws(X, y, w, w2, 1, p, fast, ABSOLUTE, 1.0, 20_000, seed=20 + fast)
    expected = _smoothed_abs_grad(a, w, 0.0, p) - _smoothed_abs_grad(a, w2, 0.0, p)
    _assert_mean(draws, expected)


def test_l1_norm_batch_unbiased():
    """Rows e_1..e_p, y = 0: the batch GRAD estimates grad of the smoothed ||x||_1 / p."""
    p = 5
    X = np.eye(p)
    y = np.zeros(p)
    x = np.array([0.3, -0.1, 0.7, -0.45, 0.05]) * DS
    rows = np.arange(p, dtype=np.int64)
    rng = np.random.default_rng(7)
    u, row, out = np.zeros(p), np.zeros(p), np.zeros(p)
    reads = np.zeros(p, dtype=np.int64)
    draws = np.empty((20_000, p))
    for k in range(draws.shape[0]):
        batch_estimate(X, y, rows, 0, p, np.ones(p), x, x, 0, DS, 1.0, 1e300, p, 1, ABSOLUTE,
                       1.0, rng, u, row, out, reads)
        draws[k] = out
    s = np.clip(x / DS, -1, 1)
    expected = (2.0 * betainc((p + 1) / 2, (p + 1) / 2, (s + 1) / 2) - 1.0) / p
    _assert_mean(draws, expected)
    assert np.all(reads == draws.shape[0])


def test_fast_and_sphere_paths_share_the_second_moment():
    p = 7
    X, a, w = _setup(p, seed=11)
    y = np.array([0.0])
    sq = [np.sum(_row_draws(X, y, w, w, 0, p, f, ABSOLUTE, 1.0, 20_000, seed=30 + f) ** 2, 1)
          for f in (1, 0)]
    se = math.sqrt(sq[0].var() / sq[0].size + sq[1].var() / sq[1].size)
    assert abs(sq[0].mean() - sq[1].mean()) < 4 * se
    L = np.linalg.norm(a)
    assert sq[0].mean() <= 16 * p * L * L  # Lemma 3.1's variance bound (b = 1)


# --------------------------------------------------------------------------- sensitivity


@njit(cache=False)
def _violating(z, y):  # declared 1-Lipschitz, is 1000-Lipschitz
    return 1000.0 * abs(z - y)


@njit(cache=False)
def _non_finite(z, y):
    if z - y > 0.05:
        return np.inf
    if z - y < -0.05:
        return np.nan
    return z - y


@pytest.fixture(scope="module")
def user_rows():
    return {f.__name__ if hasattr(f, "__name__") else str(f): specialised_kernels(f)["row_estimate"]
            for f in (_violating, _non_finite)}


def _adversarial_rows(p, R, B_y, w):
    rng = np.random.default_rng(1)
    out = []
    e = rng.normal(size=p)
    e *= R / np.linalg.norm(e)
    for yv in (B_y, -B_y, e @ w, e @ w + 1.0, e @ w - 1.0):  # extremes, kinks (tau = 1)
        out.append((e.copy(), float(yv)))
    out.append((-e, B_y))
    out.append((np.zeros(p), B_y))
    return out


@pytest.mark.parametrize("diff", [0, 1])
def test_sensitivity_adversarial_neighbours(diff, user_rows):
    """||est(Z) - est(Z')|| <= s for GRAD (batch B1) and DIFF (B2 = 1) with the changed row
    among adversarial records, for honest, non-Lipschitz and non-finite losses."""
    p, R, B_y, n = 4, 1.5, 3.0, 2000
    P, _ = zeroth_order_plan(n, p, CappedAbsoluteLoss(1.0), epsilon=EPS, delta=DELTA,
                             data_norm=R, y_bound=B_y, smoothing_radius=DS)
    rng = np.random.default_rng(2)
    w = rng.normal(size=p) * 0.2
    wb = w.copy()
    if diff:
        step = rng.normal(size=p)
        wb = w - step * (2 * P.D / np.linalg.norm(step))  # ||w - w'|| = 2D, the maximum
    b = P.B2 if diff else P.B1
    s_bound = P.s2 if diff else P.s1
    dist = min(np.linalg.norm(w - wb), 2 * P.D)
    row_bound = (p * P.lip * R * dist / P.delta_s if diff else p * P.lip * R) * SAFE
    base = rng.normal(size=(b, p))
    base *= R / np.maximum(R, np.linalg.norm(base, axis=1))[:, None]
    yb = rng.uniform(-B_y, B_y, size=b)
    cands = _adversarial_rows(p, R, B_y, w)
    kernels = [("builtin", None)] + list(user_rows.items())
    for name, kern in kernels:
        outs = []
        for a, yv in cands:
            X = base.copy()
            X[0] = a
            y = yb.copy()
            y[0] = yv
            norms = np.linalg.norm(X, axis=1)
            g = np.zeros(p)
            rng_dir = np.random.default_rng(99)  # same directions for every neighbour
            if kern is None:
                batch_estimate(X, y, np.arange(b, dtype=np.int64), 0, b, norms, w, wb, diff,
                               P.delta_s, P.lip, row_bound, P.m, 1, CAPPED_ABSOLUTE, 1.0,
                               rng_dir, np.zeros(p), np.zeros(p), g, np.zeros(b, np.int64))
            else:  # row level: ||row|| <= row_bound, so the batch moves by <= 2 row_bound/b
                kern(X, 0, y[0], norms[0], w, wb, diff, P.delta_s, P.lip, row_bound, P.m, 1, -1,
                     0.0, rng_dir, np.zeros(p), g)
                assert np.all(np.isfinite(g)) and np.linalg.norm(g) <= row_bound * (1 + 1e-12)
                g = g / b
            outs.append(g)
        for i in range(len(outs)):
            for j in range(i):
                gap = np.linalg.norm(outs[i] - outs[j])
                assert gap <= s_bound * (1 + 1e-12), (name, i, j, gap / s_bound)
        if name == "_violating" and not diff:  # the clip binds: the bound is attained, not vacuous
            assert max(np.linalg.norm(o) for o in outs) * b > 0.3 * row_bound


# --------------------------------------------------------------------------- calibration


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_calibration_and_event(calibration):
    loss = CappedAbsoluteLoss(1.0)
    P, event = zeroth_order_plan(10**5, 21, loss, epsilon=EPS, delta=DELTA, data_norm=1.0,
                                 smoothing_radius=0.3, calibration=calibration)
    assert P.s == max(P.s1, P.s2) and P.s2 == pytest.approx(4 * 21 * P.L / P.T)
    assert repr(event) == repr(tree_dp_event(P.sigma, P.s, P.T))
    assert get_delta(event, EPS) <= DELTA
    rho = rho_from_epsilon_delta(EPS, DELTA)
    paper_literal = math.sqrt(2 * math.log(P.T)) * 4 * 21 * P.L / (P.T * rho)  # Cor. 4.4
    if calibration == "tight":
        assert get_epsilon(event, DELTA) == pytest.approx(EPS, rel=1e-6)
        assert P.sigma < paper_literal
    else:
        assert P.sigma >= paper_literal * (1 - 1e-12)


@pytest.mark.parametrize("T", [2, 4])
def test_paper_sigma_fix_for_small_T(T):
    """c_T = max(2 ln T, floor(log2 T) + 1): at T in {2, 4} the node count wins."""
    P, event = zeroth_order_plan(200, 3, CappedAbsoluteLoss(1.0), epsilon=EPS, delta=DELTA,
                                 data_norm=1.0, smoothing_radius=0.3, calibration="paper",
                                 max_iter=T)
    assert P.T == T
    c_T = max(2 * math.log(T), T.bit_length())
    assert c_T == T.bit_length() > 2 * math.log(T)
    assert P.sigma == pytest.approx(math.sqrt(c_T) * P.s / P.rho, rel=1e-15)
    assert get_delta(event, EPS) <= DELTA


def _zero_data_runs(P, n_runs, seed):
    """Released g_tilde of runs on all-zero rows: exactly the tree (or naive) noise."""
    p = P.p
    n = P.rows_used
    X = np.zeros((n, p))
    y = np.zeros(n)
    fpar, ipar = kernel_parameters(P, 1.0)
    trace = np.zeros((P.K * P.T, p))
    out = np.empty((n_runs, P.K * P.T, p))
    rng = np.random.default_rng(seed)
    for r in range(n_runs):
        zo_run(X, y, np.arange(n, dtype=np.int64), CAPPED_ABSOLUTE, 1.0, np.zeros(n), fpar,
               ipar, rng, np.zeros((P.K, p)), np.zeros(n, np.int64), np.zeros(N_STATS),
               np.zeros(p), trace)
        out[r] = trace
    return out


def test_tree_noise_variance_per_round():
    """E||g_tilde_t||^2 = p popcount(t) sigma^2 on zero data (5 % = 5 SE with 4000 x 5
    chi-square draws per round)."""
    P, _ = zeroth_order_plan(32, 5, CappedAbsoluteLoss(1.0), epsilon=EPS, delta=DELTA,
                             data_norm=1.0, smoothing_radius=0.3, max_iter=16)
    assert (P.T, P.K) == (16, 1)
    tr = _zero_data_runs(P, 4000, seed=0)
    for t in (1, 2, 3, 4, 7, 8, 13):
        ratio = np.mean(np.sum(tr[:, t - 1] ** 2, 1)) / (P.p * P.sigma**2)
        assert abs(ratio / bin(t).count("1") - 1) < 0.05, (t, ratio)
    # the naive oracle: fresh noise every round
    Pn, _ = zeroth_order_plan(32, 5, CappedAbsoluteLoss(1.0), epsilon=EPS, delta=DELTA,
                              data_norm=1.0, smoothing_radius=0.3, max_iter=16, naive=True)
    trn = _zero_data_runs(Pn, 1000, seed=1)
    ratio = np.mean(np.sum(trn**2, 2)) / (Pn.p * Pn.sigma**2)
    assert abs(ratio - 1) < 0.02


# --------------------------------------------------------------------------- the run


def _data(n, d, seed, outliers=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.normal(size=d)
    w *= 3 / np.linalg.norm(w)
    y = X @ w + 0.05 * rng.normal(size=n)
    out = rng.random(n) < outliers
    y[out] = rng.uniform(-3, 3, out.sum())
    return X, np.clip(y, -3, 3), w


def _capped(X, y, w, tau=1.5):
    return float(np.minimum(np.abs(X @ w - y), tau).mean())


@pytest.mark.parametrize("naive", [False, True])
def test_single_pass_and_projection(naive):
    X, y, _ = _data(3001, 4, 0)
    reads = np.zeros(3001, dtype=np.int64)
    solve = solve_zeroth_order_naive if naive else solve_zeroth_order
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = solve(X, y, CappedAbsoluteLoss(1.5), epsilon=EPS, delta=DELTA, alpha=0.0,
                    data_norm=1.0, fit_intercept=False, rng=np.random.default_rng(0),
                    smoothing_radius=0.5, read_counter=reads)
    P = res.details
    assert reads.max() == 1 and reads.sum() == P["rows_used"] == P["rows_read"]
    if not naive:
        assert P["B1"] == P["T"] + 1 and P["B2"] == 1 and P["rows_used"] == 2 * P["K"] * P["T"]
        assert P["n_function_evals"] == 2 * P["m"] * P["rows_used"]
    else:
        assert P["rows_used"] == P["K"] * P["T"] * P["B1"]
    assert P["max_delta_norm"] <= P["D"]
    assert P["max_iterate_step"] <= 2 * P["D"]
    if not naive:
        assert P["max_delta_norm"] > 0.99 * P["D"]  # the projection is active


def test_deterministic_given_seed():
    X, y, _ = _data(2000, 3, 1)
    kw = dict(epsilon=EPS, delta=DELTA, alpha=0.0, data_norm=1.5, smoothing_radius=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r1 = solve_zeroth_order(X, y, CappedAbsoluteLoss(1.5), rng=np.random.default_rng(5), **kw)
        r2 = solve_zeroth_order(X, y, CappedAbsoluteLoss(1.5), rng=np.random.default_rng(5), **kw)
        r3 = solve_zeroth_order(X, y, CappedAbsoluteLoss(1.5), rng=np.random.default_rng(6), **kw)
    assert np.array_equal(r1.coef, r2.coef) and np.array_equal(r1.intercept, r2.intercept)
    assert not np.array_equal(r1.coef, r3.coef)


def test_converges_and_beats_naive():
    """Capped-L1 regression with 20 % outliers."""
    X, y, w_star = _data(20_000, 5, 2)
    loss = CappedAbsoluteLoss(1.5)
    kw = dict(delta=DELTA, alpha=0.0, data_norm=1.0, fit_intercept=False, smoothing_radius=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        free = solve_zeroth_order(X, y, loss, epsilon=1e6, rng=np.random.default_rng(0), **kw)
        vr = [_capped(X, y, solve_zeroth_order(X, y, loss, epsilon=EPS,
                                               rng=np.random.default_rng(s), **kw).coef[:, 0])
              for s in range(3)]
        nv = [_capped(X, y, solve_zeroth_order_naive(X, y, loss, epsilon=EPS,
                                                     rng=np.random.default_rng(s), **kw).coef[:, 0])
              for s in range(3)]
    base, best = _capped(X, y, 0 * w_star), _capped(X, y, w_star)
    assert _capped(X, y, free.coef[:, 0]) <= 1.1 * best
    assert np.mean(vr) < np.mean(nv) and np.mean(vr) < base - 0.3 * (base - best)


# --------------------------------------------------------------------------- estimator


def test_estimator_auto_loss_planner_and_errors():
    from skdp.linear_model._base import planned_dp_event
    from skdp.linear_model._nonconvex import _loss_of

    X, y, _ = _data(5000, 3, 3)
    reg = DPNonconvexRegressor(solver="zeroth_order", data_norm=1.5, y_bound=3.0,
                               random_state=0)
    assert type(_loss_of(reg)).__name__ == "CappedAbsoluteLoss"
    assert type(_loss_of(DPNonconvexRegressor())).__name__ == "WelschLoss"  # unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        reg.fit(X, y)
    assert reg.epsilon_ <= 1.0 and reg.privacy_guaranteed_
    assert repr(planned_dp_event(reg, 5000)) == repr(reg.dp_event_)
    assert reg.n_gradient_evals_ <= 5000 and reg.n_iter_ > 0
    with pytest.raises(ValueError, match="at least n = 4"):
        DPNonconvexRegressor(solver="zeroth_order", data_norm=1.5).fit(X[:3], y[:3])
    with pytest.raises(ValueError, match="nonsmooth"):
        DPNonconvexRegressor(loss="capped_absolute", solver="spider", data_norm=1.5).fit(X, y)
    with pytest.raises(ValueError, match="callable loss needs solver"):
        DPNonconvexRegressor(loss=_violating, loss_lipschitz=1.0, solver="spider",
                             data_norm=1.5).fit(X, y)
    # solver="auto" routes nonsmooth losses to the zeroth-order solver
    auto = DPNonconvexRegressor(loss="capped_absolute", data_norm=1.5, y_bound=3.0,
                                random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert auto.fit(X, y).solver_ == "zeroth_order"
    with pytest.raises(ValueError, match="loss_lipschitz"):
        DPNonconvexRegressor(loss=_violating, solver="zeroth_order", data_norm=1.5).fit(X, y)


@njit(cache=False)
def _user_capped(z, y):
    return min(abs(z - y), 1.5)


def test_user_loss_matches_builtin():
    """A numba user loss runs (uncached kernel) and gives the built-in's fit when it is the
    same function with the same public constants."""
    X, y, _ = _data(4000, 3, 4)
    # T depends on F* (unknown for a user loss): pin it with max_iter below both rules' T
    kw = dict(solver="zeroth_order", data_norm=1.0, y_bound=3.0, fit_intercept=False,
              smoothing_radius=0.5, random_state=0, epsilon=2.0, max_iter=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = DPNonconvexRegressor(loss="capped_absolute", loss_scale=1.5, **kw).fit(X, y)
        user = DPNonconvexRegressor(loss=_user_capped, loss_lipschitz=1.0, **kw).fit(X, y)
    assert user.epsilon_ <= 2.0 and user.n_iter_ == ref.n_iter_
    assert np.array_equal(user.coef_, ref.coef_)  # same values => bitwise the same run


@pytest.mark.parametrize("naive", [False, True])
def test_exact_noise_releases_on_the_grid(naive):
    """secure noise: every released g_tilde (alpha = 0) is an integer multiple of the public
    grid -- sums of released tree nodes, or the naive oracle's grid release -- the event is
    the float path's, and the run is reproducible."""
    from skdp._mechanisms import new_word_source
    from skdp._solvers._zeroth_order import _exact_noise, _solve, exact_sensitivity

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (6000, 2))
    y = X @ [1.0, -1.0]
    kw = dict(epsilon=4.0, delta=1e-6, alpha=0.0, data_norm=2.0, n_outputs=1,
              fit_intercept=False, intercept_scaling=1.0, y_bound=None, calibration="tight",
              max_iter=None, smoothing_radius=0.5, output="last", directions="linear",
              naive=naive, batch_size=20, read_counter=None)
    loss = CappedAbsoluteLoss(1.0)
    P, _ = zeroth_order_plan(6000, 2, loss, epsilon=4.0, delta=1e-6, data_norm=2.0,
                             smoothing_radius=0.5, naive=naive, batch_size=20)
    assert P.s < exact_sensitivity(P) < P.s * (1 + 1e-6)
    _, gamma = _exact_noise(P, 2.0, 2, new_word_source(np.random.default_rng(0)))
    assert (P.K == 1) == naive

    def single_period():
        """The naive schedule has a single period on these 6000 rows, and says so."""
        return (pytest.warns(UserWarning, match="only K = 1 period") if naive
                else contextlib.nullcontext())

    runs = []
    for _ in range(2):
        trace = np.zeros((P.K * P.T, 2))
        with single_period():
            res = _solve(X, y, loss, rng=np.random.default_rng(1), trace=trace,
                         noise_source=new_word_source(np.random.default_rng(0)), **kw)
        runs.append((res, trace))
    (res, trace), (res2, trace2) = runs
    steps = trace / gamma
    assert np.all(steps == np.rint(steps)) and np.any(steps != 0)
    assert np.array_equal(trace, trace2) and np.array_equal(res.coef, res2.coef)
    with single_period():
        flt = _solve(X, y, loss, rng=np.random.default_rng(1), **kw)
    assert res.dp_event == flt.dp_event
    # the grid noise has the float noise's scale: releases stay close to the float ones
    # on the same rows and directions (same rng); both learn the sign pattern
    assert np.sign(res.coef.ravel()).tolist() == [1.0, -1.0]


def test_exact_noise_default_estimator_learns():
    """DPNonconvexRegressor on a nonsmooth loss (solver auto = zeroth_order) now runs with
    secure noise by default and still learns."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (20_000, 2)) / 2
    y = X @ [2.0, -2.0]
    est = DPNonconvexRegressor(loss="capped_absolute", data_norm=1.0, epsilon=4.0,
                               random_state=0).fit(X, y)
    flt = DPNonconvexRegressor(loss="capped_absolute", data_norm=1.0, epsilon=4.0,
                               random_state=0, secure_noise=False).fit(X, y)
    assert est.solver_ == "zeroth_order" and est.secure_noise_ is True
    assert flt.secure_noise_ is False and est.dp_event_ == flt.dp_event_
    assert est.score(X, y) > 0.5 and abs(est.score(X, y) - flt.score(X, y)) < 0.2


def test_float_path_noise_covers_the_rounding_of_the_node_sums(monkeypatch):
    """secure_noise=False: the kernel's sigma is the plan's times exact_sensitivity(P)/s,
    the factor the grid releases use (the float tree releases node sums,
    tree_float_release, whose computed sums have that sensitivity)."""
    import skdp._solvers._zeroth_order as zo
    from skdp._solvers._zeroth_order import _solve, exact_sensitivity
    from skdp._solvers._zeroth_order_kernel import F_SIGMA

    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (6000, 2)) / 2
    y = X @ [1.0, -1.0]
    seen = {}
    original = zo.zo_run

    def kernel(*args):
        seen["sigma"] = float(args[6][F_SIGMA])
        return original(*args)

    monkeypatch.setattr(zo, "zo_run", kernel)
    loss = CappedAbsoluteLoss(1.0)
    kw = dict(epsilon=4.0, delta=1e-6, alpha=0.0, data_norm=2.0, n_outputs=1,
              fit_intercept=False, intercept_scaling=1.0, y_bound=None, calibration="tight",
              max_iter=None, smoothing_radius=0.5, output="last", directions="linear",
              naive=False, batch_size=20, read_counter=None)
    _solve(X, y, loss, rng=np.random.default_rng(1), **kw)
    P, _ = zeroth_order_plan(6000, 2, loss, epsilon=4.0, delta=1e-6, data_norm=2.0,
                             smoothing_radius=0.5, batch_size=20)
    assert seen["sigma"] >= P.sigma * exact_sensitivity(P) / P.s > P.sigma
