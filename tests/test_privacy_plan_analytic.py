"""The analytic plan (skdp._plan.analytic_prefix): DP transformers state their planned event
and output widths from public quantities, and the plan uses them instead of fitting the
transformers on placeholder rows.  The formulas must agree with the placeholder fits, and a
wrong formula must fail at fit time."""

import warnings

import numpy as np
import pandas as pd
import pytest

import skdp._plan as plan_module
from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline
from skdp._mechanisms._exact import public_noise_memo
from skdp.linear_model._auto import planned_categories
from skdp.preprocessing import DPOneHotEncoder, DPSplineTransformer, DPStandardScaler

DELTA = 1e-6


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "job": rng.choice(["clerk", "nurse", "driver", "cook"], n).astype(object),
        "income": rng.lognormal(10, 1, n),
        "city": rng.choice(["a", "b"], n).astype(object),
        "hours": rng.normal(40, 10, n),
    })
    return df, (df["age"] > 50).astype(int).to_numpy()


def _placeholder_plan(pipe, plan, X):
    """Events and (lowest, nominal, bound) from the placeholder fits (the old path)."""
    with public_noise_memo(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = plan_module.planned_transformer_events(pipe, plan, X)
        low, _, bound = plan_module.design_widths(pipe, plan, X)
        nominal = plan_module.design_widths(pipe, plan, X, nominal=True)[0]
    return events, (low, nominal, bound)


GRID = [
    # n, epsilon, delta, numeric, categorical, n_knots, degree, categories
    (300, 0.3, 1e-6, ["age"], ["job"], "auto", 1, "auto"),
    (300, 2.0, 1e-8, ["age", "income", "hours"], ["job", "city"], 5, 3, "auto"),
    (3000, 0.5, 1e-6, ["age", "income"], ["job"], "auto", 0, "auto"),
    (3000, 1.0, 1e-7, ["age", "income", "hours"], ["job", "city"], "auto", 3, "given"),
    (3000, 4.0, 1e-6, ["income"], [], 7, 1, "auto"),
    (3000, 1.0, 1e-6, [], ["job", "city"], "auto", 1, "auto"),
    (20000, 1.0, 1e-6, ["age", "income", "hours"], ["job", "city"], "auto", 1, "auto"),
    (20000, 8.0, 1e-8, ["age", "hours"], ["job"], 12, 2, "given"),
]


@pytest.mark.parametrize("n, eps, delta, numeric, categorical, n_knots, degree, cats", GRID)
def test_analytic_plan_matches_the_placeholder_fits(n, eps, delta, numeric, categorical,
                                                    n_knots, degree, cats):
    df, _ = _table(n)
    categories = {c: sorted(df[c].unique()) for c in categorical} if cats == "given" \
        else "auto"
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=eps,
                                 delta=delta, random_state=0, numeric=numeric,
                                 categorical=categorical, n_knots=n_knots, degree=degree,
                                 categories=categories)
    plan = pipe.plan(df)
    analytic = plan_module.analytic_prefix(pipe, plan, df)
    assert analytic is not None
    events, (low, nominal, bound) = analytic
    old_events, (old_low, old_nominal, old_bound) = _placeholder_plan(pipe, plan, df)
    # the events are exactly those the placeholder fits recorded
    assert events == old_events
    assert set(events) == {s.path for s in plan.releases if s.role == "release"}
    assert bound == pytest.approx(old_bound, rel=1e-12)
    # the lowest width is the true lower bound (2 knots per numeric column, no discovered
    # category); the placeholder's noisy fits can only merge knots, never add any
    d_num, d_cat = len(numeric), len(categorical)
    extra = 1 if degree == 0 else degree - 1
    given = sum(df[c].nunique() + 2 for c in categorical) if cats == "given" else 2 * d_cat
    assert low == d_num * (2 + extra + 1) + given
    assert low <= old_low <= old_nominal <= nominal
    if n >= 20000 or not numeric:
        # enough rows per unit of noise: the placeholder keeps every knot
        assert (low, nominal) == (old_low, old_nominal)


