"""The auto rules (skdp.linear_model._auto): public quantities only, one decision for the
fit and the planner, and the documented formulas."""

import math

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp._losses import MULTINOMIAL, HuberLoss, LogisticLoss, MultinomialLoss
from skdp._losses._smoothed import AbsoluteLoss
from skdp.accounting import calibrate_gaussian_sigma
from skdp.linear_model import _auto
from skdp.linear_model._base import planned_dp_event


def _data(n=800, d=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = (X @ np.arange(1, d + 1) + 0.5 * rng.normal(size=n) > 0).astype(int)
    if classes > 2:
        y = rng.integers(0, classes, n)
    return X, y


def test_solver_rule():
    assert _auto.choose_convex_solver(LogisticLoss(), 1, 1e-6)[0] == "objective_perturbation"
    assert _auto.choose_convex_solver(HuberLoss(1.0), 1, 0.0)[0] == "objective_perturbation"
    assert _auto.choose_convex_solver(MultinomialLoss(3), 3, 1e-6)[0] == "dpsgd"
    assert _auto.choose_convex_solver(MultinomialLoss(3), 3, 0.0)[0] == "output_perturbation"
    assert _auto.choose_convex_solver(AbsoluteLoss(), 1, 1e-6)[0] == "phased"
    assert _auto.choose_convex_solver(LogisticLoss(), 1, 1e-6, "paper")[0] == \
        "output_perturbation"
    with pytest.raises(ValueError, match="pure"):
        _auto.choose_convex_solver(AbsoluteLoss(), 1, 0.0)


def test_alpha_rule_formulas():
    R, n, p, eps, delta = math.sqrt(2.0), 10_000, 6, 1.0, 1e-6
    mu = 1.0 / calibrate_gaussian_sigma(eps, delta, 1.0)
    assert _auto.budget_mu(eps, delta, p) == pytest.approx(mu)
    assert _auto.margin_for(LogisticLoss()) == 54.0 and _auto.margin_for(HuberLoss(1.0)) == 29.0
    t = n * mu / math.sqrt(p)                    # the privacy sample size
    # the gradient solvers: sigma sqrt(p)/(n W), W = (M_0/R) (t/t_0)^(1/3)
    W = _auto.MARGIN["classification"] / R * (t / 1000.0) ** (1.0 / 3.0)
    got = _auto.auto_alpha("dpsgd", LogisticLoss(), n=n, p=p, epsilon=eps,
                           delta=delta, row_bound=R)
    assert got == pytest.approx(2 * R / mu * math.sqrt(p) / (n * W))
    # huber: L = threshold * R, the regression margin
    W_h = 29.0 / R * (t / 1000.0) ** (1.0 / 3.0)
    got_h = _auto.auto_alpha("phased", HuberLoss(1.0), n=n, p=p, epsilon=eps,
                             delta=delta, row_bound=R)
    assert got_h == pytest.approx(2 * R / mu * math.sqrt(p) / (n * W_h))
    # output perturbation keeps the flat comparator with its own margins
    W_out = _auto.OUTPUT_MARGIN["classification"] / R
    out = _auto.auto_alpha("output_perturbation", LogisticLoss(), n=n, p=p, epsilon=eps,
                           delta=delta, row_bound=R)
    assert out == pytest.approx((0.25 * R**2 * (2 * R / (n * mu)) ** 2 / W_out**2) ** (1 / 3))
    # the size factor: alpha falls as n^(-4/3); gamma = 0 is the flat worst-case rule
    big = _auto.auto_alpha("dpsgd", LogisticLoss(), n=8 * n, p=p,
                           epsilon=eps, delta=delta, row_bound=R)
    assert got / big == pytest.approx(16.0)
    from skdp._solvers._objective_perturbation import noise_balanced_alpha
    assert noise_balanced_alpha(R, p, n, mu, R, 16.0, size_exponent=0.0) == pytest.approx(
        2 * R / mu * math.sqrt(p) / (n * 16.0 / R))
    # beyond the calibrated privacy sample size (t > 2e4) the comparator stops growing:
    # alpha falls as 1/n again
    huge = [_auto.auto_alpha("dpsgd", LogisticLoss(), n=m, p=p, epsilon=eps, delta=delta,
                             row_bound=R) for m in (10**7, 8 * 10**7)]
    assert 10**7 * mu / math.sqrt(p) > 2e4
    assert huge[0] / huge[1] == pytest.approx(8.0)


@pytest.mark.parametrize("loss, n, p, eps, delta", [
    (LogisticLoss(), 22_000, 109, 1.0, 1e-6),
    (HuberLoss(1.0), 4_500, 13, 0.5, 1e-6),      # the floor binds for the fixed-mu rule
    (HuberLoss(1.0), 12_000, 62, 10.0, 1e-6),
    (LogisticLoss(), 3_000, 11, 2.0, 0.0),       # pure: norm-Laplace's per-coordinate mu
    (LogisticLoss(), 20_000_000, 21, 1.0, 1e-10),  # the output step's floor binds
    (HuberLoss(1.0), 309, 9, 0.5, 1e-6),         # the regressors' small-sample knee binds
    (LogisticLoss(), 309, 9, 0.5, 1e-6),         # ... and not the classifiers'
])
def test_objective_perturbation_alpha_is_the_argmin(loss, n, p, eps, delta):
    """The floor-aware rule minimises p sigma(alpha)^2/(2 n^2 alpha) + alpha W^2/2 with the
    noise objective perturbation adds at that alpha (Jacobian term paid first): checked
    against a brute-force minimisation over a fine grid, computed here independently."""
    from skdp._solvers._objective_perturbation import (
        PURE_OUT_FRACTION, minimum_alpha, objective_noise_mu, objective_perturbation_plan)
    from skdp.accounting._objective_perturbation import calibrate_objective_perturbation

    R = math.sqrt(2.0)
    L, beta = float(loss.lipschitz(R)), float(loss.smoothness(R))
    family = "classification" if isinstance(loss, LogisticLoss) else "regression"
    mu0 = (eps / math.sqrt(p + 1.0) if delta == 0.0
           else 1.0 / calibrate_gaussian_sigma(eps, delta, 1.0))
    # the comparator's growth stops at the calibrated range's t = 2e4
    t = n * mu0 / math.sqrt(p)
    W = _auto.OP_MARGIN[family] / R * (min(t, 2e4) / 1000.0) ** (1 / 3)
    if family == "regression" and t < 70.0:      # the small-sample knee, (t/70)^1.5
        W *= (t / 70.0) ** 1.5
    floor = minimum_alpha(loss, R, n, eps, delta)

    def mu_at(alpha):
        ej = math.log1p(beta / (n * alpha))
        if delta == 0.0:
            return ((1.0 - PURE_OUT_FRACTION) * eps - ej) / math.sqrt(p + 1.0)
        return calibrate_objective_perturbation(eps, delta, ej, 0.2)

    def sigma_out(alpha):
        # the output step's noise per coordinate: the plan's own value at this alpha
        plan = objective_perturbation_plan(n, p, loss, epsilon=eps, delta=delta,
                                           alpha=alpha, row_bound=R)
        return plan["sigma_out"] * (math.sqrt(p + 1.0) if delta == 0.0 else 1.0)

    def risk(alpha):
        sigma = 2.0 * L / mu_at(alpha)
        return (p * sigma**2 / (2.0 * n * n * alpha)
                + sigma_out(alpha) ** 2 * (beta + p * alpha) / 2.0 + alpha * W * W / 2.0)

    grid = floor * np.logspace(0.0, 4.0, 300)
    brute = min(grid, key=risk)
    got = _auto.auto_alpha("objective_perturbation", loss, n=n, p=p, epsilon=eps,
                           delta=delta, row_bound=R)
    assert got >= floor
    assert got == pytest.approx(brute, rel=0.08)           # the rule's grid step is ~5 %
    assert risk(got) <= risk(brute) * 1.005
    # objective_noise_mu is the tight calibration (to 1e-3) / the pure formula
    ej = math.log1p(beta / (n * got))
    assert objective_noise_mu(eps, delta, ej, p) == pytest.approx(mu_at(got), rel=2e-3)
    # the Jacobian term and the output step only ever raise alpha above the fixed-mu
    # closed form
    fixed = 2 * L / mu_at(1e9) * math.sqrt(p) / (n * W)
    assert got >= fixed * 0.999
    # more data or more epsilon: less regularisation
    assert _auto.auto_alpha("objective_perturbation", loss, n=10 * n, p=p, epsilon=eps,
                            delta=delta, row_bound=R) < got
    assert _auto.auto_alpha("objective_perturbation", loss, n=n, p=p, epsilon=4 * eps,
                            delta=delta, row_bound=R) < got


def test_dpsgd_schedule():
    assert _auto.dpsgd_schedule(10_000, 10) == (400, 500)         # 20 epochs of b = 4 sqrt(n)
    assert _auto.dpsgd_schedule(10**6, 51) == (4000, math.ceil(5e8 / (10**6 * 51) * 10**6 / 4000))
    assert _auto.dpsgd_schedule(100, 3) == (64, 32)
    assert _auto.dpsgd_schedule(30, 3) == (30, 20)                 # batch capped at n
    assert _auto.dpsgd_schedule(1000, 3, 50, "bst14") == (50, 400)
    assert _auto.dpsgd_schedule(1000, 3, 50, 7) == (50, 7)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPHuberRegressor])
