import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skdp import DPLogisticRegression
from skdp.accounting import (
    compose,
    fitted_dp_event,
    fitted_privacy_guaranteed,
    get_epsilon,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 3))
    return X, (X[:, 0] > 0).astype(int)


def test_single_estimator_event_is_its_own(data):
    clf = DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0).fit(*data)
    assert fitted_dp_event(clf) is clf.dp_event_
    assert fitted_privacy_guaranteed(clf)


def test_pipeline_composes_every_dp_step(data):
    X, y = data
    a = DPLogisticRegression(classes=[0, 1], epsilon=0.5, data_norm=2.0, random_state=0).fit(X, y)
    pipe = make_pipeline(PolynomialFeatures(1), a)
    pipe.fit(X, y)
    ev = fitted_dp_event(pipe)
    assert get_epsilon(ev, 1e-6) == pytest.approx(get_epsilon(pipe[-1].dp_event_, 1e-6))
    # two DP fits in sequence cost more than one, exactly as composition says
    twice = compose(pipe[-1].dp_event_, pipe[-1].dp_event_)
    assert get_epsilon(twice, 1e-6) > get_epsilon(ev, 1e-6)


def test_non_private_step_is_refused(data):
    pipe = make_pipeline(
        StandardScaler(), DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0)
    ).fit(*data)
    with pytest.raises(TypeError, match="StandardScaler"):
        fitted_dp_event(pipe)
    assert not fitted_privacy_guaranteed(pipe)


def test_leaky_bound_is_not_guaranteed(data):
    with pytest.warns(Warning):
        clf = DPLogisticRegression(random_state=0).fit(*data)
    assert not fitted_privacy_guaranteed(clf)


def test_unfitted_is_refused():
    with pytest.raises(TypeError, match="no dp_event_"):
        fitted_dp_event(DPLogisticRegression())


# ------------------------------------------------ data-free means verified (not by name)


def _by_largest(A):
    return A / np.abs(A).max()


def test_function_transformer_is_not_data_free(data):
    from sklearn.preprocessing import FunctionTransformer

    pipe = make_pipeline(FunctionTransformer(_by_largest), DPLogisticRegression(
        classes=[0, 1], data_norm=1.0, solver="output_perturbation", random_state=0))
    pipe.fit(*data)
    assert not fitted_privacy_guaranteed(pipe)
    with pytest.raises(TypeError, match=r"step 'functiontransformer' "
                                        r"\(FunctionTransformer\)") as info:
        fitted_dp_event(pipe)
    assert "whole batch" in str(info.value)
    assert "skdp.preprocessing.RowwiseFunctionTransformer(func)" in str(info.value)
    # a bare, fitted FunctionTransformer carries no event either
    with pytest.raises(TypeError, match="FunctionTransformer"):
        fitted_dp_event(FunctionTransformer(_by_largest).fit(data[0]))


def test_refusal_names_the_path_of_a_nested_step(data):
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import FunctionTransformer

    pre = make_column_transformer((PolynomialFeatures(2), [0]),
                                  (FunctionTransformer(_by_largest), [1, 2]))
    pipe = make_pipeline(pre, DPLogisticRegression(classes=[0, 1], data_norm=3.0,
                                                   random_state=0)).fit(*data)
    assert not fitted_privacy_guaranteed(pipe)
    with pytest.raises(TypeError, match=r"step 'columntransformer__functiontransformer' "
                                        r"\(FunctionTransformer\)"):
        fitted_dp_event(pipe)


def test_ledger_refuses_a_function_transformer():
    from sklearn.preprocessing import FunctionTransformer

    from skdp.accounting import PrivacyLedger

    ledger = PrivacyLedger(epsilon=2.0)
    with pytest.raises(TypeError, match="RowwiseFunctionTransformer"):
        ledger.attach(make_pipeline(FunctionTransformer(_by_largest),
                                    DPLogisticRegression(data_norm=1.0, classes=[0, 1])))
    ledger.close()


