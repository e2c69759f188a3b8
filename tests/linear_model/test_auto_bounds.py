"""data_norm="auto" outside a pipeline and y_bound="auto": bounds released privately inside
the fit, with the split reported and the total within budget."""

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor
from skdp.accounting import PrivacyLedger, compose, get_epsilon
from skdp.linear_model._auto import AUTO_NORM_QUANTILE, AUTO_Y_QUANTILE
from skdp.linear_model._base import planned_dp_event


def _classification(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * 2.0
    y = (X @ rng.normal(size=5) + rng.normal(size=n) > 0).astype(int)
    return X, y


def _regression(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, X @ rng.normal(size=5) * 3.0 + rng.normal(size=n)


def test_logistic_auto_norm_is_released_and_accounted():
    X, y = _classification()
    clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X, y)
    assert clf.privacy_guaranteed_
    assert 0.99 <= clf.epsilon_ <= 1.0
    assert get_epsilon(clf.dp_event_, 1e-6) == clf.epsilon_
    split = clf.budget_split_
    assert set(split) == {"bounds", "model", "mu_share_bounds"}
    true_q = np.quantile(np.linalg.norm(X, axis=1), AUTO_NORM_QUANTILE)
    assert 0.8 * true_q < clf.data_norm_ < 1.25 * true_q
    assert clf.score(X, y) > 0.9
    # planned from public quantities (a composite charges it before the fit): the bound's
    # count tree, then the model at the largest epsilon that composes with it
    planned = planned_dp_event(DPLogisticRegression(classes=[0, 1], data_norm="auto"),
                               X.shape[0], X.shape[1])
    assert get_epsilon(planned, 1e-6) == pytest.approx(clf.epsilon_, rel=1e-6)


@pytest.mark.parametrize("bad", [1e300, -1e300, 5e-324])
def test_an_extreme_row_does_not_move_the_bound(bad):
    X, y = _classification()
    ref = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X, y)
    X2 = X.copy()
    X2[0] = bad
    other = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0).fit(X2, y)
    # the split is fixed before any row (the model's share from the placeholder bound);
    # the model runs at the released bound (a DP release, which may differ between
    # neighbours): its reported composition can move in the last bits (the base-rate
    # check's Gaussian, at a fraction of the objective noise's mu = 2L/sigma)
    assert other.budget_split_ == ref.budget_split_
    assert other.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-12, abs=0)
    assert abs(other.data_norm_ - ref.data_norm_) < 0.05 * ref.data_norm_


@pytest.mark.parametrize("cls", [DPHuberRegressor, DPNonconvexRegressor])
def test_regressors_release_data_norm_and_y_bound(cls):
    X, y = _regression()
    y[0] = 1e300                       # clipped to the released bound, never read as one
    reg = cls(data_norm="auto", y_bound="auto", random_state=0).fit(X, y)
    assert reg.privacy_guaranteed_ and 0.99 <= reg.epsilon_ <= 1.0
    # a high quantile of |y| (the level is kept one noise rank inside the data: at n = 6000
    # the margin is ~10 %), never the 1e300 row
    low, high = np.quantile(np.abs(y), [0.85, AUTO_Y_QUANTILE])
    assert low < reg.y_bound_ < 1.1 * high
    assert reg.score(X[1:], y[1:]) > 0.8


def test_y_bound_auto_with_public_data_norm():
    X, y = _regression()
    reg = DPHuberRegressor(data_norm=4.0, y_bound="auto", random_state=0).fit(X, y)
    assert reg.data_norm_ == 4.0 and reg.epsilon_ <= 1.0
    assert len(reg.dp_event_.events) >= 2


def test_ledger_counts_the_bound_release(tmp_path):
    X, y = _classification()
    with PrivacyLedger(epsilon=1.05, delta=1e-6, path=tmp_path / "ledger.db") as ledger:
        clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=0,
                                   privacy_ledger=ledger).fit(X, y)
        recorded = ledger.dp_event
        assert get_epsilon(recorded, 1e-6) == pytest.approx(
            get_epsilon(compose(clf.dp_event_), 1e-6), rel=1e-9)
        with pytest.raises(Exception, match="budget|exceed"):
            DPLogisticRegression(classes=[0, 1], data_norm="auto", random_state=1,
                                 privacy_ledger=ledger).fit(X, y)


