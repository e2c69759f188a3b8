"""PrivacyLedger: composition, budget refusal before the fit, survival of clone / pickle /
joblib processes / Dask workers, atomic concurrent spending, unreachable stores."""

import copy
import multiprocessing
import os
import pickle
import shutil
import warnings

import dp_accounting
import joblib
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skdp import DPHuberRegressor, DPLogisticRegression
from skdp.accounting import (
    LedgerUnreachableError,
    PrivacyLedger,
    compose,
    gaussian_event,
    gaussian_mu_for,
    get_epsilon,
    poisson_gaussian_event,
    pure_dp_event,
)
from skdp.accounting._gaussian import gaussian_epsilon
from skdp.accounting._ledger import _rebuild, event_from_json, event_to_json
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning
from skdp.linear_model import _base
from skdp.preprocessing import DPStandardScaler

DELTA = 1e-6
GRID = {"alpha": [0.01, 0.1, 1.0]}
CV = 2
N_SEARCH_FITS = len(GRID["alpha"]) * CV + 1  # folds + refit


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    return X, y


@pytest.fixture
def ledger():
    led = PrivacyLedger(epsilon=None, delta=DELTA)
    yield led
    led.close()


def _clf(ledger=None, epsilon=0.5, **kw):
    """A fit releasing one Gaussian mechanism (closed-form composition in these tests)."""
    kw = {"solver": "output_perturbation", "alpha": 0.01, **kw}
    return DPLogisticRegression(classes=[0, 1], 
        epsilon=epsilon, delta=DELTA, data_norm=2.0, random_state=0, privacy_ledger=ledger, **kw
    )


def _pld_epsilon(events, delta):
    """Independent check: dp-accounting's own PLD accountant, REPLACE_ONE, fine grid."""
    acc = PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4
    )
    for ev in events:
        acc.compose(ev)
    return acc.get_epsilon(delta)


# ----------------------------------------------------------------------------------------
# composition


def test_total_matches_dp_accounting_mixed_sequence(ledger):
    events = [
        gaussian_event(3.0, 1.0),
        pure_dp_event(0.3),
        poisson_gaussian_event(0.05, 1.5, 40),
        gaussian_event(5.0, 2.0),
    ]
    for ev in events:
        ledger.record(ev, source="test")
    assert len(ledger) == 4
    expected = _pld_epsilon(events, DELTA)
    assert ledger.epsilon_spent() == pytest.approx(expected, rel=2e-3)
    # more releases cost strictly more
    assert ledger.epsilon_spent() > _pld_epsilon(events[:3], DELTA)


def test_total_of_gaussian_fits_matches_closed_form_and_pld(data, ledger):
    X, y = data
    fitted = [_clf(ledger, epsilon=e).fit(X, y) for e in (0.3, 0.5, 1.0)]
    fitted.append(
        DPHuberRegressor(epsilon=0.7, delta=DELTA, data_norm=2.0, random_state=0,
                         solver="output_perturbation", alpha=0.01,
                         privacy_ledger=ledger).fit(X, X[:, 0])
    )
    events = [est.dp_event_ for est in fitted]
    # closed form: mu_total^2 = sum mu_i^2, each mu_i = gaussian_mu_for(eps_i, delta)
    mu = np.sqrt(sum(gaussian_mu_for(e, DELTA) ** 2 for e in (0.3, 0.5, 1.0, 0.7)))
    assert ledger.epsilon_spent() == pytest.approx(gaussian_epsilon(DELTA, mu), rel=1e-6)
    assert ledger.epsilon_spent() == pytest.approx(_pld_epsilon(events, DELTA), rel=2e-3)
    assert [e.event for e in ledger.entries()] == events
    assert all(e.status == "committed" for e in ledger.entries())


def test_default_objective_perturbation_fit_fits_its_budget(data):
    """Under a ledger the default solver calibrates its composable record to the budget,
    so a ledger of exactly epsilon accepts the fit and the total is at most epsilon."""
    X, y = data
    with PrivacyLedger(epsilon=0.5, delta=DELTA) as led:
        est = DPLogisticRegression(classes=[0, 1],
                                   epsilon=0.5, delta=DELTA, data_norm=2.0, random_state=0,
                                   privacy_ledger=led).fit(X, y)
        assert est.solver_ == "objective_perturbation"
        assert len(led) == 1 and led.epsilon_spent() <= 0.5 + 1e-9
        assert led.entries()[0].event == est.dp_event_


