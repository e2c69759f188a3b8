"""White-box statistical privacy audit of solver='zeroth_order', with an
under-noised variant that must be caught.

Two neighbouring datasets differ in one canary row placed in the first GRAD batch of a
period (the row order is fixed: privacy does not rely on the permutation).  The leaf is
computed by the solver's own kernel (``batch_estimate``, with the solver's per-row
guard), the noise by the solver's own calibration (``zeroth_order_plan``) and the shared
tree kernel (``tree_noise``), in a non-adaptive harness: the canary's row is
``a = R e_1`` with ``y = +-B`` far from the kink, so with ``p = 1`` its GRAD row is
``+-L`` for every direction (the per-row guard's bound ``p L``: the worst case), and the
other rows are zero rows (they contribute 0).  The statistic is ``e_1`` applied to the
sum of the releases at ``t = 1, 2, 4, ..., 2^{m-1}``: exactly the ``m`` node sums that
contain leaf 1, each with its own noise -- the likelihood-ratio statistic of every node the
canary enters.

Each audit: 20,000 runs per dataset, threshold chosen on half, 95 % Clopper-Pearson lower
bound on epsilon (:func:`skdp.audit.epsilon_lower_bound`).  The honest bound must be <= the
claimed epsilon; the under-noised variant uses a quarter of the noise that is exactly
``(epsilon, delta)`` for the canary's actual effect and must be caught.  Fixed seeds: the
suite is deterministic; each honest bound fails with probability <= 5 % for a random seed.
"""

import math

import numpy as np
import pytest
from numba import njit

from skdp._losses._nonsmooth import CappedAbsoluteLoss
from skdp._mechanisms._tree import tree_noise, tree_reset
from skdp._solvers._zeroth_order import zeroth_order_plan
from skdp._solvers._zeroth_order_kernel import SAFE, batch_estimate
from skdp.accounting import gaussian_mu_for
from skdp.audit import epsilon_lower_bound

EPSILON, DELTA, N_RUNS = 1.0, 1e-6, 20_000
R, B_Y, TAU = 1.0, 3.0, 5.0  # tau > B_Y + delta R: the canary is on a linear piece
N = 400


@njit(cache=False)
def _tree_statistic(n_runs, m, sigma, rng, shift):
    """e_1 . sum_{k < m} (shift + TREE(2^k)) over independent trees."""
    out = np.empty(n_runs)
    block = np.empty(m, dtype=np.int64)
    nodes = np.zeros((m, 1))
    noise = np.zeros(1)
    for r in range(n_runs):
        tree_reset(block)
        s = 0.0
        t = 1
        for _ in range(m):
            tree_noise(t, block, nodes, sigma, rng, noise)
            s += shift + noise[0]
            t *= 2
        out[r] = s
    return out


def _leaf(P, y_canary):
    """GRAD of the first batch (B1 rows: the canary then zero rows) at w = 0."""
    X = np.zeros((P.B1, 1))
    X[0, 0] = R
    y = np.zeros(P.B1)
    y[0] = y_canary
    g = np.zeros(1)
    batch_estimate(X, y, np.arange(P.B1, dtype=np.int64), 0, P.B1, np.abs(X[:, 0]),
                   np.zeros(1), np.zeros(1), 0, P.delta_s, P.lip, P.lip * R * SAFE, P.m, 1,
                   CappedAbsoluteLoss(TAU).loss_id, TAU, np.random.default_rng(0), np.zeros(1),
                   np.zeros(1), g, np.zeros(P.B1, dtype=np.int64))
    return float(g[0])


