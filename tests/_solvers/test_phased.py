"""Tests of solver='phased' (FKT20 phased SGD on the exactly smoothed loss) and of the
Gaussian-smoothed losses it uses (skdp._losses._smoothed)."""

import math

import numpy as np
import pytest
from scipy import integrate

import skdp._solvers._phased as phased
from skdp import DPHuberRegressor, DPLogisticRegression
from skdp._losses import HUBER, HuberLoss, LogisticLoss, MultinomialLoss
from skdp._losses._smoothed import (
    ABSOLUTE,
    HINGE,
    AbsoluteLoss,
    HingeLoss,
    smoothed_margin_arrays,
    smoothed_margin_loss,
)
from skdp._solvers._phased import phased_phase, phased_plan, solve_phased
from skdp.accounting import gaussian_epsilon, get_epsilon
from skdp.audit import epsilon_lower_bound
from skdp.linear_model._base import planned_dp_event

CASES = [(ABSOLUTE, 0.0), (HINGE, 0.0), (HUBER, 0.7), (HUBER, 2.5)]
POINTS = [(0.3, 1.0, 0.5), (-2.0, 1.0, 0.1), (1.5, -1.0, 2.0), (0.0, 1.0, 1.0), (4.0, 1.0, 0.3)]


def _raw(m, y, loss_id, tau):
    if loss_id == ABSOLUTE:
        return abs(m - y)
    if loss_id == HINGE:
        return max(0.0, 1.0 - y * m)
    r = abs(m - y)
    return 0.5 * r * r if r <= tau else tau * (r - 0.5 * tau)


def _quad(fun, m, y, s, breaks):
    pts = sorted((b - m) / s for b in breaks)
    val = integrate.quad(lambda z: fun(m + s * z) * math.exp(-0.5 * z * z),
                         -40.0, 40.0, points=pts, limit=400, epsabs=1e-13, epsrel=1e-13)[0]
    return val / math.sqrt(2.0 * math.pi)


@pytest.mark.parametrize("loss_id,tau", CASES)
def test_smoothed_closed_forms_match_quadrature(loss_id, tau):
    for m, y, s in POINTS:
        breaks = [y, y + tau, y - tau, 1.0 / y]
        value, deriv = smoothed_margin_loss(m, y, loss_id, tau, s)
        raw_deriv = {ABSOLUTE: lambda t: np.sign(t - y), HINGE: lambda t: -y * (y * t < 1.0),
                     HUBER: lambda t: np.clip(t - y, -tau, tau)}[loss_id]
        assert value == pytest.approx(_quad(lambda t: _raw(t, y, loss_id, tau), m, y, s,
                                            breaks), abs=1e-10)
        # l_s' = E l'(m + sZ): the derivative of the closed form is the smoothed derivative
        assert deriv == pytest.approx(_quad(raw_deriv, m, y, s, breaks), abs=1e-9)


@pytest.mark.parametrize("tau,s", [(1.0, 0.1), (0.7, 2.5)])
def test_smoothed_huber_saturates_to_the_linear_piece(tau, s):
    """Beyond |r| > tau + 40 s the smoothed Huber is the linear piece (exact up to
    tau e^-800): the quadrature of the smoothed loss, and +-tau for the derivative, for
    residuals just past the switch and huge ones (where the closed form's r P rounds)."""
    for r in (tau + 40.01 * s, -(tau + 40.01 * s), 1e8, -1e300):
        m, y = r + 2.0, 2.0
        value, deriv = smoothed_margin_loss(m, y, HUBER, tau, s)
        assert deriv == math.copysign(tau, r)
        if abs(r) < 1e3:
            ref = _quad(lambda v: _raw(v, y, HUBER, tau), m, y, s, [y - tau, y + tau])
            assert value == pytest.approx(ref, rel=1e-12)
        assert value == tau * (abs(r) - 0.5 * tau)


