"""Independent privacy review of the phased, resque, zeroth-order and rrpsgd solvers.

Adversarial neighbour tests: each test builds replace-one neighbours designed to maximise
the change of ONE release (rows on the clip, targets/labels at the extremes, the replaced row
placed where it propagates most, NaN/inf/huge values), runs the code that is actually
executed (solver or kernel) with the noise switched off or made negligible, and asserts that
the change never exceeds the sensitivity that the reported event assumes.  Each such test
also asserts that the worst case *approaches* the bound, so a test that could never fail is
caught.  Further: planner event == fitted event for every new solver, and same
``random_state`` => bitwise identical models.

Conventions checked (skdp.accounting._events): ``GaussianDpEvent(z)`` has GDP ``mu = 2/z``,
i.e. a release with replace-one sensitivity ``Delta`` and noise ``sigma`` is
``gaussian_event(sigma, Delta)``; Poisson events have ``z`` = noise over the per-record bound
``C`` (replace-one sensitivity ``2C``).
"""

import contextlib
import math
import warnings

import dp_accounting
import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
from skdp._losses import CauchyLoss, HuberLoss, LogisticLoss, MultinomialLoss, TukeyLoss
from skdp._losses import WelschLoss
from skdp._losses._nonsmooth import AbsoluteLoss as ZOAbsoluteLoss
from skdp._losses._smoothed import AbsoluteLoss
from skdp._solvers import _phased, _resque, _rrpsgd
from skdp._solvers._dpsgd import _clip_bound
from skdp._solvers._phased import phased_plan, solve_phased
from skdp._solvers._resque import solve_resque
from skdp._solvers._resque_kernel import LOGW_CAP, step_sum
from skdp._solvers._rrpsgd import rrpsgd_plan, solve_rrpsgd
from skdp._solvers._zeroth_order import kernel_parameters, zeroth_order_plan
from skdp._solvers._zeroth_order_kernel import F_ETA, F_SIGMA, zo_run
from skdp.accounting import gaussian_epsilon, gaussian_event, get_epsilon
from skdp.accounting import poisson_gaussian_event
from skdp.linear_model._base import planned_dp_event

TOL = 1e-9
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class _LyingHuber(HuberLoss):
    """Declares half its true Lipschitz constant: only the kernel's clip keeps the bound."""

    def lipschitz(self, data_norm):
        return 0.5 * super().lipschitz(data_norm)


class _LyingWelsch(WelschLoss):
    def derivative_bounds(self):
        L1, L2, L3 = super().derivative_bounds()
        return 0.5 * L1, L2, L3


class _LyingAbsolute(ZOAbsoluteLoss):
    def prediction_lipschitz(self):
        return 0.5


def _unit_rows(rng, n, d, norm):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * norm


def _stack(res, fit_intercept, scaling=1.0):
    coef = np.asarray(res.coef).reshape(-1, res.intercept.shape[0])
    if fit_intercept:
        return np.vstack([coef, res.intercept.reshape(1, -1) / scaling])
    return coef


# ----------------------------------------------------------------------------- phased


def _phase_of(position, sizes):
    return int(np.searchsorted(np.cumsum(sizes), position, side="right"))


PHASED_CASES = [
    # (loss, K, fit_intercept, step_scale, alpha, max_coef_norm, smoothing, least): `least`
    # is the lower bound asserted on the worst ratio change/Delta (measured, same order:
    # 0.26, 0.22, 0.0046, 0.4985, 0.9985, 1 - 1e-12, 0.5, 1 - 1e-12, 0.61)
    (LogisticLoss(), 1, True, 1e6, 0.05, None, None, 0.1),  # eta at the cap 2/(beta+alpha)
    (LogisticLoss(), 1, False, 1.0, 0.0, 3.0, None, 0.1),
    (MultinomialLoss(3), 3, True, 1e6, 0.05, None, None, 1e-3),  # shared steps contract
    (MultinomialLoss(2), 2, False, 1e6, 0.0, 3.0, None, 0.4),  # curvature C^2/2 reached
    (HuberLoss(1.0), 1, True, 1e6, 0.05, None, None, 0.9),  # smoothed automatically
    (HuberLoss(50.0), 1, False, 1e6, 0.0, 1e3, 0.0, 0.9),  # quadratic zone, eta = 2/C^2
    (AbsoluteLoss(), 1, True, 1e6, 0.05, None, None, 0.4),
    (AbsoluteLoss(), 1, False, 1.0, 0.0, 3.0, 0.01, 0.9),
    (_LyingHuber(1.0), 1, True, 1.0, 0.05, None, None, 0.5),  # the clip must act
]


