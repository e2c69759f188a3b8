"""The privacy plan of a PrivatePipeline: made before any row is read, enforced by every
entry point that fits, with distinct noise keys, one ledger charge, and refusals before
the first release.  Each test reproduces a finding of the composition review (it failed
on the pipeline that split its budget inside ``fit``)."""

import math
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline  # noqa: E402
from skdp.accounting import PrivacyLedger, get_epsilon  # noqa: E402
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning  # noqa: E402
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler,  # noqa: E402
                                DPSplineTransformer)


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    job = rng.choice(["clerk", "nurse", "driver"], n).astype(object)
    income = rng.lognormal(10, 1, n)
    df = pd.DataFrame({"age": age, "job": job, "income": income})
    y = ((age > 50) | (job == "nurse")).astype(int)
    return df, y


def _numeric(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.lognormal(size=(n, 2))


def test_the_plan_reads_the_schema_only():
    df, _ = _table()
    other = df.copy()
    other["age"] = -other["age"] * 1e6
    other["job"] = "x"
    other["income"] = np.nan
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 numeric=["age", "income"], categorical=["job"],
                                 random_state=0)
    assert str(pipe.plan(df)) == str(pipe.plan(other))
    plan = pipe.plan(df)
    roles = {s.path: s.role for s in plan.steps}
    assert roles == {"frame": "data-free", "columns__numeric": "release",
                     "columns__categorical": "release", "model": "model"}
    # the thresholds take half of delta, the Gaussians are calibrated on the rest
    assert plan.step("columns__categorical").threshold_delta == pytest.approx(0.5e-6)


def test_equal_user_seeds_draw_different_noise():
    """Two encoders seeded alike on two equal columns: the noise used to be equal (it
    cancels in a difference of the releases); the plan derives a key per path."""
    rng = np.random.default_rng(0)
    col = rng.choice(["a", "b", "c"], 4000).astype(object)
    df = pd.DataFrame({"u": col, "v": col.copy()})
    y = (col == "a").astype(int)
    ct = ColumnTransformer([("u", DPOneHotEncoder(random_state=0), ["u"]),
                            ("v", DPOneHotEncoder(random_state=0), ["v"])])
    pipe = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", random_state=0))], epsilon=1.0, delta=1e-6)
    pipe.fit(df, y)
    plan = pipe.privacy_plan_
    keys = [plan.step(p).key for p in ("ct__u", "ct__v", "m")]
    assert len(set(keys)) == 3 and None not in keys
    fitted = pipe.named_steps["ct"].named_transformers_
    assert fitted["u"].random_state != fitted["v"].random_state
    # the user's objects keep the parameters they were given
    assert ct.transformers[0][1].random_state == 0 and pipe[-1].random_state == 0
    # and the same seeds give the same plan (reproducible)
    again = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", random_state=0))], epsilon=1.0, delta=1e-6)
    assert [again.plan(df).step(p).key for p in ("ct__u", "ct__v", "m")] == keys


def test_a_final_dp_transformer_gets_a_share_not_its_own_epsilon():
    X = _numeric()
    pipe = PrivatePipeline([("s", DPSplineTransformer()), ("r", DPRobustScaler())],
                           epsilon=0.5, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no warning after the fact
        pipe.fit(X)
    assert pipe.epsilon_ <= 0.5 * (1 + 1e-9)
    assert pipe.epsilon_ == pytest.approx(0.5, rel=1e-3)


def test_fit_transform_and_a_parent_pipeline_run_the_plan():
    X = _numeric()
    inner = PrivatePipeline([("s", DPSplineTransformer()), ("r", DPRobustScaler())],
                            epsilon=0.5, delta=1e-6)
    inner.fit_transform(X)
    assert inner.epsilon_ <= 0.5 * (1 + 1e-9)
    outer = Pipeline([("private", PrivatePipeline([("s", DPSplineTransformer()),
                                                   ("r", DPRobustScaler())],
                                                  epsilon=0.5, delta=1e-6))])
    outer.fit_transform(X)
    assert outer[0].epsilon_ <= 0.5 * (1 + 1e-9)


def test_a_dp_remainder_gets_a_share():
    X = _numeric()
    y = (X[:, 0] > 1).astype(int)
    ct = ColumnTransformer([("s", DPSplineTransformer(), [0])], remainder=DPRobustScaler())
    pipe = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", solver="output_perturbation"))],
        epsilon=1.0, delta=1e-6).fit(X, y)
    assert pipe.privacy_plan_.step("ct__remainder").role == "release"
    assert pipe.epsilon_ <= 1.0 * (1 + 1e-9)


def test_a_non_dp_step_is_refused_before_anything_is_fitted():
    X = _numeric()
    y = (X[:, 0] > 1).astype(int)
    spline = DPSplineTransformer()
    pipe = PrivatePipeline([("spline", spline), ("scale", StandardScaler()),
                            ("m", DPLogisticRegression(classes=[0, 1], data_norm=2.0))],
                           epsilon=1.0)
    with pytest.raises(TypeError, match="step 'scale' \\(StandardScaler\\)"):
        pipe.fit(X, y)
    assert not hasattr(spline, "dp_event_")


