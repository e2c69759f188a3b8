"""Private search and cross-validation on Dask collections (a raw Dask DataFrame through
a private pipeline, a Dask array through an estimator): the folds are the in-memory folds
(positions of a public permutation of ``0 .. n - 1``), each fit runs where the partitions
are, and each validation score is summed per partition on its worker.

Compared with the in-memory run of the same rows and ``random_state``: with objective
perturbation (whose Dask fit is the in-memory model up to the rounding of its partition
sums) the selection, the released scores, the event and the refitted model are the
in-memory ones, and so with DP-SGD (whose Dask steps read the in-memory batches with the
in-memory noise).
"""

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from sklearn.utils import _safe_indexing  # noqa: E402

from skdp import DPLogisticRegression, PrivatePipeline, make_private_pipeline  # noqa: E402
from skdp.exceptions import PrivacyLeakWarning  # noqa: E402
from skdp.model_selection import (DPGridSearchCV, DPRandomizedSearchCV,  # noqa: E402
                                  dp_cross_validate)
from skdp.model_selection._common import public_splits  # noqa: E402
from skdp.model_selection._dask_folds import DaskFolds  # noqa: E402

from .test_pipeline_search import SCHEMA, _table  # noqa: E402

GRID = {"model__alpha": [1e-2, 1e-1]}


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _pipe(solver="objective_perturbation"):
    return make_private_pipeline(DPLogisticRegression(classes=[0, 1], solver=solver),
                                 epsilon=1.0, **SCHEMA)


def _frames(df, y, x_parts=3, y_parts=2):
    return dd.from_pandas(df, npartitions=x_parts), dd.from_pandas(pd.Series(y),
                                                                   npartitions=y_parts)


def _with_empty_partition(df, y):
    half = len(df) // 2
    frame = dd.concat([dd.from_pandas(df.iloc[:half], npartitions=2),
                       dd.from_pandas(df.iloc[:0], npartitions=1),
                       dd.from_pandas(df.iloc[half:], npartitions=1)])
    return frame, dd.from_pandas(pd.Series(y), npartitions=3)


@pytest.mark.parametrize("cv", [0.2, 3])
def test_split_takes_the_in_memory_rows_in_their_order(cv):
    """Every training part is the in-memory ``_safe_indexing`` of the sorted indices, every
    validation fold's rows are scored once -- with an empty partition and partitions whose
    rows all fall in one fold (many small partitions)."""
    df, y = _table(300)
    for frame, labels in (_frames(df, y, x_parts=60, y_parts=7),
                          _with_empty_partition(df, y)):
        folds = DaskFolds(frame, labels)
        assert folds.n == 300 and folds.lazy
        whole = frame.compute()         # dask's dtypes (its strings), the rows of df
        splits = public_splits(300, cv, np.random.default_rng(0))
        for (tr, va), (X_train, y_train, val, y_val) in zip(splits, folds.split(splits)):
            assert y_val is None
            pd.testing.assert_frame_equal(X_train.compute(), _safe_indexing(whole, tr))
            np.testing.assert_array_equal(y_train.compute(), y[tr])
            seen = sum(int(np.count_nonzero(lab == val.s)) for lab in val.labels)
            assert seen == va.shape[0]


@pytest.mark.parametrize("cv", [0.2, 3])
def test_pipeline_search_on_a_dask_dataframe_is_the_in_memory_search(cv):
    df, y = _table()
    mem = DPGridSearchCV(_pipe(), GRID, epsilon=1.0, cv=cv, random_state=0).fit(df, y)
    lazy = DPGridSearchCV(_pipe(), GRID, epsilon=1.0, cv=cv, random_state=0).fit(
        *_frames(df, y))
    assert lazy.privacy_guaranteed_ and lazy.epsilon_ == mem.epsilon_ <= 1.0
    assert lazy.dp_event_ == mem.dp_event_ and lazy.budget_split_ == mem.budget_split_
    assert lazy.best_params_ == mem.best_params_
    # accuracy sums are integers: the released score is the same draw on the same value
    assert lazy.best_score_ == mem.best_score_
    a, b = mem.best_estimator_[-1].coef_, lazy.best_estimator_[-1].coef_
    assert np.abs(a - b).max() <= 1e-6 * np.abs(a).max()
    # the refitted pipeline predicts the raw Dask rows lazily
    pred = lazy.best_estimator_.predict(_frames(df, y)[0])
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(pred.compute(), mem.best_estimator_.predict(df))