def test_replacing_a_row_changes_no_decision(cls):
    """The plan (solver, alpha, schedule, event) is a function of public quantities: an
    adversarially replaced row changes none of it."""
    X, y = _data()
    y = y.astype(float) if cls is DPHuberRegressor else y
    X2, y2 = X.copy(), y.copy()
    X2[0] = 1e6
    y2[0] = 1e9 if cls is DPHuberRegressor else 1 - y2[0]
    public = {"classes": [0, 1]} if cls is DPLogisticRegression else {}
    for kw in ({}, {"solver": "dpsgd"}, {"delta": 0.0}):
        a = cls(epsilon=0.8, data_norm=1.0, random_state=0, **public, **kw).fit(X, y)
        b = cls(epsilon=0.8, data_norm=1.0, random_state=0, **public, **kw).fit(X2, y2)
        for name in ("solver_", "alpha_", "solver_params_", "dp_event_", "noise_scale_",
                     "epsilon_", "row_bound_"):
            assert getattr(a, name) == getattr(b, name), (kw, name)
        assert planned_dp_event(a, len(y)) == a.dp_event_


def test_multinomial_default_and_planner():
    X, y = _data(classes=3)
    clf = DPLogisticRegression(classes=[0, 1, 2],
                               epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    assert clf.solver_ == "dpsgd"
    # n mu = 800 x 0.24 < CHECK_MIN_SIZE: no base-rate check on so little data (but the
    # checked fit's flat comparator: n mu >= DPSGD_FLAT_MIN_SIZE)
    assert clf.solver_params_ == dict(zip(("batch_size", "n_steps"),
                                          _auto.dpsgd_schedule(800, 18)),
                                      clip_fraction=_auto.DPSGD_CLIP_FRACTION[MULTINOMIAL])
    assert planned_dp_event(clf, 800) == clf.dp_event_


def test_multinomial_dpsgd_alpha_rule():
    """dpsgd on K classes: W = (M_0/R) (t/t_0)^1 with P = (p + 1) K coefficients, so
    alpha = sigma sqrt(P)/(n W) = (2 L R t_0/M_0) P/(n mu)^2; the other solvers on the
    multinomial loss, and dpsgd on two classes, keep the binary constants."""
    from skdp._solvers._objective_perturbation import noise_balanced_alpha

    R, n, eps, delta, K, d = math.sqrt(2.0), 800, 2.0, 1e-6, 4, 5
    loss, P = MultinomialLoss(K), (d + 1) * K
    mu = _auto.budget_mu(eps, delta, P)
    L = float(loss.lipschitz(R))
    assert L == pytest.approx(2.0)              # ||softmax - e_y|| <= sqrt(2), rows <= R
    rule = dict(epsilon=eps, delta=delta, row_bound=R)
    got = _auto.auto_alpha("dpsgd", loss, n=n, p=P, **rule)
    assert n * mu / math.sqrt(P) < 2e4          # below SIZE_MAX: the closed form holds
    expected = 2 * L * R * 1000.0 / _auto.DPSGD_MULTINOMIAL_MARGIN * P / (n * mu) ** 2
    assert got == pytest.approx(expected)
    assert got / _auto.auto_alpha("dpsgd", loss, n=2 * n, p=P, **rule) == pytest.approx(4.0)
    assert _auto.auto_alpha("phased", loss, n=n, p=P, **rule) == pytest.approx(
        noise_balanced_alpha(L, P, n, mu, R, _auto.MARGIN["classification"]))
    binary = _auto.auto_alpha("dpsgd", LogisticLoss(), n=n, p=d + 1, **rule)
    assert binary == pytest.approx(noise_balanced_alpha(
        float(LogisticLoss().lipschitz(R)), d + 1, n, _auto.budget_mu(eps, delta, d + 1), R,
        _auto.MARGIN["classification"]))
    # with the base-rate check (the default) the comparator is flat and nearly
    # unregularised: W = DPSGD_CHECKED_MARGIN/R
    checked = _auto.auto_alpha("dpsgd", loss, n=n, p=P, checked=True, **rule)
    assert checked == pytest.approx(
        2 * L / mu * math.sqrt(P) / (n * _auto.DPSGD_CHECKED_MARGIN / R))
    assert checked < got / 100
    # the fitted model reports the rule's alpha, and the planner plans the same event
    X, y = _data(n=n, d=d, classes=K)
    for kwargs, alpha in (({}, checked), ({"base_rate_fallback": False}, got)):
        clf = DPLogisticRegression(classes=list(range(K)), epsilon=eps, data_norm=1.0,
                                   random_state=0, **kwargs).fit(X, y)
        assert clf.solver_ == "dpsgd" and clf.alpha_ == pytest.approx(alpha)
        assert planned_dp_event(clf, n) == clf.dp_event_


def test_multinomial_flat_comparator_below_the_checks_size():
    """With the check on (the default), the multinomial dpsgd rule takes the checked fit's
    flat comparator from n mu >= DPSGD_FLAT_MIN_SIZE, also below CHECK_MIN_SIZE where the
    check itself does not run; below DPSGD_FLAT_MIN_SIZE, and with base_rate_fallback=False,
    the shrinking comparator (M_0 = 1024, gamma = 1) stays."""
    from skdp.accounting import gaussian_mu_for

    K, d, eps = 4, 5, 1.0
    mu = gaussian_mu_for(eps, 1e-6)
    assert _auto.DPSGD_FLAT_MIN_SIZE < _auto.CHECK_MIN_SIZE
    rule = dict(p=(d + 1) * K, epsilon=eps, delta=1e-6, row_bound=math.sqrt(2.0))
    loss = MultinomialLoss(K)
    between = math.ceil((_auto.DPSGD_FLAT_MIN_SIZE + _auto.CHECK_MIN_SIZE) / 2 / mu)
    below = math.floor(0.9 * _auto.DPSGD_FLAT_MIN_SIZE / mu)
    assert _auto.DPSGD_FLAT_MIN_SIZE <= between * mu < _auto.CHECK_MIN_SIZE
    for n, flat in ((between, True), (below, False)):
        X, y = _data(n=n, d=d, classes=K)
        clf = DPLogisticRegression(classes=list(range(K)), epsilon=eps, data_norm=1.0,
                                   random_state=0).fit(X, y)
        # the check does not run at either size...
        assert "follow_up_ratio" not in clf.solver_params_ and not clf.base_rate_fallback_
        # ...but the comparator is the flat one from DPSGD_FLAT_MIN_SIZE on
        assert clf.alpha_ == pytest.approx(
            _auto.auto_alpha("dpsgd", loss, n=n, checked=flat, **rule)), n
        assert planned_dp_event(clf, n) == clf.dp_event_
        off = DPLogisticRegression(classes=list(range(K)), epsilon=eps, data_norm=1.0,
                                   base_rate_fallback=False, random_state=0).fit(X, y)
        assert off.alpha_ == pytest.approx(
            _auto.auto_alpha("dpsgd", loss, n=n, checked=False, **rule))
    # the flat comparator regularises far less than the shrinking one at this size
    assert (_auto.auto_alpha("dpsgd", loss, n=between, checked=True, **rule)
            < _auto.auto_alpha("dpsgd", loss, n=between, checked=False, **rule) / 100)


def test_multinomial_plan_ignores_a_replaced_row():
    """The multinomial rule reads n, the public classes and the bounds only: a row replaced
    by one far outside the bound, with another label, changes no decision."""
    X, y = _data(classes=4)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = 1e6, (y[0] + 1) % 4
    fits = [DPLogisticRegression(classes=[0, 1, 2, 3], epsilon=0.8, data_norm=1.0,
                                 random_state=0).fit(Xi, yi) for Xi, yi in ((X, y), (X2, y2))]
    for name in ("solver_", "alpha_", "solver_params_", "dp_event_", "noise_scale_",
                 "epsilon_", "row_bound_"):
        assert getattr(fits[0], name) == getattr(fits[1], name), name
    assert fits[0].solver_ == "dpsgd"


def test_explicit_values_are_kept():
    X, y = _data()
    clf = DPLogisticRegression(classes=[0, 1],
                               epsilon=1.0, data_norm=1.0, alpha=0.05, solver="phased",
                               random_state=0).fit(X, y)
    assert clf.solver_ == "phased" and clf.alpha_ == 0.05


def test_small_sample_knee_of_the_regressors():
    """Below the privacy sample size SMALL_SIZE_KNEE the Huber comparator shrinks as
    (t/knee)^1.5, so alpha grows (toward the constant predictor); at and above it, and for
    the classifiers, the rule is the one without the knee."""
    from skdp._solvers import _objective_perturbation as op

    assert op.small_size_factor(10.0, 0.0) == 1.0
    assert op.small_size_factor(op.SMALL_SIZE_KNEE, op.SMALL_SIZE_KNEE) == 1.0
    assert op.small_size_factor(op.SMALL_SIZE_KNEE / 4, op.SMALL_SIZE_KNEE) == \
        pytest.approx(0.25 ** op.SMALL_SIZE_EXPONENT)
    R = math.sqrt(2.0)

    def both(loss, n, p, eps):
        knee = op.SMALL_SIZE_KNEE if isinstance(loss, HuberLoss) else 0.0
        args = (float(loss.lipschitz(R)), float(loss.smoothness(R)),
                op.minimum_alpha(loss, R, n, eps, 1e-6), 49.0 if knee else 83.0, n, p, eps,
                1e-6, R, max(1.0, float(loss.lipschitz(1.0))), float(loss.sup_loss_at_zero()))
        return (_auto.auto_alpha("objective_perturbation", loss, n=n, p=p, epsilon=eps,
                                 delta=1e-6, row_bound=R),
                op._objective_perturbation_alpha(*args, 0.0,
                                                 op.uses_vectorised(n, p, 1, loss.loss_id)))

    with_knee, without = both(HuberLoss(1.0), 309, 9, 0.5)
    assert with_knee > 3 * without
    with_knee, without = both(HuberLoss(1.0), 20_000, 9, 0.5)     # t ~ 830: no knee
    assert with_knee == without
    with_knee, without = both(LogisticLoss(), 309, 9, 0.5)
    assert with_knee == without


def test_planned_categories_rule():
    """The planning width's categories per discovering column: floor(sqrt(n / tau)),
    capped at PLANNED_CATEGORIES_MAX; a function of n and the public threshold only."""
    rule = _auto.planned_categories
    assert rule(1000, 400.0) == 1                    # n / tau = 2.5
    assert rule(1000, 1001.0) == 0                   # no value can reach the threshold
    assert rule(12165, 460.5) == 5                   # n / tau = 26.4 (Bike sharing, eps 1)
    assert rule(3500, 879.8) == 1                    # n / tau = 3.98
    assert rule(10**6, 10.0) == _auto.PLANNED_CATEGORIES_MAX
    assert rule(0, 10.0) == 0 and rule(100, 0.0) == 0 and rule(100, float("nan")) == 0
    ns, taus = [10, 300, 3000, 30000, 10**6], [1.5, 30.0, 300.0, 3000.0]
    for tau in taus:                                  # more rows, as many categories or more
        ks = [rule(n, tau) for n in ns]
        assert ks == sorted(ks)
    for n in ns:                                      # a higher threshold, fewer or as many
        ks = [rule(n, tau) for tau in taus]
        assert ks == sorted(ks, reverse=True)