def test_two_discovering_encoders_leave_room_for_the_model():
    """Each threshold used to take half of the pipeline's delta: nothing was left."""
    df, y = _table()
    df["job2"] = df["job"].copy()
    ct = ColumnTransformer([("a", DPOneHotEncoder(), ["job"]),
                            ("b", DPOneHotEncoder(), ["job2"]),
                            ("n", DPSplineTransformer(), ["age"])])
    pipe = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto"))], epsilon=1.0, delta=1e-6).fit(df, y)
    plan = pipe.privacy_plan_
    assert plan.step("ct__a").threshold_delta + plan.step("ct__b").threshold_delta == \
        pytest.approx(0.5e-6)
    assert pipe.epsilon_ <= 1.0 * (1 + 1e-9) and pipe.privacy_guaranteed_


def test_the_ledger_is_charged_the_whole_pipeline_before_the_first_release(tmp_path):
    """A ledger given to the model used to record the model only: three fits read 0.79,
    1.16, 1.45 under a cap of 1.5 although the pipelines composed to 0.84, 1.24, 1.55."""
    df, y = _table(4000)
    ledger = PrivacyLedger(epsilon=1.5, delta=1e-5, path=str(tmp_path / "ledger"))
    events = []
    refused = False
    for i in range(4):
        pipe = make_private_pipeline(
            DPLogisticRegression(classes=[0, 1], privacy_ledger=ledger), epsilon=1.0,
            delta=1e-6, numeric=["age", "income"], categorical=["job"], random_state=i)
        try:
            pipe.fit(df, y)
        except BudgetExceededError:
            refused = True
            # refused before anything was released: no step of this pipeline is fitted
            assert not hasattr(pipe, "dp_event_")
            assert not hasattr(pipe[-1], "coef_")
            assert not hasattr(pipe.named_steps["columns"], "transformers_")
            break
        events.append(pipe.dp_event_)
        from skdp.accounting import compose

        spent = get_epsilon(compose(*events), 1e-5)
        assert ledger.epsilon_spent(1e-5) == pytest.approx(spent, rel=1e-6)
        assert spent <= 1.5
    assert refused


def test_without_classes_the_pipeline_warns_and_reports_infinity():
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(), epsilon=1.0,
                                 numeric=["age", "income"], categorical=["job"])
    with pytest.warns(PrivacyLeakWarning):
        pipe.fit(df, y)
    assert pipe.epsilon_ == math.inf and not pipe.privacy_guaranteed_


@pytest.mark.parametrize("X", [np.zeros((10, 2)), pd.DataFrame(index=range(10))])
def test_make_private_pipeline_names_what_it_takes(X):
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]))
    with pytest.raises((TypeError, ValueError), match="DataFrame|no columns"):
        pipe.fit(X, np.arange(10) % 2)


def test_the_schema_can_be_stated_and_is_otherwise_announced_without_names():
    df, y = _table()
    stated = make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
                                   numeric=["age", "income"], categorical=["job"],
                                   random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        stated.fit(df, y)
    from skdp._pipeline import _SchemaFromDtypes

    _SchemaFromDtypes._told = False
    inferred = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), random_state=0)
    with pytest.warns(UserWarning, match="inferred the public schema") as record:
        inferred.fit(df, y)
    for w in record:
        for name in df.columns:
            assert name not in str(w.message)


def test_equal_seeds_in_a_plain_pipeline_are_refused_by_the_accounting():
    """Outside a PrivatePipeline nothing derives keys: composing two releases drawn with
    the same seed as independent would under-count (their noise cancels in a difference)."""
    from sklearn.pipeline import make_pipeline

    from skdp.accounting import fitted_dp_event

    rng = np.random.default_rng(0)
    col = rng.choice(["a", "b", "c"], 4000).astype(object)
    df = pd.DataFrame({"u": col, "v": col.copy()})
    ct = ColumnTransformer([("u", DPOneHotEncoder(random_state=0), ["u"]),
                            ("v", DPOneHotEncoder(random_state=0), ["v"])])
    pipe = make_pipeline(ct).fit(df)
    with pytest.raises(ValueError, match="same random_state"):
        fitted_dp_event(pipe)
    ct2 = ColumnTransformer([("u", DPOneHotEncoder(random_state=0), ["u"]),
                             ("v", DPOneHotEncoder(random_state=1), ["v"])])
    fitted_dp_event(make_pipeline(ct2).fit(df))         # distinct seeds compose
    # a PrivatePipeline answers with its plan's derived keys, whatever the user's seeds
    private = PrivatePipeline([("ct", ColumnTransformer(
        [("u", DPOneHotEncoder(random_state=0), ["u"]),
         ("v", DPOneHotEncoder(random_state=0), ["v"])]))], epsilon=1.0).fit(df)
    fitted_dp_event(private)
    fitted_dp_event(make_pipeline(private))


def test_a_shared_generator_gives_each_step_its_own_key():
    """One Generator given to two encoders (copied into each ColumnTransformer block) drew
    the same noise in both: the plan now draws from it per step and mixes in the path;
    outside a PrivatePipeline the accounting refuses generators left in the same state."""
    from sklearn.pipeline import make_pipeline

    from skdp.accounting import fitted_dp_event

    rng = np.random.default_rng(0)
    col = rng.choice(["a", "b", "c"], 4000).astype(object)
    df = pd.DataFrame({"u": col, "v": col.copy()})
    shared = np.random.default_rng(7)

    def blocks(seed_u, seed_v):
        return ColumnTransformer([("u", DPOneHotEncoder(random_state=seed_u), ["u"]),
                                  ("v", DPOneHotEncoder(random_state=seed_v), ["v"])])

    private = PrivatePipeline([("ct", blocks(shared, shared))], epsilon=1.0).fit(df)
    plan = private.privacy_plan_
    assert plan.step("ct__u").key != plan.step("ct__v").key
    fitted_dp_event(private)
    with pytest.raises(ValueError, match="same state"):
        fitted_dp_event(make_pipeline(blocks(shared, shared)).fit(df))
    with pytest.raises(ValueError, match="same state"):
        fitted_dp_event(make_pipeline(blocks(np.random.default_rng(3),
                                             np.random.default_rng(3))).fit(df))
    fitted_dp_event(make_pipeline(blocks(np.random.default_rng(3),
                                         np.random.default_rng(4))).fit(df))
    with pytest.raises(ValueError, match="non-negative"):
        PrivatePipeline([("ct", blocks(0, 1))], epsilon=1.0, random_state=-1).fit(df)