def _data_free_cases():
    from sklearn.preprocessing import (Binarizer, FunctionTransformer, KBinsDiscretizer,
                                       Normalizer, OneHotEncoder, SplineTransformer)

    from skdp.preprocessing import FrameToPandas, RowwiseFunctionTransformer

    class MyNormalizer(Normalizer):   # may override transform: a subclass is not verified
        pass

    free = [None, "passthrough", PolynomialFeatures(2), Normalizer(), Binarizer(threshold=0.5),
            OneHotEncoder(categories=[[0, 1]], handle_unknown="ignore"),
            RowwiseFunctionTransformer(np.abs), FrameToPandas()]
    free.append(FunctionTransformer())   # the identity: sklearn's stand-in for "passthrough"
    not_free = [FunctionTransformer(np.abs), FunctionTransformer(inverse_func=np.abs),
                SplineTransformer(),
                KBinsDiscretizer(), OneHotEncoder(handle_unknown="ignore"), StandardScaler(),
                MyNormalizer()]
    # drop set: scikit-learn warns at transform on a row holding an unknown value
    not_free += [OneHotEncoder(categories=[[0, 1]], handle_unknown=unknown, drop=drop)
                 for unknown in ("ignore", "infrequent_if_exist")
                 for drop in ("first", "if_binary", [1])]
    return [(s, True) for s in free] + [(s, False) for s in not_free]


@pytest.mark.parametrize("step, expected", _data_free_cases(),
                         ids=lambda v: type(v).__name__ if not isinstance(v, bool) else str(v))
def test_data_free_list(step, expected):
    from skdp.accounting._fitted import _is_data_free

    assert _is_data_free(step) is expected


def test_passthrough_blocks_stay_data_free(data):
    # a fitted ColumnTransformer/FeatureUnion holds an identity FunctionTransformer for
    # every "passthrough": that one is verified (func None), a user's func is not
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_union
    from sklearn.preprocessing import Normalizer

    model = DPLogisticRegression(classes=[0, 1], data_norm=3.0, random_state=0)
    # sparse_threshold=0: on an array whose type the fitted ColumnTransformer does not
    # record, scikit-learn's 0.3 could pick the format from a sparse input's density
    for pre in (make_column_transformer((Normalizer(), [0]), remainder="passthrough",
                                        sparse_threshold=0),
                make_union("passthrough", Normalizer())):
        pipe = make_pipeline(pre, model).fit(*data)
        assert fitted_privacy_guaranteed(pipe)
        assert fitted_dp_event(pipe) is pipe[-1].dp_event_
    default = make_pipeline(make_column_transformer((Normalizer(), [0]),
                                                    remainder="passthrough"), model)
    with pytest.raises(TypeError, match="sparse_threshold"):
        fitted_dp_event(default.fit(*data))



