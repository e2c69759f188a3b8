"""The spline-basis alpha rule of a private pipeline's Huber model (issue 48): it fires for
``DPHuberRegressor(alpha="auto")`` behind a private spline basis only, it reads public
quantities only (the same decisions on neighbouring tables), and the model's noise is
calibrated with the final ``alpha`` (objective perturbation's privacy depends on it
through the Jacobian term ``eps_J = log(1 + beta/(n alpha))``)."""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skdp import DPHuberRegressor, DPLogisticRegression, PrivatePipeline, make_private_pipeline
from skdp._losses import HuberLoss, LogisticLoss
from skdp.accounting import get_epsilon
from skdp.accounting._events import events_close as same_release
from skdp.linear_model._auto import (SPLINE_ALPHA_KNEE, SPLINE_ALPHA_MAX_FACTOR,
                                     SPLINE_BASIS_ALPHA, auto_alpha, pipeline_model_alpha,
                                     resolve_fit_plan, spline_basis_alpha_applies,
                                     spline_basis_alpha_factor)
from skdp.linear_model._base import planned_dp_event
from skdp.preprocessing import DPRobustScaler
from skdp._solvers._objective_perturbation import budget_mu

DELTA = 1e-6


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(40.0, 12.0, n), "u": rng.uniform(0, 100, n),
                      "year": rng.choice(np.arange(1978, 2017, 2), n).astype(np.int64)})
    y = np.clip(0.45 * np.tanh((X["x"] - 40) / 12) - 0.15 * (X["u"] - 50) / 50
                + 0.05 * (X["year"] - 1997) / 19 + rng.normal(0, 0.3, n), -1, 1)
    return X, y.to_numpy()


def _pipe(eps, **kw):
    return make_private_pipeline(DPHuberRegressor(y_bound=1.0, **kw), epsilon=eps,
                                 delta=DELTA, numeric=["x", "u", "year"], categorical=[],
                                 random_state=0)


def _factor(n, p, eps):
    return spline_basis_alpha_factor(n, p, eps, DELTA)


def test_the_factor_is_the_clipped_privacy_sample_size():
    for n, p, eps in ((1400, 12, 0.39), (1400, 13, 0.8), (721, 30, 0.39), (4547, 82, 7.7),
                      (350, 32, 0.39), (10**6, 50, 5.0)):
        t = n * budget_mu(eps, DELTA, p) / math.sqrt(p)
        expected = min(SPLINE_ALPHA_MAX_FACTOR, max(1.0, t / SPLINE_ALPHA_KNEE))
        assert _factor(n, p, eps) == pytest.approx(expected, 1e-12)
    # 1 at small t, the cap at large t, monotone in n and epsilon between
    assert _factor(350, 32, 0.39) == 1.0            # t = 6
    assert _factor(10**6, 50, 5.0) == SPLINE_ALPHA_MAX_FACTOR
    fs = [_factor(n, 20, 1.0) for n in np.geomspace(100, 1e5, 50)]
    assert all(a <= b for a, b in zip(fs, fs[1:])) and fs[0] == 1.0
    assert fs[-1] == SPLINE_ALPHA_MAX_FACTOR


def test_the_pin_needs_a_public_target_bound_within_the_threshold():
    # evidence only for y_bound <= huber_threshold (docstring): beyond, the auto rule
    spline = {"DPSplineTransformer"}
    for y_bound, kappa in ((1.0, 1.0), (0.5, 1.0), (50.0, 50.0)):
        model = DPHuberRegressor(y_bound=y_bound, huber_threshold=kappa)
        assert pipeline_model_alpha(model, spline) == {"alpha": SPLINE_BASIS_ALPHA}
    for y_bound, kappa in ((1.0001, 1.0), (3.0, 1.0), (900.0, 50.0), (None, 1.0),
                           ("auto", 1.0), (1.0, 0.0)):
        model = DPHuberRegressor(y_bound=y_bound, huber_threshold=kappa)
        assert pipeline_model_alpha(model, spline) == {}