def test_holdout_without_refit_keeps_the_training_parts_model():
    df, y = _table()
    kw = dict(epsilon=1.0, random_state=3, refit=False, n_iter=2)
    mem = DPRandomizedSearchCV(_pipe(), GRID, **kw).fit(df, y)
    lazy = DPRandomizedSearchCV(_pipe(), GRID, **kw).fit(*_with_empty_partition(df, y))
    assert lazy.best_params_ == mem.best_params_ and lazy.best_score_ == mem.best_score_
    a, b = mem.best_estimator_[-1].coef_, lazy.best_estimator_[-1].coef_
    assert np.abs(a - b).max() <= 1e-6 * np.abs(a).max()


def test_cross_validation_on_a_dask_dataframe_is_the_in_memory_one():
    df, y = _table()
    mem = dp_cross_validate(_pipe(), df, y, epsilon=1.0, cv=3, random_state=0)
    lazy = dp_cross_validate(_pipe(), *_frames(df, y), epsilon=1.0, cv=3, random_state=0)
    np.testing.assert_array_equal(lazy["test_score"], mem["test_score"])
    assert lazy["epsilon"] == mem["epsilon"] <= 1.0 and lazy["dp_event"] == mem["dp_event"]
    assert lazy["budget_split"] == mem["budget_split"]
    # an in-memory y with Dask X: aligned by position
    also = dp_cross_validate(_pipe(), _frames(df, y)[0], y, epsilon=1.0, cv=3,
                             random_state=0)
    np.testing.assert_array_equal(also["test_score"], mem["test_score"])


def test_dpsgd_pipeline_search_on_a_dask_dataframe_is_the_in_memory_search():
    """The pipeline's auto solver below epsilon 5, DP-SGD: its Dask steps read the
    in-memory batches with the in-memory noise, so the selection, the released score, the
    events and the refitted model are the in-memory search's."""
    df, y = _table()
    mem = DPGridSearchCV(_pipe("auto"), GRID, epsilon=1.0, random_state=0).fit(df, y)
    lazy = DPGridSearchCV(_pipe("auto"), GRID, epsilon=1.0, random_state=0).fit(
        *_frames(df, y))
    assert lazy.best_estimator_[-1].solver_ == "dpsgd"
    assert lazy.dp_event_ == mem.dp_event_ and lazy.epsilon_ == mem.epsilon_ <= 1.0
    assert lazy.best_params_ == mem.best_params_ and lazy.best_score_ == mem.best_score_
    a, b = mem.best_estimator_[-1].coef_, lazy.best_estimator_[-1].coef_
    assert np.abs(a - b).max() <= 1e-9 * np.abs(a).max()
    assert lazy.score(df, y) > 0.6


def test_multinomial_search_with_string_labels_is_the_in_memory_search():
    """A three-class string label as a Dask Series (object partitions, split and encoded on
    the workers) under the multinomial model's default, DP-SGD."""
    df, y3 = _table(3000, classes=3)
    labels = np.array(["low", "mid", "high"], dtype=object)[y3]

    def pipe():
        return make_private_pipeline(DPLogisticRegression(classes=["high", "low", "mid"]),
                                     epsilon=1.0, **SCHEMA)

    mem = DPGridSearchCV(pipe(), GRID, epsilon=1.0, cv=3, random_state=0).fit(df, labels)
    lazy = DPGridSearchCV(pipe(), GRID, epsilon=1.0, cv=3, random_state=0).fit(
        dd.from_pandas(df, npartitions=3), dd.from_pandas(pd.Series(labels), npartitions=2))
    assert lazy.best_estimator_[-1].solver_ == "dpsgd"
    assert lazy.best_params_ == mem.best_params_ and lazy.best_score_ == mem.best_score_
    a, b = mem.best_estimator_[-1].coef_, lazy.best_estimator_[-1].coef_
    assert np.abs(a - b).max() <= 1e-9 * np.abs(a).max()