@pytest.mark.parametrize("drop", [None, "first", "if_binary", [1]])
def test_a_dropping_one_hot_encoder_warns_on_one_row(drop):
    """Why the data-free list wants drop=None (audit finding F5): with public categories
    and unknown values ignored, scikit-learn's OneHotEncoder warns "Found unknown
    categories" at transform exactly when drop is set and a row holds an unknown value --
    an event of the neighbour with that row only, which no noise covers."""
    import warnings

    from sklearn.preprocessing import OneHotEncoder
    from skdp.accounting._fitted import _is_data_free

    encoder = OneHotEncoder(categories=[[0, 1]], handle_unknown="ignore", drop=drop)
    encoder.fit(np.array([[0], [1]]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        encoder.transform(np.array([[0], [1], [7]]))
    assert (len(caught) > 0) is (drop is not None)
    assert _is_data_free(encoder) is (drop is None)
    X = np.repeat([[0], [1]], 50, axis=0)
    pipe = make_pipeline(encoder, DPLogisticRegression(classes=[0, 1], data_norm=2.0,
                                                       random_state=0)).fit(X, X[:, 0])
    assert fitted_privacy_guaranteed(pipe) is (drop is None)
    if drop is not None:
        with pytest.raises(TypeError, match=r"'onehotencoder' \(OneHotEncoder\) .*drop=None"):
            fitted_dp_event(pipe)


# ---------------------------- column selectors: only the schema ones are verified


class _ReadsRows:
    def __call__(self, df):
        return ["a"] if (df["a"] > 10).any() else ["b"]


def _row_reading_selectors():
    from sklearn.compose import make_column_selector

    class Subclass(_ReadsRows, make_column_selector):
        pass

    return [lambda df: ["a"] if (df["a"] > 10).any() else ["b"], _ReadsRows(),
            Subclass(dtype_include="number")]


def _routing_pipeline(selector, last, in_drop_block=False):
    """The audit's pipeline (F1): the column the DP scaler receives follows row n-1."""
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer

    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 400), rng.uniform(0, 1, 400)
    a[-1] = last
    X = pd.DataFrame({"a": a, "b": b})
    scaler = DPStandardScaler(feature_bounds=(0.0, 1.0), random_state=1)
    blocks = [("num", scaler, selector)]
    if in_drop_block:
        # the dropped block's columns decide what the remainder receives
        blocks = [("gone", "drop", selector)]
    ct = ColumnTransformer(blocks, remainder=scaler if in_drop_block else "drop",
                           sparse_threshold=0)
    pipe = make_pipeline(ct, DPLogisticRegression(classes=[0, 1], data_norm=1.0,
                                                  random_state=2))
    return pipe.fit(X, (a > 0.5).astype(int))


@pytest.mark.parametrize("in_drop_block", [False, True])
@pytest.mark.parametrize("index", [0, 1, 2], ids=["lambda", "callable", "subclass"])
def test_a_selector_that_can_read_rows_voids_the_guarantee(index, in_drop_block):
    """Audit finding (F1): the accounting walked a fitted ColumnTransformer's blocks but
    never its selectors, so a callable of the rows routed column "a" or "b" to the DP
    step (a function of one row, no noise: epsilon = inf) and fitted_dp_event composed
    the steps' events with privacy guaranteed.  Now, as for a FunctionTransformer with a
    func: fitted_dp_event raises and fitted_privacy_guaranteed is False."""
    for last in (0.5, 100.0):
        pipe = _routing_pipeline(_row_reading_selectors()[index], last, in_drop_block)
        assert not fitted_privacy_guaranteed(pipe)
        with pytest.raises(TypeError, match="step 'columntransformer' .*selects the "
                                            "columns of block '(num|gone)' with"):
            fitted_dp_event(pipe)


def test_the_exact_column_selector_is_verified():
    """make_column_selector itself reads names and dtypes only: accepted, and the
    routing is the same on both neighbours."""
    from sklearn.compose import make_column_selector

    pipes = [_routing_pipeline(make_column_selector(pattern="^a$"), last)
             for last in (0.5, 100.0)]
    for pipe in pipes:
        assert fitted_privacy_guaranteed(pipe)
        assert get_epsilon(fitted_dp_event(pipe), 1e-6) < 2.0
    assert [p[0].transformers_[0][2] for p in pipes] == [["a"], ["a"]]

# ------------------------------- containers: only the exact classes are walked


def _container_fit(subclassed, where):
    """A plain scikit-learn pipeline of a DP scaler in a container and a DP model, fitted
    on 400 rows; ``where`` the container: a ColumnTransformer ("ct"), a FeatureUnion
    ("union"), the Pipeline itself ("pipeline"), a Pipeline in a ColumnTransformer block
    ("block").  ``subclassed``: the reading subclasses of
    :mod:`tests._subclassed_containers` instead of the exact classes."""
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    from skdp.preprocessing import DPStandardScaler
    from tests import _subclassed_containers as sub

    ct = sub.BatchMeanColumns if subclassed else ColumnTransformer
    union = sub.RecordingUnion if subclassed else FeatureUnion
    pipeline = sub.RecordingPipeline if subclassed else Pipeline
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0.1, 0.9, 400), "b": rng.uniform(0.1, 0.9, 400)})
    y = (X["a"] > 0.5).astype(int)
    scaler = DPStandardScaler(feature_bounds=(0.0, 1.0), random_state=1)
    model = DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=2)
    if where == "ct":
        pipe = Pipeline([("ct", ct([("num", scaler, ["a", "b"])], sparse_threshold=0)),
                         ("model", model)])
    elif where == "union":
        pipe = Pipeline([("union", union([("scale", scaler)])), ("model", model)])
    elif where == "pipeline":
        pipe = pipeline([("scale", scaler), ("model", model)])
    else:
        block = pipeline([("scale", scaler)])
        pipe = Pipeline([("ct", ColumnTransformer([("num", block, ["a", "b"])],
                                                  sparse_threshold=0)), ("model", model)])
    return pipe.fit(X, y)


