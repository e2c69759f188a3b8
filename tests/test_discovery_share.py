"""The share of ``mu^2`` a private pipeline gives its category discovery
(:func:`skdp.linear_model._auto.discovery_share`, issue 48): enough that a category holding
``DISCOVERY_ROW_FRACTION`` of the rows reaches the threshold, between the fixed share and a
cap; read from ``n``, the schema, ``epsilon`` and ``delta`` only, before any row."""

import math

import numpy as np
import pandas as pd
import pytest

from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline
from skdp._plan import schema_input_widths
from skdp.accounting import gaussian_epsilon, get_epsilon
from skdp.linear_model import _auto
from skdp.linear_model._auto import discovery_share, pipeline_budget_split
from skdp.preprocessing import DPOneHotEncoder, RowwiseFunctionTransformer
from skdp.preprocessing._common import gdp_mu

FLOOR = _auto.TRANSFORMER_SHARES["DPOneHotEncoder"]
CAP = _auto.DISCOVERY_SHARE_MAX
F = _auto.DISCOVERY_ROW_FRACTION


def _threshold(n, d, mu, t_delta, share):
    """The encoder's own threshold ``tau`` when a plan hands it ``share`` of ``mu^2``."""
    mu_i = math.sqrt(share) * mu
    enc = DPOneHotEncoder(epsilon=float(gaussian_epsilon(t_delta, mu_i)), delta=2 * t_delta)
    return enc._calibration(n, d)[4]


@pytest.mark.parametrize("n, d, epsilon", [(1190, 4, 0.5), (1190, 4, 0.7), (600, 2, 1.0),
                                           (3500, 8, 0.3), (8000, 3, 0.05)])
def test_at_the_rules_share_a_category_of_the_target_fraction_just_meets_the_threshold(
        n, d, epsilon):
    delta = 1e-6
    mu, t_delta = gdp_mu(epsilon, delta / 2), delta / 4
    share = discovery_share(n, d, mu, t_delta)
    assert FLOOR < share < CAP                      # the cells are inside the clip
    tau = _threshold(n, d, mu, t_delta, share)
    # the discrete noise's grid rounds sigma up by a hair (the rule ignores it)
    assert F * n <= tau <= F * n * (1 + 1e-3)
    # the least such share: 10 % less and the category falls short of the threshold
    assert _threshold(n, d, mu, t_delta, 0.9 * share) > F * n * 1.04


def test_the_share_is_clipped_and_never_grows_with_rows_or_budget():
    delta = 1e-6
    mu = gdp_mu(0.5, delta / 2)
    ns = np.geomspace(50, 1e6, 60).astype(int)
    shares = [discovery_share(n, 4, mu, delta / 4) for n in ns]
    assert shares[0] == CAP and shares[-1] == FLOOR
    assert all(a >= b for a, b in zip(shares, shares[1:]))
    by_eps = [discovery_share(1190, 4, gdp_mu(e, delta / 2), delta / 4)
              for e in np.geomspace(0.05, 20, 40)]
    assert all(a >= b for a, b in zip(by_eps, by_eps[1:]))
    assert by_eps[0] == CAP and by_eps[-1] == FLOOR
    # more columns: a larger sensitivity and threshold, never a smaller share
    by_d = [discovery_share(5000, d, mu, delta / 4) for d in range(1, 30)]
    assert all(a <= b for a, b in zip(by_d, by_d[1:]))
    # too few rows for the fraction to hold a count above 1: the cap
    assert discovery_share(3, 1, mu, delta / 4) == CAP


def test_the_split_gives_the_rule_only_to_discoveries_it_is_told_about():
    mu = gdp_mu(0.5, 5e-7)
    rule = discovery_share(1190, 4, mu, 2.5e-7)
    names = ["DPSplineTransformer", "DPOneHotEncoder"]
    assert pipeline_budget_split(names) == [FLOOR, FLOOR]
    assert pipeline_budget_split(names, [None, (1190, 4, mu, 2.5e-7)]) == [0.05, rule]
    with pytest.raises(ValueError, match="one discovery entry"):
        pipeline_budget_split(names, [None])
    # the transformers together never take more than half of mu^2
    many = pipeline_budget_split(["DPOneHotEncoder"] * 3, [(100, 4, mu, 1e-7)] * 3)
    assert sum(many) == pytest.approx(0.5)


def _adult_like(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.integers(17, 90, n),
        "hours": rng.integers(1, 99, n),
        "marital": rng.choice(["married", "never", "divorced"], n, p=[0.46, 0.33, 0.21]),
        "sex": rng.choice(["m", "f"], n, p=[0.67, 0.33]),
        "work": rng.choice(["private", "self", "gov"], n, p=[0.7, 0.1, 0.2]),
        "job": rng.choice(list("abcdefgh"), n)})
    y = ((X["marital"] == "married") ^ (rng.random(n) < 0.15)).astype(int)
    return X, y


