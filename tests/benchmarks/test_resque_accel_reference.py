"""Tests of the NOT PRIVATE reference of the accelerated ReSQue pipeline (benchmarks/).

The module under test is a measurement tool (query counts and depth against the paper's
claims), not a solver: these tests check that it optimises, that its counters are what an
instrumented oracle observes, that every oracle round's queries are drawn at one centre
independently of the iterates and that the general-form and GLM-form ReSQue
estimators it can use agree in expectation.
"""

import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
import _resque_accel_reference as ref  # noqa: E402

from skdp._losses._smoothed import ABSOLUTE, smoothed_margin_loss  # noqa: E402
from skdp._solvers._resque_kernel import (resque_estimates_full,  # noqa: E402
                                          resque_estimates_glm)


class CountingOracle(ref.QueryOracle):
    """Instrumented oracle: counts batched calls and queries, records every round."""

    def __init__(self, problem):
        super().__init__(problem)
        self.calls = 0
        self.rows = 0
        self.rounds = []

    def full(self, idx, Xi):
        self.calls += 1
        self.rows += idx.shape[0]
        self.rounds.append(("full", idx.copy(), Xi.copy()))
        return super().full(idx, Xi)

    def glm(self, idx, centre, rho, Z):
        self.calls += 1
        self.rows += idx.shape[0]
        self.rounds.append(("glm", idx.copy(), Z.copy(), centre.copy()))
        return super().glm(idx, centre, rho, Z)


@pytest.fixture(scope="module")
def tiny():
    """Sharp noiseless absolute regression: the raw minimiser is w* = 0.6 e_1, F(w*) = 0."""
    return ref.make_problem(400, 3, "absolute", seed=3, noise=0.0)


@pytest.mark.parametrize("form", ["full", "glm"])
def test_accelerated_reaches_target(tiny, form):
    eps = 0.05
    sch = ref.schedule_for(tiny, eps)
    w_star = np.array([0.6, 0.0, 0.0])
    x_rho, f_star = tiny.minimise(sch.rho, x_start=w_star)
    # the known minimiser brackets min F_rho: 0 <= F <= F_rho, F_rho(w*) <= sqrt(2/pi) L rho
    assert tiny.value(w_star, 0.0) < 1e-12
    assert 0.0 <= f_star <= tiny.value(w_star, sch.rho) <= math.sqrt(2 / math.pi) * sch.rho
    k = 2 * sch.K_theory
    res = ref.run_accelerated(tiny, eps, seed=0, form=form, k_max=k, f_star=f_star,
                              stop_at_target=False)
    gap = tiny.value(res.x, sch.rho) - f_star
    assert gap <= eps, gap
    # unsmoothed risk: F(x) <= F_rho(x) <= eps + F_rho(w*) (raw optimum is 0)
    assert tiny.value(res.x, 0.0) <= eps + math.sqrt(2 / math.pi) * sch.rho
    c = res.counters
    assert c.outer == k
    assert c.line_search_calls == ref.N_BISECT * k
    assert c.rounds == c.ball_calls == (ref.N_BISECT + 1) * k
    # the iterates made progress from x0 = 0 (gap there is far above eps)
    assert tiny.value(np.zeros(3), sch.rho) - f_star > 4 * eps


def test_counters_match_instrumented_oracle(tiny):
    eps = 0.1
    for runner in (ref.run_accelerated, ref.run_ball_iteration):
        for form in ("full", "glm"):
            orc = CountingOracle(tiny)
            res = runner(tiny, eps, seed=1, form=form, k_max=5, oracle=orc,
                         stop_at_target=False)
            c = res.counters
            assert orc.calls == c.rounds == c.ball_calls
            assert orc.rows == c.queries
            assert all(r[0] == form for r in orc.rounds)
            # every trace row's counts are cumulative and increasing
            q = [t["queries"] for t in res.trace]
            assert q == sorted(q) and q[-1] == c.queries


def test_sgd_counts_one_query_per_round(tiny):
    res = ref.run_sgd(tiny, 0.1, seed=0, t_max=1000, stop_at_target=False)
    c = res.counters
    assert c.queries == c.rounds == c.outer == 1000