def test_pipeline_and_cross_val_score_fits_are_recorded(data, ledger):
    X, y = data
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.4, delta=DELTA, feature_bounds=(-1, 1), random_state=1,
                         privacy_ledger=ledger),    # its own seed: equal seeds are refused
        _clf(ledger),
    )
    cross_val_score(pipe, X, y, cv=3)
    assert len(ledger) == 6  # 3 folds x 2 steps; the fold estimators are discarded
    from skdp.accounting import fitted_dp_event

    one = fitted_dp_event(clone(pipe).fit(X, y))  # a 7th and 8th release
    assert len(ledger) == 8
    assert ledger.epsilon_spent() == pytest.approx(
        get_epsilon(compose(*[one] * 4), DELTA), rel=1e-9
    )


def test_canonical_order_gives_identical_totals():
    events = [pure_dp_event(0.2), gaussian_event(2.0, 1.0), poisson_gaussian_event(0.1, 2.0, 5)]
    totals = []
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        with PrivacyLedger() as led:
            for k in order:
                led.record(events[k])
            totals.append(led.epsilon_spent())
    assert totals[0] == totals[1] == totals[2]


@pytest.mark.parametrize(
    "event",
    [
        gaussian_event(1.5, 0.25),
        pure_dp_event(0.7),
        poisson_gaussian_event(0.01, 1.1, 1000),
        compose(gaussian_event(1.0, 1.0), pure_dp_event(1.0)),
        dp_accounting.NonPrivateDpEvent(),
        dp_accounting.NoOpDpEvent(),
    ],
)
def test_event_serialisation_round_trip(event):
    assert event_from_json(event_to_json(event)) == event


def test_serialisation_refuses_foreign_types():
    with pytest.raises(TypeError):
        event_to_json(object())
    with pytest.raises(ValueError, match="unknown event type"):
        event_from_json('{"__event__": "os.system"}')


# ----------------------------------------------------------------------------------------
# budget


def test_budget_exceeded_before_the_fit_touches_the_data(data, monkeypatch):
    X, y = data
    calls = []
    solver = _base.SOLVERS["output_perturbation"]

    def counting_solver(*args, **kwargs):
        calls.append(1)
        return solver(*args, **kwargs)

    monkeypatch.setitem(_base.SOLVERS, "output_perturbation", counting_solver)
    budget = gaussian_epsilon(DELTA, np.sqrt(2.5) * gaussian_mu_for(0.5, DELTA))
    with PrivacyLedger(epsilon=budget, delta=DELTA) as led:  # room for 2 fits, not 3
        _clf(led).fit(X, y)
        _clf(led).fit(X, y)
        assert len(calls) == 2
        third = _clf(led)
        with pytest.raises(BudgetExceededError, match="budget"):
            third.fit(X, y)
        assert len(calls) == 2  # the solver never ran
        assert not hasattr(third, "coef_")
        assert len(led) == 2
        assert led.epsilon_spent() <= budget
        one_fit = gaussian_epsilon(DELTA, gaussian_mu_for(0.5, DELTA))
        assert 0.0 < led.remaining < one_fit
        # a cheaper fit still fits in what remains
        _clf(led, epsilon=0.05).fit(X, y)
        assert len(calls) == 3


def test_search_stops_at_budget(data):
    X, y = data
    budget = gaussian_epsilon(DELTA, np.sqrt(3.5) * gaussian_mu_for(0.3, DELTA))
    with PrivacyLedger(epsilon=budget, delta=DELTA) as led:  # room for 3 of the 7 fits
        search = GridSearchCV(_clf(led, epsilon=0.3), GRID, cv=CV, error_score="raise")
        with pytest.raises(BudgetExceededError):
            search.fit(X, y)
        assert len(led) == 3
        assert led.epsilon_spent() <= budget