def test_an_object_array_is_planned_without_a_schema():
    """An object ndarray carries no dtypes: its placeholder holds numbers, which the
    spline converts and the encoder counts (it used to hold empty strings, which the
    spline cannot read; the minimum-versions environment, without pandas, fits this)."""
    rng = np.random.default_rng(0)
    raw = np.empty((3000, 3), dtype=object)
    raw[:, 0] = rng.normal(40, 12, 3000)
    raw[::50, 0] = np.nan
    raw[:, 1] = rng.lognormal(10, 1, 3000)
    raw[:, 2] = rng.choice(["a", "b", "c"], 3000)
    labels = (raw[:, 2] == "a").astype(int)
    pipe = PrivatePipeline([
        ("columns", ColumnTransformer([("num", DPSplineTransformer(), [0, 1]),
                                       ("cat", DPOneHotEncoder(), [2])])),
        ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0))],
        epsilon=1.0).fit(raw, labels)
    assert pipe.privacy_guaranteed_ and pipe.epsilon_ <= 1.0


def test_fit_transform_and_fit_predict_follow_the_final_step():
    model_last = PrivatePipeline([("s", DPRobustScaler()), ("m", DPLogisticRegression(
        classes=[0, 1], data_norm="auto"))])
    transformer_last = PrivatePipeline([("s", DPSplineTransformer()),
                                        ("r", DPRobustScaler())])
    assert not hasattr(model_last, "fit_transform") and hasattr(model_last, "fit_predict")
    assert hasattr(transformer_last, "fit_transform")
    assert not hasattr(transformer_last, "fit_predict")


def test_a_frame_that_declares_its_schema_is_routed_by_it_without_a_warning():
    """skdp's loaders declare the documentation's schema in ``attrs``; the pipeline routes
    by it (even against the dtypes) when it covers the frame's columns exactly, and
    otherwise falls back to the dtypes with the warning."""
    from skdp._pipeline import _SchemaFromDtypes

    df, y = _table()
    declared = df.copy()
    # 'age' declared categorical although its dtype is numeric: the declaration wins
    declared.attrs["skdp_schema"] = {"numeric": ["income"], "categorical": ["job", "age"]}
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), random_state=0)
    _SchemaFromDtypes._told = False
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        pipe.fit(declared, y)
    names = list(pipe[:-1].get_feature_names_out())
    assert any(name.startswith("categorical__age_") for name in names), names
    assert not any(name.startswith("numeric__age") for name in names), names

    # the plan's cached placeholder fits are keyed on the declaration too: the same
    # names and dtypes without it are routed by the dtypes
    _SchemaFromDtypes._told = True
    plain = make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
                                  random_state=0).fit(df, y)
    plain_names = list(plain[:-1].get_feature_names_out())
    assert not any(name.startswith("categorical__age_") for name in plain_names)
    from skdp._plan import _probe_key

    probe = pipe[:-1]
    assert _probe_key("widths", probe, declared, 10) != _probe_key("widths", probe, df, 10)

    stale = df.assign(extra=1.0)      # a column the declaration does not name
    stale.attrs["skdp_schema"] = declared.attrs["skdp_schema"]
    _SchemaFromDtypes._told = False
    with pytest.warns(UserWarning, match="inferred the public schema"):
        make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
                              random_state=0).fit(stale, y)


def test_loader_frames_declare_the_documented_schema():
    from sklearn.model_selection import train_test_split

    from skdp.datasets import load_adult

    X, y = load_adult(as_frame=True, return_X_y=True)
    schema = X.attrs["skdp_schema"]
    assert sorted(schema["numeric"]) == sorted(
        ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"])
    assert len(schema["categorical"]) == 8
    X_train, _, _, _ = train_test_split(X, y, test_size=0.3, random_state=0)
    assert X_train.attrs["skdp_schema"] == schema


def test_dpsgd_beyond_its_summable_size_is_refused_by_the_plan():
    """DP-SGD divides its clip by ``1 + n gamma_n`` (a batch may hold all n rows); from
    about 9.5e7 rows that factor reaches 2 and the fit refuses.  The plan refuses too, from
    n alone, so a pipeline releases nothing first (before, it planned the model's event and
    only the model's fit raised, after the transformers' releases)."""
    from skdp._plan import make_plan
    from skdp.linear_model._base import planned_dp_event

    schema = pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=float)})
    model = DPLogisticRegression(classes=[0, 1, 2], solver="dpsgd", data_norm=1.0)
    with pytest.raises(ValueError, match="9.4e7 rows"):
        make_plan(make_private_pipeline(model, epsilon=1.0), schema, 10**8, 1.0, 1e-6,
                  lazy=True)
    with pytest.raises(ValueError, match="9.4e7 rows"):
        planned_dp_event(model, 10**8, 2, raise_errors=True)
    assert planned_dp_event(model, 9 * 10**7, 2, raise_errors=True) is not None
    # rrpsgd (the same batch sums) refuses from n before its calibration, in its own name
    from skdp import DPNonconvexRegressor

    robust = DPNonconvexRegressor(solver="rrpsgd", data_norm=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="solver='rrpsgd'.*9.4e7 rows"):
        planned_dp_event(robust, 10**8, 2, raise_errors=True)


