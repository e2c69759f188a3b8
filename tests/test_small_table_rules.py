"""The private pipeline's public rules for small and rare-positive tables (issue 48): the
knots' count below ``SPLINE_KNOTS_KNEE`` and ``dpsgd`` on small ``n epsilon``, both
functions of public quantities only, with the plan still composing to the budget."""

import numpy as np
import pandas as pd
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, make_private_pipeline
from skdp.accounting import get_epsilon
from skdp.linear_model import _auto
from skdp.linear_model._auto import (PIPELINE_DPSGD_BELOW_SIZE, PIPELINE_OBJECTIVE_FROM_SIZE,
                                     SPLINE_KNOTS_KNEE, pipeline_model_solver, spline_knots)


def _old_rule(n, sigma):
    """The cube-root rule with its old floor of 6 (what the rule keeps from the knee on)."""
    return int(min(max(round(1.85 * (n / sigma) ** (1 / 3)), 6), 16))


def test_the_knots_rule_is_monotone_and_keeps_the_cube_root_rule_from_the_knee():
    # on tables of at least SPLINE_SMALL_TABLE_ROWS rows (sigma scales with them)
    xs = np.geomspace(0.5, 5000, 400)
    sigma = float(_auto.SPLINE_SMALL_TABLE_ROWS)
    ks = [spline_knots(sigma * x, sigma) for x in xs[xs >= 1.0]]
    assert all(a <= b for a, b in zip(ks, ks[1:]))          # more rows per noise: never fewer
    assert min(ks) == _auto.SPLINE_KNOTS_RANGE[0] == 3 and max(ks) == 16
    for x in xs[xs >= SPLINE_KNOTS_KNEE]:
        assert spline_knots(sigma * x, sigma) == _old_rule(sigma * x, sigma)
    # below the knee: fewer knots than the old floor where the knots are mostly noise
    assert spline_knots(1400, 250.0) == 3 and spline_knots(2200, 100.0) == 4


def test_small_tables_get_at_most_six_knots_whatever_the_noise():
    from skdp.linear_model._auto import SPLINE_SMALL_TABLE_KNOTS, SPLINE_SMALL_TABLE_ROWS

    assert SPLINE_SMALL_TABLE_KNOTS == 6
    for n in (1190, 4900, SPLINE_SMALL_TABLE_ROWS - 1):
        ks = [spline_knots(n, n / x) for x in np.geomspace(0.5, 5000, 200)]
        assert max(ks) == SPLINE_SMALL_TABLE_KNOTS and min(ks) == 3
        assert all(a <= b for a, b in zip(ks, ks[1:]))
    # at and above the size, the cube-root rule again (16 at a large n/sigma)
    assert spline_knots(SPLINE_SMALL_TABLE_ROWS, 10.0) == 16
    # below the cap, the knee's formula unchanged
    for x in (8.0, 30.0, 45.0):
        k = round(1.85 * x ** (1 / 3) * min(1.0, (x / SPLINE_KNOTS_KNEE) ** (1 / 3)))
        assert spline_knots(4900, 4900 / x) == max(k, 3) <= 6


def test_a_small_table_at_a_large_epsilon_gets_the_capped_basis():
    X, y = _table(3000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=10.0,
                                 delta=1e-6, numeric=["a", "b", "c"], categorical=[],
                                 random_state=0).fit(X, y)
    spline = pipe.named_steps["columns"].named_transformers_["numeric"]
    assert X.shape[0] / spline.noise_scale_ > 100           # the old rule: 10+ knots
    assert max(len(k) for k in spline.knots_) == 6
    assert pipe.epsilon_ <= 10.0


def test_the_knots_rule_reads_only_n_and_the_noise_scale():
    # the same public (n, sigma) gives the same count: nothing else enters
    assert spline_knots(4900, 160.0) == spline_knots(4900.0, 160.0)
    with pytest.raises(TypeError):
        spline_knots(4900, 160.0, np.zeros(3))


def test_the_solver_rule_is_a_function_of_n_and_epsilon():
    name = "DPLogisticRegression"
    assert pipeline_model_solver(name, 1.0) == "dpsgd"              # the epsilon rule
    assert pipeline_model_solver(name, 10.0) is None                # n not known yet
    assert pipeline_model_solver(name, 10.0, 5000) == "dpsgd"       # n epsilon = 5e4
    assert pipeline_model_solver(name, 10.0, 20000) is None         # n epsilon = 2e5
    n_edge = PIPELINE_DPSGD_BELOW_SIZE / 10.0
    assert pipeline_model_solver(name, 10.0, n_edge - 1) == "dpsgd"
    assert pipeline_model_solver(name, 10.0, n_edge) is None
    assert pipeline_model_solver("DPHuberRegressor", 10.0, 100) is None
    # large tables: the estimator's own rule (objective perturbation) at every epsilon
    n_large = PIPELINE_OBJECTIVE_FROM_SIZE / 1.0
    assert pipeline_model_solver(name, 1.0, n_large - 1) == "dpsgd"
    assert pipeline_model_solver(name, 1.0, n_large) is None
    assert pipeline_model_solver(name, 0.5, 2 * n_large) is None
    assert pipeline_model_solver(name, 0.5, 2 * n_large - 1) == "dpsgd"


