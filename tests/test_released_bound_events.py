"""A model whose privacy event reads its data_norm must not be given a bound released from
the data (skdp.linear_model._budget.event_reads_bound): its share, calibrated at the
released bound, would follow the data -- an adaptive composition the budget does not cover
(skdp.linear_model._budget.width_rule_pins)."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline  # noqa: E402
from skdp.accounting._events import same_privacy_profile  # noqa: E402
from skdp.preprocessing import DPRobustScaler  # noqa: E402


def _data(scale, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * scale
    return X, (X[:, 0] > 0).astype(int)


def _model(alpha):
    return DPLogisticRegression(classes=[0, 1], data_norm="auto", alpha=alpha,
                                solver="objective_perturbation", random_state=0)


def test_a_numeric_alpha_with_its_own_released_bound_is_refused_before_any_release():
    """Objective perturbation's eps_J = log(1 + beta(R)/(n alpha)) reads the released R
    when alpha is a number: the share moved with the data's scale (0.791 to 0.842 over
    scales 0.3 to 5) before; now refused before the bound is released."""
    model = _model(0.01)
    with pytest.raises(ValueError, match="reads its data_norm"):
        model.fit(*_data(1.0))
    assert not hasattr(model, "coef_")


def test_a_numeric_alpha_behind_a_released_bound_is_refused_before_any_release():
    """A robust scaler's output bound is released from its quantiles: the plan refuses
    the model before the scaler is fitted (it raised after the scaler's release)."""
    pipe = PrivatePipeline([("scale", DPRobustScaler()), ("model", _model(0.01))],
                           epsilon=1.0, random_state=0)
    with pytest.raises(ValueError, match="reads its data_norm"):
        pipe.fit(*_data(1.0))
    assert not hasattr(pipe[0], "center_") and not hasattr(pipe, "dp_event_")


@pytest.mark.parametrize("build", ["standalone", "pipeline"])
def test_the_auto_rules_keep_the_event_whatever_bound_is_released(build):
    """alpha="auto" scales with R^2: the model's event is the same at every released
    bound (data scaled by 0.3 and by 5)."""
    events = []
    for scale in (0.3, 5.0):
        X, y = _data(scale)
        if build == "standalone":
            fitted = _model("auto").fit(X, y)
        else:
            fitted = PrivatePipeline([("scale", DPRobustScaler()), ("model", _model("auto"))],
                                     epsilon=1.0, random_state=0).fit(X, y)[-1]
        events.append(fitted.dp_event_)
    assert same_privacy_profile(*events)


def test_a_public_bound_keeps_a_numeric_alpha():
    """A spline basis's bound is public (sqrt of its blocks): a numeric alpha is kept."""
    X, y = _data(1.0)
    df = pd.DataFrame(X, columns=list("abcd"))
    pipe = make_private_pipeline(
        DPLogisticRegression(classes=[0, 1], alpha=0.01, solver="objective_perturbation"),
        epsilon=1.0, numeric=list("abcd"), categorical=[], random_state=0).fit(df, y)
    assert pipe[-1].alpha_ == 0.01 and pipe.epsilon_ <= 1.0