def _pipe(epsilon, numeric=("age", "hours"), categorical=("marital", "sex", "work", "job")):
    return make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=epsilon,
                                 delta=1e-6, random_state=0, numeric=list(numeric),
                                 categorical=list(categorical))


def test_the_plan_gives_a_small_tables_discovery_the_rules_share_and_composes():
    X, y = _adult_like(1190)
    pipe = _pipe(0.5)
    plan = pipe.plan(X)
    enc = plan.step("columns__categorical")
    expected = discovery_share(1190, 4, plan.mu, enc.threshold_delta)
    assert enc.mu_share == expected and expected > 2 * FLOOR
    assert plan.step("columns__numeric").mu_share == FLOOR
    pipe.fit(X, y)                         # the fit checks the released events against the plan
    assert pipe.privacy_guaranteed_
    assert get_epsilon(pipe.dp_event_, 1e-6) <= 0.5 * (1 + 1e-9)
    assert pipe.budget_split_ is not None
    # the majority category now reaches the threshold (46 % of rows, tau at 30 %)
    found = pipe.named_steps["columns"].named_transformers_["categorical"].categories_
    tau = pipe.named_steps["columns"].named_transformers_["categorical"].threshold_
    assert tau <= F * 1190 * (1 + 1e-3)
    assert "married" in found[0]


def test_a_large_table_keeps_the_fixed_share():
    X, _ = _adult_like(40000)
    plan = _pipe(0.5).plan(X)
    assert plan.step("columns__categorical").mu_share == FLOOR


def test_the_share_reads_the_schema_and_n_only():
    X, _ = _adult_like(1190, seed=1)
    other = X.copy()
    other["marital"] = "x"                  # other values, same schema and n
    other["age"] = 30
    a, b = _pipe(0.5).plan(X), _pipe(0.5).plan(other)
    assert [s.mu_share for s in a.steps] == [s.mu_share for s in b.steps]
    assert [s.epsilon for s in a.steps] == [s.epsilon for s in b.steps]
    # fewer categorical columns in the schema: a smaller sensitivity, a smaller share
    fewer = _pipe(0.5, categorical=["marital"], numeric=["age", "hours"]).plan(X)
    assert fewer.step("columns__categorical").mu_share < a.step(
        "columns__categorical").mu_share


def _first_two(row):
    return row[:2]


def test_an_encoder_whose_input_width_needs_a_fit_keeps_the_fixed_share():
    # after a step that may change the columns the width is known only from a fit: the
    # plan does not guess it, and the discovery keeps the fixed share
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.integers(0, 3, 1190), "b": rng.integers(0, 2, 1190),
                      "c": rng.integers(0, 5, 1190)})
    y = (X["a"] == 0).astype(int)
    pipe = PrivatePipeline([("cols", RowwiseFunctionTransformer(_first_two)),
                            ("enc", DPOneHotEncoder()),
                            ("model", DPLogisticRegression(classes=[0, 1],
                                                           data_norm="auto"))],
                           epsilon=0.5, delta=1e-6, random_state=0)
    assert schema_input_widths(pipe, X) == {"cols": 3}
    assert pipe.plan(X).step("enc").mu_share == FLOOR
    # the same encoder on the schema's columns: its width is public, the rule applies
    direct = PrivatePipeline([("enc", DPOneHotEncoder()),
                              ("model", DPLogisticRegression(classes=[0, 1],
                                                             data_norm="auto"))],
                             epsilon=0.5, delta=1e-6, random_state=0)
    assert schema_input_widths(direct, X)["enc"] == 3
    plan = direct.plan(X)
    assert plan.step("enc").mu_share == discovery_share(1190, 3, plan.mu,
                                                         plan.step("enc").threshold_delta)
    for fitted in (pipe.fit(X, y), direct.fit(X, y)):
        assert fitted.privacy_guaranteed_
        assert get_epsilon(fitted.dp_event_, 1e-6) <= 0.5 * (1 + 1e-9)


def test_an_encoder_nested_in_a_blocks_pipeline_gets_the_blocks_width():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp.preprocessing import DPSplineTransformer

    X, y = _adult_like(1190)
    columns = ColumnTransformer([
        ("num", DPSplineTransformer(feature_bounds=[(0, 100)]), ["age"]),
        ("cat", Pipeline([("enc", DPOneHotEncoder())]), ["marital", "sex"])])
    pipe = PrivatePipeline([("columns", columns),
                            ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto"))],
                           epsilon=0.5, delta=1e-6, random_state=0)
    widths = schema_input_widths(pipe, X)
    assert widths["columns__num"] == 1 and widths["columns__cat__enc"] == 2
    plan = pipe.plan(X)
    enc = plan.step("columns__cat__enc")
    assert enc.mu_share == discovery_share(1190, 2, plan.mu, enc.threshold_delta) > FLOOR
    pipe.fit(X, y)
    assert get_epsilon(pipe.dp_event_, 1e-6) <= 0.5 * (1 + 1e-9)