def test_estimator_search_on_a_dask_array_is_the_in_memory_search():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=3000) > 0).astype(int)
    est = DPLogisticRegression(classes=[0, 1], data_norm=3.0,
                               solver="objective_perturbation")
    grid = {"alpha": [0.05, 0.2]}      # above objective perturbation's floor
    mem = DPGridSearchCV(est, grid, epsilon=1.0, cv=3, random_state=0).fit(X, y)
    lazy = DPGridSearchCV(est, grid, epsilon=1.0, cv=3, random_state=0).fit(
        da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=1000))
    assert lazy.best_params_ == mem.best_params_ and lazy.best_score_ == mem.best_score_
    assert lazy.dp_event_ == mem.dp_event_
    np.testing.assert_allclose(lazy.best_estimator_.coef_, mem.best_estimator_.coef_,
                               rtol=0, atol=1e-6 * np.abs(mem.best_estimator_.coef_).max())


@pytest.mark.parametrize("solver", ["objective_perturbation", "dpsgd"])
def test_a_dask_array_search_plans_without_placeholder_rows(monkeypatch, solver):
    """The search's probe of an estimator on a Dask array reads its public plan: no n-row
    placeholder on the client (before, n x d zeros per probed size), and the real fits
    release the planned events (the search checks each against it)."""
    from skdp.model_selection import _common

    def no_placeholder(*args, **kwargs):
        raise AssertionError("a placeholder of n rows was built on the client")

    monkeypatch.setattr(_common, "placeholder_data", no_placeholder)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(classes=[0, 1], data_norm=3.0, solver=solver, max_iter=50)
    search = DPGridSearchCV(est, {"alpha": [0.05, 0.2]}, epsilon=1.0, cv=2,
                            random_state=0).fit(da.from_array(X, chunks=(500, 3)),
                                                da.from_array(y, chunks=500))
    assert search.privacy_guaranteed_ and search.epsilon_ <= 1.0


def test_label_set_read_from_dask_partitions_voids_the_guarantee():
    df, y = _table()
    pipe = make_private_pipeline(DPLogisticRegression(solver="objective_perturbation"),
                                 epsilon=1.0, **SCHEMA)
    with pytest.warns(PrivacyLeakWarning, match=r"label set as classes=\[\.\.\.\]"):
        search = DPGridSearchCV(pipe, GRID, epsilon=1.0, random_state=0).fit(
            *_frames(df, y))
    assert not search.privacy_guaranteed_ and search.epsilon_ == np.inf
    np.testing.assert_array_equal(search.classes_, [0, 1])


def test_in_memory_x_with_a_dask_y_is_refused_before_any_fit(monkeypatch):
    df, y = _table(600)

    def no_fit(self, *args, **kwargs):
        raise AssertionError("a fit ran before the refusal")

    monkeypatch.setattr(PrivatePipeline, "fit", no_fit)
    labels = _frames(df, y)[1]
    search = DPGridSearchCV(_pipe(), GRID, epsilon=1.0, random_state=0)
    for run, who in ((lambda: search.fit(df, labels), "DPGridSearchCV"),
                     (lambda: dp_cross_validate(_pipe(), df, labels, epsilon=1.0),
                      "dp_cross_validate")):
        with pytest.raises(ValueError, match=f"{who} was given an in-memory X and a Dask "
                                             r"y.*y\.compute\(\)"):
            run()
    assert not hasattr(search, "best_params_")