def test_under_planned_event_is_refused_at_commit_and_nothing_released(data, monkeypatch):
    """If the solver releases more than it planned, the commit re-check catches it."""
    X, y = data
    monkeypatch.setitem(
        _base.PLANNERS, "output_perturbation", lambda est, n: gaussian_event(100.0, 1.0)
    )
    with PrivacyLedger(epsilon=0.5, delta=DELTA) as led:
        est = _clf(led, epsilon=0.45)
        led.record(gaussian_event(10.0, 1.0))  # mu = 0.1: the fit's real mu = 0.112 overspends
        with pytest.raises(BudgetExceededError):
            est.fit(X, y)
        assert not hasattr(est, "coef_")
        assert len(led) == 1  # the reservation was dropped


def test_unplanned_solver_is_checked_at_commit(data, monkeypatch):
    X, y = data
    monkeypatch.delitem(_base.PLANNERS, "output_perturbation")
    with PrivacyLedger(epsilon=0.6, delta=DELTA) as led:
        first = _clf(led).fit(X, y)
        assert [e.event for e in led.entries()] == [first.dp_event_]
        second = _clf(led)
        with pytest.raises(BudgetExceededError):
            second.fit(X, y)
        assert not hasattr(second, "coef_") and len(led) == 1


def test_failed_fit_releases_its_reservation(data, monkeypatch):
    X, y = data

    def broken(*args, **kwargs):
        raise FloatingPointError("solver failed")

    monkeypatch.setitem(_base.SOLVERS, "output_perturbation", broken)
    with PrivacyLedger(epsilon=1.0, delta=DELTA) as led:
        with pytest.raises(FloatingPointError):
            _clf(led).fit(X, y)
        assert len(led) == 0


def test_leaky_bound_is_refused_or_counted_as_infinite(data):
    X, y = data
    with PrivacyLedger(epsilon=10.0, delta=DELTA) as led:
        with pytest.raises(BudgetExceededError, match="not differentially private"):
            DPLogisticRegression(classes=[0, 1], privacy_ledger=led).fit(X, y)  # data_norm=None
        assert len(led) == 0
    with PrivacyLedger(epsilon=None, delta=DELTA) as led:
        with pytest.warns(PrivacyLeakWarning, match="data_norm is None"):
            DPLogisticRegression(classes=[0, 1], privacy_ledger=led).fit(X, y)
        assert led.epsilon_spent() == np.inf
        assert isinstance(led.entries()[0].event, dp_accounting.NonPrivateDpEvent)


def test_reservation_counts_for_other_handles():
    event = gaussian_event(2.0, 1.0)  # mu = 1/2: the budget holds one, not two
    with PrivacyLedger(epsilon=gaussian_epsilon(DELTA, 0.5 * np.sqrt(1.5)), delta=DELTA) as led:
        other = pickle.loads(pickle.dumps(led))
        ticket = led.reserve(event, source="in flight")
        assert len(other) == 1 and other.entries()[0].status == "reserved"
        assert other.would_exceed(event)
        with pytest.raises(BudgetExceededError):
            other.record(event)
        ticket.cancel()
        assert len(other) == 0 and not other.would_exceed(event)
        other.record(event)
        assert led.entries()[0].status == "committed"


def _die_holding_reservation(ledger):
    ledger.reserve(gaussian_event(2.0, 1.0), source="crashed worker")
    os._exit(0)


def test_dead_process_reservation_keeps_counting():
    ctx = multiprocessing.get_context("spawn")
    with PrivacyLedger(delta=DELTA) as led:
        proc = ctx.Process(target=_die_holding_reservation, args=(led,))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        (entry,) = led.entries()
        assert entry.status == "reserved" and entry.pid == proc.pid
        assert led.epsilon_spent() == pytest.approx(get_epsilon(gaussian_event(2.0, 1.0), DELTA))
        assert "1 reserved" in led.summary()


def _spend_until_refused(ledger, event, n_tries):
    ok = 0
    for _ in range(n_tries):
        try:
            ledger.record(event, source=f"pid {os.getpid()}")
            ok += 1
        except BudgetExceededError:
            pass
    return ok