@pytest.mark.parametrize("n", [50, 3000])
@pytest.mark.parametrize("degree", [0, 1, 3])
def test_spline_planned_event_and_widths_bound_a_real_fit(n, degree):
    df, _ = _table(n, seed=1)
    X = df[["age", "income", "hours"]].to_numpy().copy()
    X[::7, 1] = np.nan
    for n_knots in ("auto", 6):
        spl = DPSplineTransformer(n_knots=n_knots, degree=degree, epsilon=0.8,
                                  random_state=3)
        low, nominal, bound = spl.planned_output(n, 3)
        event = spl.planned_event(n, 3)
        spl.fit(X)
        assert spl.dp_event_ == event
        assert low <= spl.n_features_out_ <= nominal
        assert bound == spl.output_norm_bound_
        # a point mass: with enough rows per unit of noise every column merges to 2
        # knots, the lowest width (at 50 rows the noisy quantiles may not all coincide)
        width = spl.fit(np.zeros((n, 3))).n_features_out_
        assert low <= width <= nominal
        assert width == low or n < 1000
        assert spl.dp_event_ == event


def test_encoder_planned_event_and_widths_equal_a_real_fit():
    df, _ = _table(3000)
    X = df[["job", "city"]]
    enc = DPOneHotEncoder(epsilon=0.5, delta=1e-7, random_state=0)
    assert enc.fit(X).dp_event_ == enc.planned_event(3000, 2)
    # the nominal width counts the public estimate of categories per column (the rule of
    # n and the threshold), the lowest none
    k = enc.planned_categories(3000, 2)
    assert k == planned_categories(3000, enc.threshold_) and k >= 1
    assert enc.planned_output(3000, 2) == (4, 2 * (k + 2), np.sqrt(2))
    assert 4 <= enc.n_features_out_
    given = DPOneHotEncoder(categories=[["nurse", "clerk", "pilot"], ["a"]])
    assert given.planned_categories(3000, 2) == 0
    assert given.planned_output(3000, 2) == (8, 8, np.sqrt(2))
    assert given.planned_output(3000, 2)[0] == given.fit(X).n_features_out_
    with pytest.raises(ValueError, match="categories has 2 lists for 3 columns"):
        given.planned_event(3000, 3)


def test_the_plan_fits_no_transformer_when_all_are_analytic(monkeypatch):
    df, y = _table(2000)
    calls = []
    for cls in (DPSplineTransformer, DPOneHotEncoder):
        original = cls.fit

        def counting(self, X, y=None, _original=original):
            calls.append(type(self).__name__)
            return _original(self, X, y)

        monkeypatch.setattr(cls, "fit", counting)
    monkeypatch.setattr(plan_module, "_PROBES", {})
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.3,
                                 random_state=0, numeric=["age", "income"],
                                 categorical=["job"])
    pipe.plan(df)
    assert calls == []
    pipe.fit(df, y)
    assert sorted(calls) == ["DPOneHotEncoder", "DPSplineTransformer"]   # the real fit only


def test_other_transformers_keep_the_placeholder_path(monkeypatch):
    df, y = _table(2000)
    num = df[["age", "hours"]]
    pipe = PrivatePipeline([("scale", DPStandardScaler(feature_bounds=(0.0, 100.0))),
                            ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto"))],
                           epsilon=1.0, delta=DELTA, random_state=0)
    plan = pipe.plan(num)
    assert plan_module.analytic_prefix(pipe, plan, num) is None
    pipe.fit(num, y)
    assert pipe.epsilon_ <= 1.0 + 1e-9


def test_a_wrong_analytic_event_fails_at_fit_time(monkeypatch):
    """A formula that plans less privacy loss than the release records is caught by the
    fit's check of every released event against the plan, and nothing is kept."""
    from skdp._mechanisms._quantiles import tree_histogram_event
    from skdp.preprocessing._common import gdp_mu

    df, y = _table(3000)

    def optimistic(self, n_samples, n_features):
        # half the real mu: the plan believes the release is far more private than it is
        return tree_histogram_event(n_samples, n_features,
                                    0.5 * gdp_mu(self.epsilon, self.delta))

    monkeypatch.setattr(DPSplineTransformer, "planned_event", optimistic)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 random_state=0, numeric=["age", "income"],
                                 categorical=["job"])
    with pytest.raises(RuntimeError, match="columns__numeric.*privacy bug"):
        pipe.fit(df, y)
    assert not hasattr(pipe, "dp_event_")


def test_invalid_transformer_parameters_fail_in_the_plan():
    df, _ = _table(500)
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 numeric=["age"], categorical=["job"])
    pipe.set_params(columns__numeric__quantile_range=(0.0, 0.9))
    with pytest.raises(ValueError, match="quantile_range"):
        pipe.plan(df)
    pipe.set_params(columns__numeric__quantile_range=(0.01, 0.99),
                    columns__numeric__feature_bounds=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match="feature_bounds has 2 entries for 1 columns"):
        pipe.plan(df)
