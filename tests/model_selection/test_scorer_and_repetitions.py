"""Private scorers (sensitivity on adversarial rows) and the number of repetitions."""

import warnings

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

from skdp.model_selection import PrivateScorer, make_private_scorer
from skdp.model_selection._common import (
    dominating,
    draw_repetitions,
    public_splits,
    tnb_gamma,
    tnb_mean,
)
from skdp.model_selection._scorer import check_private_scoring
from skdp.accounting import compose, gaussian_event, pure_dp_event


class _Fixed:
    def __init__(self, pred):
        self.pred = pred

    def predict(self, X):
        return self.pred


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 1e300, -1e300])
def test_sensitivity_holds_on_adversarial_rows(bad):
    m = 25
    scorer = make_private_scorer(lambda t, p: p - t, lower=-1.0, upper=2.0)
    rng = np.random.default_rng(0)
    y = rng.normal(size=m)
    pred = rng.normal(size=m)
    base = scorer.row_values(_Fixed(pred), None, y).mean()
    pred2 = pred.copy()
    pred2[0] = bad  # the replaced row makes its term as extreme as possible
    moved = scorer.row_values(_Fixed(pred2), None, y).mean()
    assert np.isfinite(moved)
    assert abs(moved - base) <= scorer.sensitivity(m) + 1e-12
    assert scorer.sensitivity(m) == pytest.approx(3.0 / m)


def test_accuracy_and_sign():
    acc = check_private_scoring("accuracy", None)
    y = np.array([0, 1, 1, 0])
    assert acc.row_values(_Fixed(np.array([0, 1, 0, 0])), None, y).mean() == 0.75
    assert acc.sensitivity(4) == 0.25
    mae = PrivateScorer(lambda t, p: np.abs(t - p), 0, 1, greater_is_better=False)
    vals = mae.row_values(_Fixed(np.array([0.0, 5.0])), None, np.array([0.5, 0.0]))
    np.testing.assert_allclose(vals, [-0.5, -1.0])
    with pytest.raises(ValueError):
        PrivateScorer(lambda t, p: t, 1.0, 1.0)
    with pytest.raises(ValueError):
        mae.row_values(_Fixed(np.zeros(3)), None, np.zeros(2))
    with pytest.raises(ValueError):
        check_private_scoring({"a": "accuracy"}, None)


def _batch_majority(t, p):
    """A "per-row" score computed from the whole batch: 1 on every row when at least
    half of the batch is right.  Called on the batch, one replaced row can flip all terms."""
    right = (np.asarray(t) == np.asarray(p)).astype(float)
    return np.full(right.shape, float(right.mean() >= 0.5))