_REFUSED_CONTAINERS = {
    "ct": r"step 'ct' \(BatchMeanColumns\) is a subclass of ColumnTransformer",
    "union": r"step 'union' \(RecordingUnion\) is a subclass of FeatureUnion",
    "pipeline": r"^RecordingPipeline is a subclass of Pipeline",
    "block": r"step 'ct__num' \(RecordingPipeline\) is a subclass of Pipeline",
}


@pytest.mark.parametrize("where", sorted(_REFUSED_CONTAINERS))
def test_a_subclassed_container_voids_the_guarantee(where):
    """Audit finding: the accounting of a plain pipeline walked any instance of
    Pipeline, ColumnTransformer or FeatureUnion as a verified container, so a subclass
    whose fit read the whole table (here: records the batch; the ColumnTransformer adds
    a column of the batch mean to every row) had its DP steps' events composed and
    fitted_privacy_guaranteed True.  Now, as for the leaf steps, only the exact classes
    are verified: fitted_dp_event raises, naming the step and its class, and
    fitted_privacy_guaranteed is False."""
    pipe = _container_fit(True, where)
    assert not fitted_privacy_guaranteed(pipe)
    with pytest.raises(TypeError, match=_REFUSED_CONTAINERS[where]):
        fitted_dp_event(pipe)


@pytest.mark.parametrize("where", sorted(_REFUSED_CONTAINERS))
def test_the_exact_containers_are_walked(where):
    """The exact classes are walked as before: both DP steps' events compose."""
    from skdp.accounting._fitted import released_steps

    pipe = _container_fit(False, where)
    assert fitted_privacy_guaranteed(pipe)
    released = released_steps(pipe)
    assert [type(s).__name__ for s in released] == ["DPStandardScaler",
                                                   "DPLogisticRegression"]
    assert fitted_dp_event(pipe) == compose(*(s.dp_event_ for s in released))

# ------------------------------- equal seeds: one stream only at one release site


def _site_fits():
    """``{fit: (step class, fit)}``: fits that open every release site skdp keys from an
    integer ``random_state``, every one seeded with 7."""
    import pandas as pd

    from skdp import DPHuberRegressor, DPNonconvexRegressor
    from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler, DPSplineTransformer,
                                    DPStandardScaler)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 2)) / 4
    y = (X[:, 0] + 0.3 * rng.normal(size=4000) > 0).astype(int)
    t = X[:, 0] * 2 + rng.normal(size=4000)
    cats = pd.DataFrame({"c": rng.choice(list("abcd"), 4000)})
    return {
        "one-hot discovery": lambda: DPOneHotEncoder(random_state=7).fit(cats),
        "spline knots": lambda: DPSplineTransformer(random_state=7).fit(X),
        "robust quantiles": lambda: DPRobustScaler(random_state=7).fit(X),
        "standard scaler": lambda: DPStandardScaler(feature_bounds=(-2, 2),
                                                    random_state=7).fit(X),
        "standard scaler, auto bounds": lambda: DPStandardScaler(
            feature_bounds="auto", random_state=7).fit(X),
        "logistic, base-rate check": lambda: DPLogisticRegression(
            classes=[0, 1], data_norm=1.0, random_state=7).fit(X, y),
        "logistic dpsgd, base-rate check": lambda: DPLogisticRegression(
            classes=[0, 1], data_norm=1.0, solver="dpsgd", random_state=7).fit(X, y),
        "logistic, auto data_norm": lambda: DPLogisticRegression(
            classes=[0, 1], data_norm="auto", random_state=7).fit(X, y),
        "huber, target centre": lambda: DPHuberRegressor(
            data_norm=1.0, target_range=(-4, 4), random_state=7).fit(X, t),
        "nonconvex": lambda: DPNonconvexRegressor(
            data_norm=1.0, y_bound=4.0, random_state=7).fit(X, t),
        "nonconvex, target centre": lambda: DPNonconvexRegressor(
            data_norm=1.0, target_range=(-4, 4), random_state=7).fit(X, t),
    }