def test_a_ledger_is_charged_on_the_client_before_any_fit_on_the_workers(monkeypatch):
    """The search and cross-validation of a Dask DataFrame reserve their planned event in
    their privacy_ledger on the client, before the first fit on the workers: a short
    budget refuses them with no fit made; with enough, one entry each, their event."""
    from skdp.accounting import PrivacyLedger
    from skdp.accounting._ledger import event_to_json
    from skdp.exceptions import BudgetExceededError

    df, y = _table(600)
    fits = []
    original = PrivatePipeline.fit

    def counted(self, *args, **kwargs):
        fits.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PrivatePipeline, "fit", counted)
    runs = (lambda led: DPGridSearchCV(_pipe(), GRID, epsilon=1.0, random_state=0,
                                       privacy_ledger=led).fit(*_frames(df, y)).dp_event_,
            lambda led: dp_cross_validate(_pipe(), *_frames(df, y), epsilon=1.0, cv=3,
                                          random_state=0, privacy_ledger=led)["dp_event"])
    with PrivacyLedger(epsilon=0.5) as short:
        for run in runs:
            with pytest.raises(BudgetExceededError, match="Nothing was released"):
                run(short)
        assert fits == [] and len(short) == 0
    with PrivacyLedger(epsilon=5.0) as ledger:
        events = [run(ledger) for run in runs]
        assert fits
        assert [event_to_json(e.event) for e in ledger.entries()] == [
            event_to_json(e) for e in events]


def test_mismatched_rows_are_refused_before_any_fit(monkeypatch):
    df, y = _table(600)

    def no_fit(self, *args, **kwargs):
        raise AssertionError("a fit ran before the refusal")

    monkeypatch.setattr(PrivatePipeline, "fit", no_fit)
    with pytest.raises(ValueError, match="X has 600 rows and y has 599"):
        DPGridSearchCV(_pipe(), GRID, epsilon=1.0).fit(*_frames(df, y[:599]))
    with pytest.raises(ValueError, match="different numbers of rows"):
        dp_cross_validate(DPLogisticRegression(classes=[0, 1], data_norm=1.0),
                          da.zeros((600, 2), chunks=100), da.zeros(599, chunks=100),
                          epsilon=1.0)


def test_rows_stay_on_the_workers():
    """On a LocalCluster of process workers, what the client gathers during the search,
    one gather at a time: partition row counts, the partitions' score sums and the fits'
    sums and count trees -- never a fold's rows or its per-row scores."""
    distributed = pytest.importorskip("distributed")
    from .._dask_received import received_sizes

    df, y = _table(30_000)     # a validation fold (10,000 rows) exceeds any count tree
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame, labels = _frames(df, y, x_parts=4, y_parts=4)
        frame, labels = frame.persist(), labels.persist()
        with received_sizes(per_call=True) as sizes:
            search = DPGridSearchCV(_pipe(), GRID, epsilon=1.0, cv=3,
                                    random_state=0).fit(frame, labels)
    assert search.privacy_guaranteed_
    # the largest: a spline column's count tree (its 4096 leaves), summed on the workers
    assert sizes and max(sizes) <= 2 * 4096


def test_a_folds_partition_sums_move_by_one_clipped_term_on_adversarial_neighbours():
    """The sum a Dask fold releases (with noise): per-row terms clipped by the scorer on
    the workers, partition sums added in order.  Replacing one validation row by an
    adversarial one (a target 10^12 away, a non-finite one) moves it by at most
    ``upper - lower`` -- the sensitivity the noise is calibrated for (times its rounding
    allowance) -- and the honest worst case attains it (the test can fail), with uneven
    partitions."""
    from skdp import DPHuberRegressor
    from skdp.model_selection import make_private_scorer
    from skdp.model_selection._dask_folds import fold_score_sum

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = X @ np.array([1.0, -1.0, 0.5])
    model = DPHuberRegressor(data_norm=3.0, random_state=0).fit(X, y)
    scorer = make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=4.0,
                                 greater_is_better=False)
    splits = public_splits(300, 3, np.random.default_rng(1))
    chunks = (7, 150, 143)
    worst = 0.0
    for bad in (1e12, -1e12, np.nan, np.inf):
        for row in splits[0][1][:5]:          # validation rows of fold 0
            y2 = y.copy()
            y2[row] = bad
            sums = []
            for target in (y, y2):
                folds = DaskFolds(da.from_array(X, chunks=(chunks, 3)),
                                  da.from_array(target, chunks=(chunks,)))
                val = folds.split(splits)[0][2]
                sums.append(fold_score_sum(scorer, model, val))
            worst = max(worst, abs(sums[0] - sums[1]))
    m = splits.validation_sizes[0]
    assert worst <= scorer.released_sensitivity(m) * m
    assert worst >= 0.9 * scorer.score_range


