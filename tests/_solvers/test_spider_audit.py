"""White-box statistical privacy audit of solver='spider', with an under-noised variant
that must be caught.

Two neighbouring datasets differ in one canary row placed in the first refresh batch (the
stream order is fixed: privacy does not rely on shuffling).  The noise-free parts are
computed by the solver's own kernels (``oracle_refresh``, ``hessian_vector``) and the
noise by the solver's own calibration (``spider_parameters``) and tree kernel
(``tree_noise``), in a non-adaptive harness:

* tree: the canary's gradient is ``+G u`` in D and ``-G u`` in D' (residual at the maximiser
  of ``|l'|``); the statistic is ``u`` applied to the sum of the prefix releases at
  ``j = 1, 2, 4, ..., 2^{m-1}`` -- exactly the ``m`` node sums that contain leaf 1, each with
  its own noise, i.e. the likelihood-ratio statistic of all nodes the canary enters;
* escape: the canary's Hessian weight is ``l''(0) = 1`` in D and ``min l''`` in D' (Welsch:
  ``-2 e^{-3/2}``), the ``K Gamma`` escape releases use ``v = (Xi - ) u``, the statistic is
  ``u`` applied to their sum.

Each audit: 20,000 runs per dataset, threshold chosen on half, 95 % Clopper–Pearson lower
bound on epsilon (:func:`skdp.audit.epsilon_lower_bound`).  The honest lower bound must be
<= the claimed epsilon; the under-noised variant uses a quarter of the noise that would be
exactly ``(epsilon, delta)`` for the canary's *actual* effect (as in
``tests/linear_model/test_privacy_audit.py``) and must be caught.  Fixed seeds: the suite is
deterministic; each honest bound fails with probability <= 5 % for a random seed.
"""

import math

import numpy as np
import pytest
from numba import njit

from skdp.accounting import gaussian_mu_for
from skdp.audit import epsilon_lower_bound
from skdp._losses import WelschLoss
from skdp._mechanisms._tree import tree_noise, tree_reset
from skdp._solvers._spider import choose_gamma
from skdp._solvers._spider_kernel import hessian_vector, oracle_refresh

EPSILON, DELTA, N_RUNS = 1.0, 1e-6, 20_000
LOSS = WelschLoss(1.0)
P_DIM = 2
U = np.array([1.0, 0.0])


@njit(cache=False)
def _tree_statistic(n_runs, m, sigma, rng, shift):
    """u . sum_{k < m} (shift + TREE(2^k)) over independent trees (u = e_1)."""
    out = np.empty(n_runs)
    block = np.empty(m, dtype=np.int64)
    nodes = np.zeros((m, 2))
    noise = np.zeros(2)
    for r in range(n_runs):
        tree_reset(block)
        s = 0.0
        t = 1
        for _ in range(m):
            tree_noise(t, block, nodes, sigma, rng, noise)
            s += shift + noise[0]  # TREE(2^k) is the single node [1, 2^k]
            t *= 2
        out[r] = s
    return out


def _params(calibration):
    G, M, rho = LOSS.constants(1.0)
    return choose_gamma(10**5, p=P_DIM, G=G, M=M, rho=rho, B=LOSS.sup_loss_at_zero(),
                        epsilon=EPSILON, delta=DELTA, calibration=calibration)