def test_concurrent_spending_is_atomic():
    """Three processes race for a budget that holds exactly 7 releases."""
    event = gaussian_event(4.0, 1.0)  # mu = Delta/sigma = 1/4
    mu1 = 0.25
    budget = gaussian_epsilon(DELTA, mu1 * np.sqrt(7.5))  # 7 fit, 8 do not
    ctx = multiprocessing.get_context("spawn")
    with PrivacyLedger(epsilon=budget, delta=DELTA) as led:
        with ctx.Pool(3) as pool:
            counts = pool.starmap(_spend_until_refused, [(led, event, 5)] * 3)
        assert sum(counts) == 7 == len(led)
        assert len({e.pid for e in led.entries()}) >= 2  # at most 5 per process
        assert led.epsilon_spent() <= budget


# ----------------------------------------------------------------------------------------
# identity: clone, deepcopy, pickle, processes


def test_clone_deepcopy_pickle_keep_identity(data, ledger):
    est = _clf(ledger)
    assert clone(est).privacy_ledger is ledger
    assert copy.deepcopy(est).privacy_ledger is ledger
    copied = pickle.loads(pickle.dumps(est))
    assert copied.privacy_ledger is not ledger and copied.privacy_ledger == ledger
    copied.fit(*data)
    assert len(ledger) == 1  # the copy wrote to the same store


def _search_total(X, y, **search_kw):
    with PrivacyLedger(epsilon=None, delta=DELTA) as led:
        GridSearchCV(_clf(led), GRID, cv=CV, **search_kw).fit(X, y)
        return len(led), led.epsilon_spent(), sorted(led.summary().splitlines()[2:-1])


def test_grid_search_n_jobs_2_and_dask_match_serial(data):
    X, y = data
    serial = _search_total(X, y)
    assert serial[0] == N_SEARCH_FITS
    assert serial[1] == pytest.approx(
        gaussian_epsilon(DELTA, np.sqrt(N_SEARCH_FITS) * gaussian_mu_for(0.5, DELTA)), rel=1e-9
    )
    parallel = _search_total(X, y, n_jobs=2)
    assert parallel == serial

    import distributed  # in the test extra: never skipped

    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        with joblib.parallel_backend("dask"):
            on_dask = _search_total(X, y, n_jobs=2)
        pids = client.run(os.getpid)
    assert on_dask == serial
    assert os.getpid() not in pids.values()  # the fits really ran in other processes


# ----------------------------------------------------------------------------------------
# unreachable stores are refused, never silently unaccounted


def test_closed_store_refuses_fit_before_solver(data, monkeypatch):
    calls = []
    monkeypatch.setitem(
        _base.SOLVERS, "output_perturbation", lambda *a, **k: calls.append(1)
    )
    led = PrivacyLedger(epsilon=5.0)
    est = pickle.loads(pickle.dumps(_clf(led)))  # e.g. what a worker receives
    led.close()
    with pytest.raises(LedgerUnreachableError, match="not reachable"):
        est.fit(*data)
    assert not calls and not hasattr(est, "coef_")


def test_copied_store_is_refused(tmp_path):
    path = tmp_path / "ledger.sqlite"
    led = PrivacyLedger(epsilon=5.0, path=path)
    led.record(gaussian_event(2.0, 1.0))
    backup = tmp_path / "backup.sqlite"
    shutil.copy(path, backup)
    os.replace(backup, path)  # same content and id, different file (inode)
    with pytest.raises(LedgerUnreachableError, match="copy"):
        led.record(gaussian_event(2.0, 1.0))
    # reopening it explicitly is a deliberate choice and works
    assert len(PrivacyLedger.open(path)) == 1


def test_foreign_store_is_refused():
    with PrivacyLedger() as a, PrivacyLedger() as b:
        impostor = _rebuild(b.path, a.ledger_id, os.stat(b.path).st_ino, None, DELTA)
        with pytest.raises(LedgerUnreachableError, match="another ledger"):
            len(impostor)


def test_open_persists_and_refuses_overwrite(tmp_path):
    path = tmp_path / "study.sqlite"
    led = PrivacyLedger(epsilon=2.0, delta=1e-5, path=path)
    led.record(gaussian_event(4.0, 1.0), source="first")
    with pytest.raises(FileExistsError):
        PrivacyLedger(path=path)
    again = PrivacyLedger.open(path)
    assert (again.epsilon, again.delta, again.ledger_id) == (2.0, 1e-5, led.ledger_id)
    assert again.epsilon_spent() == led.epsilon_spent()
    led.close()  # not an owner of a user path: the file stays
    assert path.exists()