@pytest.mark.parametrize("case", range(len(PHASED_CASES)))
def test_phased_release_change_is_bounded_end_to_end(case, monkeypatch):
    """Whole solve_phased run with negligible noise: for neighbours differing in a row that
    sits in phase i*, ||W(S) - W(S')||_F <= Delta_{i*} = 2 eta_{i*} L (the final output is a
    non-expansive post-processing of x_{i*}, so this bounds the release of phase i*)."""
    loss, K, fit_intercept, step_scale, alpha, max_coef_norm, smoothing, least = \
        PHASED_CASES[case]
    monkeypatch.setattr(_phased, "_noise_ratio", lambda e, d, c: 1e-200)
    rng = np.random.default_rng(100 + case)
    n, d, C = 48, 2, 2.0
    p_in = d + int(fit_intercept)
    kw = dict(epsilon=1.0, delta=1e-6, alpha=alpha, data_norm=C, n_outputs=K,
              fit_intercept=fit_intercept, max_coef_norm=max_coef_norm, step_scale=step_scale,
              smoothing=smoothing)
    plan = phased_plan(n, p_in * K, loss, epsilon=1.0, delta=1e-6, alpha=alpha, data_norm=C,
                       max_coef_norm=max_coef_norm, step_scale=step_scale, smoothing=smoothing)
    L = plan["lipschitz"]
    scalar = K == 1
    worst = 0.0
    for trial in range(12):
        seed = int(rng.integers(2**31))
        order = np.random.default_rng(seed).permutation(n)
        # all rows on (or beyond) the clip, aligned so the shared curvature is maximal
        base = _unit_rows(rng, 1, d, 1.0)[0]
        X = np.tile(base * 10.0, (n, 1)) + 0.01 * rng.normal(size=(n, d))
        if scalar and loss.loss_id == LogisticLoss().loss_id:
            y = rng.choice([-1.0, 1.0], size=n)
        elif scalar:
            y = rng.normal(size=n) * (1e6 if trial % 2 else 0.3)
        else:
            y = rng.integers(0, K, size=n).astype(float)
        # the replaced row: first of phase 0 (longest propagation) or anywhere
        j = order[0] if trial % 3 else order[int(rng.integers(n))]
        X2, y2 = X.copy(), y.copy()
        if scalar and loss.loss_id == LogisticLoss().loss_id:
            y[j], y2[j] = 1.0, -1.0
            X[j] = X2[j] = base * 1e300        # huge finite row: clipped
        elif scalar:
            y[j], y2[j] = 1e300, -1e300        # targets at (beyond) any bound
        else:
            y[j], y2[j] = 0.0, 1.0              # same row, another class
        r1 = solve_phased(X, y, loss, rng=np.random.default_rng(seed), **kw)
        r2 = solve_phased(X2, y2, loss, rng=np.random.default_rng(seed), **kw)
        W1, W2 = _stack(r1, fit_intercept), _stack(r2, fit_intercept)
        assert np.all(np.isfinite(W1)) and np.all(np.isfinite(W2))
        i_star = _phase_of(int(np.flatnonzero(order == j)[0]), plan["sizes"])
        sens = plan["sensitivities"][i_star]
        # 2 eta L plus the float64 rounding allowance of the phase (tiny here)
        rounding = plan["rounding"][i_star]
        assert sens == pytest.approx(2.0 * plan["etas"][i_star] * L + rounding, rel=1e-15)
        assert 0.0 < rounding < 1e-6 * sens
        worst = max(worst, np.linalg.norm(W1 - W2) / sens)
    assert worst <= 1.0 + TOL, worst
    assert worst > least, worst  # the bound is approached where the data allow it


def _independent_beta(loss, C, rho):
    """Smoothness of the (smoothed) per-row loss, derived here independently."""
    name = type(loss).__name__
    if name == "LogisticLoss":
        return C * C / 4.0
    if name == "MultinomialLoss":
        return C * C / 2.0
    if name == "HuberLoss":
        tau = loss.huber_threshold
        return C * C if rho == 0 else min(C * C, SQRT_2_OVER_PI * tau * C / rho)
    assert rho > 0.0
    return SQRT_2_OVER_PI * C / rho