def test_the_plan_picks_the_solver_from_n_before_any_row_is_read():
    """make_private_pipeline leaves solver="auto"; the plan pins dpsgd below
    n epsilon = 3e5 and objective perturbation (no pin) from there, on the public size of
    rows that are all zeros; a fit reports its pick in solver_ and leaves the parameter
    "auto", so a refit on another n picks again."""
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 delta=1e-6, numeric=["a", "b"], categorical=[],
                                 random_state=0)
    assert pipe[-1].solver == "auto"
    for n, pinned in ((int(PIPELINE_OBJECTIVE_FROM_SIZE) - 1, "dpsgd"),
                      (int(PIPELINE_OBJECTIVE_FROM_SIZE), None)):
        zeros = pd.DataFrame({"a": np.zeros(n), "b": np.zeros(n)})
        assert pipe.plan(zeros).step("model").params.get("solver") == pinned
    X, y = _table(3000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 delta=1e-6, numeric=["a", "b", "c"], categorical=[],
                                 random_state=0).fit(X, y)
    assert pipe[-1].solver_ == "dpsgd" and pipe[-1].solver == "auto"
    pipe.set_params(epsilon=200.0).fit(X, y)                # n epsilon = 6e5
    assert pipe[-1].solver_ == "objective_perturbation" and pipe[-1].solver == "auto"


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.lognormal(3, 0.8, n), "b": rng.normal(50, 10, n),
                      "c": rng.poisson(4.0, n).astype(np.int64)})
    y = (rng.random(n) < 1 / (1 + np.exp(-(np.log(X["a"]) - 5.5)))).astype(int)
    return X, y


@pytest.mark.parametrize("n, expected", [(3000, "dpsgd"), (12000, "objective_perturbation")])
def test_a_small_table_at_large_epsilon_fits_dpsgd_within_the_budget(n, expected):
    X, y = _table(n)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=10.0,
                                 delta=1e-6, numeric=["a", "b", "c"], categorical=[],
                                 random_state=0)
    plan = pipe.plan(X)
    pinned = plan.step("model").params.get("solver")
    assert pinned == ("dpsgd" if expected == "dpsgd" else None)
    pipe.fit(X, y)
    assert pipe[-1].solver_ == expected
    assert pipe[-1].solver == "auto"                   # the user's parameter is restored
    assert pipe.privacy_guaranteed_
    assert pipe.epsilon_ <= 10.0
    assert get_epsilon(pipe.dp_event_, 1e-6) <= 10.0 * (1 + 1e-9)


def test_a_given_solver_and_a_regressor_are_left_alone():
    X, y = _table(3000)
    pipe = make_private_pipeline(
        DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"), epsilon=10.0,
        delta=1e-6, numeric=["a", "b", "c"], categorical=[], random_state=0).fit(X, y)
    assert pipe[-1].solver_ == "objective_perturbation"
    assert pipe.epsilon_ <= 10.0
    reg = make_private_pipeline(DPHuberRegressor(y_bound=1.0), epsilon=10.0, delta=1e-6,
                                numeric=["a", "b", "c"], categorical=[], random_state=0)
    assert "solver" not in reg.plan(X).step("model").params
    reg.fit(X, np.clip(np.log(X["a"].to_numpy()) - 3.0, -1, 1))
    assert reg.epsilon_ <= 10.0


def test_the_pinned_solver_is_what_the_fixed_plan_accounts():
    # model_plan="fixed" (what a private search sets): the planned event is the fitted one
    X, y = _table(3000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=10.0,
                                 delta=1e-6, numeric=["a", "b", "c"], categorical=[],
                                 random_state=0).set_params(model_plan="fixed")
    plan = pipe.plan(X)
    assert plan.step("model").params.get("solver") == "dpsgd"
    pipe.fit(X, y)
    assert pipe[-1].solver_ == "dpsgd"
    assert get_epsilon(plan.planned_event, 1e-6) <= 10.0 * (1 + 1e-9)
    assert pipe.epsilon_ <= 10.0


