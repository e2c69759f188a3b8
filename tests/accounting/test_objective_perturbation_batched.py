"""The batched calibration of objective perturbation's noise (the ``alpha`` rule's, issue 48
part 3) takes the scalar calibration's decisions exactly: the same floats, not close ones."""

import math

import numpy as np
import pytest

from skdp.accounting import _objective_perturbation as op_acc
from skdp.accounting._objective_perturbation import (
    _profile_within,
    calibrate_objective_perturbation,
    calibrate_objective_perturbation_many,
    largest_safe_scale,
    largest_safe_scales,
    objective_perturbation_delta,
)


def _cases(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        epsilon = float(rng.choice([0.02, 0.3, 1.0, 4.0, 30.0])) * float(rng.uniform(0.8, 1.2))
        delta = float(10.0 ** rng.uniform(-10, -2))
        out_ratio = float(rng.choice([0.0, 0.05, 0.2, 1.0, 3.0]))
        eps_j = np.sort(rng.uniform(0.0, 0.9 * epsilon, int(rng.integers(1, 41))))
        yield epsilon, delta, out_ratio, eps_j


@pytest.mark.parametrize("rtol", [1e-3, 1e-9])
def test_batched_calibration_is_the_scalar_one_bit_for_bit(rtol):
    compared = 0
    for epsilon, delta, out_ratio, eps_j in _cases(int(rtol < 1e-6), 24):
        batched = calibrate_objective_perturbation_many(epsilon, delta, eps_j, out_ratio, rtol)
        scalar = [calibrate_objective_perturbation.__wrapped__(epsilon, delta, float(t),
                                                                out_ratio, rtol)
                  for t in eps_j]
        assert batched.tolist() == scalar
        compared += eps_j.size
    assert compared > 200


def test_block_decision_is_the_full_grids_next_to_the_threshold():
    """At the calibrated noise and one ulp, 1e-12 and 1e-6 either side of it -- where the
    cleared blocks' bounds are closest to delta -- the block decision is the full grid's."""
    checked = {True: 0, False: 0}
    for epsilon, delta, out_ratio, eps_j in _cases(2, 12):
        mus = calibrate_objective_perturbation_many(epsilon, delta, eps_j, out_ratio, 1e-12)
        for mu0, term in zip(mus, eps_j):
            near = [mu0, np.nextafter(mu0, 0.0), np.nextafter(mu0, np.inf)]
            near += [mu0 * (1.0 + s) for s in (-1e-6, -1e-12, 1e-12, 1e-6)]
            mu = np.array(near)
            e = np.full(mu.size, epsilon - term)
            within = _profile_within(e, mu, out_ratio * mu, delta)
            full = [objective_perturbation_delta(epsilon, m, out_ratio * m, term) <= delta
                    for m in mu]
            assert within.tolist() == full
            for answer in full:
                checked[answer] += 1
    assert checked[True] > 50 and checked[False] > 50


def test_near_the_threshold_blocks_are_opened(monkeypatch):
    """The threshold test above exercises the cells of opened blocks, not only the first
    pass (so it fails when either pass decides wrongly)."""
    calls = []
    original = op_acc._gaussian_delta_array

    def counting(e, m):
        calls.append(np.shape(m))
        return original(e, m)

    monkeypatch.setattr(op_acc, "_gaussian_delta_array", counting)
    mu0 = calibrate_objective_perturbation.__wrapped__(1.0, 1e-6, 0.05, 0.2, 1e-12)
    mu = np.array([mu0 * (1.0 - 1e-12)])
    calls.clear()
    assert _profile_within(np.array([0.95]), mu, 0.2 * mu, 1e-6)[0]
    assert len(calls) == 2      # the first pass, then the opened blocks' cells


def test_batched_search_visits_the_scalar_searchs_points():
    thresholds = np.array([3e-9, 1e-8 * 1.5, 0.37, 0.999, 1.0, 1.7, 250.0, 9999.0, 2e4])
    for rtol in (1e-3, 1e-9):
        batched = largest_safe_scales(lambda t: t <= thresholds, 1e-8, 1.0, 1e4, rtol,
                                      thresholds.size)
        for k, threshold in enumerate(thresholds):
            if threshold < 1e-8:
                continue    # the caller checks ok(lo) first (the batched search's contract)
            scalar = largest_safe_scale(lambda t: t <= threshold, 1e-8, 1.0, 1e4, rtol)
            assert batched[k] == scalar


def test_batched_calibration_refuses_as_the_scalar_one():
    with pytest.raises(ValueError, match="Jacobian term"):
        calibrate_objective_perturbation_many(1.0, 1e-6, np.array([0.1, 1.0]), 0.2)
    with pytest.raises(ValueError, match="delta must be in"):
        calibrate_objective_perturbation_many(1.0, 0.0, np.array([0.1]), 0.2)
    with pytest.raises(ValueError, match="calibration range"):
        calibrate_objective_perturbation_many(1e-9, 1e-300, np.array([0.0]), 0.2)


def test_the_alpha_rule_is_unchanged_by_the_batched_calibration(monkeypatch):
    """The rule's grid noise from one calibration per point, as before the batch."""
    from skdp._solvers import _objective_perturbation as op
    from skdp.linear_model import DPHuberRegressor, DPLogisticRegression

    def one_by_one(epsilon, delta, eps_js, p):
        return [op.objective_noise_mu(epsilon, delta, t, p) for t in eps_js]

    def alphas():
        out = []
        for make in (lambda e: DPHuberRegressor(epsilon=e, y_bound=1.0, data_norm=3.0),
                     lambda e: DPLogisticRegression(epsilon=e, data_norm=3.0,
                                                    solver="objective_perturbation")):
            for epsilon in (0.1, 1.0, 10.0):
                for n, p in ((300, 5), (3000, 48), (200000, 20)):
                    model = make(epsilon)
                    loss, n_outputs = model._planning_loss()
                    op._objective_perturbation_alpha.cache_clear()
                    out.append(model._fit_plan(n, p, loss, n_outputs, 3.0).alpha)
        return out

    batched = alphas()
    monkeypatch.setattr(op, "objective_noise_mus", one_by_one)
    assert alphas() == batched
    assert len(set(batched)) > 10 and all(math.isfinite(a) and a > 0 for a in batched)