def _audit(calibration, under_noised):
    P, _ = zeroth_order_plan(N, 1, CappedAbsoluteLoss(TAU), epsilon=EPSILON, delta=DELTA,
                             data_norm=R, y_bound=B_Y, smoothing_radius=0.3,
                             calibration=calibration)
    g0, g1 = _leaf(P, +B_Y), _leaf(P, -B_Y)
    gap = abs(g0 - g1)
    assert gap <= P.s1 <= P.s  # the leaf sensitivity the accounting uses
    sigma = P.sigma
    if under_noised:
        sigma = math.sqrt(P.levels) * gap / gaussian_mu_for(EPSILON, DELTA) / 4.0
    s0 = _tree_statistic(N_RUNS, P.levels, sigma, np.random.default_rng(1), g0)
    s1 = _tree_statistic(N_RUNS, P.levels, sigma, np.random.default_rng(2), g1)
    return epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0), gap / P.s, gap / P.s1


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_tree_release_audit(calibration):
    honest, ratio, ratio1 = _audit(calibration, False)
    assert honest.epsilon_lower_bound <= EPSILON, honest
    assert ratio1 > 1 - 1e-6  # the canary attains the GRAD leaf's sensitivity 2 p L/B1
    assert ratio > 0.45       # ... which is ~half the tree's s = max(s1, s2) = 4 p L/T
    weak, _, _ = _audit(calibration, True)
    assert weak.epsilon_lower_bound > EPSILON, weak


def _kernel_releases(P, y_canary, sigma, n_runs, seed, exact=False):
    """Statistic of the releases g_tilde_t of the solver's own kernel ``zo_run`` (periods
    of T = 16 rounds): the canary is row 0 of the first GRAD batch, every other row is a
    zero row, so every release of period 1 is ``M_1 + TREE(t)``; the statistic sums the
    releases at ``t = 2^k`` (the m nodes containing leaf 1).  ``exact``: the grid releases
    of the node sums with pre-drawn discrete Gaussian noise (the secure path)."""
    from skdp._mechanisms import new_word_source
    from skdp._solvers._zeroth_order import _exact_noise, kernel_parameters
    from skdp._solvers._zeroth_order_kernel import N_STATS, zo_run

    P = type(P)(P, sigma=sigma, K=1, rows_used=2 * P.T)  # node noise sigma; one period
    n = P.rows_used
    X = np.zeros((n, 1))
    X[0, 0] = R
    y = np.zeros(n)
    y[0] = y_canary
    fpar, ipar = kernel_parameters(P, R)
    trace = np.zeros((P.K * P.T, 1))
    rng = np.random.default_rng(seed)
    idx = [2**k - 1 for k in range(P.levels)]
    out = np.empty(n_runs)
    source = new_word_source(np.random.default_rng(seed)) if exact else None
    for r in range(n_runs):
        noise = _exact_noise(P, R, 1, source) if exact else ()
        zo_run(X, y, np.arange(n, dtype=np.int64), CappedAbsoluteLoss(TAU).loss_id, TAU,
               np.abs(X[:, 0]), fpar, ipar, rng, np.zeros((P.K, 1)), np.zeros(n, np.int64),
               np.zeros(N_STATS), np.zeros(1), trace, *noise)
        out[r] = trace[idx, 0].sum()
    return out


@pytest.mark.slow
@pytest.mark.parametrize("calibration,exact", [("tight", False), ("paper", False),
                                               ("tight", True)])
def test_full_kernel_release_audit(calibration, exact):
    """The same audit on the releases of the full kernel (OSD, tree, oracle code paths),
    with float noise and with the exact grid releases of the node sums."""
    P, _ = zeroth_order_plan(1000, 1, CappedAbsoluteLoss(TAU), epsilon=EPSILON, delta=DELTA,
                             data_norm=R, y_bound=B_Y, smoothing_radius=0.3,
                             calibration=calibration, max_iter=16)
    assert (P.T, P.levels) == (16, 5)
    gap = 2 * P.L / P.B1  # the canary's effect on leaf 1 (= s1: GRAD rows are +-L here)
    results = []
    for sigma in (P.sigma, math.sqrt(P.levels) * gap / gaussian_mu_for(EPSILON, DELTA) / 4):
        s0 = _kernel_releases(P, +B_Y, sigma, N_RUNS // 2, 1, exact)
        s1 = _kernel_releases(P, -B_Y, sigma, N_RUNS // 2, 2, exact)
        se = math.sqrt((s0.var() + s1.var()) / s0.size)
        assert abs(np.mean(s1) - np.mean(s0) - P.levels * gap) < 4 * se  # the canary's shift
        results.append(epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0))
    assert results[0].epsilon_lower_bound <= EPSILON, results[0]
    assert results[1].epsilon_lower_bound > EPSILON, results[1]