# ----------------------------------------------------------------------------------------
# attach: coverage checks


def test_attach_sets_every_dp_step_and_warns_for_searches(data):
    with PrivacyLedger(epsilon=20.0) as led:
        pipe = make_pipeline(
            PolynomialFeatures(1),
            DPStandardScaler(feature_bounds=(-1, 1), random_state=0),
            DPLogisticRegression(classes=[0, 1], data_norm=2.0, random_state=0),
        )
        search = GridSearchCV(pipe, {"dplogisticregression__alpha": [0.1, 1.0]}, cv=2)
        with pytest.warns(PrivacyLeakWarning, match="cv_results_"):
            led.attach(search)
        assert search.estimator[1].privacy_ledger is led
        assert search.estimator[2].privacy_ledger is led
        search.fit(*data)
        assert len(led) == 2 * (2 * 2 + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            led.attach(clone(pipe))  # a plain pipeline: no warning


def test_attach_refuses_non_private_step():
    with PrivacyLedger() as led:
        pipe = make_pipeline(StandardScaler(), DPLogisticRegression(classes=[0, 1], data_norm=2.0))
        with pytest.raises(TypeError, match="StandardScaler"):
            led.attach(pipe)
        assert pipe[-1].privacy_ledger is None
        with pytest.raises(TypeError, match="nothing"):
            led.attach(PolynomialFeatures())


def test_attach_refuses_a_column_selector_that_can_read_rows():
    """A ColumnTransformer whose block is chosen by a lambda (called on the private table)
    routes one row's information to the DP step without noise: attach charged the DP
    step's release and said nothing (audit; failed before).  The exact
    make_column_selector reads the schema only and is accepted."""
    from sklearn.compose import ColumnTransformer, make_column_selector

    model = DPLogisticRegression(classes=[0, 1], data_norm=2.0)
    with PrivacyLedger() as led:
        routed = make_pipeline(ColumnTransformer([("pick", "passthrough",
                                                   lambda X: [0])]), model)
        with pytest.raises(TypeError, match="block 'pick'"):
            led.attach(routed)
        assert routed[-1].privacy_ledger is None
        schema = make_pipeline(ColumnTransformer([("pick", "passthrough",
                                                   make_column_selector(pattern="a"))]),
                               model)
        assert led.attach(schema)[-1].privacy_ledger is led


def test_attach_refuses_a_subclassed_container():
    """A ColumnTransformer subclass whose fit_transform reads the whole table (a column of
    the batch mean in every row) voids the guarantee of the DP steps after it: attach
    charged their releases and said nothing -- in a plain Pipeline, and in a
    PrivatePipeline, whose steps it did not walk (audit; failed before).  The exact
    ColumnTransformer is accepted."""
    from sklearn.compose import ColumnTransformer

    from skdp import PrivatePipeline
    from tests._subclassed_containers import BatchMeanColumns

    def pipe(ct, cls=None):
        steps = [("ct", ct([("num", DPStandardScaler(feature_bounds=(0.0, 1.0)), [0])])),
                 ("model", DPLogisticRegression(classes=[0, 1], data_norm=2.0))]
        return PrivatePipeline(steps, epsilon=1.0) if cls else make_pipeline(
            *[s for _, s in steps])

    with PrivacyLedger() as led:
        plain = pipe(BatchMeanColumns)
        with pytest.raises(TypeError, match=r"step 'Pipeline\[batchmeancolumns\]' "
                                            r"\(BatchMeanColumns\) is a subclass of "
                                            "ColumnTransformer"):
            led.attach(plain)
        assert plain[-1].privacy_ledger is None and plain[0].transformers[0][1] \
            .privacy_ledger is None
        private = pipe(BatchMeanColumns, PrivatePipeline)
        with pytest.raises(TypeError, match=r"PrivatePipeline\[ct\]' \(BatchMeanColumns\)"):
            led.attach(private)
        assert private.privacy_ledger is None
        assert led.attach(pipe(ColumnTransformer))[-1].privacy_ledger is led
        assert led.attach(pipe(ColumnTransformer, PrivatePipeline)).privacy_ledger is led


def test_invalid_budget_and_ledger_parameter(data):
    with pytest.raises(ValueError):
        PrivacyLedger(epsilon=-1.0)
    with pytest.raises(ValueError):
        PrivacyLedger(epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="privacy_ledger"):
        _clf("not a ledger").fit(*data)


def test_attach_sets_a_private_search_own_ledger_not_its_candidates(data):
    """attach used to refuse a private search and tell the user to record its dp_event_
    after fitting it -- after it had read the rows and published its selection.  It now
    sets the search's own privacy_ledger (charged the whole selection before any row is
    read), not its candidates' (which the search refuses), also inside a scikit-learn
    meta-estimator."""
    from sklearn.ensemble import BaggingClassifier

    from skdp.model_selection import DPGridSearchCV

    search = DPGridSearchCV(DPLogisticRegression(classes=[0, 1], data_norm=2.0),
                            {"alpha": [0.1, 1.0]}, epsilon=1.0, random_state=0)
    with PrivacyLedger(epsilon=3.0) as led:
        assert led.attach(search) is search
        assert search.privacy_ledger is led and search.estimator.privacy_ledger is None
        search.fit(*data)
        (entry,) = led.entries()
        assert entry.status == "committed" and entry.source == "DPGridSearchCV"
        assert event_to_json(entry.event) == event_to_json(search.dp_event_)
        outer = BaggingClassifier(clone(search).set_params(privacy_ledger=None))
        with pytest.warns(PrivacyLeakWarning):
            led.attach(outer)
        assert outer.estimator.privacy_ledger is led
        assert outer.estimator.estimator.privacy_ledger is None


def _raw_table(n=3000, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                       "job": rng.choice(["a", "b", "c"], n)})
    return df, (df["age"] > 50).astype(int).to_numpy()