def _independent_L(loss, C):
    name = type(loss).__name__
    return {"LogisticLoss": C, "MultinomialLoss": math.sqrt(2.0) * C,
            "HuberLoss": getattr(loss, "huber_threshold", 1.0) * C,
            "AbsoluteLoss": C}[name]


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLoss(4), HuberLoss(0.3),
                                  HuberLoss(20.0), AbsoluteLoss()])
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_phased_plan_is_admissible_and_one_gaussian_event(loss, calibration):
    """eta_i (beta_rho + alpha) <= 2 for the smoothed loss actually used, Delta_i = 2 eta_i L
    plus the phase's (positive) float64 rounding allowance,
    disjoint phases covering every row once, sigma_i / Delta_i constant, and the event is ONE
    Gaussian whose epsilon equals the analytic Gaussian at mu = Delta_i / sigma_i."""
    C = 1.7
    for n, alpha, mcn, step_scale, smoothing in [
            (1000, 0.01, None, None, None), (37, 0.0, 2.0, 1e6, None),
            (5000, 1.0, None, 1e3, None), (300, 0.1, None, 1e6, 0.05),
            (2, 0.0, 1.0, None, None)]:
        plan = phased_plan(n, 3, loss, epsilon=0.7, delta=1e-6, alpha=alpha, data_norm=C,
                           calibration=calibration, max_coef_norm=mcn,
                           step_scale=step_scale, smoothing=smoothing)
        L = _independent_L(loss, C)
        assert plan["lipschitz"] == pytest.approx(L, rel=1e-15)
        beta = _independent_beta(loss, C, plan["rho"])
        assert plan["etas"][0] * (beta + alpha) <= 2.0 * (1 + 1e-12)
        assert all(e2 <= e1 for e1, e2 in zip(plan["etas"], plan["etas"][1:]))
        assert sum(plan["sizes"]) == n and min(plan["sizes"]) >= 1
        ratio = plan["noise_over_sensitivity"]
        for eta, D, s, a in zip(plan["etas"], plan["sensitivities"], plan["sigmas"],
                                plan["rounding"]):
            assert a > 0.0
            assert D == pytest.approx(2.0 * eta * L + a, rel=1e-14)
            assert s / D == pytest.approx(ratio, rel=1e-14)
        assert plan["event"] == gaussian_event(ratio, 1.0)
        eps = get_epsilon(plan["event"], 1e-6)
        assert eps == pytest.approx(gaussian_epsilon(1e-6, 1.0 / ratio), rel=1e-9)
        assert eps <= 0.7 * (1 + 1e-9)


@pytest.mark.parametrize("bad", ["X_nan", "X_inf", "y_nan"])
def test_phased_non_finite_row_contributes_nothing(bad, monkeypatch):
    monkeypatch.setattr(_phased, "_noise_ratio", lambda e, d, c: 1e-200)
    rng = np.random.default_rng(5)
    n, C = 16, 2.0
    X, y = _unit_rows(rng, n, 2, 1.5), rng.normal(size=n)
    X2, y2 = X.copy(), y.copy()
    if bad == "X_nan":
        X2[3, 0] = np.nan
    elif bad == "X_inf":
        X2[3, 0] = np.inf
    else:
        y2[3] = np.nan
    kw = dict(epsilon=1.0, delta=1e-6, alpha=0.1, data_norm=C)
    r1 = solve_phased(X, y, HuberLoss(1.0), rng=np.random.default_rng(0), **kw)
    r2 = solve_phased(X2, y2, HuberLoss(1.0), rng=np.random.default_rng(0), **kw)
    plan = phased_plan(n, 3, HuberLoss(1.0), epsilon=1.0, delta=1e-6, alpha=0.1, data_norm=C)
    W1, W2 = _stack(r1, True), _stack(r2, True)
    assert np.all(np.isfinite(W2))
    assert np.linalg.norm(W1 - W2) <= plan["sensitivities"][0] * (1 + TOL)