def _one_encoder_in_two_blocks(**encoder):
    """The audit's pipeline (F6): one DPOneHotEncoder object in two ColumnTransformer
    blocks of a PrivatePipeline."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"c1": rng.choice(list("pqrs"), 4000),
                       "c2": rng.choice(list("pqrs"), 4000)})
    y = (df["c1"].isin(["p", "q"]) ^ (rng.random(4000) < 0.3)).astype(int).to_numpy()
    enc = DPOneHotEncoder(sparse_output=False, **encoder)
    pipe = PrivatePipeline([("ct", ColumnTransformer([("a", enc, ["c1"]), ("b", enc, ["c2"])])),
                            ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto",
                                                           solver="output_perturbation"))],
                           epsilon=2.0, delta=1e-6, random_state=0)
    return pipe, enc, df, y


@pytest.mark.parametrize("seed", [0, None])
def test_one_step_object_at_two_paths_is_refused_before_any_row(monkeypatch, seed):
    """Audit finding (F6): the plan derived a key per path but set both on the one object
    (the last won), so both fitted blocks drew identical noise; a seeded first fit was
    refused only after every release had run.  The plan now refuses the aliased object,
    from the parameters alone: no noise stream is opened, nothing is fitted."""
    from tests._noise_keys import record_keys

    pipe, enc, df, y = _one_encoder_in_two_blocks()
    pipe.set_params(random_state=seed)
    keys = record_keys(monkeypatch)
    with pytest.raises(ValueError, match="'ct__a' and 'ct__b' are one DPOneHotEncoder"):
        pipe.plan(df)
    with pytest.raises(ValueError, match="'ct__a' and 'ct__b' are one DPOneHotEncoder"):
        pipe.fit(df, y)
    assert keys == []
    assert not hasattr(enc, "categories_") and not hasattr(pipe, "privacy_plan_")


def test_one_public_encoder_at_two_paths_releases_nothing_and_is_kept():
    """An encoder given public categories releases nothing (no key is used): one such
    object in two blocks still fits."""
    pipe, _, df, y = _one_encoder_in_two_blocks(categories=[list("pqrs")])
    pipe.fit(df, y)
    assert pipe.epsilon_ <= 2.0


def _spline_and_robust(ct_class=None, threshold=0.3):
    from skdp.preprocessing import DPSplineTransformer

    ct_class = ct_class or ColumnTransformer
    return ct_class([
        ("spline", DPSplineTransformer(degree=1, n_knots=6, feature_bounds=[(0.0, 1.0)],
                                       tail_knots=True, sparse_output=True), [0]),
        ("robust", DPRobustScaler(), [1]),
    ], sparse_threshold=threshold)


def _missing_value_neighbours(n=2000):
    """D without a missing value and D' with row 0's first value missing: the stacked
    basis (a spline row stores 2 entries of 7 columns for a value, 1 for a missing one;
    the scaler's column 1) has density exactly 0.3 on D and just below on D'."""
    rng = np.random.default_rng(0)
    D = np.column_stack([rng.uniform(0.15, 0.95, n), rng.normal(size=n)])
    D2 = D.copy()
    D2[0, 0] = np.nan
    return D, D2, (D[:, 1] > 0).astype(int)


def test_a_column_transformer_whose_format_follows_the_density_is_refused():
    """Audit finding: scikit-learn's ColumnTransformer (sparse_threshold=0.3) chose sparse
    or dense output from the density of the private rows, which a sparse spline block's
    missing values set exactly: one replaced row flipped sparse_output_ and the format of
    the design, while the pipeline reported its guarantee.  The plan now refuses it before
    any row is read; sparse_threshold=0 (always dense) is accepted."""
    from skdp._plan import make_plan

    X = np.zeros((10, 2))
    model = DPLogisticRegression(classes=[0, 1], data_norm="auto", solver="dpsgd")
    pipe = PrivatePipeline([("ct", _spline_and_robust()), ("model", model)], epsilon=1.0)
    with pytest.raises(TypeError, match="density of the private rows"):
        make_plan(pipe, X, 2000, 1.0, 1e-6)
    dense = PrivatePipeline([("ct", _spline_and_robust(threshold=0.0)), ("model", model)],
                            epsilon=1.0)
    make_plan(dense, X, 2000, 1.0, 1e-6)


def test_skdp_column_transformer_takes_its_format_from_the_blocks_types():
    """skdp's SparseColumnTransformer (make_private_pipeline's) decides the format from
    the blocks' types: sparse on both neighbours of the density's threshold, where
    scikit-learn's ColumnTransformer gives one of them dense output."""
    import scipy.sparse as sp

    from skdp.preprocessing._csr_assembly import SparseColumnTransformer

    D, D2, _ = _missing_value_neighbours()
    # scikit-learn's choice follows the density: dense on D, sparse on D'
    assert not _spline_and_robust().fit(D).sparse_output_
    assert _spline_and_robust().fit(D2).sparse_output_
    for D in (D, D2):
        ours = _spline_and_robust(SparseColumnTransformer).fit(D)
        assert ours.sparse_output_ and sp.issparse(ours.transform(D[:3]))