def test_a_target_beyond_the_threshold_keeps_the_auto_rule():
    # |y| in the hundreds with huber_threshold = 50: the factor would cost the fit its
    # intercept (R^2 0.95 -> -0.25 on tests/test_private_pipeline.py's table)
    X, y = _table(2000)
    pipe = make_private_pipeline(DPHuberRegressor(y_bound=900.0, huber_threshold=50.0),
                                 epsilon=1.0, delta=DELTA, numeric=["x", "u", "year"],
                                 categorical=[], random_state=0).fit(X, 300 * y + 400)
    model = pipe[-1]
    n, p = len(y), model.coef_.shape[0] + 1
    base = auto_alpha("objective_perturbation", HuberLoss(50.0), n=n, p=p,
                      epsilon=pipe.budget_split_["model"][0], delta=DELTA,
                      row_bound=model.row_bound_)
    assert model.alpha_ == pytest.approx(base, rel=1e-12)
    assert pipe.epsilon_ <= 1.0 * (1 + 1e-9)


def test_the_pipeline_pin_fires_for_a_huber_model_behind_a_spline_basis_only():
    spline = {"DPSplineTransformer"}
    huber = DPHuberRegressor(y_bound=1.0)
    assert pipeline_model_alpha(huber, spline) == {"alpha": SPLINE_BASIS_ALPHA}
    assert pipeline_model_alpha(DPHuberRegressor(y_bound=1.0, alpha=0.01), spline) == {}
    assert pipeline_model_alpha(DPLogisticRegression(), spline) == {}
    assert pipeline_model_alpha(huber, {"DPRobustScaler"}) == {}
    assert pipeline_model_alpha(huber, set()) == {}
    # the hidden option is the constant the rule reads
    assert SPLINE_BASIS_ALPHA == "auto_spline"
    assert spline_basis_alpha_applies("objective_perturbation", HuberLoss(1.0))
    assert not spline_basis_alpha_applies("dpsgd", HuberLoss(1.0))
    assert not spline_basis_alpha_applies("objective_perturbation", LogisticLoss())


def test_the_plan_pins_the_rule_and_the_fit_restores_the_users_alpha():
    X, y = _table(2000)
    pipe = _pipe(1.0)
    plan = pipe.plan(X)
    pipe.fit(X, y)
    assert pipe[-1].alpha == "auto"
    params = plan.step("model").params
    assert params.get("alpha") == SPLINE_BASIS_ALPHA
    # the rule read at the plan's public width (the released one would make the model's
    # event follow the data: skdp.linear_model._budget.width_rule_pins)
    assert params["auto_n_features"] == plan.model_width
    assert pipe[-1].auto_n_features is None
    n, p = len(y), plan.model_width + 1
    eps_m = plan.step("model").epsilon
    rule = auto_alpha("objective_perturbation", HuberLoss(1.0), n=n, p=p, epsilon=eps_m,
                      delta=DELTA, row_bound=pipe[-1].row_bound_) * _factor(n, p, eps_m)
    assert pipe[-1].alpha_ == pytest.approx(rule, rel=1e-12)
    # not behind a basis without a spline, nor with the user's alpha
    scaled = PrivatePipeline([("scale", DPRobustScaler()),
                              ("model", DPHuberRegressor(y_bound=1.0, data_norm="auto"))],
                             epsilon=1.0, delta=DELTA)
    assert "alpha" not in scaled.plan(X.to_numpy(float)).step("model").params
    assert "alpha" not in _pipe(1.0, alpha=0.01).plan(X).step("model").params


@pytest.mark.parametrize("eps", [0.5, 1.0, 10.0])
def test_the_fitted_alpha_is_the_rules_and_the_noise_is_calibrated_with_it(eps):
    X, y = _table(2000)
    pipe = _pipe(eps).fit(X, y)
    model = pipe[-1]
    # the rule at the plan's public width (skdp.linear_model._budget.width_rule_pins)
    n, p = len(y), pipe.privacy_plan_.model_width + 1
    eps_m = pipe.budget_split_["model"][0]
    base = auto_alpha("objective_perturbation", HuberLoss(1.0), n=n, p=p, epsilon=eps_m,
                      delta=DELTA, row_bound=model.row_bound_)
    factor = _factor(n, p, eps_m)
    assert factor > 1.0
    assert model.alpha_ == pytest.approx(base * factor, rel=1e-12)
    # the released event is the one planned at the final alpha, not at the rule's base
    probe = clone(model).set_params(epsilon=eps_m, delta=DELTA, alpha=SPLINE_BASIS_ALPHA,
                                    data_norm=model.data_norm_)
    assert same_release(model.dp_event_, planned_dp_event(probe, n, p - 1))
    at_base = clone(probe).set_params(alpha="auto")
    assert not same_release(planned_dp_event(at_base, n, p - 1), model.dp_event_)
    # and the whole fit spends the budget, not more
    assert pipe.privacy_guaranteed_
    assert pipe.epsilon_ <= eps * (1 + 1e-9)
    assert get_epsilon(pipe.dp_event_, DELTA) <= eps * (1 + 1e-9)
    assert pipe.epsilon_ >= 0.95 * eps