def test_pure_dp_is_refused_before_any_release():
    X, y = _classification(200)
    clf = DPLogisticRegression(classes=[0, 1], data_norm="auto", delta=0.0)
    with pytest.raises(ValueError, match="delta > 0"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")


def test_a_release_too_noisy_for_its_rows_warns_before_it_runs(monkeypatch):
    """Where the quantile release's rank noise exceeds half the rows (a public function of
    n, epsilon, delta and the number of bounds), the fit warns before anything is
    released; with enough rows it does not."""
    import warnings

    import skdp._mechanisms._quantiles as quantiles_mod
    from skdp._mechanisms._quantiles import UNRESOLVED_RANK_NOISE, rank_noise
    from skdp.linear_model._auto import auto_bounds_mu

    def share(n, k, eps):
        return rank_noise(n, k, auto_bounds_mu(eps, 1e-6))

    assert share(600, 1, 1.0) > UNRESOLVED_RANK_NOISE
    assert share(900, 1, 1.0) < UNRESOLVED_RANK_NOISE < share(900, 2, 1.0)
    assert share(900, 1, 2.0) < share(900, 1, 1.0)
    X, y = _regression(n=600)

    def no_release(*args, **kwargs):
        raise RuntimeError("released")

    monkeypatch.setattr(quantiles_mod, "release_tree_histogram", no_release)
    with pytest.warns(UserWarning, match="data_norm='auto' on 600 rows.*public bound") as seen, \
            pytest.raises(RuntimeError, match="released"):
        DPHuberRegressor(data_norm="auto", random_state=0).fit(X, y)
    assert seen[0].filename == __file__                  # the user's line
    monkeypatch.undo()
    X, y = _regression(n=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPHuberRegressor(data_norm="auto", y_bound="auto", random_state=0).fit(X, y)


# ----------------------------------------------------------------------------------------
# under a ledger: admitted or refused before any row is read, alike on neighbours


def _neighbours(kind, n=400, seed=0):
    """``(X, y), (X', y')``: one row replaced by an extreme one (the audit's pair)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    y = (X[:, 0] > 0).astype(int) if kind == "c" else X @ [1.0, -0.5, 0.2]
    X2, y2 = X.copy(), y.copy()
    X2[0] = [1e6, -1e6, 1e6]
    y2[0] = 1 - y2[0] if kind == "c" else 1e6
    return (X, y), (X2, y2)


#: the default solver of each estimator on the released-bounds path: objective
#: perturbation's record (and warm_gd's, which starts from it) moved with the released
#: bound in its last bits
_AT_THE_EDGE = {
    "logistic": (lambda: DPLogisticRegression(classes=[0, 1], data_norm="auto"), "c"),
    "huber": (lambda: DPHuberRegressor(data_norm="auto", y_bound=2.0), "r"),
    "nonconvex": (lambda: DPNonconvexRegressor(data_norm="auto", y_bound=2.0), "r"),
}


def _committed_event(make, X, y):
    with PrivacyLedger(epsilon=None) as ledger:
        make().set_params(random_state=0, privacy_ledger=ledger).fit(X, y)
        (entry,) = ledger.entries()
    return entry.event


def _pad(value):
    """A release recorded before the fit: Rényi divergence ``value`` at every order."""
    import dp_accounting

    return dp_accounting.ZCDpEvent(rho=0.0, xi=float(value))


def _edge_pads(ledger_kwargs, events):
    """``(at, over)``: adjacent pads, ``at`` the largest with which the event of the fit
    on D is still admitted (and, when the fit on D' committed another event, with which
    that one is refused: the audit's edge)."""
    import math

    from skdp.accounting._filter import event_rdp_at
    from skdp.accounting._ledger import event_to_json

    with PrivacyLedger(**ledger_kwargs) as probe:
        def over(pad, event):
            return probe._exceeds([event_to_json(_pad(pad)), event_to_json(event)])[0]

        if probe.adaptive:
            flt = probe.renyi_filter
            start = flt.budget - event_rdp_at(event_to_json(events[0]), flt.order)[0]
        else:
            start = 0.0
        lo, hi = start, start
        while over(lo, events[0]):
            lo = lo / 2.0 if lo > 0 else 0.0
        hi = max(hi, lo) + 1e-9
        while not over(hi, events[0]):
            hi = 2.0 * hi + 1e-9
        while math.nextafter(lo, math.inf) < hi:
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            lo, hi = (lo, mid) if over(mid, events[0]) else (mid, hi)
    return lo, hi


@pytest.mark.parametrize("adaptive", [True, False], ids=["adaptive", "exact"])
@pytest.mark.parametrize("name", sorted(_AT_THE_EDGE))
def test_admission_at_the_edge_is_decided_before_any_row_alike_on_neighbours(
        name, adaptive, monkeypatch):
    """Audit: a released-bounds fit reserved nothing and was admitted at commit, after
    reading the rows; its event moved with the released bound in the last bits, so at the
    budget's edge a fit on D was admitted and one on D' refused -- leaving the ledger
    unchanged, uncharged.  Now the fit reserves a public upper bound of its whole event
    before it reads a row and commits exactly that: on neighbours the decision is the
    same, and a refusal comes before the bound is released."""
    import skdp._mechanisms._quantiles as quantiles_mod
    from skdp.exceptions import BudgetExceededError

    make, kind = _AT_THE_EDGE[name]
    data = _neighbours(kind)
    events = [_committed_event(make, X, y) for X, y in data]
    ledger_kwargs = dict(epsilon=3.0, delta=1e-5, adaptive=adaptive)
    at, over = _edge_pads(ledger_kwargs, events)
    releases = []
    release = quantiles_mod.release_tree_histogram

    def counted(*args, **kwargs):
        releases.append(1)
        return release(*args, **kwargs)

    monkeypatch.setattr(quantiles_mod, "release_tree_histogram", counted)
    for pad, expected in ((at, "admitted"), (over, "refused")):
        decisions = []
        for X, y in data:
            releases.clear()
            with PrivacyLedger(**ledger_kwargs) as ledger:
                ledger.record(_pad(pad), source="earlier releases")
                try:
                    make().set_params(random_state=0, privacy_ledger=ledger).fit(X, y)
                    decisions.append(("admitted", len(releases), len(ledger)))
                except BudgetExceededError:
                    decisions.append(("refused", len(releases), len(ledger)))
        # the same decision on D and D', taken before any row was read
        assert decisions[0] == decisions[1], (pad, decisions)
        status, n_releases, n_entries = decisions[0]
        assert status == expected
        assert (n_releases, n_entries) == ((1, 2) if status == "admitted" else (0, 1))


def _released_bounds_fits():
    """Every estimator and solver that runs on the released-bounds path, with the bounds
    it releases."""
    for solver in ("objective_perturbation", "dpsgd", "output_perturbation", "resque",
                   "phased"):
        yield f"logistic-{solver}", lambda s=solver: DPLogisticRegression(
            solver=s, classes=[0, 1], data_norm="auto"), "c"
        yield f"huber-{solver}", lambda s=solver: DPHuberRegressor(
            solver=s, data_norm="auto", y_bound="auto"), "r"
    yield "logistic-multinomial", lambda: DPLogisticRegression(
        classes=[0, 1, 2], data_norm="auto"), "c3"
    yield "huber-target_range", lambda: DPHuberRegressor(
        data_norm="auto", target_range=(-3.0, 3.0)), "r"
    for solver in ("warm_gd", "zeroth_order", "zeroth_order_naive", "rrpsgd", "spider",
                   "dpsgd"):
        # dpsgd at alpha=0 needs its public ball; spider more rows at epsilon 1
        extra = {"dpsgd": {"max_coef_norm": 10.0}, "spider": {"epsilon": 2.0}}.get(solver, {})
        yield f"nonconvex-{solver}", lambda s=solver, e=extra: DPNonconvexRegressor(
            solver=s, data_norm="auto", y_bound="auto", **e), "r"
    yield "nonconvex-target_range", lambda: DPNonconvexRegressor(
        solver="zeroth_order", data_norm=2.0, target_range=(-3.0, 3.0)), "r"


@pytest.mark.parametrize("make, kind", [pytest.param(m, k, id=i)
                                        for i, m, k in _released_bounds_fits()])
def test_every_released_bounds_fit_commits_the_event_it_reserved_before_any_row(
        make, kind, monkeypatch):
    """The reservation is made before the bound is released, from public quantities
    (the same on neighbours); the event committed is that one; it dominates the model's
    reported ``dp_event_`` (what ran), leaf by leaf or as one Gaussian composition."""
    import skdp._mechanisms._quantiles as quantiles_mod
    from skdp.accounting._ledger import Reservation

    log = []
    reserve, commit = PrivacyLedger.reserve, Reservation.commit
    release = quantiles_mod.release_tree_histogram

    def logged_reserve(self, planned_event=None, *, source="release"):
        log.append(("reserve", planned_event))
        return reserve(self, planned_event, source=source)

    def logged_commit(self, event):
        log.append(("commit", event))
        return commit(self, event)

    def logged_release(*args, **kwargs):
        log.append(("release", None))
        return release(*args, **kwargs)

    monkeypatch.setattr(PrivacyLedger, "reserve", logged_reserve)
    monkeypatch.setattr(Reservation, "commit", logged_commit)
    monkeypatch.setattr(quantiles_mod, "release_tree_histogram", logged_release)
    (X, y), (X2, y2) = _neighbours("r" if kind == "r" else "c", n=2400)
    if kind == "c3":
        y, y2 = y + (X[:, 1] > 0.5), y2 + (X2[:, 1] > 0.5)
    committed = []
    for XX, yy in ((X, y), (X2, y2)):
        log.clear()
        with PrivacyLedger(epsilon=10.0, delta=1e-5) as ledger:
            est = make().set_params(random_state=0, privacy_ledger=ledger).fit(XX, yy)
            (entry,) = ledger.entries()
        kinds = [k for k, _ in log]
        assert kinds[0] == "reserve" and kinds[-1] == "commit", kinds
        reserved, (_, event) = log[0][1], log[-1]
        assert reserved is not None and event == reserved == entry.event
        from skdp.accounting._events import dominated_by, loosened
        from skdp.linear_model._auto import RELEASED_BOUNDS_EVENT_RTOL

        assert dominated_by(est.dp_event_, reserved)
        # the planned event (a composite's, the ledger's largest_epsilon), loosened
        planned = planned_dp_event(make().set_params(privacy_ledger=ledger), *XX.shape)
        assert loosened(planned, RELEASED_BOUNDS_EVENT_RTOL) == reserved
        committed.append(event)
    assert committed[0] == committed[1]


def test_a_model_failing_after_the_bound_release_is_charged(monkeypatch):
    """The model is fitted on what the bounds' release gave: a failure after that release
    is a function of it, and was left uncharged (the reservation cancelled; failed
    before).  The reservation made before any row is now committed, as failed."""
    import skdp.linear_model._base as base

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = X @ np.array([1.0, -1.0, 0.5])
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        raise ArithmeticError("the model refuses the released bound")

    monkeypatch.setattr(base.BaseDPLinear, "_run_solver_unrecorded", failing)
    with PrivacyLedger(epsilon=5.0, delta=1e-5) as ledger:
        model = DPHuberRegressor(epsilon=1.0, delta=1e-6, data_norm="auto", y_bound="auto",
                                 random_state=0, privacy_ledger=ledger)
        with pytest.raises(ArithmeticError):
            model.fit(X, y)
        assert calls == [1]
        (entry,) = ledger.entries()
        assert entry.status == "committed" and entry.source == "DPHuberRegressor (failed)"


@pytest.mark.parametrize("solver", ["output_perturbation", "phased"])
def test_a_released_bounds_fit_may_ask_for_the_whole_remaining_budget(solver):
    """The reservation is the plan loosened by 1e-10; solvers calibrated to within 1e-12
    of epsilon were then refused at a ledger's whole budget (review; failed before).  The
    model's share is searched with room for the loosening."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0).astype(int)
    with PrivacyLedger(epsilon=1.0, delta=1e-6) as ledger:
        model = DPLogisticRegression(classes=[0, 1], data_norm="auto", solver=solver,
                                     epsilon=1.0, delta=1e-6, random_state=0,
                                     privacy_ledger=ledger).fit(X, y)
        assert 1.0 - 1e-7 < model.epsilon_ <= 1.0
        assert len(ledger) == 1 and ledger.epsilon_spent() <= 1.0