@pytest.mark.parametrize("loss_id,tau", CASES)
def test_smoothing_bias_and_curvature_bounds(loss_id, tau):
    """0 <= l_s - l <= sqrt(2/pi) L_l s and |l_s''| <= sqrt(2/pi) L_l / s (module docs)."""
    rng = np.random.default_rng(0)
    L_l = tau if loss_id == HUBER else 1.0
    m = rng.normal(scale=3.0, size=2000)
    y = rng.choice([-1.0, 1.0], size=2000) if loss_id == HINGE else rng.normal(size=2000)
    for s_val in (0.05, 0.5, 2.0):
        s = np.full(2000, s_val)
        value, deriv = np.empty(2000), np.empty(2000)
        smoothed_margin_arrays(m, y, loss_id, tau, s, value, deriv)
        raw = np.array([_raw(a, b, loss_id, tau) for a, b in zip(m, y)])
        gap = value - raw
        assert gap.min() >= -1e-12
        assert gap.max() <= math.sqrt(2 / math.pi) * L_l * s_val + 1e-12
        assert np.abs(deriv).max() <= L_l
        h = 1e-4 * s_val
        vp, dp, vm, dm = (np.empty(2000) for _ in range(4))
        smoothed_margin_arrays(m + h, y, loss_id, tau, s, vp, dp)
        smoothed_margin_arrays(m - h, y, loss_id, tau, s, vm, dm)
        curvature = (dp - dm) / (2 * h)
        assert curvature.min() >= -1e-6
        assert curvature.max() <= math.sqrt(2 / math.pi) * L_l / s_val * (1 + 1e-5)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(1.0), AbsoluteLoss(),
                                  MultinomialLoss(3)])
@pytest.mark.parametrize("n", [2, 3, 1000, 12345])
def test_plan_is_public_disjoint_and_admissible(loss, n):
    plan = phased_plan(n, 4, loss, epsilon=1.0, delta=1e-6, alpha=0.01, data_norm=2.0,
                       max_coef_norm=5.0)
    assert sum(plan["sizes"]) == n and min(plan["sizes"]) >= 1
    assert len(plan["sizes"]) == max(1, math.ceil(math.log2(n)))
    # non-expansiveness condition eta_1 (beta_rho + alpha) <= 2 of the sensitivity proof
    beta = plan["smoothness"]
    assert plan["etas"][0] * (beta + 0.01) <= 2.0 * (1 + 1e-12)
    assert np.allclose(np.array(plan["etas"][1:]) / np.array(plan["etas"][:-1]), 0.25)
    for eta, D, sigma, a in zip(plan["etas"], plan["sensitivities"], plan["sigmas"],
                                plan["rounding"]):
        assert a > 0.0 and D == 2 * eta * plan["lipschitz"] + a
        assert sigma / D == pytest.approx(plan["noise_over_sensitivity"])
    # one Gaussian event (parallel composition), exactly (epsilon, delta)
    eps = get_epsilon(plan["event"], 1e-6)
    assert eps <= 1.0 + 1e-6
    mu = plan["sensitivities"][0] / plan["sigmas"][0]
    assert gaussian_epsilon(1e-6, mu) == pytest.approx(1.0, rel=1e-6)


def test_plan_paper_calibration_is_more_noise_and_certified():
    kw = dict(epsilon=1.0, delta=1e-6, alpha=0.01, data_norm=1.0)
    tight = phased_plan(5000, 3, LogisticLoss(), **kw)
    paper = phased_plan(5000, 3, LogisticLoss(), calibration="paper", **kw)
    assert paper["noise_over_sensitivity"] == pytest.approx(
        2 * math.sqrt(math.log(1e6)) / 1.0)
    assert paper["noise_over_sensitivity"] > tight["noise_over_sensitivity"]
    assert get_epsilon(paper["event"], 1e-6) <= 1.0