def test_the_fixed_plan_accounts_the_rules_alpha():
    # model_plan="fixed" (a private search): the rule, with the factor, at the public
    # planning width; the released event is the planned one
    X, y = _table(2000)
    pipe = _pipe(1.0).set_params(model_plan="fixed")
    plan = pipe.plan(X)
    assert plan.step("model").params["auto_n_features"] == plan.model_width
    pipe.fit(X, y)
    n, p = len(y), plan.model_width + 1
    eps_m = plan.step("model").epsilon
    rule = auto_alpha("objective_perturbation", HuberLoss(1.0), n=n, p=p, epsilon=eps_m,
                      delta=DELTA, row_bound=pipe[-1].row_bound_) * _factor(n, p, eps_m)
    assert pipe[-1].alpha_ == pytest.approx(rule, rel=1e-12)
    assert pipe[-1].alpha == "auto"
    assert same_release(pipe[-1].dp_event_, plan.step("model").event)
    assert pipe.epsilon_ <= 1.0 * (1 + 1e-9)


def test_the_rule_is_public_neighbouring_tables_get_the_same_decisions():
    # replace one row by an adversarial one (extreme values, extreme target): the plan's
    # pins, the alpha used and the model's event are unchanged (model_plan="fixed" fixes
    # the width; adaptively, alpha_ is the same function of the public n, width and share)
    X, y = _table(2000)
    X2, y2 = X.copy(), y.copy()
    X2.loc[7, ["x", "u", "year"]] = [1e6, -1e6, 3000]
    y2[7] = -1.0
    fixed, adaptive = [], []
    for data, target in ((X, y), (X2, y2)):
        pipe = _pipe(1.0).set_params(model_plan="fixed")
        plan = pipe.plan(data)
        pipe.fit(data, target)
        fixed.append((plan.step("model").params, pipe[-1].alpha_, pipe[-1].dp_event_,
                      pipe.budget_split_["model"]))
        pipe = _pipe(1.0).fit(data, target)
        model = pipe[-1]
        probe = clone(model).set_params(alpha=SPLINE_BASIS_ALPHA,
                                        epsilon=pipe.budget_split_["model"][0], delta=DELTA,
                                        data_norm=model.data_norm_,
                                        auto_n_features=pipe.privacy_plan_.model_width)
        public = resolve_fit_plan(probe, n_samples=len(target),
                                  n_features=model.coef_.shape[0], loss=HuberLoss(1.0),
                                  n_outputs=1, row_bound=model.row_bound_).alpha
        adaptive.append((model.alpha_, public))
    assert fixed[0] == fixed[1]
    assert "auto_n_features" in fixed[0][0]
    for used, public in adaptive:
        assert used == public


def test_a_standalone_model_is_unchanged():
    X, y = _table(1500)
    Xn = (X.to_numpy(float) - X.to_numpy(float).mean(0)) / 100.0
    a = DPHuberRegressor(y_bound=1.0, data_norm=1.0, epsilon=1.0, delta=DELTA,
                         random_state=0).fit(Xn, y)
    plan = resolve_fit_plan(a, n_samples=len(y), n_features=3, loss=HuberLoss(1.0),
                            n_outputs=1, row_bound=a.row_bound_)
    assert a.alpha_ == pytest.approx(plan.alpha, rel=1e-12)
    b = DPHuberRegressor(y_bound=1.0, data_norm=1.0, epsilon=1.0, delta=DELTA,
                         random_state=0, alpha=SPLINE_BASIS_ALPHA).fit(Xn, y)
    assert b.alpha_ > a.alpha_