@pytest.mark.parametrize("Est", [DPHuberRegressor, DPLogisticRegression])
def test_estimators_refuse_non_finite_input_before_phased_runs(Est):
    """The mitigation of the defect above: the public estimators validate X and y."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(float)
    Xb = X.copy()
    Xb[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Est(solver="phased", data_norm=2.0).fit(Xb, y)
    yb = y.copy()
    yb[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est(solver="phased", data_norm=2.0).fit(X, yb)


# ----------------------------------------------------------------------------- resque


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("loss,fit_intercept", [(LogisticLoss(), True), (HuberLoss(1.0), False),
                                                (AbsoluteLoss(), True), (_LyingHuber(1.0), True)])
def test_resque_step_sum_change_is_bounded_end_to_end(loss, fit_intercept, n_jobs,
                                                      monkeypatch):
    """solve_resque with z = 0, q = 1 (batch = n) and T = 1: the output is
    x_1 = -eta s / b, so the released sum s is read back exactly; for neighbours (extreme
    targets, rows on the clip, NaN/inf/huge rows) ||s - s'|| <= 2 C_t, C_t <= L."""
    monkeypatch.setattr(_resque, "_noise_multiplier", lambda e, d, q, T: 0.0)
    rng = np.random.default_rng(7)
    n, d, Cn = 24, 3, 2.0
    p = d + int(fit_intercept)
    L = loss.lipschitz(Cn)
    kw = dict(epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=Cn, fit_intercept=fit_intercept,
              max_coef_norm=100.0, batch_size=n, n_epochs=1.0, n_phases=1, block_size=1,
              step_scale=1e-3, n_jobs=n_jobs)
    logistic = loss.loss_id == LogisticLoss().loss_id
    worst = 0.0
    for trial in range(10):
        X = _unit_rows(rng, n, d, 5.0)
        y = rng.choice([-1.0, 1.0], size=n) if logistic else rng.normal(size=n)
        j = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        if logistic:  # same label, opposite row: l' saturates for a far query draw
            y[j] = y2[j] = 1.0
            X2[j] = -X[j]
        else:
            y[j], y2[j] = 1e300, -1e300
        if trial % 3 == 1:
            X2[j] = np.nan if trial % 2 else np.inf
        elif trial % 3 == 2:
            X2[j] = -X[j] * 1e300
        seed = int(rng.integers(2**31))
        outs = []
        for A, b in ((X, y), (X2, y2)):
            res = solve_resque(A, b, loss, rng=np.random.default_rng(seed), **kw)
            assert res.details["n_steps"] == 1 and res.details["steps"] == 1
            eta = res.details["etas"][0]
            outs.append(-_stack(res, fit_intercept)[:, 0] * n / eta)
        assert outs[0].shape == (p,)
        worst = max(worst, np.linalg.norm(outs[0] - outs[1]) / (2.0 * L))
    assert worst <= 1.0 + TOL, worst
    assert worst > 0.6, worst


def test_resque_weighted_contribution_is_clipped_to_w_max_L():
    """step_sum (the code run by every weighted ReSQue step): each row's contribution
    w_j l'_j a_j is clipped to C_t whatever l', the weight (huge query draws, iterate far
    from the anchor), NaN or inf; a row's replacement moves the sum by <= 2 C_t."""
    rng = np.random.default_rng(11)
    p, Cdata, rho = 4, 2.0, 0.05
    clip = _clip_bound(Cdata, p) * 1.5  # C_t = w_max * clip, as in resque_loop
    derivs = [1.0, -1.0, 1e308, -np.inf, np.nan, 0.0, 1e-300, 3.0]
    zs = [0.0, 5.0, -40.0, 1e6, np.nan]
    worst = 0.0
    contribs = []
    for g in derivs:
        for Z in zs:
            for far in (0.0, 0.3, 1e3):
                a = _unit_rows(rng, 1, p, Cdata)
                Xb = np.ascontiguousarray(a)
                nb = np.array([np.linalg.norm(a)])
                x = a[0] * far / Cdata  # iterate far from the anchor 0 (tbar = 0)
                out = np.zeros(p)
                step_sum(Xb, nb, 0, 1, np.array([g]), np.zeros(1), np.array([Z]), rho,
                         x, True, clip, np.empty(1), out)
                assert np.all(np.isfinite(out))
                worst = max(worst, np.linalg.norm(out) / clip)
                contribs.append(out)
    assert worst <= 1.0 + TOL, worst
    assert worst > 0.99, worst
    big = max(np.linalg.norm(u - v) for u in contribs for v in contribs)
    assert big <= 2.0 * clip * (1 + TOL)
    assert LOGW_CAP < 700  # exp never overflows before the clip