def test_a_batch_row_score_moves_a_dask_fold_by_one_term():
    """A user's row score that reads its batch (the majority of right predictions) would
    see each partition's validation rows on Dask and move every term of a partition when
    one row is replaced.  It is called one row at a time, so the fold's sum moves by at
    most ``upper - lower`` and equals the in-memory sum (uneven partitions)."""
    from skdp.model_selection import make_private_scorer
    from skdp.model_selection._dask_folds import fold_score_sum

    from .test_scorer_and_repetitions import _batch_majority

    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 2))
    model = DPLogisticRegression(classes=[0, 1], data_norm=3.0, random_state=0).fit(
        X, (X[:, 0] > 0).astype(int))
    pred = model.predict(X)
    scorer = make_private_scorer(_batch_majority, lower=0.0, upper=1.0)
    splits = public_splits(n, 2, np.random.default_rng(1))
    val = splits[0][1]
    chunks = (100, 100, 100, 100)
    # each partition's validation rows half right, half wrong; the neighbour flips one
    y = pred.copy()
    for start in (0, 100, 200, 300):
        rows = val[(val >= start) & (val < start + 100)]
        y[rows[(len(rows) + 1) // 2:]] = 1 - pred[rows[(len(rows) + 1) // 2:]]
    y2 = y.copy()
    y2[val[0]] = 1 - y[val[0]]
    sums = []
    for target in (y, y2):
        folds = DaskFolds(da.from_array(X, chunks=(chunks, 2)),
                          da.from_array(target, chunks=(chunks,)))
        sums.append(fold_score_sum(scorer, model, folds.split(splits)[0][2]))
        in_memory = scorer.row_values(model, X[val], target[val]).sum()
        assert sums[-1] == in_memory
    assert abs(sums[0] - sums[1]) <= scorer.score_range


def test_cross_validation_on_a_dask_dataframe_plans_without_placeholder_rows(monkeypatch):
    """Review finding: once dp_cross_validate planned every estimator's budget before its
    fits, an estimator on a Dask DataFrame was probed with an in-memory placeholder of the
    training rows on the client; it now reads the estimator's public plan, as on a Dask
    array."""
    import pandas as pd

    from skdp.model_selection import _common, dp_cross_validate

    def no_placeholder(*args, **kwargs):
        raise AssertionError("a placeholder of n rows was built on the client")

    monkeypatch.setattr(_common, "placeholder_data", no_placeholder)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3000, 4)) / 2
    y = (X[:, 0] > 0).astype(int)
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=3)
    result = dp_cross_validate(DPLogisticRegression(data_norm=1.0, classes=[0, 1]), frame,
                               dd.from_pandas(pd.Series(y), npartitions=3), epsilon=1.0,
                               cv=3, random_state=0)
    assert result["epsilon"] <= 1.0


def _sklearn_pipe(solver="objective_perturbation"):
    """A scikit-learn ``Pipeline`` (not a PrivatePipeline): a DP spline basis, then the model;
    the search gives each DP step its own share."""
    from sklearn.pipeline import make_pipeline

    from skdp.preprocessing import DPSplineTransformer

    return make_pipeline(DPSplineTransformer(n_knots=5),
                         DPLogisticRegression(classes=[0, 1], data_norm=3.0, solver=solver))


SKLEARN_GRID = {"dplogisticregression__alpha": [0.05, 0.2]}


def _numeric_table(n=2000):
    df, y = _table(n)
    return df[["age", "income"]], y


