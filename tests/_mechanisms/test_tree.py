"""Binary-tree mechanism: node sets, noise reuse and variance, restarts, accounting."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant
from scipy import stats

from skdp.accounting import NEIGHBORING_RELATION, gaussian_epsilon, get_delta, get_epsilon
from skdp._mechanisms._tree import (
    TreeAggregator,
    tree_dp_event,
    tree_height,
    tree_nodes,
    tree_noise,
    tree_reset,
    tree_sigma_paper,
    tree_sigma_tight,
)


def _popcount(t):
    return bin(t).count("1")


@pytest.mark.parametrize("horizon", [1, 2, 3, 7, 8, 64, 100, 1024, 1500])
def test_nodes_are_the_binary_expansion(horizon):
    m = tree_height(horizon)
    assert m == math.floor(math.log2(horizon)) + 1
    per_leaf = np.zeros(horizon + 1, dtype=int)
    released = set()
    for t in range(1, horizon + 1):
        nodes = tree_nodes(t)
        assert len(nodes) == _popcount(t) <= m
        covered = []
        for u, v in nodes:
            length = v - u + 1
            assert length & (length - 1) == 0          # a power of two
            assert (u - 1) % length == 0               # aligned: a node of the dyadic tree
            assert length <= 2 ** (m - 1)              # within the m levels
            covered.extend(range(u, v + 1))
            released.add((u, v))
        assert sorted(covered) == list(range(1, t + 1))  # disjoint and covering [1, t]
    for u, v in released:
        per_leaf[u : v + 1] += 1
    assert per_leaf[1:].max() <= m
    if horizon == 2 ** (m - 1):
        assert (1, horizon) in released  # the root is used at t = Sigma = 2^p (v2 gap fixed)


def _release_sequence(horizon, d, sigma, seed):
    rng = np.random.default_rng(seed)
    m = tree_height(horizon)
    block = np.empty(m, dtype=np.int64)
    nodes = np.zeros((m, d))
    tree_reset(block)
    out = np.empty(d)
    seq = np.zeros((horizon + 1, d))
    for t in range(1, horizon + 1):
        tree_noise(t, block, nodes, sigma, rng, out)
        seq[t] = out
    return seq


@pytest.mark.parametrize("horizon", [13, 64])
def test_node_noise_is_reused_consistently(horizon):
    """Extract each node's noise as TREE(v) - TREE(u-1) at its completion time; then every
    TREE(t) must equal the sum over NODE(t) of those same vectors."""
    seq = _release_sequence(horizon, 3, 1.0, 0)
    zeta = {}
    for t in range(1, horizon + 1):
        u, v = tree_nodes(t)[-1]  # the node completed at t
        zeta[(u, v)] = seq[v] - seq[u - 1]
    for t in range(1, horizon + 1):
        expected = sum(zeta[node] for node in tree_nodes(t))
        np.testing.assert_allclose(seq[t], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(seq[5] - seq[4], zeta[(5, 5)], atol=1e-12)
    np.testing.assert_allclose(seq[6] - seq[4], zeta[(5, 6)], atol=1e-12)
    assert np.all(zeta[(5, 5)] != zeta[(5, 6)])
    assert np.array_equal(seq, _release_sequence(horizon, 3, 1.0, 0))  # seeded: bitwise


def test_noise_at_step_t_has_the_variance_the_accounting_assumes():
    """Per-coordinate Var TREE(t) = popcount(t) sigma^2 for every t <= 64 (chi-square test,
    two-sided, level 1e-4 per t: family error <= 0.64 %, fixed seed); covariances
    Cov(TREE(t), TREE(t')) = |NODE(t) & NODE(t')| sigma^2 on a few pairs."""
    horizon, d, reps, sigma = 64, 40, 600, 0.7
    samples = np.stack([_release_sequence(horizon, d, sigma, 100 + r) for r in range(reps)])
    N = reps * d
    for t in range(1, horizon + 1):
        x = samples[:, t, :].ravel()
        stat = np.sum(x * x) / (_popcount(t) * sigma**2)
        p = stats.chi2.cdf(stat, N)
        assert 1e-4 / 2 < p < 1 - 1e-4 / 2, (t, stat / N)
    for t, s in ((4, 5), (6, 7), (7, 8), (12, 14)):
        shared = len(set(tree_nodes(t)) & set(tree_nodes(s)))
        cov = np.mean(samples[:, t, :] * samples[:, s, :])
        assert abs(cov - shared * sigma**2) < 6 * sigma**2 * math.sqrt(2 * max(shared, 1) / N) \
            + 5 * sigma**2 / math.sqrt(N)


def test_prefix_sums_are_exact_sums_plus_tree_noise():
    rng = np.random.default_rng(5)
    leaves = rng.normal(size=(37, 4))
    tree = TreeAggregator(dim=4, sigma=0.3, horizon=37, rng=np.random.default_rng(1))
    ref = _release_sequence(37, 4, 0.3, 1)  # same seed, bare kernel
    for t in range(1, 38):
        released = tree.add(leaves[t - 1])
        np.testing.assert_allclose(released - tree.noise(), leaves[:t].sum(0), atol=1e-12)
        np.testing.assert_allclose(tree.noise(), ref[t], atol=0)
    assert tree.full
    with pytest.raises(RuntimeError, match="full"):
        tree.add(leaves[0])


def test_restart_starts_a_fresh_tree():
    tree = TreeAggregator(dim=2, sigma=1.0, horizon=4, rng=np.random.default_rng(2))
    first = [tree.add(np.zeros(2)) for _ in range(4)]
    assert tree.full and tree.n_trees == 1
    tree.restart()
    assert tree.t == 0 and not tree.full and tree.n_trees == 2
    second = [tree.add(np.ones(2)) for _ in range(3)]
    # exact sums restarted from zero; every node redrawn (no reuse across trees)
    np.testing.assert_allclose(second[2] - tree.noise(), [3.0, 3.0], atol=1e-12)
    for t in range(3):  # TREE(t) of the new tree is not the old tree's TREE(t)
        assert not np.any(np.isclose(first[t], second[t] - (t + 1)))
    with pytest.raises(ValueError):
        tree.add(np.zeros(3))


@pytest.mark.parametrize("horizon,sigma,s", [(1, 1.0, 1.0), (7, 2.0, 1.0), (1000, 5.0, 0.3)])
def test_event_is_sqrt_m_gdp_and_matches_dp_accounting(horizon, sigma, s):
    m = tree_height(horizon)
    event = tree_dp_event(sigma, s, horizon)
    mu = math.sqrt(m) * s / sigma
    for delta in (1e-5, 1e-8):
        eps = get_epsilon(event, delta)
        assert eps == pytest.approx(gaussian_epsilon(delta, mu), rel=1e-9)
        # dp-accounting's PLD accountant under replace-one reads the event the same way
        acc = PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=1e-4)
        acc.compose(event)
        assert acc.get_epsilon(delta) == pytest.approx(eps, rel=2e-3, abs=2e-3)
    assert isinstance(event, dp_accounting.SelfComposedDpEvent) and event.count == m


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
@pytest.mark.parametrize("horizon", [1, 2, 100, 10**6])
def test_calibrations_are_certified(epsilon, delta, horizon):
    tight = tree_sigma_tight(epsilon, delta, 1.0, horizon)
    assert get_delta(tree_dp_event(tight, 1.0, horizon), epsilon) <= delta
    assert get_delta(tree_dp_event(tight * 0.99, 1.0, horizon), epsilon) > delta  # smallest
    paper = tree_sigma_paper(epsilon, delta, 1.0, horizon)
    assert paper > 0  # Sigma = 1 does not give sigma = 0
    assert get_delta(tree_dp_event(paper, 1.0, horizon), epsilon) <= delta
    assert paper >= tight


def test_lemma_3_13_tree_noise_is_insufficient():
    """Regression test for the documented flaw: sigma = s ln(1/delta)/eps (Lemma 3.13 with
    the replace-one sensitivity, no 4 sqrt(log Sigma)) at m = 14, eps = 1 has delta ~ 1.5e-4."""
    horizon = 2**13  # m = 14
    sigma = math.log(1e5) / 1.0
    achieved = get_delta(tree_dp_event(sigma, 1.0, horizon), 1.0)
    assert achieved > 1e-5
    assert achieved == pytest.approx(1.5e-4, rel=0.05)


def _float_tree_nodes(leaves, sigma=0.0, seed=0):
    """Run tree_float_release over ``leaves``; return the node released at each step."""
    from skdp._mechanisms._tree import tree_exact_reset, tree_float_release

    T, d = leaves.shape
    levels = tree_height(T)
    acc, released = np.zeros((levels, d)), np.zeros((levels, d))
    tree_exact_reset(acc, released)
    out, rng, nodes = np.zeros(d), np.random.default_rng(seed), []
    for t in range(1, T + 1):
        tree_float_release(t, leaves[t - 1], acc, released, sigma, rng, out)
        low = (t & -t).bit_length() - 1
        nodes.append(released[low].copy())
    return np.array(nodes)


def test_float_tree_nodes_read_only_their_own_leaves():
    """The float tree releases node sums computed from their own leaves: changing leaf i
    leaves every node that does not contain i bitwise unchanged (so a record's rounding
    reaches only its m nodes, as the analysis assumes), and the nodes add up to the prefix
    sums.  The running prefix sum the float path used before carries leaf i's rounding
    into later differences fl(S_end) - fl(S_start-1): shown here to move them."""
    rng = np.random.default_rng(5)
    T, i = 64, 5
    a = rng.normal(size=(T, 3)) * 10.0 ** rng.integers(-3, 4, size=(T, 1))
    b = a.copy()
    b[i - 1] += 1e-3 * (1 + rng.random(3))          # leaf i (1-based) changes
    na, nb = _float_tree_nodes(a), _float_tree_nodes(b)
    for t in range(1, T + 1):
        low = (t & -t).bit_length() - 1
        start = t - (1 << low) + 1
        if not start <= i <= t:
            np.testing.assert_array_equal(na[t - 1], nb[t - 1])
    # sum of the released nodes of NODE(t) = the prefix sum (up to rounding)
    levels = tree_height(T)
    out = np.zeros(3)
    from skdp._mechanisms._tree import tree_exact_reset, tree_float_release
    acc, released = np.zeros((levels, 3)), np.zeros((levels, 3))
    tree_exact_reset(acc, released)
    for t in range(1, T + 1):
        tree_float_release(t, a[t - 1], acc, released, 0.0, np.random.default_rng(0), out)
        np.testing.assert_allclose(out, a[:t].sum(axis=0), rtol=1e-12, atol=1e-9)
    # the running prefix sum's node differences do move after leaf i
    moved = False
    Sa, Sb = np.cumsum(a, axis=0), np.cumsum(b, axis=0)
    for t in range(i + 1, T + 1):
        low = (t & -t).bit_length() - 1
        start = t - (1 << low) + 1
        if start > i:
            da = Sa[t - 1] - Sa[start - 2]
            db = Sb[t - 1] - Sb[start - 2]
            moved |= bool(np.any(da != db))
    assert moved


def test_float_tree_noise_variance():
    """Every released node carries N(0, sigma^2): on zero leaves the release at t has
    variance popcount(t) sigma^2 per coordinate."""
    from skdp._mechanisms._tree import tree_exact_reset, tree_float_release

    T, d, sigma, runs = 8, 4, 2.0, 3000
    levels = tree_height(T)
    sq = np.zeros(T)
    rng = np.random.default_rng(1)
    acc, released, out = np.zeros((levels, d)), np.zeros((levels, d)), np.zeros(d)
    for _ in range(runs):
        tree_exact_reset(acc, released)
        for t in range(1, T + 1):
            tree_float_release(t, np.zeros(d), acc, released, sigma, rng, out)
            sq[t - 1] += np.sum(out**2)
    for t in range(1, T + 1):
        ratio = sq[t - 1] / (runs * d * sigma**2)
        assert abs(ratio / bin(t).count("1") - 1) < 0.06, (t, ratio)