def test_binary_dpsgd_runs_fewer_epochs_at_a_small_privacy_size():
    from skdp.linear_model._auto import (DPSGD_SMALL_EPOCHS, DPSGD_SMALL_SIZE, MAX_EPOCHS,
                                         _privacy_size, dpsgd_schedule)

    def epochs(n, eps, **kw):
        b, T = dpsgd_schedule(n, 20, epsilon=eps, delta=1e-6, **kw)
        return T * b / n

    sizes = [(n, _privacy_size(n, 1.0, 1e-6)) for n in (1000, 3000, 6000, 8000, 9000,
                                                       20000, 50000)]
    assert any(s < DPSGD_SMALL_SIZE for _, s in sizes) and \
        any(s >= DPSGD_SMALL_SIZE for _, s in sizes)
    got = [epochs(n, 1.0, binary=True) for n, _ in sizes]
    for (n, s), e in zip(sizes, got):
        expected = DPSGD_SMALL_EPOCHS if s < DPSGD_SMALL_SIZE else MAX_EPOCHS
        assert expected <= e < expected + 1.0        # ceil of the steps only
        # the multinomial and the unlabelled calls keep the epoch rule
        assert epochs(n, 1.0) >= MAX_EPOCHS
    assert all(a <= b + 1.0 for a, b in zip(got, got[1:]))   # never fewer for more n mu
    # the same n at a larger epsilon leaves the small regime (n mu grows)
    assert epochs(3000, 10.0, binary=True) >= MAX_EPOCHS
    # a given number of steps is never changed
    assert dpsgd_schedule(3000, 20, 100, 77, epsilon=1.0, delta=1e-6, binary=True) == (100, 77)


def _rare_tail_table(n=2000, seed=0):
    """A credit-card-like table (issue 48): an integer column with its mass at -1 and 0 and
    the rare positives in its thin upper tail, and an amount column of noise."""
    rng = np.random.default_rng(seed)
    pay = rng.choice([-2, -1, 0, 1, 2, 3], size=n, p=[0.1, 0.2, 0.55, 0.1, 0.04, 0.01])
    rate = np.where(pay >= 1, 0.12, 0.008)
    X = pd.DataFrame({"pay": pay.astype(np.int64), "amount": rng.lognormal(11.5, 0.8, n)})
    return X, (rng.random(n) < rate).astype(int)


def _spline_of(pipe):
    return pipe.named_steps["columns"].named_transformers_["numeric"]


def test_the_tail_knots_follow_the_models_solver():
    from skdp.linear_model._auto import pipeline_tail_knots

    def tails(model, eps):
        pipe = make_private_pipeline(model, epsilon=eps, numeric=["pay", "amount"],
                                     categorical=[])
        return pipe.named_steps["columns"].transformers[0][1].tail_knots

    assert tails(DPLogisticRegression(classes=[0, 1]), 1.0) == "auto"      # dpsgd below 5
    assert tails(DPLogisticRegression(classes=[0, 1], solver="dpsgd"), 10.0) == "auto"
    assert tails(DPLogisticRegression(classes=[0, 1]), 10.0) is False      # n not known
    assert tails(DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
                 1.0) is False
    assert tails(DPHuberRegressor(y_bound=1.0), 1.0) is False
    assert pipeline_tail_knots(DPHuberRegressor(solver="dpsgd"), 1.0) is False
    # the solver parameter stays "auto" (the plan pins dpsgd): the rule reads epsilon
    assert pipeline_tail_knots(DPLogisticRegression(classes=[0, 1]), 4.99) == "auto"
    assert pipeline_tail_knots(DPLogisticRegression(classes=[0, 1]), 5.0) is False


def test_a_rare_tail_is_kept_in_the_basis_and_ranked():
    from sklearn.metrics import roc_auc_score

    from skdp.linear_model._auto import SPLINE_TAIL_KNOTS_BELOW

    X, y = _rare_tail_table(4000)
    Xtr, ytr, Xte, yte = X.iloc[:2000], y[:2000], X.iloc[2000:], y[2000:]
    aucs = {True: [], False: []}
    for seed in range(5):
        for rule in (True, False):
            pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                         delta=1e-6, numeric=["pay", "amount"],
                                         categorical=[], random_state=seed)
            if not rule:
                pipe.set_params(columns__numeric__tail_knots=False)
            pipe.fit(Xtr, ytr)
            spline = _spline_of(pipe)
            assert Xtr.shape[0] / spline.noise_scale_ < SPLINE_TAIL_KNOTS_BELOW
            if rule:
                # pay = 0 and pay = 1 are apart: the upper tail is not clamped away
                z = spline.transform(pd.DataFrame({"pay": [0, 1], "amount": [1e5, 1e5]}))
                z = z.toarray() if hasattr(z, "toarray") else np.asarray(z)
                assert not np.allclose(z[0], z[1])
            assert pipe.epsilon_ <= 1.0 and pipe.privacy_guaranteed_
            aucs[rule].append(roc_auc_score(yte, pipe.decision_function(Xte)))
    assert np.mean(aucs[True]) > np.mean(aucs[False]) + 0.05


def test_the_tail_knots_are_what_the_fixed_plan_accounts():
    X, y = _rare_tail_table(2000)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 delta=1e-6, numeric=["pay", "amount"], categorical=[],
                                 random_state=0).set_params(model_plan="fixed")
    plan = pipe.plan(X)
    pipe.fit(X, y)
    assert get_epsilon(plan.planned_event, 1e-6) <= 1.0 * (1 + 1e-9)
    assert pipe.epsilon_ <= 1.0
    assert all(len(k) <= 4 for k in _spline_of(pipe).knots_)