def test_attach_sets_a_private_pipeline_own_ledger_and_a_fit_charges_its_plan():
    """attach used to walk into make_private_pipeline(...)'s steps and refuse its DP
    transformers as non-DP.  It now recognises the PrivatePipeline (before the plain
    Pipeline branch), sets its own privacy_ledger -- not its steps' -- and a fit charges
    the plan's event once; the next fit that would overspend is refused."""
    from skdp import make_private_pipeline

    df, y = _raw_table()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 numeric=["age"], categorical=["job"], random_state=0)
    with PrivacyLedger(epsilon=1.5) as led:
        assert led.attach(pipe) is pipe
        assert pipe.privacy_ledger is led
        assert all(value is None for key, value in pipe.get_params(deep=True).items()
                   if key.endswith("__privacy_ledger"))
        pipe.fit(df, y)
        (entry,) = led.entries()
        assert entry.status == "committed" and entry.source == "PrivatePipeline"
        assert event_to_json(entry.event) == event_to_json(pipe.dp_event_)
        with pytest.raises(BudgetExceededError, match="Nothing was released"):
            pipe.fit(df, y)
        assert len(led) == 1


@pytest.mark.parametrize("transformer", [
    "DPSplineTransformer", "DPRobustScaler", "DPOneHotEncoder"])
def test_attach_refuses_a_dp_transformer_without_a_ledger_parameter_accurately(transformer):
    """An skdp DP transformer that takes no privacy_ledger, in a plain Pipeline, used to
    be refused as learning 'without differential privacy'.  The refusal now says what is
    true -- it is DP, but a ledger cannot charge it -- and the way out (a private
    pipeline, whose own ledger is charged the whole plan)."""
    from skdp import preprocessing

    step = getattr(preprocessing, transformer)()
    pipe = make_pipeline(step, DPLogisticRegression(classes=[0, 1], data_norm=3.0))
    with PrivacyLedger() as led:
        with pytest.raises(TypeError) as refused:
            led.attach(pipe)
    message = str(refused.value)
    assert f"{transformer} is differentially private" in message
    assert "no privacy_ledger parameter" in message and "PrivatePipeline" in message
    assert "without differential privacy" not in message
    assert pipe[-1].privacy_ledger is None      # nothing was set