@pytest.mark.parametrize("block", [1, 2])
def test_resque_noise_is_z_times_the_clip_of_the_phase(block, monkeypatch):
    """On all-zero rows the output exposes the noise: x_1 = -eta xi_1 / b and, with a block
    of 2, avg = -eta (xi_1 + xi_2 / 2) / b.  The noise std must be z C_t with C_t the clip
    of that phase (L unweighted, w_max L weighted), the per-record bound the event uses."""
    z0 = 3.0
    monkeypatch.setattr(_resque, "_noise_multiplier", lambda e, d, q, T: z0)
    n, d, Cn = 8, 400, 2.0
    X, y = np.zeros((n, d)), np.ones(n)
    res = solve_resque(X, y, HuberLoss(1.0), epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=Cn,
                       fit_intercept=False, max_coef_norm=1e6, batch_size=n,
                       n_epochs=float(block), n_phases=1, block_size=block, step_scale=1e-6,
                       smoothing=1.0, rng=np.random.default_rng(0))
    assert res.details["blocks"] == [block] and res.details["n_steps"] == block
    eta = res.details["etas"][0]
    xi = -res.coef[:, 0] * n / eta
    factor = 1.0 if block == 1 else math.sqrt(1.25)
    C_t = _clip_bound(HuberLoss(1.0).lipschitz(Cn), d) * (1.5 if block > 1 else 1.0)
    est = np.std(xi) / factor
    # relative s.e. of a std from 400 normals is 3.5 %; 5 s.e. covers it (error rate < 1e-6)
    assert est == pytest.approx(z0 * C_t, rel=0.18)
    assert res.dp_event == poisson_gaussian_event(1.0, z0, block)