def test_absolute_loss_is_smoothed_automatically():
    plan = phased_plan(10_000, 5, AbsoluteLoss(), epsilon=1.0, delta=1e-6, alpha=0.0,
                       data_norm=1.0, max_coef_norm=10.0)
    assert plan["rho"] > 0.0
    assert plan["etas"][0] * plan["smoothness"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="nonsmooth"):
        phased_plan(100, 5, AbsoluteLoss(), epsilon=1.0, delta=1e-6, alpha=0.0,
                    data_norm=1.0, max_coef_norm=10.0, smoothing=0.0)
    # Huber with a large threshold: smooth enough, not smoothed
    plan = phased_plan(10_000, 5, HuberLoss(1.0), epsilon=1.0, delta=1e-6, alpha=0.0,
                       data_norm=1.0, max_coef_norm=1.0)
    assert plan["rho"] == 0.0


def _phase_outputs(X, y, loss, order, eta, rho=0.0, alpha=0.0, radius=1e6, W0=None,
                   clip=None):
    """One phase from ``W0`` (default 0) with clip ``clip`` (default L of the rows)."""
    n, d = X.shape
    xnorm = np.linalg.norm(X, axis=1)
    W = np.zeros((d, 1)) if W0 is None else W0.copy()
    avg = np.empty((d, 1))
    L = loss.lipschitz(np.max(xnorm)) if clip is None else clip
    phased_phase(X, y, order, 0, n, loss.loss_id, float(loss.param), rho, xnorm, L, W, eta,
                 alpha, radius, avg)
    return avg[:, 0], L


@pytest.mark.parametrize("loss,rho", [(HuberLoss(1.0), 0.0), (AbsoluteLoss(), 0.3),
                                      (HingeLoss(), 0.2), (LogisticLoss(), 0.0)])
def test_phase_sensitivity_is_deterministic_on_adversarial_neighbours(loss, rho):
    """||avg(S) - avg(S')|| <= 2 eta L for neighbours S, S' (non-expansive steps), over
    random data, random positions of the replaced row and extreme replacement rows."""
    rng = np.random.default_rng(1)
    n, d, C = 200, 3, 1.0
    beta = min(loss.smoothness(C), math.sqrt(2 / math.pi) * loss.lipschitz(C) / rho
               if rho > 0 else math.inf)
    worst = {}
    for trial in range(60):
        # the largest admissible step 2/beta (contracting shared steps) and a small one
        # (little contraction, so the bound is approached when the row comes first)
        eta = 2.0 / beta if trial % 2 else 0.02 / beta
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = rng.choice([-1.0, 1.0], size=n) if loss.loss_id != HUBER and \
            loss.loss_id != ABSOLUTE else rng.normal(size=n) * 3
        order = rng.permutation(n).astype(np.int64)
        j = order[0] if trial % 3 == 0 else rng.integers(n)
        X[j] = X[j] / np.linalg.norm(X[j]) * C
        y[j] = 1e3 if loss.loss_id in (HUBER, ABSOLUTE) else 1.0
        X2, y2 = X.copy(), y.copy()
        y2[j] = -y[j]  # same row, opposite extreme target: gradients +-L along x_j
        if trial % 5 == 4:  # or a different row on the norm bound
            v = rng.normal(size=d)
            X2[j] = v / np.linalg.norm(v) * C
        a, L = _phase_outputs(X, y, loss, order, eta, rho)
        b, _ = _phase_outputs(X2, y2, loss, order, eta, rho)
        key = trial % 2
        worst[key] = max(worst.get(key, 0.0), np.linalg.norm(a - b) / (2 * eta * L))
    assert max(worst.values()) <= 1.0 + 1e-9
    assert worst[0] > 0.3  # the bound is approached (the test can fail)