def test_fitted_dp_event_refuses_a_format_chosen_by_density():
    from sklearn.pipeline import Pipeline as SkPipeline

    from skdp.accounting import fitted_dp_event

    D, _, y = _missing_value_neighbours(400)
    pipe = SkPipeline([("ct", _spline_and_robust()),
                       ("model", DPLogisticRegression(classes=[0, 1], data_norm=3.0,
                                                      random_state=0))]).fit(D, y)
    with pytest.raises(TypeError, match="density of the private rows"):
        fitted_dp_event(pipe)
    dense = SkPipeline([("ct", _spline_and_robust(threshold=0.0)),
                        ("model", DPLogisticRegression(classes=[0, 1], data_norm=3.0,
                                                       random_state=1))]).fit(D, y)
    fitted_dp_event(dense)


def test_a_threshold_of_one_is_public_only_when_a_block_always_leaves_a_zero():
    """sparse_threshold=1 picks sparse output unless the density is exactly 1: public when
    a DP spline or one-hot block leaves a zero in every row (their missing and "other"
    columns), not for scikit-learn's one-hot encoder, whose rows are all ones when every
    row holds its one category and hold a zero when one row does not."""
    from sklearn.preprocessing import OneHotEncoder

    from skdp.accounting._fitted import density_decides_format

    public = OneHotEncoder(categories=[["a"]], handle_unknown="ignore")
    assert density_decides_format(ColumnTransformer([("c", public, [0])],
                                                    sparse_threshold=1.0))
    assert not density_decides_format(_spline_and_robust(threshold=1.0))
    assert not density_decides_format(ColumnTransformer(
        [("c", public, [0]), ("o", DPOneHotEncoder(sparse_output=True), [1])],
        sparse_threshold=1.0))
    dense = ColumnTransformer([("r", DPRobustScaler(), [0])], sparse_threshold=0.3)
    assert not density_decides_format(dense, input_sparse=False)
    assert density_decides_format(ColumnTransformer([("p", "passthrough", [0])]),
                                  input_sparse=True)


def test_sparse_input_makes_every_block_a_possible_sparse_output():
    """Review finding: a Binarizer or Normalizer block maps sparse input to sparse output
    without a sparse_output parameter, so the plan accepted ColumnTransformer(
    sparse_threshold=0.3) on CSR rows and the format followed their density; whether the
    accounting raised afterwards depended on one row.  The plan now refuses it from the
    input's type, on both neighbours, before anything is fitted."""
    import scipy.sparse as sp
    from sklearn.preprocessing import Binarizer

    from skdp.accounting import fitted_dp_event
    from skdp.accounting._fitted import density_decides_format

    rng = np.random.default_rng(0)
    A = np.zeros((100, 4))
    A[:, 3] = rng.uniform(0.1, 1, 100)
    A[rng.choice(np.arange(1, 100), 19, replace=False), 0] = 1.0
    y = (rng.uniform(size=100) > 0.5).astype(int)
    for row0 in ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]):
        B = A.copy()
        B[0, :3] = row0
        ct = ColumnTransformer([("b", Binarizer(), [0, 1, 2]), ("p", Binarizer(), [3])],
                               sparse_threshold=0.3)
        pipe = PrivatePipeline([("ct", ct), ("m", DPLogisticRegression(
            data_norm=3.0, classes=[0, 1]))], epsilon=1.0, random_state=0)
        with pytest.raises(TypeError, match="sparse input"):
            pipe.fit(sp.csr_matrix(B), y)
        assert not hasattr(pipe[-1], "coef_")
    # dense input and dense blocks: public; an input type unknown (a fitted
    # ColumnTransformer that saw no DataFrame) may have been sparse
    ct = ColumnTransformer([("b", Binarizer(), [0, 1, 2])], sparse_threshold=0.3)
    assert not density_decides_format(ct, input_sparse=False)
    assert density_decides_format(ct, input_sparse=True)
    from sklearn.pipeline import make_pipeline

    df = pd.DataFrame(A, columns=list("abcd"))
    on_frame = make_pipeline(ColumnTransformer([("r", DPRobustScaler(random_state=0),
                                                 ["a", "d"])]),
                             DPLogisticRegression(data_norm=3.0, classes=[0, 1],
                                                  random_state=1)).fit(df, y)
    fitted_dp_event(on_frame)
    on_array = make_pipeline(ColumnTransformer([("r", DPRobustScaler(random_state=0),
                                                 [0, 3])]),
                             DPLogisticRegression(data_norm=3.0, classes=[0, 1],
                                                  random_state=1)).fit(A, y)
    with pytest.raises(TypeError, match="sparse_threshold"):
        fitted_dp_event(on_array)


def test_a_zero_leaving_block_counts_only_when_it_selects_columns():
    """sparse_threshold=1 is public thanks to a DP spline or one-hot block only if that
    block is in the stack: one that selects no column is never fitted, and the density is
    then the other blocks' alone."""
    from sklearn.preprocessing import OneHotEncoder

    from skdp.accounting._fitted import density_decides_format

    public = OneHotEncoder(categories=[["a"]], handle_unknown="ignore")
    empty = ColumnTransformer([("o", DPOneHotEncoder(sparse_output=True), []),
                               ("c", public, [0])], sparse_threshold=1.0)
    assert density_decides_format(empty, input_sparse=False)
    used = ColumnTransformer([("o", DPOneHotEncoder(sparse_output=True), [1]),
                              ("c", public, [0])], sparse_threshold=1.0)
    assert not density_decides_format(used, input_sparse=False)


