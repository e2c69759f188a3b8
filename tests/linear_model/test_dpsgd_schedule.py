"""dpsgd's multinomial step rule (skdp.linear_model._auto.dpsgd_schedule): more steps while
the planned noise multiplier stays below STEPS_NOISE_MULTIPLIER, public quantities only, and
the fit runs (and accounts) exactly the planned schedule."""

import math

import numpy as np
import pytest

from skdp import DPLogisticRegression
from skdp.accounting import calibrate_poisson_gaussian
from skdp.linear_model import _auto
from skdp.linear_model._base import planned_dp_event


def _multi(n, p, eps, delta=1e-6, **kw):
    return _auto.dpsgd_schedule(n, p, epsilon=eps, delta=delta, multinomial=True, **kw)


def test_rule_values():
    n, p = 21_700, 36                       # 6 classes on 5 features (issue 35, part 3)
    b, T0 = _auto.dpsgd_schedule(n, p)
    assert (b, T0) == (589, 737)
    M = _auto.MAX_STEPS_FACTOR
    # small budgets keep the epoch rule; large ones get M T0
    assert _multi(n, p, 0.5) == (b, T0)
    assert _multi(n, p, 10.0) == (b, int(M * T0))
    # in between, the closed form T_z
    mu = _auto.budget_mu(2.0, 1e-6, p)
    q = b / n
    T_z = mu ** 2 / (q * q * math.expm1(4.0 / _auto.STEPS_NOISE_MULTIPLIER ** 2))
    assert T0 < T_z < M * T0
    assert _multi(n, p, 2.0) == (b, math.floor(T_z))
    # never fewer steps than the epoch rule, monotone in epsilon
    steps = [_multi(n, p, e)[1] for e in (0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0)]
    assert steps == sorted(steps) and min(steps) == T0


def test_rule_is_off_where_it_should_be():
    n, p = 21_700, 36
    base = _auto.dpsgd_schedule(n, p)
    assert _auto.dpsgd_schedule(n, p, epsilon=10.0, delta=1e-6) == base      # not multinomial
    assert _multi(n, p, 10.0, delta=0.0) == base                             # no Gaussian
    assert _multi(n, p, 10.0, n_steps=7) == (base[0], 7)                     # given steps
    assert _multi(n, p, 10.0, n_steps="bst14") == _auto.dpsgd_schedule(n, p, None, "bst14")
    # the compute budget: past EPOCH_BUDGET / (n p) epochs no extension
    n_big = 10 ** 6
    assert _multi(n_big, p, 10.0) == _auto.dpsgd_schedule(n_big, p)
    # partly: at most EPOCH_BUDGET / (n p) epochs
    n_mid, p_mid = 100_000, 36
    b, T = _multi(n_mid, p_mid, 10.0)
    assert T * b / n_mid <= _auto.EPOCH_BUDGET / (n_mid * p_mid) + b / n_mid
    assert T > _auto.dpsgd_schedule(n_mid, p_mid)[1]


@pytest.mark.parametrize("n, p, eps", [(21_700, 36, 2.0), (12_165, 36, 2.0), (4_547, 36, 3.0)])
def test_planned_multiplier_near_target_where_tz_binds(n, p, eps):
    """Where ``T_z`` sets the steps, the exact accountant's multiplier for them is close to
    (and not above) ``STEPS_NOISE_MULTIPLIER``: the closed form is accurate in the regime
    where it binds."""
    b, T0 = _auto.dpsgd_schedule(n, p)
    b, T = _multi(n, p, eps)
    assert T0 < T < _auto.MAX_STEPS_FACTOR * T0
    z = calibrate_poisson_gaussian(eps, 1e-6, b / n, T)
    Z = _auto.STEPS_NOISE_MULTIPLIER
    assert 0.85 * Z < z <= 1.02 * Z, z


def test_fit_runs_the_planned_schedule():
    rng = np.random.default_rng(0)
    n, d, K = 3000, 4, 3
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = rng.integers(0, K, n)
    for eps in (0.5, 10.0):
        clf = DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=np.arange(K),
                                   random_state=0).fit(X, y)
        b, T = _multi(n, (d + 1) * K, eps)
        assert clf.solver_ == "dpsgd"
        assert (clf.solver_params_["batch_size"], clf.solver_params_["n_steps"]) == (b, T)
        assert clf.n_iter_ == T
        assert planned_dp_event(clf, n) == clf.dp_event_
        assert clf.epsilon_ <= eps * (1 + 1e-9)
    # epsilon = 10 got the extension, 0.5 did not
    assert _multi(n, (d + 1) * K, 10.0)[1] > _auto.dpsgd_schedule(n, (d + 1) * K)[1]
    assert _multi(n, (d + 1) * K, 0.5) == _auto.dpsgd_schedule(n, (d + 1) * K)