def test_phase_rounding_can_exceed_2_eta_L_and_the_allowance_covers_it():
    """Float64 rounding is data-dependent: with iterates of size ~R and a step whose move is
    below an ulp of them (the late phases at n >= 1e6, or a tiny step_scale), two neighbours'
    computed averages differ by more than the exact-arithmetic sensitivity 2 eta L.  The
    rounding allowance of the plan covers every such pair."""
    loss, C, R, L = HuberLoss(1.0), 1.0, 1.0, 1.0
    rng = np.random.default_rng(7)
    worst_exact, worst_planned = 0.0, 0.0
    for trial in range(300):
        m = int(rng.integers(1, 6))
        X = rng.normal(size=(m, 2))
        X *= C / np.linalg.norm(X, axis=1)[:, None]
        y = rng.normal(size=m) * 1e6                  # saturated Huber: |l'| = tau
        order = rng.permutation(m).astype(np.int64)
        j = order[0] if trial % 2 else order[-1]
        X2, y2 = X.copy(), y.copy()
        y2[j] = -y[j]
        W0 = rng.normal(size=(2, 1))
        W0 *= R * rng.uniform(0.3, 1.0) / np.linalg.norm(W0)
        ulp = np.spacing(np.abs(W0).max())
        eta = float(rng.uniform(0.3, 3.0)) * ulp       # a step of about one ulp of W
        a, _ = _phase_outputs(X, y, loss, order, eta, radius=R, W0=W0, clip=L)
        b, _ = _phase_outputs(X2, y2, loss, order, eta, radius=R, W0=W0, clip=L)
        diff = float(np.linalg.norm(a - b))
        allowance = phased.phase_rounding_allowance(
            m, eta, alpha=0.0, lipschitz=L, smoothness=C * C, row_bound=C, radius=R, rho=0.0,
            loss=loss, p=2)
        worst_exact = max(worst_exact, diff / (2 * eta * L))
        worst_planned = max(worst_planned, diff / (2 * eta * L + allowance))
    assert worst_exact > 1.2          # the exact-arithmetic sensitivity is violated ...
    assert worst_planned <= 1.0       # ... and the rounding allowance covers it


def test_phase_rounding_allowance_covers_the_dask_segments():
    """The same adversarial neighbours on a Dask design (synchronous scheduler): a phase is
    a run of partition segments, each averaged on its worker, re-multiplied and summed on
    the client.  The neighbours' releases differ by more than 2 eta L, and by at most
    2 eta L plus the planned allowance."""
    import dask
    import dask.array as da

    from skdp._solvers._dask_objective import DaskDesign

    loss, C, R, L = HuberLoss(1.0), 1.0, 1.0, 1.0
    rng = np.random.default_rng(11)
    worst_exact, worst_planned = 0.0, 0.0
    with dask.config.set(scheduler="synchronous"):
        for trial in range(120):
            m = int(rng.integers(2, 9))
            cut = sorted(int(c) for c in rng.integers(0, m + 1, size=2))
            chunks = (cut[0], cut[1] - cut[0], m - cut[1])
            X = rng.normal(size=(m, 2))
            X *= C / np.linalg.norm(X, axis=1)[:, None]
            y = rng.normal(size=m) * 1e6
            j = int(rng.integers(m))
            X2, y2 = X.copy(), y.copy()
            y2[j] = -y[j]
            W0 = rng.normal(size=(2, 1))
            W0 *= R * rng.uniform(0.3, 1.0) / np.linalg.norm(W0)
            eta = float(rng.uniform(0.3, 3.0)) * np.spacing(np.abs(W0).max())
            seed = int(rng.integers(2 ** 31))
            outs = []
            for Xs, ys in ((X, y), (X2, y2)):
                design = DaskDesign(da.from_array(Xs, chunks=(chunks, (2,))),
                                    da.from_array(ys, chunks=(chunks,)), raw_features=1)
                run_phase = phased._dask_phases(design, loss, 0.0, L, R,
                                                np.random.default_rng(seed))
                outs.append(run_phase(W0.copy(), m, eta, 0.0)[:, 0])
            diff = float(np.linalg.norm(outs[0] - outs[1]))
            allowance = phased.phase_rounding_allowance(
                m, eta, alpha=0.0, lipschitz=L, smoothness=C * C, row_bound=C, radius=R,
                rho=0.0, loss=loss, p=2)
            worst_exact = max(worst_exact, diff / (2 * eta * L))
            worst_planned = max(worst_planned, diff / (2 * eta * L + allowance))
    assert worst_exact > 1.2
    assert worst_planned <= 1.0