@pytest.mark.parametrize("as_array", [False, True])
def test_a_sklearn_pipeline_on_dask_plans_without_placeholder_rows(monkeypatch, as_array):
    """Audit finding: a search or cross-validation of a scikit-learn Pipeline (DP
    transformers, then an skdp estimator) on a Dask DataFrame or array probed each fit's
    event with an in-memory placeholder of the training rows on the client (gigabytes at
    10^7 - 10^8 rows).  The transformers are now fitted on a lazy placeholder on the
    workers and the model's event is its public plan; the real fits release it."""
    from skdp.model_selection import _common

    def no_placeholder(*args, **kwargs):
        raise AssertionError("a placeholder of n rows was built on the client")

    monkeypatch.setattr(_common, "placeholder_data", no_placeholder)
    df, y = _numeric_table()
    frame, labels = _frames(df, y, x_parts=2, y_parts=2)
    if as_array:
        frame = da.from_array(df.to_numpy(), chunks=(1000, 2))
    search = DPGridSearchCV(_sklearn_pipe(), SKLEARN_GRID, epsilon=1.0, cv=2,
                            random_state=0).fit(frame, labels)
    assert search.privacy_guaranteed_ and search.epsilon_ <= 1.0
    result = dp_cross_validate(_sklearn_pipe(), frame, labels, epsilon=1.0, cv=2,
                               random_state=0)
    assert result["epsilon"] <= 1.0


@pytest.mark.parametrize("solver", ["objective_perturbation", "dpsgd"])
def test_a_sklearn_pipeline_on_a_dask_dataframe_is_the_in_memory_search(solver):
    """The lazily planned events are the in-memory placeholder fits' (the real fits are
    checked against them): the search and the cross-validation of a scikit-learn Pipeline
    on a Dask DataFrame of 2,000 rows in 2 partitions report the pandas runs' events,
    epsilon and released scores."""
    from sklearn.base import clone

    from skdp.model_selection._common import probe
    from skdp.model_selection._lazy_probe import lazy_pipeline_probe

    df, y = _numeric_table()
    frame, labels = _frames(df, y, x_parts=2, y_parts=2)
    kw = dict(epsilon=1.0, cv=2, random_state=0)
    mem = DPGridSearchCV(_sklearn_pipe(solver), SKLEARN_GRID, **kw).fit(df, y)
    lazy = DPGridSearchCV(_sklearn_pipe(solver), SKLEARN_GRID, **kw).fit(frame, labels)
    assert lazy.privacy_guaranteed_ and lazy.epsilon_ == mem.epsilon_ <= 1.0
    assert lazy.dp_event_ == mem.dp_event_ and lazy.budget_split_ == mem.budget_split_
    assert lazy.best_params_ == mem.best_params_ and lazy.best_score_ == mem.best_score_
    mem_cv = dp_cross_validate(_sklearn_pipe(solver), df, y, **kw)
    lazy_cv = dp_cross_validate(_sklearn_pipe(solver), frame, labels, **kw)
    assert lazy_cv["epsilon"] == mem_cv["epsilon"] <= 1.0
    assert lazy_cv["dp_event"] == mem_cv["dp_event"]
    np.testing.assert_array_equal(lazy_cv["test_score"], mem_cv["test_score"])
    # the planned event itself, at a training size, is the placeholder fit's
    est = clone(lazy.best_estimator_).set_params(dpsplinetransformer__random_state=1,
                                                 dplogisticregression__random_state=2)
    in_memory = probe(est, df, y, 1000, np.array([0, 1]))
    assert lazy_pipeline_probe(est, df.iloc[:0], 1000) == in_memory


def test_the_lazy_probe_composes_a_width_following_model_as_fitted_dp_event_does():
    """Behind the spline's released width an ``alpha="auto"`` model's event follows the
    width: the lazy plan composes the pair dominating its (epsilon, delta), as
    fitted_dp_event does on the in-memory placeholder fit; with a public
    auto_n_features both compose its exact event."""
    from skdp.accounting import DeltaDpEvent
    from skdp.model_selection._common import probe
    from skdp.model_selection._lazy_probe import lazy_pipeline_probe

    df, y = _numeric_table()
    pipe = _sklearn_pipe().set_params(dpsplinetransformer__random_state=1,
                                      dplogisticregression__random_state=2)
    lazy = lazy_pipeline_probe(pipe, df.iloc[:0], 1000)
    assert lazy == probe(pipe, df, y, 1000, np.array([0, 1]))
    assert lazy[0].events[-1] == DeltaDpEvent(pipe[-1].delta)
    pinned = pipe.set_params(dplogisticregression__auto_n_features=9)
    lazy = lazy_pipeline_probe(pinned, df.iloc[:0], 1000)
    assert lazy == probe(pinned, df, y, 1000, np.array([0, 1]))
    assert not isinstance(lazy[0].events[-1], DeltaDpEvent)