def test_resque_event_is_poisson_gaussian_with_T_steps():
    """The event reported is PoissonSampled(q = b/n, Gaussian(z)) x T with T the number of
    steps actually run, and the planner returns the same event."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 2)), rng.choice([0, 1], size=300)
    for bs, ne, block in [(30, 1.0, "auto"), (7, 0.5, 3), (300, 2.0, 1)]:
        est = DPLogisticRegression(classes=[0, 1],
                                   solver="resque", data_norm=2.0, batch_size=bs, n_epochs=ne,
                                   block_size=block, random_state=0).fit(X, y)
        T = max(1, math.ceil(ne * 300 / bs))
        ev = est.dp_event_
        assert isinstance(ev, dp_accounting.SelfComposedDpEvent) and ev.count == T
        assert ev.event.sampling_probability == bs / 300
        z = ev.event.event.noise_multiplier
        assert ev == poisson_gaussian_event(bs / 300, z, T)
        assert est.n_iter_ == T
        assert planned_dp_event(est, 300) == ev
        assert get_epsilon(ev, 1e-6) <= 1.0 * (1 + 1e-9)


# ------------------------------------------------------------------------- zeroth-order


def _zo_trace(X, y, rows, P, loss, data_norm, seed, eta):
    fpar, ipar = kernel_parameters(P, data_norm)
    fpar[F_SIGMA] = 0.0
    fpar[F_ETA] = eta
    p = X.shape[1]
    trace = np.zeros((P.K * P.T, p))
    zo_run(X, y, rows, int(loss.loss_id), float(loss.param), np.linalg.norm(X, axis=1), fpar,
           ipar,
           np.random.default_rng(seed), np.zeros((P.K, p)), np.zeros(X.shape[0], np.int64),
           np.zeros(4), np.zeros(p), trace)
    return trace


@pytest.mark.parametrize("p,loss", [(1, ZOAbsoluteLoss()), (3, ZOAbsoluteLoss()),
                                    (1, _LyingAbsolute())])
def test_zeroth_order_leaf_change_is_bounded(p, loss):
    """zo_run without noise, with released g_tilde_t traced: for neighbours differing in the
    row read at stream position j, every release before that row's round is identical and
    the release of its round moves by <= s_1 = 2pL/B1 (GRAD) or s_2 = 4pLD/(delta B2) (DIFF)
    -- the leaf sensitivity the tree event assumes (later releases differ only through the
    earlier, released outputs: adaptivity)."""
    R, n = 1.5, 120
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        P, event = zeroth_order_plan(n, p, loss, epsilon=1.0, delta=1e-6, data_norm=R,
                                     max_iter=6, smoothing_radius=0.4)
    L = loss.prediction_lipschitz() * R  # the declared constant: the clip must enforce it
    s1 = 2.0 * p * L / P.B1
    s2 = 4.0 * p * L * P.D / (P.delta_s * P.B2)
    assert P.s1 == pytest.approx(s1, rel=1e-14) and P.s2 == pytest.approx(s2, rel=1e-14)
    assert P.s == max(s1, s2)
    rng = np.random.default_rng(3)
    worst = {"grad": 0.0, "diff": 0.0}
    for trial in range(40):
        X = _unit_rows(rng, n, p, R) if p > 1 else np.full((n, 1), R) * \
            rng.choice([-1.0, 1.0], size=(n, 1))
        y = rng.normal(size=n) * 1e6          # residuals far out: |finite difference| maximal
        rows = rng.permutation(n).astype(np.int64)
        pos = int(rng.integers(P.rows_used))
        j = rows[pos]
        y2 = y.copy()
        y2[j] = -y[j]
        X2 = X.copy()
        if trial % 4 == 3:
            X2[j] = np.nan                   # a non-finite row must still be bounded
        seed = int(rng.integers(2**31))
        t1 = _zo_trace(X, y, rows, P, loss, R, seed, eta=1e6)
        t2 = _zo_trace(X2, y2, rows, P, loss, R, seed, eta=1e6)
        assert np.all(np.isfinite(t2))
        k, o = divmod(pos, P.B1 + (P.T - 1) * P.B2)
        rnd = 1 if o < P.B1 else 2 + (o - P.B1) // P.B2
        idx = k * P.T + rnd - 1
        np.testing.assert_array_equal(t1[:idx], t2[:idx])
        kind = "grad" if rnd == 1 else "diff"
        bound = s1 if rnd == 1 else s2
        worst[kind] = max(worst[kind], np.linalg.norm(t1[idx] - t2[idx]) / bound)
    assert max(worst.values()) <= 1.0 + TOL, worst
    if p == 1:  # on a line the per-row bounds are attained (up to SAFE / the step sizes)
        assert worst["grad"] > 0.99, worst
        assert worst["diff"] > 0.4, worst
    levels = int(math.floor(math.log2(P.T))) + 1
    assert event == dp_accounting.SelfComposedDpEvent(gaussian_event(P.sigma, P.s), levels)
    assert get_epsilon(event, 1e-6) == pytest.approx(
        gaussian_epsilon(1e-6, math.sqrt(levels) * P.s / P.sigma), rel=1e-9)


def test_zeroth_order_user_loss_is_clipped_like_builtin():
    """A user loss that lies about its Lipschitz constant (or returns NaN/inf) is clipped
    exactly like a built-in one: per-row GRAD/DIFF vectors stay within the guard on both the
    fast and the sphere path (the specialised kernels share the code objects)."""
    from numba import njit

    from skdp._solvers._zeroth_order_kernel import row_estimate, specialised_kernels

    @njit
    def liar(z, y):
        if z > 3.0:
            return np.nan
        if z < -3.0:
            return -np.inf
        return 1e6 * (z - y) ** 3

    user_row = specialised_kernels(liar)["row_estimate"]
    rng = np.random.default_rng(2)
    p, R, delta_s, lip = 3, 2.0, 0.3, 1.0
    worst = 0.0
    for trial in range(60):
        a = _unit_rows(rng, 1, p, R)
        if trial % 10 == 9:
            a[0, 0] = np.nan
        wa = rng.normal(size=p) * (0.2 if trial % 2 else 5.0)
        wb = wa + rng.normal(size=p) * 0.05
        diff = trial % 2
        step = np.linalg.norm(wa - wb)
        bound = (p * lip * R * min(step, 2 * 0.05) / delta_s if diff else p * lip * R) * \
            (1 - 1e-9) * (0.01 if trial % 3 == 0 else 1.0)  # small bound: the guard acts
        for kernel, loss_id in ((user_row, -1), (row_estimate, ZOAbsoluteLoss().loss_id)):
            for fast in (1, 0):
                out = np.zeros(p)
                kernel(a, 0, 1.0, float(np.linalg.norm(a)), wa, wb, diff, delta_s, lip,
                       bound, p, fast, loss_id, 1.0, np.random.default_rng(trial),
                       np.zeros(p), out)
                assert np.all(np.isfinite(out))
                worst = max(worst, np.linalg.norm(out) / bound)
    assert worst <= 1.0 + TOL, worst
    assert worst > 0.99, worst


# ----------------------------------------------------------------------------- rrpsgd


@pytest.mark.parametrize("loss", [WelschLoss(0.7), TukeyLoss(1.3), CauchyLoss(0.5),
                                  _LyingWelsch(0.7)])
def test_rrpsgd_round_sum_change_is_bounded_end_to_end(loss, monkeypatch):
    """solve_rrpsgd with z = 0, q = 1, T = 1 (so R = 1): w_1 = -eta s / m exposes the round's
    clipped sum; neighbours with residuals at argmax |l'| of opposite signs, rows on the clip,
    NaN/inf/huge rows: ||s - s'|| <= 2L."""
    monkeypatch.setattr(_rrpsgd, "_noise_multiplier", lambda *a: 0.0)
    rng = np.random.default_rng(13)
    n, d, Cn = 20, 2, 1.5
    L = loss.lipschitz(Cn)
    c = loss.loss_scale
    u_star = {"WelschLoss": 1 / math.sqrt(2), "TukeyLoss": 1 / math.sqrt(5),
              "CauchyLoss": 1.0, "_LyingWelsch": 1 / math.sqrt(2)}[type(loss).__name__]
    worst = 0.0
    for trial in range(10):
        fit_intercept = bool(trial % 2)
        X = _unit_rows(rng, n, d, 10.0)
        y = rng.normal(size=n)
        j = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        y[j], y2[j] = -u_star * c, u_star * c  # at w = 0 the residual is -y: l' = +-L1
        if trial % 5 == 3:
            X2[j] = np.inf
        elif trial % 5 == 4:
            X2[j, 0] = np.nan
        seed = int(rng.integers(2**31))
        sums = []
        for A, b in ((X, y), (X2, y2)):
            res = solve_rrpsgd(A, b, loss, epsilon=1.0, delta=1e-6, alpha=0.0, data_norm=Cn,
                               fit_intercept=fit_intercept, batch_size=n, n_steps=1,
                               rng=np.random.default_rng(seed))
            assert res.n_iter == 1 and res.details["sampling_rate"] == 1.0
            sums.append(-_stack(res, fit_intercept)[:, 0] * n / res.details["step"])
        worst = max(worst, np.linalg.norm(sums[0] - sums[1]) / (2.0 * L))
    assert worst <= 1.0 + TOL, worst
    assert worst > 0.99, worst