def _opened_keys(monkeypatch):
    """``{fit: (release sites of its step, keys it opened)}`` of :func:`_site_fits`."""
    from tests._noise_keys import record_keys

    from skdp.accounting._fitted import _release_sites

    keys = record_keys(monkeypatch)
    opened = {}
    for name, fit in _site_fits().items():
        keys.clear()
        step = fit()
        if "base-rate" in name:
            assert "follow_up_ratio" in step.solver_params_, name   # the check ran
        if "centre" in name:
            assert hasattr(step, "target_centre_"), name
        assert keys, name
        opened[name] = (_release_sites(step), set(keys))
    return opened


def test_two_steps_share_a_key_exactly_when_they_share_a_release_site(monkeypatch):
    """``fitted_dp_event`` refuses equal integer seeds only for steps that share a release
    site (:func:`_release_sites`), and composes the rest as independent.  Both halves are
    checked against the keys the fits open at one seed: steps with a common site open a
    common ChaCha20 key (so the refusal is needed), steps without one never do (so the
    composition is sound).  Before: the family was the subpackage, and a scaler and an
    encoder of one seed were refused although every release site hashes the seed with
    its own spawn key."""
    opened = _opened_keys(monkeypatch)
    for a, (sites_a, keys_a) in opened.items():
        for b, (sites_b, keys_b) in opened.items():
            assert bool(sites_a & sites_b) == bool(keys_a & keys_b), (a, b)
    assert len({sites for sites, _ in opened.values()}) == 4     # 5 sites


def test_every_dp_class_names_its_release_sites():
    """Every public class that releases under a ``random_state`` names the sites its fit
    draws from, all of them in the table of :mod:`skdp._mechanisms._exact` (a class
    without a name would be taken to share every site)."""
    import inspect

    import skdp.linear_model
    import skdp.model_selection
    import skdp.preprocessing
    from skdp._mechanisms._exact import RELEASE_SITES

    modules = (skdp.preprocessing, skdp.linear_model, skdp.model_selection)
    classes = [getattr(module, name) for module in modules for name in module.__all__]
    seeded = [c for c in classes if isinstance(c, type)
              and "random_state" in inspect.signature(c).parameters]
    assert len(seeded) == 9          # 4 transformers, 3 estimators, 2 searches
    for cls in seeded:
        assert cls._release_sites and set(cls._release_sites) <= set(RELEASE_SITES), cls


def _block_events(pipe):
    return [b.dp_event_ for _, b, _ in pipe[0].transformers_ if hasattr(b, "dp_event_")]


def _unit_draws(state):
    """16 discrete Gaussian integers of one scale from a copy of a ChaCha20 state."""
    from skdp._mechanisms._exact import discrete_gaussian_noise

    return discrete_gaussian_noise(state.copy(), 1 << 20, 16)