def _balanced_neighbours(m):
    """Labels with exactly half of ``m`` predictions right, and a neighbour that
    replaces one right row by a wrong one (the batch majority flips)."""
    pred = np.zeros(m, dtype=np.int64)
    y = np.where(np.arange(m) < m // 2, 0, 1)
    y2 = y.copy()
    y2[0] = 1
    return pred, y, y2


@pytest.mark.parametrize("m", [2, 10, 200])
def test_a_batch_function_moves_one_term_only(m):
    """The score's sensitivity assumes term i depends on row i alone.  A user's row score
    that reads the batch (here: its majority) would move all m terms when one row is
    replaced; skdp calls a user's row score one row at a time, so the sum of the clipped
    terms moves by at most upper - lower.  Vectorised over the batch, it moved by m."""
    scorer = make_private_scorer(_batch_majority, lower=0.0, upper=1.0)
    pred, y, y2 = _balanced_neighbours(m)
    change = abs(scorer.row_values(_Fixed(pred), None, y).sum()
                 - scorer.row_values(_Fixed(pred), None, y2).sum())
    assert change <= scorer.score_range
    assert _batch_majority(y, pred).sum() - _batch_majority(y2, pred).sum() == m


def test_a_row_score_sees_fresh_one_row_copies():
    seen = []

    def spy(t, p):
        seen.append((t.shape, p.shape, t.base is None or t.base.size == 1,
                     p.base is None or p.base.size == 1))
        return np.abs(t - p)

    scorer = make_private_scorer(spy, lower=0.0, upper=1.0, greater_is_better=False)
    values = scorer.row_values(_Fixed(np.array([0.0, 0.25, 3.0])), None,
                               np.array([0.5, 0.0, 0.0]))
    np.testing.assert_allclose(values, [-0.5, -0.25, -1.0])
    assert seen == [((1,), (1,), True, True)] * 3
    two_values = make_private_scorer(lambda t, p: np.r_[t, p], lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="one value per row"):
        two_values.row_values(_Fixed(np.zeros(2)), None, np.zeros(2))


class _Linear:
    """A linear model's prediction ``X @ w`` on unclipped rows, as in skdp's ``predict``."""

    def __init__(self, w):
        self.w = np.asarray(w, dtype=np.float64)

    def predict(self, X):
        return np.asarray(X) @ self.w


#: a finite row whose product with the models below overflows (to inf, or inf - inf: NaN)
EXTREME_ROW = [1e308, -1e308, 1e308]


@pytest.mark.parametrize("scorer", [
    make_private_scorer(lambda t, p: np.abs(t - p), lower=0.0, upper=2.0,
                        greater_is_better=False),
    make_private_scorer(lambda t, p: (t - p) ** 2, lower=0.0, upper=4.0,
                        greater_is_better=False),
    # a row score that cannot take a non-finite prediction (int(inf): OverflowError)
    make_private_scorer(lambda t, p: abs(t[0] - int(p[0])), lower=0.0, upper=2.0,
                        greater_is_better=False),
], ids=["abs", "square", "int"])
@pytest.mark.parametrize("weights", [[2.0, 0.0, -2.0], [2.0, -2.0, 2.0]],
                         ids=["nan", "inf"])
def test_an_overflowing_row_is_scored_silently_as_the_worst_term(scorer, weights):
    """Audit finding: a finite extreme validation row overflowed the model's product and
    numpy warned ("overflow encountered in matmul") -- on the neighbour only, outside the
    release; under ``simplefilter("error")`` (or ``np.seterr(all="raise")``) the search
    raised.  Now no warning and no exception; the row's term is the worst end of the
    interval and every other row's term is its value on the neighbour without the row."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (20, 3))
    y = np.round(rng.uniform(0, 1, 20))
    model = _Linear(weights)
    honest = scorer.row_values(model, X, y)
    X[7] = EXTREME_ROW
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        values = scorer.row_values(model, X, y)
    worst = scorer.lower if scorer.greater_is_better else -scorer.upper
    assert values[7] == worst
    np.testing.assert_array_equal(np.delete(values, 7), np.delete(honest, 7))


def test_an_arithmetic_error_of_a_row_score_is_that_rows_worst_term():
    """A user's row score that overflows on one row's finite prediction (math.exp(1000):
    OverflowError) raised out of the search on that neighbour only; now that row scores
    the worst end, and the other rows their own values."""
    import math

    scorer = make_private_scorer(lambda t, p: math.exp(p[0]) - t[0], lower=0.0, upper=3.0)
    values = scorer.row_values(_Fixed(np.array([0.0, 1000.0, 1.0])), None,
                               np.array([0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(values, [1.0, 0.0, math.e])


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("mean", [1.5, 10.0])
def test_repetitions_distribution(shape, mean):
    gamma = tnb_gamma(mean, shape)
    ref = rdp_mod._gamma_truncated_negative_binomial(shape, mean)
    # ours is the upper end (E[K] <= mean); dp-accounting keeps the lower end
    assert gamma >= ref and gamma == pytest.approx(ref, rel=1e-6)
    assert tnb_mean(gamma, shape) <= mean * (1 + 1e-12)
    rng = np.random.default_rng(0)
    draws = np.array([draw_repetitions(rng, mean, shape) for _ in range(20000)])
    assert draws.min() >= 1
    se = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - mean) < 4 * se


def test_mean_one_is_a_single_run():
    rng = np.random.default_rng(0)
    assert {draw_repetitions(rng, 1.0, s) for s in (0.0, 1.0, 3.0)} == {1}


def test_splits_are_public_and_partition():
    rng1, rng2 = np.random.default_rng(7), np.random.default_rng(7)
    a, b = public_splits(23, 4, rng1), public_splits(23, 4, rng2)
    for (tr, va), (tr2, va2) in zip(a, b):
        np.testing.assert_array_equal(va, va2)
        assert np.intersect1d(tr, va).size == 0 and tr.size + va.size == 23
    assert np.sort(np.concatenate([va for _, va in a])).tolist() == list(range(23))
    assert a.labels.dtype == np.uint8 and a.train_sizes == [tr.size for tr, _ in a]
    assert a.validation_sizes == [6, 6, 6, 5]
    (tr, va), = public_splits(20, 0.25, np.random.default_rng(0))
    assert va.size == 5 and tr.size == 15
    with pytest.raises(ValueError):
        public_splits(3, 0.1, np.random.default_rng(0))


def test_dominating_event():
    g1, g2 = gaussian_event(1.0, 1.0), gaussian_event(2.0, 1.0)  # mu = 1, 0.5
    dom = dominating([g1, g2, g1])
    assert dom.noise_multiplier == pytest.approx(2.0)  # mu = 1
    assert dominating([g2, g2]) == g2
    p = dominating([pure_dp_event(0.5), pure_dp_event(1.0)])
    assert p == pure_dp_event(1.0)
    mixed = dominating([g1, pure_dp_event(1.0)])
    assert mixed == compose(g1, pure_dp_event(1.0))  # upper bound fallback