def _batch_with_canary(P, residual):
    """The first refresh batch: b - 1 fixed rows and the canary a = u, y = -residual."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(P.b, P_DIM))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = rng.normal(size=P.b)
    X[0] = U
    y[0] = -residual  # residual at x = 0 is a.0 - y
    return X, y


def _refresh(P, residual):
    X, y = _batch_with_canary(P, residual)
    rows = np.arange(P.b, dtype=np.int64)
    grad, weights = np.empty(P_DIM), np.zeros(P.b)
    norms = np.linalg.norm(X, axis=1)
    oracle_refresh(X, y, rows, 0, P.b, np.zeros(P_DIM), LOSS.loss_id, LOSS.param, norms,
                   min(P.G, 0.5 * P.s_g * P.b), min(P.M, 0.5 * P.s_H * P.b), grad, weights)
    return X, rows, grad, weights


def _exact_statistic(value, sigma, sens_ratio, sens, count, seed):
    """``sum`` of ``count`` independent exact grid releases of ``value`` (the secure path:
    ``gamma (rint(value/gamma) + Z)``, grid and integers from ``exact_gaussian_noise``
    calibrated as the solver does, noise scaled by the rounding factor), per run."""
    from skdp._mechanisms import new_word_source
    from skdp._mechanisms._exact import exact_gaussian_noise

    source = new_word_source(np.random.default_rng(seed))
    gamma, z, _ = exact_gaussian_noise(source, sigma * sens_ratio, sens, 1, 1e3,
                                       N_RUNS * count)
    steps = np.rint(value / gamma) + z.reshape(N_RUNS, count).astype(float)
    return (gamma * steps).sum(axis=1)


def _tree_audit(calibration, under_noised, exact=False):
    P = _params(calibration)
    u_star = 1.0 / math.sqrt(2.0)  # argmax of Welsch's |l'| (c = 1)
    g0 = _refresh(P, +u_star)[2] @ U
    g1 = _refresh(P, -u_star)[2] @ U
    gap = abs(g0 - g1)
    assert gap <= P.s_g  # the leaf sensitivity the accounting uses
    sigma = P.sigma_tree
    if under_noised:
        sigma = math.sqrt(P.m) * gap / gaussian_mu_for(EPSILON, DELTA) / 4.0
    if exact:
        from skdp._solvers._spider import exact_sensitivities

        s_tree = exact_sensitivities(P, 10**5)[0]
        s0 = _exact_statistic(g0, sigma, s_tree / P.s_g, s_tree, P.m, 1)
        s1 = _exact_statistic(g1, sigma, s_tree / P.s_g, s_tree, P.m, 2)
    else:
        s0 = _tree_statistic(N_RUNS, P.m, sigma, np.random.default_rng(1), g0)
        s1 = _tree_statistic(N_RUNS, P.m, sigma, np.random.default_rng(2), g1)
    return epsilon_lower_bound(s0, s1, delta=DELTA, random_state=0), gap / P.s_g


def _escape_audit(calibration, under_noised, exact=False):
    P = _params(calibration)
    v = U * P.Xi * (1 - 1e-12)
    releases = []
    for residual in (0.0, math.sqrt(1.5)):  # l'' = 1 and l'' = min = -2 e^{-3/2}
        X, rows, _, weights = _refresh(P, residual)
        hv = np.empty(P_DIM)
        hessian_vector(X, rows, weights, 0, P.b, v, hv)
        releases.append(hv @ U)
    gap = abs(releases[0] - releases[1])
    assert gap <= P.s_H * P.Xi
    n_rel = P.K * P.Gamma
    sigma = P.sigma_esc
    if under_noised:
        sigma = math.sqrt(n_rel) * gap / gaussian_mu_for(EPSILON, DELTA) / 4.0
    out = []
    for seed, h in ((3, releases[0]), (4, releases[1])):
        if exact:
            from skdp._solvers._spider import exact_sensitivities

            s_esc = exact_sensitivities(P, 10**5)[1]
            out.append(_exact_statistic(h, sigma, s_esc / (P.s_H * P.Xi), s_esc, n_rel, seed))
            continue
        rng = np.random.default_rng(seed)
        out.append(n_rel * h + sigma * rng.standard_normal((N_RUNS, n_rel)).sum(1))
    return epsilon_lower_bound(out[0], out[1], delta=DELTA, random_state=0), gap / (P.s_H * P.Xi)


@pytest.mark.parametrize("calibration,exact", [("tight", False), ("paper", False),
                                               ("tight", True)])
def test_tree_release_audit(calibration, exact):
    honest, ratio = _tree_audit(calibration, False, exact)
    assert honest.epsilon_lower_bound <= EPSILON, honest
    assert ratio > 0.3  # the canary moves the leaf by a sizeable part of s_g
    weak, _ = _tree_audit(calibration, True, exact)
    assert weak.epsilon_lower_bound > EPSILON, weak


@pytest.mark.parametrize("calibration,exact", [("tight", False), ("paper", False),
                                               ("tight", True)])
def test_escape_release_audit(calibration, exact):
    honest, ratio = _escape_audit(calibration, False, exact)
    assert honest.epsilon_lower_bound <= EPSILON, honest
    assert ratio > 0.3
    weak, _ = _escape_audit(calibration, True, exact)
    assert weak.epsilon_lower_bound > EPSILON, weak