def test_equal_seeds_at_two_release_sites_compose_and_draw_other_noise(monkeypatch):
    """A ``DPStandardScaler`` and a ``DPOneHotEncoder`` (or ``DPRobustScaler``) given one
    seed draw from two streams: ``fitted_dp_event`` composes them (before: refused as one
    "family"), and the unit noises their streams give at one scale differ, where two
    encoders of one seed draw the same ones."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer

    from tests._noise_keys import record_keys

    from skdp.preprocessing import DPOneHotEncoder, DPRobustScaler, DPStandardScaler

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=2000), "c": rng.choice(list("ab"), 2000)})
    scaler = DPStandardScaler(feature_bounds=(-3, 3), random_state=3)
    ct = ColumnTransformer([("x", scaler, ["x"]), ("c", DPOneHotEncoder(random_state=3),
                                                    ["c"])])
    pipe = make_pipeline(ct).fit(df)
    assert fitted_dp_event(pipe) == compose(*_block_events(pipe))
    ct = ColumnTransformer([("x", DPRobustScaler(random_state=3), ["x"]),
                            ("s", DPStandardScaler(feature_bounds="auto", random_state=3),
                             ["x"])])
    pipe = make_pipeline(ct).fit(df)
    assert fitted_dp_event(pipe) == compose(*_block_events(pipe))

    states = []
    record_keys(monkeypatch, states)
    draws = {}
    for name, step, cols in [("scaler", scaler, ["x"]),
                             ("encoder", DPOneHotEncoder(random_state=3), ["c"]),
                             ("encoder again", DPOneHotEncoder(random_state=3), ["c"])]:
        states.clear()
        step.fit(df[cols])
        draws[name] = [_unit_draws(state) for state in states]
    assert len(draws["scaler"]) == 1 and len(draws["encoder"]) == 1
    assert not np.array_equal(draws["scaler"][0], draws["encoder"][0])
    np.testing.assert_array_equal(draws["encoder"][0], draws["encoder again"][0])


@pytest.mark.parametrize("blocks", [
    ("DPStandardScaler", "DPStandardScaler"),
    ("DPOneHotEncoder", "DPOneHotEncoder"),
    ("DPSplineTransformer", "DPOneHotEncoder"),        # two classes, one site
    ("DPRobustScaler", "DPSplineTransformer"),
])
def test_accounting_still_refuses_equal_seeds_at_one_release_site(blocks):
    """Steps that share a release site and a seed share a stream: refused, whether of one
    class or of two (the one-hot, spline and robust transformers hash the seed alike)."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer

    from skdp import preprocessing

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=2000), "c": rng.choice(list("ab"), 2000)})
    params = {"DPStandardScaler": dict(feature_bounds=(-3, 3)),
              "DPSplineTransformer": dict(n_knots=4)}
    cols = {"DPOneHotEncoder": ["c"]}
    ct = ColumnTransformer([(f"b{i}", getattr(preprocessing, name)(
        random_state=3, **params.get(name, {})), cols.get(name, ["x"]))
        for i, name in enumerate(blocks)], sparse_threshold=0)
    with pytest.raises(ValueError, match="same random_state"):
        fitted_dp_event(make_pipeline(ct).fit(df))


def _scaler_then_huber(copied):
    """A DPStandardScaler and a DPHuberRegressor given one generator: the scaler inside a
    ColumnTransformer (which fits a deep copy of it: the generator copied in its state),
    or as a plain pipeline step (the very object, drawn from in turn)."""
    from sklearn.compose import ColumnTransformer

    from skdp import DPHuberRegressor
    from skdp.preprocessing import DPStandardScaler

    rng = np.random.default_rng(5)
    scaler = DPStandardScaler(feature_bounds=(-3, 3), random_state=rng)
    if copied:
        scaler = ColumnTransformer([("x", scaler, [0, 1])], sparse_threshold=0)
    return make_pipeline(scaler, DPHuberRegressor(data_norm=3.0, y_bound=4.0,
                                                  random_state=rng))