def test_phase_rounding_allowance_is_negligible_at_ordinary_sizes():
    """At n = 1e6 the allowance is far below 2 eta_1 L in the first phase (2e-6 of it), and
    it dominates only in the last phases, whose step moves the iterates by about an ulp
    (there the noise grows accordingly, still ~1e-12 of the first phase's)."""
    plan = phased_plan(10**6, 20, LogisticLoss(), epsilon=1.0, delta=1e-6, alpha=1e-4,
                       data_norm=1.0)
    first = plan["rounding"][0] / (2 * plan["etas"][0] * plan["lipschitz"])
    last = plan["rounding"][-1] / (2 * plan["etas"][-1] * plan["lipschitz"])
    assert 0.0 < first < 1e-5
    assert last > 1.0        # eta_k ~ eta_1 / n^2: the rounding of W is what is left


def test_solver_is_deterministic_and_reports_the_plan():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    kw = dict(epsilon=1.0, delta=1e-6, alpha=0.01, data_norm=2.0)
    a = solve_phased(X, y, LogisticLoss(), rng=np.random.default_rng(3), **kw)
    b = solve_phased(X, y, LogisticLoss(), rng=np.random.default_rng(3), **kw)
    c = solve_phased(X, y, LogisticLoss(), rng=np.random.default_rng(4), **kw)
    assert np.array_equal(a.coef, b.coef) and np.array_equal(a.intercept, b.intercept)
    assert not np.array_equal(a.coef, c.coef)
    assert a.n_gradient_evals == 500 and a.n_iter == 9
    assert a.sensitivity == pytest.approx(2 * a.details["etas"][0] * 2.0)
    assert a.details["sequential_rounds"] == 500


def _synthetic(n, d, seed, kind):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = np.ones(d) * 2.0 / math.sqrt(d)
    if kind == "logistic":
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w)), 1, 0)
    else:
        y = X @ w + 0.3 * rng.standard_t(3, size=n)
    return X, y, w


def _risk(kind, X, y, coef, intercept):
    m = X @ coef + intercept
    if kind == "logistic":
        return float(np.mean(np.logaddexp(0.0, -(2 * y - 1) * m)))
    return float(np.mean(np.abs(m - y)))


@pytest.mark.parametrize("kind", ["logistic", "absolute"])
def test_utility_improves_with_epsilon_and_is_near_optimal(kind):
    X, y, w = _synthetic(20_000, 10, 0, kind)
    Xt, yt, _ = _synthetic(20_000, 10, 1, kind)
    ref = _risk(kind, Xt, yt, w, 0.0)  # population-optimal model (approximately)
    risks = {}
    for eps in (0.5, 4.0):
        vals = []
        for seed in range(3):
            if kind == "logistic":
                est = DPLogisticRegression(classes=[0, 1],
                                           epsilon=eps, solver="phased", data_norm=1.5,
                                           alpha=0.0, max_coef_norm=5.0, random_state=seed)
            else:
                est = DPHuberRegressor(epsilon=eps, solver="phased", huber_threshold=0.0,
                                       data_norm=1.5, alpha=0.0, max_coef_norm=5.0,
                                       random_state=seed)
            est.fit(X, y)
            vals.append(_risk(kind, Xt, yt, np.ravel(est.coef_), np.ravel(est.intercept_)[0]))
        risks[eps] = np.mean(vals) - ref
    assert risks[4.0] < risks[0.5]
    assert risks[4.0] < 0.02


def test_estimators_route_parameters_and_planner_matches():
    X, y, _ = _synthetic(3000, 4, 0, "absolute")
    est = DPHuberRegressor(epsilon=0.7, huber_threshold=0.0, solver="phased", data_norm=1.5,
                           max_coef_norm=4.0, alpha=0.0, smoothing=0.05, step_scale=2.0,
                           random_state=0)
    planned = planned_dp_event(est.set_params(), 3000, n_features=4)
    est.fit(X, y)
    assert est.epsilon_ <= 0.7 and est.privacy_guaranteed_
    assert planned == est.dp_event_
    assert est.n_gradient_evals_ == 3000
    assert est.sensitivity_ > 0 and est.noise_scale_ > est.sensitivity_
    Xc, yc, _ = _synthetic(3000, 4, 0, "logistic")
    multi = DPLogisticRegression(classes=[0, 1, 2],
                                 solver="phased", data_norm=1.5, random_state=0).fit(
        Xc, np.arange(3000) % 3)
    assert multi.coef_.shape == (3, 4) and multi.epsilon_ <= 1.0