def test_rrpsgd_events_and_paper_calibration():
    """q < 1: PoissonSampled(q, Gaussian(z)) x T with z over the per-record bound L
    (noise_scale = z L, sensitivity 2L); q = 1: Gaussian(z) x T = 2 sqrt(T)/z GDP.
    "paper": z is the printed 2 sqrt(ln(3n/delta) ln(2/delta))/epsilon, certified, and refused
    when the accountant does not certify it."""
    loss, n, p = WelschLoss(), 400, 3
    P = rrpsgd_plan(n, p, loss, epsilon=0.8, delta=1e-6, alpha=0.0, data_norm=2.0,
                    batch_size=20, n_steps=30)
    assert P["event"] == poisson_gaussian_event(20 / n, P["z"], 30)
    assert P["sigma"] == P["z"] * P["L"] and P["clip"] <= P["L"]
    assert get_epsilon(P["event"], 1e-6) <= 0.8 * (1 + 1e-9)
    Pf = rrpsgd_plan(n, p, loss, epsilon=0.8, delta=1e-6, alpha=0.0, data_norm=2.0,
                     batch_size=n, n_steps=30)
    assert Pf["event"] == dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(Pf["z"]), 30)
    assert get_epsilon(Pf["event"], 1e-6) == pytest.approx(
        gaussian_epsilon(1e-6, 2.0 * math.sqrt(30) / Pf["z"]), rel=1e-9)
    assert get_epsilon(Pf["event"], 1e-6) == pytest.approx(0.8, rel=1e-6)
    Pp = rrpsgd_plan(n, p, loss, epsilon=0.5, delta=1e-5, alpha=0.0, data_norm=2.0,
                     batch_size=n, n_steps=1, calibration="paper")
    z_paper = 2.0 * math.sqrt(math.log(3 * n / 1e-5) * math.log(2 / 1e-5)) / 0.5
    assert Pp["z"] == pytest.approx(z_paper, rel=1e-14)
    assert get_epsilon(Pp["event"], 1e-5) <= 0.5
    with pytest.raises(ValueError, match="not certified"):
        rrpsgd_plan(n, p, loss, epsilon=0.5, delta=1e-5, alpha=0.0, data_norm=2.0,
                    batch_size=n, n_steps=10_000, calibration="paper")