def test_generator_copies_in_one_state_are_refused_whatever_their_classes(monkeypatch):
    """Found while fixing the key families: generators were compared only within a
    subpackage, but every release site draws from a generator given as ``random_state``
    directly.  A scaler in a ColumnTransformer (a copy of the generator) and a model at
    the end (the original, in the same state) drew the same ChaCha20 key -- the model's
    output noise equal to the scaler's moments' -- and ``fitted_dp_event`` composed them
    as independent.  Refused now; the same generator object drawn from in turn by two
    plain steps gives two keys and composes (before: two transformers so were refused)."""
    from tests._noise_keys import record_keys

    from skdp.preprocessing import DPRobustScaler, DPStandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    t = X[:, 0] + rng.normal(size=3000)
    keys = record_keys(monkeypatch)
    copied = _scaler_then_huber(copied=True).fit(X, t)
    assert len(keys) == 2 and len(set(keys)) == 1                    # one stream
    with pytest.raises(ValueError, match="same state"):
        fitted_dp_event(copied)
    keys.clear()
    in_turn = _scaler_then_huber(copied=False).fit(X, t)
    assert len(keys) == 2 and len(set(keys)) == 2
    fitted_dp_event(in_turn)
    shared = np.random.default_rng(6)
    keys.clear()
    two_scalers = make_pipeline(DPStandardScaler(feature_bounds=(-3, 3), random_state=shared),
                                DPRobustScaler(random_state=shared)).fit(X)
    assert len(keys) == 2 and len(set(keys)) == 2
    fitted_dp_event(two_scalers)


def test_a_public_encoder_releases_nothing_and_is_not_composed():
    """Audit finding (F5): a public-category DPOneHotEncoder's ``NoOpDpEvent`` was
    composed with the model's event, so the composition's record (objective
    perturbation's looser zCDP curve) replaced the model's own certificate and the tree no
    longer matched the plan's.  It is left out; a leaky step is never left out."""
    import pandas as pd
    from dp_accounting import NoOpDpEvent, NonPrivateDpEvent

    from skdp.preprocessing import DPOneHotEncoder

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.choice(list("pqr"), 3000)})
    y = (X["c"].eq("p") ^ (rng.random(3000) < 0.2)).astype(int).to_numpy()
    pipe = make_pipeline(DPOneHotEncoder(categories=[list("pqr")], sparse_output=False),
                         DPLogisticRegression(classes=[0, 1], data_norm=1.0,
                                              random_state=0)).fit(X, y)
    assert fitted_dp_event(pipe) is pipe[-1].dp_event_
    encoder_only = make_pipeline(DPOneHotEncoder(categories=[list("pqr")])).fit(X)
    assert fitted_dp_event(encoder_only) == NoOpDpEvent()
    pipe[-1].privacy_guaranteed_ = False
    assert fitted_dp_event(pipe) == NonPrivateDpEvent()



# ------------------- models a private search returns: equal user seeds given back


def _equal_seed_blocks(private=False):
    """Two spline blocks the user gave the same ``random_state`` and a model: a scikit-
    learn Pipeline, or a PrivatePipeline (one DP step of the search)."""
    from sklearn.compose import ColumnTransformer

    from skdp import PrivatePipeline
    from skdp.preprocessing import DPSplineTransformer

    ct = ColumnTransformer([("a", DPSplineTransformer(n_knots=4, random_state=7), [0]),
                            ("b", DPSplineTransformer(n_knots=4, random_state=7), [1])],
                           sparse_threshold=0)
    model = DPLogisticRegression(classes=[0, 1], data_norm=2.0,
                                 solver="output_perturbation")
    if private:
        return PrivatePipeline([("ct", ct), ("model", model)])
    return make_pipeline(ct, model)


def _search_data(n=1200):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (n, 2))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _fitted_block_seeds(pipe):
    return [block.random_state for _, block, _ in pipe[0].transformers_]


@pytest.mark.parametrize("private", [False, True], ids=["Pipeline", "PrivatePipeline"])
@pytest.mark.parametrize("random_state", [None, 0])
def test_equal_user_seeds_given_back_by_a_search_compose(private, random_state):
    """Review finding: a private search keys every DP step of every fit itself (distinct
    derived keys, or keys from the OS) and gives the returned model back its user's
    ``random_state``; with two blocks given ``random_state=7`` by their user,
    ``fitted_dp_event(best_estimator_)`` refused the model ("same random_state") although
    its releases drew distinct keys.  It now composes them, and the model still carries
    the user's seeds, not its keys."""
    from skdp.model_selection import DPGridSearchCV

    X, y = _search_data()
    grid = {("model__alpha" if private else "dplogisticregression__alpha"): [0.01, 0.1]}
    search = DPGridSearchCV(_equal_seed_blocks(private), grid, epsilon=3.0,
                            random_state=random_state).fit(X, y)
    best = search.best_estimator_
    assert _fitted_block_seeds(best) == [7, 7]           # the user's values, no key
    assert 0 < get_epsilon(fitted_dp_event(best), 1e-6) < 3.0


