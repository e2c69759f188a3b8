"""Private quantiles (skdp._mechanisms._quantiles): the public grid, the sensitivity of the
count trees on adversarial neighbours, the accuracy of the released quantiles, and an
audit that catches an under-noised release."""

import math

import numpy as np
import pytest

from skdp._mechanisms import new_word_source
from skdp._mechanisms import _quantiles as q
from skdp.accounting import gaussian_mu_for, get_epsilon
from skdp.audit import epsilon_lower_bound

EXTREMES = [np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324, -5e-324, 0.0, -0.0, 2.0 ** 64,
            2.0 ** -64, 1.0, -1.0, 123456.789]


def test_every_float_has_a_leaf_and_order_is_kept():
    grid = q.ValueGrid()
    rng = np.random.default_rng(0)
    values = np.sort(rng.standard_normal(20000) * 10.0 ** rng.integers(-25, 25, 20000))
    leaves = grid.leaf(values)
    assert np.all(np.diff(leaves) >= 0)                     # monotone
    assert leaves.min() >= 0 and leaves.max() < q.LEAVES - 1
    inside = np.abs(values) < 2.0 ** 64
    for v, leaf in zip(values[inside][::53], leaves[inside][::53]):
        lo, hi = grid.edges(leaf)
        assert lo <= v <= hi
    special = grid.leaf(np.array(EXTREMES))
    assert special[0] == q.LEAVES - 1                        # NaN: its own public bucket
    assert np.all((special >= 0) & (special < q.LEAVES))


def test_linear_grid_clamps_outside_values():
    grid = q.ValueGrid((0.0, 10.0))
    leaves = grid.leaf(np.array([-1e300, 0.0, 5.0, 10.0, 1e300, np.nan]))
    assert leaves.tolist() == [0, 0, 2047, 4093, 4093, 4095]
    with pytest.raises(ValueError, match="finite lo < hi"):
        q.ValueGrid((1.0, 1.0))


def _tree_vector(X):
    grids = [q.ValueGrid() for _ in range(X.shape[1])]
    return np.concatenate([lv.ravel() for lv in q.tree_levels(q.leaf_counts(X, grids))])


@pytest.mark.parametrize("replacement", EXTREMES)
def test_sensitivity_holds_on_adversarial_neighbours(replacement):
    rng = np.random.default_rng(1)
    d = 3
    X = rng.standard_normal((200, d)) * 1e3
    X[::7, 1] = np.nan
    bound = q.tree_sensitivity(d)
    for row in (0, 7):
        X2 = X.copy()
        X2[row] = replacement
        assert np.linalg.norm(_tree_vector(X) - _tree_vector(X2)) <= bound + 1e-12


def test_sensitivity_is_attained():
    """Moving a value from the lowest to the highest leaf changes two nodes per level in
    every column: the bound sqrt(24 d) is tight."""
    X = np.full((10, 2), -1e300)
    X2 = X.copy()
    X2[0] = np.nan
    assert np.linalg.norm(_tree_vector(X) - _tree_vector(X2)) == pytest.approx(
        q.tree_sensitivity(2))


def test_consistency_is_exact_without_noise():
    rng = np.random.default_rng(2)
    counts = q.leaf_counts(rng.normal(size=(500, 2)), [q.ValueGrid(), q.ValueGrid()])
    leaves = q.consistent_leaves(q.tree_levels(counts), 500)
    np.testing.assert_allclose(leaves, counts, atol=1e-9)


def test_quantiles_are_accurate_and_event_is_recorded():
    rng = np.random.default_rng(3)
    n = 30000
    X = np.column_stack([rng.integers(17, 90, n).astype(float), rng.lognormal(12, 0.5, n),
                         rng.normal(0, 1, n)])
    X[:300, 0] = np.nan
    mu = gaussian_mu_for(0.5, 1e-6)
    hist, event, noise, sens = q.release_tree_histogram(X, mu, new_word_source(0))
    assert sens == pytest.approx(math.sqrt(24 * 3))
    assert noise >= sens / mu
    assert get_epsilon(event, 1e-6) <= 0.5
    levels = np.linspace(0.05, 0.95, 7)
    released = hist.quantiles(levels)
    for j in range(3):
        col = X[:, j][~np.isnan(X[:, j])]
        ranks = np.searchsorted(np.sort(col), released[j]) / col.size
        # rank error of a quantile ~ sigma sqrt(LEVELS/2) rows: ~0.6 % of n here
        assert np.max(np.abs(ranks - levels)) < 0.03, (j, ranks)
    assert hist.missing_fraction()[0] == pytest.approx(0.01, abs=0.01)


def test_same_seed_same_release():
    X = np.random.default_rng(4).normal(size=(1000, 2))
    a = q.release_tree_histogram(X, 1.0, new_word_source(7))[0].quantiles([0.5])
    b = q.release_tree_histogram(X, 1.0, new_word_source(7))[0].quantiles([0.5])
    assert np.array_equal(a, b)


def _audit_scores(monkeypatch, under_noised, runs=600):
    """A statistic of the release on two neighbours that differ by moving one value from
    the lowest to the highest bin: the released mass of the highest leaf minus the
    lowest."""
    if under_noised:
        honest = q.tree_sensitivity
        monkeypatch.setattr(q, "tree_sensitivity", lambda d: honest(d) / 20.0)
    X0 = np.full((40, 1), -1e300)
    X1 = X0.copy()
    X1[0] = 1e300
    mu = gaussian_mu_for(1.0, 1e-5)
    low, high = q.ValueGrid().leaf(np.array([-1e300, 1e300]))

    def scores(X, seed):
        out = np.empty(runs)
        for i in range(runs):
            hist = q.release_tree_histogram(X, mu, new_word_source(seed + i))[0]
            out[i] = hist.counts[0, high] - hist.counts[0, low]
        return out

    return scores(X0, 0), scores(X1, 10 ** 6)


@pytest.mark.parametrize("under_noised", [False, True])
def test_audit_catches_under_noised_release(monkeypatch, under_noised):
    s0, s1 = _audit_scores(monkeypatch, under_noised)
    res = epsilon_lower_bound(s0, s1, delta=1e-5, random_state=0)
    if under_noised:
        assert res.epsilon_lower_bound > 1.0, res
    else:
        assert res.epsilon_lower_bound <= 1.0, res