def test_a_model_nested_in_the_last_step_is_refused_before_any_release():
    """Audit: the plan read the model as the pipeline's last step and failed with an
    AttributeError on the nested Pipeline; now a TypeError that says what to do."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 2000).astype(object)})
    y = (X["c"] == "a").astype(int)
    encoder = DPOneHotEncoder()
    pipe = PrivatePipeline([("enc", encoder), ("inner", Pipeline(
        [("lr", DPLogisticRegression(classes=[0, 1]))]))], epsilon=1.0, random_state=0)
    with pytest.raises(TypeError, match="flatten the nested Pipeline"):
        pipe.fit(X, y)
    assert not hasattr(encoder, "dp_event_")


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_pipeline_failing_after_its_first_release_is_charged(tmp_path, monkeypatch,
                                                                 adaptive):
    """The transformers release, then the model raises: the exception is a function of
    what they released (audit: a dense-copy refusal that read the released width, its
    message printing it), so the attempt has spent budget.  The ledger used to cancel
    the reservation and show nothing spent (failed before); it now commits the planned
    event, labelled as failed."""
    from skdp.accounting._ledger import event_to_json

    df, y = _table(2000)

    def failing(self, X, y):
        raise ValueError("the model refuses this basis")

    monkeypatch.setattr(DPLogisticRegression, "fit", failing)
    ledger = PrivacyLedger(epsilon=5.0, delta=1e-5, adaptive=adaptive,
                           path=str(tmp_path / "ledger"))
    pipe = make_private_pipeline(
        DPLogisticRegression(classes=[0, 1]), epsilon=1.0, delta=1e-6,
        numeric=["age", "income"], categorical=["job"], random_state=0)
    pipe.set_params(privacy_ledger=ledger)
    planned = pipe.plan(df).ledger_event
    with pytest.raises(ValueError, match="refuses this basis"):
        pipe.fit(df, y)
    (entry,) = ledger.entries()
    assert entry.status == "committed" and entry.source == "PrivatePipeline (failed)"
    assert event_to_json(entry.event) == event_to_json(planned)
    assert not hasattr(pipe, "dp_event_")
    ledger.close()


def test_a_failure_before_the_first_release_still_cancels(tmp_path):
    """Before ``charge_on_error`` an exception drops the reservation (nothing read, nothing
    released); after it, the planned event is committed whatever the exception."""
    from skdp.accounting import gaussian_event

    with PrivacyLedger(epsilon=5.0, delta=1e-6, path=str(tmp_path / "l")) as ledger:
        with pytest.raises(KeyError):
            with ledger.reserve(gaussian_event(2.0, 1.0), source="demo"):
                raise KeyError("before any release")
        assert len(ledger) == 0
        with pytest.raises(KeyError):
            with ledger.reserve(gaussian_event(2.0, 1.0), source="demo") as ticket:
                ticket.charge_on_error()
                raise KeyError("after a release")
        (entry,) = ledger.entries()
        assert entry.status == "committed" and entry.source == "demo (failed)"
        assert entry.event == gaussian_event(2.0, 1.0)
        with pytest.raises(RuntimeError, match="planned event"):
            ledger.reserve(None, source="unplanned").charge_on_error()


def test_a_refused_commit_after_a_release_keeps_the_planned_event(tmp_path):
    """A procedure that has released and then commits an event the budget refuses (it
    differs from the plan) raised BudgetExceededError and dropped its reservation: the
    refusal, a function of the releases, went uncharged (failed before).  After
    ``charge_on_error`` the planned event stays committed."""
    from skdp.accounting import gaussian_event

    with PrivacyLedger(epsilon=5.0, delta=1e-6, path=str(tmp_path / "l")) as ledger:
        with pytest.raises(BudgetExceededError):
            with ledger.reserve(gaussian_event(2.0, 1.0), source="demo") as ticket:
                ticket.charge_on_error()
                ticket.commit(gaussian_event(0.1, 1.0))
        (entry,) = ledger.entries()
        assert entry.status == "committed" and entry.source == "demo (failed)"
        assert entry.event == gaussian_event(2.0, 1.0)
        with pytest.raises(BudgetExceededError):       # without it: dropped, as before
            with ledger.reserve(gaussian_event(20.0, 1.0), source="plain") as ticket:
                ticket.commit(gaussian_event(0.1, 1.0))
        assert len(ledger) == 1


# ------------------------------------------- column selectors: schema only, verified


class _RowReadingSelector:
    """Mixin of the audit's selectors (F1): the column the DP step receives follows one row
    (column "a" iff some value of "a" exceeds 10), and every frame it is called with is
    recorded."""

    def __call__(self, df):
        self.seen.append(len(df))
        return ["a"] if (df["a"] > 10).any() else ["b"]


def _selector_subclasses():
    from sklearn.compose import make_column_selector

    from skdp._pipeline import _SchemaFromDtypes

    class FromSklearn(_RowReadingSelector, make_column_selector):
        pass

    class FromSkdp(_RowReadingSelector, _SchemaFromDtypes):
        pass

    return [FromSklearn(dtype_include="number"), FromSkdp(True)]


def _routed_table(last, n=400):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    a[-1] = last
    return pd.DataFrame({"a": a, "b": b}), (a > 0.5).astype(int)


def _routing_pipeline(selector, block="num"):
    from skdp.preprocessing import DPStandardScaler

    blocks = [("num", DPStandardScaler(feature_bounds=(0.0, 1.0)), selector)]
    if block == "drop":
        # the selector of a dropped block still sets what the remainder receives
        blocks = [("num", DPStandardScaler(feature_bounds=(0.0, 1.0)), ["b"]),
                  ("gone", "drop", selector)]
    ct = ColumnTransformer(blocks, remainder="drop" if block == "num" else
                           DPRobustScaler())
    return PrivatePipeline([("ct", ct), ("model", DPLogisticRegression(
        classes=[0, 1], data_norm="auto", random_state=0))], epsilon=1.0, random_state=0)


@pytest.mark.parametrize("block", ["num", "drop"])
@pytest.mark.parametrize("index", [0, 1], ids=["make_column_selector", "_SchemaFromDtypes"])
def test_a_subclassed_selector_is_refused_before_any_row(monkeypatch, index, block):
    """Audit finding (F1): the plan accepted any *subclass* of make_column_selector, called
    it on the real frame, and scikit-learn called it on the private rows at fit: the
    column the DP step received followed one row, with no noise (epsilon = inf), while
    privacy_guaranteed_ was True.  Only the exact classes (whose call reads names and
    dtypes) are verified now; any other selector is refused, never called, nothing is
    released."""
    from tests._noise_keys import record_keys

    selector = _selector_subclasses()[index]
    selector.seen = []
    keys = record_keys(monkeypatch)
    X, y = _routed_table(100.0)
    pipe = _routing_pipeline(selector, block)
    name = "num" if block == "num" else "gone"
    refused = rf"step 'ct' \(ColumnTransformer\) selects the columns of block '{name}' with a"
    with pytest.raises(TypeError, match=refused):
        pipe.plan(X)
    with pytest.raises(TypeError, match=refused):
        pipe.fit(X, y)
    assert selector.seen == [] and keys == []
    assert not hasattr(pipe, "privacy_plan_")


def test_the_exact_column_selector_still_routes_by_dtype():
    """scikit-learn's make_column_selector itself (dtypes and name patterns: the schema)
    stays accepted, and routes the same columns on both neighbours."""
    from sklearn.compose import make_column_selector

    fitted = []
    for last in (0.5, 100.0):
        X, y = _routed_table(last)
        X["c"] = np.where(X["b"] > 0.5, "u", "v").astype(object)
        pipe = _routing_pipeline(make_column_selector(dtype_include="number",
                                                      pattern="^[ab]$"))
        fitted.append(pipe.fit(X, y)["ct"].transformers_[0][2])
        assert pipe.privacy_guaranteed_
    assert fitted == [["a", "b"], ["a", "b"]]


# ------------------------------------ containers: exact classes only, never a subclass


def _container_table(n=400):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0.1, 0.9, n), "b": rng.uniform(0.1, 0.9, n)})
    return X, (X["a"] > 0.5).astype(int).to_numpy()


def _container_step(kind, subclassed):
    """``(path of the container, its class name, the base it derives from, the step)``:
    a DP scaler inside a container of ``kind``, the reading subclass of
    :mod:`tests._subclassed_containers` or the exact class."""
    from sklearn.pipeline import FeatureUnion

    from skdp.preprocessing import DPStandardScaler
    from skdp.preprocessing._csr_assembly import SparseColumnTransformer
    from tests import _subclassed_containers as sub

    def scaler():
        return DPStandardScaler(feature_bounds=(0.0, 1.0))

    classes = {"ColumnTransformer": (sub.BatchMeanColumns, ColumnTransformer),
               "SparseColumnTransformer": (sub.SparseBatchMeanColumns,
                                           SparseColumnTransformer),
               "Pipeline": (sub.RecordingPipeline, Pipeline),
               "FeatureUnion": (sub.RecordingUnion, FeatureUnion)}
    if kind == "nested":
        cls = classes["ColumnTransformer"][0 if subclassed else 1]
        inner = cls([("num", scaler(), ["a", "b"])], sparse_threshold=0)
        return ("outer__ct", cls.__name__, "ColumnTransformer",
                ("outer", Pipeline([("ct", inner)])))
    cls = classes[kind][0 if subclassed else 1]
    if kind.endswith("ColumnTransformer"):
        step = cls([("num", scaler(), ["a", "b"])], sparse_threshold=0)
    else:
        step = cls([("scale", scaler())])
    return "step", cls.__name__, kind, ("step", step)


def _container_pipeline(step, cls=PrivatePipeline):
    return cls([step, ("model", DPLogisticRegression(classes=[0, 1], data_norm=2.0,
                                                     random_state=0))],
               epsilon=1.0, random_state=0)


@pytest.mark.parametrize("kind", ["ColumnTransformer", "SparseColumnTransformer",
                                  "Pipeline", "FeatureUnion", "nested"])
def test_a_subclassed_container_is_refused_before_any_row(monkeypatch, kind):
    """Audit finding: the plan recognised Pipeline, ColumnTransformer and FeatureUnion by
    isinstance, so a user subclass whose fit_transform reads the whole table (here: it
    records the batch, the ColumnTransformer adds a column of the batch mean to every
    row) was walked as a verified container: its DP steps were planned and fitted, and
    privacy_guaranteed_ was True although one replaced row changed every row the model
    received, with no noise.  Now only the exact classes are walked; a subclass is
    refused by plan and fit with its path and class, before any row is read and before
    any noise is drawn."""
    from tests import _subclassed_containers as sub
    from tests._noise_keys import record_keys

    X, y = _container_table()
    path, name, base, step = _container_step(kind, subclassed=True)
    pipe = _container_pipeline(step)
    sub.clear_seen()
    keys = record_keys(monkeypatch)
    refused = rf"step '{path}' \({name}\) is a subclass of {base}, which skdp cannot verify"
    with pytest.raises(TypeError, match=refused):
        pipe.plan(X)
    with pytest.raises(TypeError, match=refused):
        pipe.fit(X, y)
    assert keys == [] and not any(cls.seen for cls in sub.ALL)
    assert not hasattr(pipe, "privacy_plan_")


def test_a_subclassed_private_pipeline_is_refused_by_its_plan():
    """A subclass of PrivatePipeline (here its transform reads the batch) is not the
    class skdp verifies either: its plan refuses it, naming the class."""
    from tests import _subclassed_containers as sub

    X, y = _container_table()
    pipe = _container_pipeline(_container_step("ColumnTransformer", False)[3],
                               cls=sub.RecordingPrivatePipeline)
    refused = "RecordingPrivatePipeline is a subclass of PrivatePipeline"
    with pytest.raises(TypeError, match=refused):
        pipe.plan(X)
    with pytest.raises(TypeError, match=refused):
        pipe.fit(X, y)


@pytest.mark.parametrize("kind", ["ColumnTransformer", "SparseColumnTransformer",
                                  "Pipeline", "FeatureUnion", "nested"])
def test_the_exact_containers_are_still_planned(kind):
    """The exact classes skdp verifies are walked as before: the DP scaler releases on
    its share and the fit is private."""
    X, y = _container_table()
    path, _, _, step = _container_step(kind, subclassed=False)
    pipe = _container_pipeline(step)
    assert [s.role for s in pipe.plan(X).steps] == ["release", "model"]
    assert pipe.fit(X, y).privacy_guaranteed_ and pipe.epsilon_ <= 1.0


# ------------------------------------- scikit-learn's OneHotEncoder: no drop, no warning


@pytest.mark.parametrize("drop", ["first", "if_binary", ["a"]])
def test_a_public_one_hot_encoder_that_drops_is_refused(drop):
    """Audit finding (F5): OneHotEncoder(categories=public, handle_unknown="ignore",
    drop=...) was planned data-free, but scikit-learn warns "Found unknown categories" at
    transform on a row holding an unknown value -- on the neighbour with that row only (an
    exception under warnings.simplefilter("error")).  The plan refuses it now; without
    drop the encoder stays data-free."""
    from sklearn.preprocessing import OneHotEncoder

    def pipe(drop):
        return PrivatePipeline([("ohe", OneHotEncoder(
            categories=[["a", "b", "c"]], drop=drop, handle_unknown="ignore",
            sparse_output=False)), ("model", DPLogisticRegression(
                classes=[0, 1], data_norm=2.0, random_state=0))], epsilon=1.0,
            random_state=0)

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 400).astype(object)})
    X.loc[399, "c"] = "zzz"
    with pytest.raises(TypeError, match="'ohe' \\(OneHotEncoder\\) .*drop=None"):
        pipe(drop).plan(X)
    assert pipe(None).plan(X).step("ohe").role == "data-free"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe(None).fit(X, (X["c"] == "a").astype(int))


# ----------------------------------------- a list of rows is planned at its real width


def test_a_list_of_rows_is_planned_at_the_width_the_fit_sees():
    """Audit finding (F6): a list of lists was planned at width 1 (the plan read X.shape,
    which a list lacks) and fitted at its real width, so a model whose event reads the
    width was refused only after the transformers had released (the "privacy bug"
    RuntimeError).  The plan reads the array the fit sees: the same plan and the same
    model as for the array."""
    from skdp import DPHuberRegressor
    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (500, 3))
    y = np.tanh(X[:, 0])

    def pipe():
        return PrivatePipeline([("s", DPStandardScaler(feature_bounds=(-1.0, 1.0))),
                                ("m", DPHuberRegressor(y_bound=1.0, data_norm="auto"))],
                               random_state=0)

    assert str(pipe().plan(X.tolist())) == str(pipe().plan(X))
    assert pipe().plan(X.tolist()).model_width == 3
    from_list, from_array = pipe().fit(X.tolist(), y), pipe().fit(X, y)
    assert from_list.epsilon_ == from_array.epsilon_
    np.testing.assert_array_equal(from_list[-1].coef_, from_array[-1].coef_)


def test_a_ragged_list_of_rows_is_refused_before_any_release(monkeypatch):
    """Rows of unequal lengths have no width: refused by the plan, naming no value."""
    from tests._noise_keys import record_keys

    from skdp.preprocessing import DPStandardScaler

    keys = record_keys(monkeypatch)
    rows = [[0.25, 0.5], [0.75]] * 10
    pipe = PrivatePipeline([("s", DPStandardScaler(feature_bounds=(0.0, 1.0))),
                            ("r", DPRobustScaler())],
                           random_state=0)
    with pytest.raises(ValueError, match="rows of equal length") as error:
        pipe.fit(rows)
    assert "0.25" not in str(error.value) and "0.75" not in str(error.value)
    assert keys == []



def test_a_pipeline_that_releases_nothing_is_refused_alike_with_a_ledger(tmp_path):
    """Data-free steps only: the fit refuses with the pipeline's own TypeError; under a
    ledger it raised an internal RuntimeError from charge_on_error (review; failed
    before), and charges nothing."""
    from sklearn.preprocessing import PolynomialFeatures

    X = np.random.default_rng(0).normal(size=(100, 2))
    with PrivacyLedger(epsilon=1.0, path=str(tmp_path / "l")) as ledger:
        pipe = PrivatePipeline([("poly", PolynomialFeatures(2))], epsilon=1.0,
                               privacy_ledger=ledger)
        with pytest.raises(TypeError, match="released nothing"):
            pipe.fit(X)
        assert len(ledger) == 0