def test_models_of_a_cross_validation_with_equal_user_seeds_compose():
    """The models ``dp_cross_validate(return_estimator=True)`` returns: the same."""
    from skdp.model_selection import dp_cross_validate

    X, y = _search_data()
    out = dp_cross_validate(_equal_seed_blocks(), X, y, epsilon=3.0, cv=3, random_state=0,
                            return_estimator=True)
    for model in out["estimator"]:
        assert _fitted_block_seeds(model) == [7, 7]
        assert 0 < get_epsilon(fitted_dp_event(model), 1e-6) < 3.0


def test_a_refit_of_a_returned_model_is_judged_on_its_own_seeds():
    """What excuses the equal seeds is the search's keying of *that* fit: once the model
    (or a step of it) is refitted, its steps drew their keys from the user's seeds, and
    two equal ones are one stream again -- refused, whether the pipeline is refitted (its
    ColumnTransformer fits fresh clones), cloned and fitted, or the fitted blocks are
    refitted in place.  Changing a seed parameter without refitting changes no release."""
    from sklearn.base import clone

    from skdp.model_selection import DPGridSearchCV

    X, y = _search_data()
    search = DPGridSearchCV(_equal_seed_blocks(), {"dplogisticregression__alpha": [0.01]},
                            epsilon=3.0, random_state=0).fit(X, y)
    best = search.best_estimator_
    best.set_params(columntransformer__a__random_state=8)     # a parameter, no refit
    fitted_dp_event(best)
    for _, block, cols in best[0].transformers_:                 # refitted in place
        block.fit(X[:, cols])
    with pytest.raises(ValueError, match="same random_state"):
        fitted_dp_event(best)

    search = DPGridSearchCV(_equal_seed_blocks(), {"dplogisticregression__alpha": [0.01]},
                            epsilon=3.0, random_state=0).fit(X, y)
    best = search.best_estimator_
    with pytest.raises(ValueError, match="same random_state"):
        fitted_dp_event(clone(best).fit(X, y))
    with pytest.raises(ValueError, match="same random_state"):
        fitted_dp_event(best.fit(X, y))
    best.set_params(columntransformer__a__random_state=8)
    fitted_dp_event(best.fit(X, y))                              # its own, distinct seeds


def test_records_of_a_search_excuse_only_its_own_model():
    """The record stands for the keys of one returned model: a pickled or deep-copied
    model keeps it; the steps of two returned models (two cross-validation folds, keyed
    apart but by one procedure -- and two searches of one seed derive the same keys), or
    one fitted step placed twice, are judged on their seeds.  The record carries no key:
    the user's seeds and the record are all a returned step holds."""
    import copy
    import pickle

    from sklearn.compose import ColumnTransformer

    from skdp.accounting._fitted import KEYED_BY
    from skdp.model_selection import dp_cross_validate

    X, y = _search_data()
    out = dp_cross_validate(_equal_seed_blocks(), X, y, epsilon=3.0, cv=3, random_state=0,
                            return_estimator=True)
    first, second = out["estimator"][:2]
    for model in (pickle.loads(pickle.dumps(first)), copy.deepcopy(first)):
        fitted_dp_event(model)
    record = getattr(first[0].transformers_[0][1], KEYED_BY)
    assert "withheld" in repr(record) and "7" not in repr(record)
    assert set(vars(record)) == {"model", "path", "_fitted"}
    a, b = first[0].transformers_[0][1], second[0].transformers_[1][1]
    for blocks in ([("a", a, [0]), ("b", b, [1])], [("a", a, [0]), ("b", a, [1])]):
        ct = ColumnTransformer(blocks, sparse_threshold=0)
        ct.transformers_ = blocks          # fitted parts put together by hand
        with pytest.raises(ValueError, match="same random_state"):
            fitted_dp_event(ct)
