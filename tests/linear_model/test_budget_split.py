"""largest_model_epsilon: the model's share of a pipeline budget, also for a model whose
plan does not exist at a tiny epsilon (dpsgd with a user-set schedule)."""

import pytest

from skdp import DPLogisticRegression
from skdp.accounting import compose, gaussian_event, get_epsilon
from skdp.exceptions import BudgetExceededError
from skdp.linear_model._base import planned_dp_event
from skdp.linear_model._budget import largest_model_epsilon


def _dpsgd(**kw):
    return DPLogisticRegression(classes=[0, 1], data_norm=2.0, solver="dpsgd", alpha=1e-3,
                                **kw)


def test_user_schedule_without_a_plan_at_tiny_epsilon():
    """378 steps at sampling rate 0.106 cannot be calibrated to epsilon 0.5/1024 (no noise
    multiplier up to 1e5 gives it: no plan there); the split still finds the largest share
    that fits, and the total is the budget."""
    n, d, delta = 22_792, 99, 1e-6
    model = _dpsgd(batch_size=2416, n_steps=378)
    probe = _dpsgd(batch_size=2416, n_steps=378, epsilon=0.5 / 1024, delta=delta)
    assert planned_dp_event(probe, n, d) is None          # the case this test is about
    earlier = [gaussian_event(20.0, 1.0)]                 # a transformer's release
    eps = largest_model_epsilon(model, earlier, n, d, 0.5, delta)
    assert 0.3 < eps < 0.5
    planned = planned_dp_event(_dpsgd(batch_size=2416, n_steps=378, epsilon=eps,
                                      delta=delta), n, d)
    total = get_epsilon(compose(*earlier, planned), delta)
    assert total <= 0.5 and total > 0.5 * (1 - 5e-3)


def test_budget_spent_before_the_model_is_refused():
    with pytest.raises(BudgetExceededError, match="nothing is left"):
        largest_model_epsilon(_dpsgd(), [gaussian_event(0.05, 1.0)], 5000, 10, 0.5, 1e-6)


def test_model_without_any_plan_is_refused(monkeypatch):
    import skdp.linear_model._base as base

    monkeypatch.setattr(base, "planned_dp_event", lambda *args, **kwargs: None)
    with pytest.raises(ValueError, match="no planned event"):
        largest_model_epsilon(_dpsgd(), [gaussian_event(20.0, 1.0)], 5000, 10, 0.5, 1e-6)