@pytest.mark.parametrize("kwargs,match", [
    ({"delta": 0.0}, "0 < delta < 1"),
    ({"alpha": 0.0}, "max_coef_norm"),
    ({"solver": "dpsgd", "huber_threshold": 0.0}, "nonsmooth"),
])
def test_bad_parameters_raise(kwargs, match):
    X, y, _ = _synthetic(200, 3, 0, "absolute")
    params = {"solver": "phased", "data_norm": 1.5, **kwargs}
    with pytest.raises(ValueError, match=match):
        DPHuberRegressor(**params).fit(X, y)


# ---------------------------------------------------------------------------------------
# Black-box privacy audit: two neighbouring datasets, many runs of the solver, threshold
# chosen on half the runs, 95 % Clopper-Pearson lower bound on epsilon from the other half.
# n = 2 rows (one phase containing both rows, random order), d = 1, the differing row has
# residual +-1e3 so its (smoothed) derivative is +-L_l: replacing it moves the phase average
# by 2 eta L (row first) or eta L (row second).  The honest run must stay <= epsilon; a run
# with a quarter of the noise must be caught.  Fixed seeds: deterministic; an honest audit
# fails with probability <= 5 % for a random seed.
AUDIT_EPS, AUDIT_DELTA, AUDIT_RUNS = 1.0, 1e-5, 10_000


def _audit_outputs(loss, y0, n_runs, seed0):
    X = np.array([[2.0], [0.0]])
    y = np.array([y0, 0.0])
    out = np.empty(n_runs)
    for r in range(n_runs):
        res = solve_phased(X, y, loss, epsilon=AUDIT_EPS, delta=AUDIT_DELTA, alpha=0.0,
                           data_norm=2.0, fit_intercept=False, max_coef_norm=1e4,
                           rng=np.random.default_rng(seed0 + r))
        out[r] = res.coef[0, 0]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("loss", [HuberLoss(1.0), AbsoluteLoss()])
def test_privacy_audit_honest_and_under_noised(loss, monkeypatch):
    s0 = _audit_outputs(loss, 1e3, AUDIT_RUNS, 0)
    s1 = _audit_outputs(loss, -1e3, AUDIT_RUNS, 10 * AUDIT_RUNS)
    honest = epsilon_lower_bound(s0, s1, delta=AUDIT_DELTA, random_state=0)
    assert honest.epsilon_lower_bound <= AUDIT_EPS, honest
    original = phased._noise_ratio
    monkeypatch.setattr(phased, "_noise_ratio", lambda *a: original(*a) / 4.0)
    w0 = _audit_outputs(loss, 1e3, AUDIT_RUNS, 0)
    w1 = _audit_outputs(loss, -1e3, AUDIT_RUNS, 10 * AUDIT_RUNS)
    weak = epsilon_lower_bound(w0, w1, delta=AUDIT_DELTA, random_state=0)
    assert weak.epsilon_lower_bound > AUDIT_EPS, weak


def test_privacy_ledger_plans_records_and_refuses():
    from skdp.accounting import PrivacyLedger
    from skdp.exceptions import BudgetExceededError

    X, y, _ = _synthetic(1000, 3, 0, "absolute")
    ledger = PrivacyLedger(epsilon=1.1, delta=1e-6)
    kw = dict(solver="phased", huber_threshold=0.0, data_norm=1.5, max_coef_norm=4.0,
              alpha=0.0, delta=1e-6, privacy_ledger=ledger, random_state=0)
    DPHuberRegressor(epsilon=1.0, **kw).fit(X, y)
    assert len(ledger.entries()) == 1 and ledger.epsilon_spent() <= 1.0 + 1e-9
    with pytest.raises(BudgetExceededError):
        DPHuberRegressor(epsilon=1.0, **kw).fit(X, y)
    assert len(ledger.entries()) == 1