@pytest.mark.parametrize("form", ["full", "glm"])
def test_round_queries_independent_of_iterates(tiny, form):
    """Same seed and centre, different lam and start point (different iterate paths):
    identical query list; a different centre shifts the draws only."""
    sch = ref.schedule_for(tiny, 0.05)
    c = np.array([0.1, -0.05, 0.02])
    M = 200
    outs, traces, orcs = [], [], []
    for lam, start in ((sch.lam_star, None), (3 * sch.lam_star, c + 0.5 * sch.r / 3)):
        orc = CountingOracle(tiny)
        tr = np.empty(M)
        out = ref.ball_oracle(orc, c, lam, M, sch, np.random.default_rng(7), ref.Counters(),
                              form=form, x_start=start, trace=tr)
        outs.append(out)
        traces.append(tr)
        orcs.append(orc)
    assert not np.array_equal(traces[0], traces[1])  # the iterates differ ...
    assert not np.allclose(outs[0], outs[1])
    r0, r1 = orcs[0].rounds, orcs[1].rounds
    assert len(r0) == len(r1) == 1
    for a, b in zip(r0[0][1:], r1[0][1:]):  # ... the queries do not
        assert np.array_equal(a, b)
    # another centre: the same standardised draws
    orc = CountingOracle(tiny)
    c2 = c + 0.3
    ref.ball_oracle(orc, c2, sch.lam_star, M, sch, np.random.default_rng(7), ref.Counters(),
                    form=form)
    if form == "full":
        assert np.allclose(orc.rounds[0][2] - c2, r0[0][2] - c, atol=1e-14)
    else:
        assert np.array_equal(orc.rounds[0][2], r0[0][2])
    assert np.array_equal(orc.rounds[0][1], r0[0][1])


def test_glm_step_equals_resque_estimates_glm(tiny):
    """The GLM-form ball step uses the value of ``resque_estimates_glm`` (one step, x != c)."""
    sch = ref.schedule_for(tiny, 0.05)
    c = np.array([0.2, 0.1, -0.1])
    x0 = c + np.array([0.3, -0.2, 0.1]) * sch.r
    lam = 2 * sch.lam_star
    for seed in range(5):
        idx, Z = ref.draw_round(np.random.default_rng(seed), tiny.n, c, 1, sch.rho, "glm")
        t_q, g_q = ref.QueryOracle(tiny).glm(idx, c, sch.rho, Z)
        out = np.empty(3)
        ref._ball_sgd_glm(tiny.A, idx, t_q, g_q, c, x0, lam, sch.rho, sch.r, math.inf,
                          math.inf, out, np.empty(1))
        est = np.empty((1, 3))
        a = np.ascontiguousarray(tiny.A[idx[0]])
        resque_estimates_glm(a, tiny.y[idx[0]], ABSOLUTE, 0.0, c, x0, sch.rho, Z, math.inf,
                             math.inf, est)
        x1 = x0 - (est[0] + lam * (x0 - c)) / lam
        nrm = np.linalg.norm(x1 - c)
        if nrm > sch.r:
            x1 = c + (x1 - c) * (sch.r / nrm)
        np.testing.assert_allclose(out, x1, rtol=0, atol=1e-13)


def test_full_and_glm_forms_same_expectation():
    """Monte Carlo: both estimators average to grad f_rho(x) = l_s'(<a, x>) a.

    M = 2e5 draws per form, ||x - c|| = 0.8 rho (E w^2 <= e^0.64); each coordinate must be
    within 5 standard errors (estimated from the sample) of the closed form, and the two
    means within 5 combined standard errors of each other (false-alarm rate < 1e-5 per
    comparison for near-normal means).
    """
    rng = np.random.default_rng(2024)
    p, M, rho = 4, 200_000, 0.3
    a = rng.normal(size=p)
    a /= np.linalg.norm(a)
    y = 0.1
    c = rng.normal(size=p) * 0.2
    u = rng.normal(size=p)
    x = c + 0.8 * rho * u / np.linalg.norm(u)
    # general form: d-dimensional query points, subgradient l'(<a, xi>) a at each
    Xi = c + rho * rng.standard_normal((M, p))
    G = np.sign(Xi @ a - y)[:, None] * a[None, :]
    full = np.empty((M, p))
    resque_estimates_full(G, Xi, c, x, rho, math.inf, math.inf, full)
    # GLM form: one scalar draw per query
    Z = rng.standard_normal(M)
    glm = np.empty((M, p))
    resque_estimates_glm(a, y, ABSOLUTE, 0.0, c, x, rho, Z, math.inf, math.inf, glm)
    _, ds = smoothed_margin_loss(float(a @ x), y, ABSOLUTE, 0.0, rho * np.linalg.norm(a))
    truth = ds * a
    m_f, m_g = full.mean(0), glm.mean(0)
    se_f = full.std(0) / math.sqrt(M)
    se_g = glm.std(0) / math.sqrt(M)
    assert np.all(np.abs(m_f - truth) <= 5 * se_f), (m_f, truth, se_f)
    assert np.all(np.abs(m_g - truth) <= 5 * se_g), (m_g, truth, se_g)
    assert np.all(np.abs(m_f - m_g) <= 5 * np.sqrt(se_f**2 + se_g**2))
    # the 1-D weight has the smaller variance (E w^2 = exp(<a, x - c>^2/s^2) <= exp(D^2/rho^2))
    assert np.sum(glm.var(0)) <= np.sum(full.var(0))
