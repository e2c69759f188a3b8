"""PrivacyLedger.largest_epsilon: the largest epsilon a given fit may ask for now, planned
from public quantities with the planner the fit reserves with."""

import numpy as np
import pytest

from skdp import DPLogisticRegression, make_private_pipeline
from skdp.accounting import PrivacyLedger, gaussian_event
from skdp.exceptions import BudgetExceededError

pd = pytest.importorskip("pandas")


def _rows(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    return X, (X[:, 0] > 0).astype(int)


def _gaussian_fit(epsilon, delta=1e-6):
    """A recorded Gaussian release of ``(epsilon, delta)``."""
    from skdp.accounting import gaussian_mu_for

    return gaussian_event(1.0 / gaussian_mu_for(epsilon, delta), 1.0)


def _fit_reads(monkeypatch):
    """Record every time a fit reaches the rows past its ledger reservation."""
    import skdp.linear_model._base as base

    reads, original = [], base.BaseDPLinear._run_solver_unrecorded

    def recording(self, *args, **kwargs):
        reads.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(base.BaseDPLinear, "_run_solver_unrecorded", recording)
    return reads


@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("solver", ["auto", "dpsgd"])
def test_a_fit_at_the_answer_is_admitted_and_just_above_it_refused(monkeypatch, adaptive,
                                                                    solver):
    X, y = _rows()
    reads = _fit_reads(monkeypatch)
    with PrivacyLedger(epsilon=1.0, delta=1e-6, adaptive=adaptive) as ledger:
        ledger.record(_gaussian_fit(0.4), source="earlier")
        model = DPLogisticRegression(classes=[0, 1], data_norm=1.0, delta=1e-7,
                                     solver=solver, random_state=0, privacy_ledger=ledger)
        edge = ledger.largest_epsilon(model, X, rtol=0.01)
        assert 0.0 < edge < np.inf and len(ledger) == 1        # nothing written
        with pytest.raises(BudgetExceededError):
            model.set_params(epsilon=edge * 1.02).fit(X, y)
        assert reads == [] and len(ledger) == 1                # refused before the rows
        model.set_params(epsilon=edge).fit(X, y)
        assert len(ledger) == 2 and model.epsilon_ <= edge


def test_a_pipeline_is_planned_from_its_schema(tmp_path):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.integers(18, 90, 2000).astype(float),
                       "job": rng.choice(["a", "b", "c"], 2000).astype(object)})
    y = (df["age"] > 50).astype(int).to_numpy()
    ledger = PrivacyLedger(epsilon=2.0, delta=1e-5, path=str(tmp_path / "l"))
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), delta=1e-6,
                                 numeric=["age"], categorical=["job"], random_state=0)
    pipe.set_params(privacy_ledger=ledger)
    edge = ledger.largest_epsilon(pipe, df)
    with pytest.raises(BudgetExceededError):
        pipe.set_params(epsilon=edge * 1.02).fit(df, y)
    pipe.set_params(epsilon=edge).fit(df, y)
    assert len(ledger) == 1
    assert ledger.largest_epsilon(pipe, df) < 0.2 * edge       # what is left after it
    ledger.close()


def test_an_exhausted_ledger_answers_zero_and_no_budget_infinity():
    model = DPLogisticRegression(classes=[0, 1], data_norm=1.0)
    with PrivacyLedger(epsilon=1.0, delta=1e-6) as ledger:
        ledger.record(_gaussian_fit(0.99999), source="nearly everything")
        assert ledger.largest_epsilon(model, (1000, 3)) == 0.0
    with PrivacyLedger() as unlimited:
        assert unlimited.largest_epsilon(model, (1000, 3)) == np.inf


def test_what_cannot_be_planned_is_refused():
    from sklearn.linear_model import LogisticRegression

    with PrivacyLedger(epsilon=1.0) as ledger:
        with pytest.raises(TypeError, match="cannot be planned"):
            ledger.largest_epsilon(LogisticRegression(), (100, 2))
        with pytest.raises(TypeError, match="2-dimensional"):
            ledger.largest_epsilon(DPLogisticRegression(data_norm=1.0), np.ones(5))
        with pytest.raises(ValueError, match="rtol"):
            ledger.largest_epsilon(DPLogisticRegression(data_norm=1.0), (10, 2), rtol=0)