def test_rrpsgd_batches_are_poisson_sized():
    """n_gradient_evals (realised batch sizes over the R rounds) matches Binomial(n R, q):
    the sampling the Poisson event assumes (not fixed-size batches)."""
    rng = np.random.default_rng(1)
    n, m = 500, 25
    X = rng.normal(size=(n, 2))
    totals, expected, var = 0, 0.0, 0.0
    sizes = set()
    for seed in range(6):
        res = solve_rrpsgd(X, X[:, 0].copy(), WelschLoss(), epsilon=1.0, delta=1e-6,
                           alpha=0.0, data_norm=2.0, batch_size=m, n_steps=40,
                           rng=np.random.default_rng(seed))
        R = res.n_iter
        totals += res.n_gradient_evals
        expected += R * m
        var += R * n * (m / n) * (1 - m / n)
        sizes.add(res.n_gradient_evals / R)
    assert abs(totals - expected) <= 5 * math.sqrt(var)  # 5 s.d.: error rate < 1e-6
    assert any(s != m for s in sizes)  # fixed-size batches would give exactly m per round


# -------------------------------------------------------- planner == fit, determinism


def _estimators():
    return [
        ("logit-phased", DPLogisticRegression(classes=[0, 1],
                                              solver="phased", data_norm=2.0, alpha=0.05)),
        ("logit-phased-paper", DPLogisticRegression(classes=[0, 1], solver="phased", data_norm=2.0,
                                                    calibration="paper", alpha=0.05,
                                                    fit_intercept=False)),
        ("multi-phased", DPLogisticRegression(classes=[0, 1, 2],
                                              solver="phased", data_norm=2.0, alpha=0.05)),
        ("huber-phased", DPHuberRegressor(solver="phased", data_norm=2.0, alpha=0.0,
                                          max_coef_norm=3.0, huber_threshold=0.0)),
        ("logit-resque", DPLogisticRegression(classes=[0, 1],
                                              solver="resque", data_norm=2.0, batch_size=20,
                                              n_epochs=1.0, block_size=2)),
        ("huber-resque", DPHuberRegressor(solver="resque", data_norm=2.0, batch_size=40,
                                          n_epochs=0.5)),
        ("zo", DPNonconvexRegressor(solver="zeroth_order", data_norm=2.0, y_bound=3.0,
                                    max_iter=8)),
        ("zo-paper", DPNonconvexRegressor(solver="zeroth_order", data_norm=2.0,
                                          calibration="paper", loss="truncated_squared",
                                          smoothing_radius=0.2)),
        ("zo-naive", DPNonconvexRegressor(solver="zeroth_order_naive", data_norm=2.0,
                                          y_bound=3.0)),
        ("rrpsgd", DPNonconvexRegressor(solver="rrpsgd", data_norm=2.0, batch_size=25,
                                        n_steps=15, loss="tukey")),
        ("rrpsgd-full", DPNonconvexRegressor(solver="rrpsgd", data_norm=2.0, batch_size=400,
                                             n_steps=5, alpha=0.1, fit_intercept=False)),
    ]


@pytest.mark.parametrize("name,est", _estimators(), ids=[e[0] for e in _estimators()])
def test_planner_event_equals_fitted_event_and_bitwise_determinism(name, est):
    rng = np.random.default_rng(4)
    n = 400
    X = rng.normal(size=(n, 3))
    if isinstance(est, DPLogisticRegression):
        y = rng.integers(0, 3 if name.startswith("multi") else 2, size=n)
    else:
        y = X @ [1.0, -0.5, 0.2] + 0.1 * rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = est.set_params(random_state=17).fit(X, y)
        planned = planned_dp_event(a, n)
        ev_a = a.dp_event_
        coef_a, int_a = np.array(a.coef_, copy=True), np.array(a.intercept_, copy=True)
        b = est.set_params(random_state=17).fit(X, y)
    assert planned is not None and planned == ev_a
    assert b.dp_event_ == ev_a
    assert coef_a.tobytes() == np.asarray(b.coef_).tobytes()
    assert int_a.tobytes() == np.asarray(b.intercept_).tobytes()
    assert a.privacy_guaranteed_ and a.epsilon_ <= a.epsilon * (1 + 1e-9)
    # the naive zeroth-order schedule on 400 rows has a single period, and says so
    with (pytest.warns(UserWarning, match="only K = 1 period") if name == "zo-naive"
          else contextlib.nullcontext()):
        c = est.set_params(random_state=18).fit(X, y)
    assert c.coef_.tobytes() != coef_a.tobytes()  # the seed matters (noise is drawn)