def test_a_sklearn_pipeline_holding_a_private_pipeline_is_refused_on_dask(monkeypatch):
    """A PrivatePipeline inside a scikit-learn Pipeline (its plan splits its own budget) is
    not planned lazily: refused before any fit, and without n placeholder rows."""
    from sklearn.pipeline import Pipeline

    from skdp.model_selection import _common, _dask_folds
    from skdp.preprocessing import DPSplineTransformer

    def refuse(*args, **kwargs):
        raise AssertionError("fitted, or built a placeholder of n rows on the client")

    monkeypatch.setattr(_common, "placeholder_data", refuse)
    monkeypatch.setattr(_dask_folds, "fit_fold", refuse)
    df, y = _numeric_table()
    pipe = Pipeline([("basis", PrivatePipeline([("spline", DPSplineTransformer(n_knots=5))])),
                     ("model", DPLogisticRegression(classes=[0, 1], data_norm=3.0))])
    with pytest.raises(TypeError, match="PrivatePipeline inside a scikit-learn Pipeline"):
        dp_cross_validate(pipe, *_frames(df, y, x_parts=2, y_parts=2), epsilon=1.0, cv=2,
                          random_state=0)


def test_an_overflowing_validation_row_is_scored_silently_on_the_workers():
    """Audit finding: each partition's validation rows were scored on its worker with the
    model's predict, ``X @ coef_`` on unclipped rows; a finite extreme row overflowed it
    and numpy warned on the neighbour only, outside the release (an exception under
    ``simplefilter("error")``).  Now no warning, no exception, finite released scores --
    with partitions scored on concurrent threads, whose quieting leaves the warning filters
    as they were."""
    from .test_search import _extreme_row_data

    X, y, _ = _extreme_row_data()
    est = DPLogisticRegression(data_norm=1.0, classes=[0, 1])
    parts = lambda: (da.from_array(X, chunks=(50, 3)), da.from_array(y, chunks=50))  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        filters = list(warnings.filters)
        search = DPGridSearchCV(est, {"alpha": [0.01, 0.1]}, epsilon=1.0, cv=3,
                                random_state=0).fit(*parts())
        res = dp_cross_validate(est, *parts(), epsilon=1.0, cv=3, random_state=0)
        assert warnings.filters == filters
    assert np.isfinite(search.best_score_)
    assert np.all(np.isfinite(res["test_score"]))


def test_a_subclassed_pipeline_on_dask_is_refused_before_any_fit():
    """Audit finding: the lazy probe of a scikit-learn Pipeline on a Dask collection took
    any subclass of Pipeline (its fit, transform or _iter may read the whole table) for
    the verified container, planned it and fitted it on the private partitions.  It is
    refused now before anything is fitted (placeholder or private): the container check
    comes first, naming the class."""
    from skdp.model_selection import _lazy_probe
    from tests._subclassed_containers import RecordingPipeline

    def no_fit(*args, **kwargs):
        raise AssertionError("the pipeline was fitted")

    df, y = _numeric_table()
    frame, labels = _frames(df, y, x_parts=2, y_parts=2)
    pipe = RecordingPipeline(_sklearn_pipe().steps)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_lazy_probe, "_fit_lazily", no_fit)
        with pytest.raises(TypeError, match="RecordingPipeline is a subclass of Pipeline"):
            DPGridSearchCV(pipe, SKLEARN_GRID, epsilon=1.0, cv=2,
                           random_state=0).fit(frame, labels)
        with pytest.raises(TypeError, match="RecordingPipeline is a subclass of Pipeline"):
            dp_cross_validate(pipe, frame, labels, epsilon=1.0, cv=2, random_state=0)
