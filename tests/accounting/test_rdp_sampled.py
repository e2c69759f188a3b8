"""Rényi-DP accounting of Poisson-sampled Gaussian steps under replace-one neighbours, and
of ``DeltaDpEvent`` parts (skdp/accounting/_rdp.py).

The replace-one curve (weak triangle inequality through the dataset without the replaced
record, plus the convexity bound) is checked against quantities computed here
independently: the exact Gaussian curve at q = 1, numerical integration of the Rényi
divergences of the one- and two-dimensional mixture pairs, and dp-accounting's PLD of the
same event.  The naive reading (the add/remove curve used as is) is shown to fall below
the numerically integrated truth, so the integration check has power.
"""

import math
import time

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod
from scipy.special import logsumexp

from skdp.accounting import (
    DeltaDpEvent,
    compose,
    gaussian_event,
    get_delta,
    get_epsilon,
    poisson_gaussian_event,
    rdp_delta,
    rdp_epsilon,
    repeat_and_select_event,
    to_rdp_event,
)
from skdp.accounting import _rdp
from skdp.exceptions import UnsupportedDpEventError

ORDERS = np.array(rdp_mod.DEFAULT_RDP_ORDERS, dtype=float)


# ---------------------------------------------------------------------------------------
# numerical Rényi divergences of Gaussian mixtures (units of the per-record bound C)
# ---------------------------------------------------------------------------------------
def _log_mix_1d(x, q, mean, z):
    """log density of (1-q) N(0, z^2) + q N(mean, z^2) (mean None: N(0, z^2))."""
    log0 = -0.5 * (x / z) ** 2 - math.log(z * math.sqrt(2 * math.pi))
    if mean is None:
        return log0
    log1 = -0.5 * ((x - mean) / z) ** 2 - math.log(z * math.sqrt(2 * math.pi))
    return np.logaddexp(math.log1p(-q) + log0, math.log(q) + log1) if q < 1 else log1


def _renyi_1d(alpha, q, z, mean_p, mean_r):
    """D_alpha(P || R) by quadrature on a fine grid covering the tilted mass."""
    half = 2.0 * alpha + 3.0 + 40.0 * z
    x, dx = np.linspace(-half, half, 400001, retstep=True)
    log_int = alpha * _log_mix_1d(x, q, mean_p, z) + (1 - alpha) * _log_mix_1d(x, q, mean_r, z)
    return (logsumexp(log_int) + math.log(dx)) / (alpha - 1)


def _renyi_2d(alpha, q, z, u, v):
    half = 2.0 * alpha + 3.0 + 12.0 * z
    t, dx = np.linspace(-half, half, 1601, retstep=True)
    X, Y = np.meshgrid(t, t, indexing="ij")
    c = -math.log(2 * math.pi * z * z)

    def log_mix(m):
        log0 = -0.5 * (X**2 + Y**2) / z**2 + c
        log1 = -0.5 * ((X - m[0]) ** 2 + (Y - m[1]) ** 2) / z**2 + c
        return np.logaddexp(math.log1p(-q) + log0, math.log(q) + log1)

    log_int = alpha * log_mix(u) + (1 - alpha) * log_mix(v)
    return (logsumexp(log_int) + 2 * math.log(dx)) / (alpha - 1)


def _add_remove(q, z, alpha):
    return float(rdp_mod._compute_rdp_poisson_subsampled_gaussian(q, z, [alpha])[0])


def _replace_one(q, z, alpha):
    return float(_rdp.replace_one_sampled_gaussian_rdp(q, z, [alpha])[0])


CASES = [(0.01, 1.0, 4), (0.05, 1.0, 2), (0.05, 2.0, 8), (0.1, 0.8, 3), (0.2, 3.0, 16),
         (0.5, 1.5, 5)]


# ---------------------------------------------------------------------------------------
# the convention: z relative to the per-record bound C, replace sensitivity 2C
# ---------------------------------------------------------------------------------------
def test_sampled_event_keeps_z_relative_to_the_per_record_bound():
    ev = poisson_gaussian_event(0.03, 1.7, 50)
    rdp_ev = to_rdp_event(ev)
    assert isinstance(rdp_ev.event, _rdp.ReplaceOneSampledGaussianDpEvent)
    assert (rdp_ev.event.sampling_probability, rdp_ev.event.noise_multiplier) == (0.03, 1.7)
    assert rdp_ev.count == 50
    # dp-accounting's add/remove sampled Gaussian at q = 1 is N(0, z^2) vs N(1, z^2):
    # sensitivity C in units of C, the same z as skdp's inner event
    assert _add_remove(1.0, 1.7, 3.0) == pytest.approx(3.0 / (2 * 1.7**2), rel=1e-12)
    # at q = 1 a step is the Gaussian mechanism with replace sensitivity 2C: skdp's
    # GaussianDpEvent(z), curve 2 alpha / z^2 exactly
    assert np.allclose(_rdp.replace_one_sampled_gaussian_rdp(1.0, 1.7, ORDERS),
                       2 * ORDERS / 1.7**2, rtol=1e-12)
    assert rdp_epsilon(poisson_gaussian_event(1.0, 1.7, 5), 1e-6) == pytest.approx(
        rdp_epsilon(dp_accounting.SelfComposedDpEvent(gaussian_event(1.7, 2.0), 5), 1e-6),
        rel=1e-12)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 3.0, 8.0, 32.0])
def test_triangle_at_q1_is_above_the_exact_gaussian_curve(alpha):
    z = 1.3
    exact = 2 * alpha / z**2
    tri = _rdp._triangle_bound(1.0 - 1e-12, z, alpha, 2.0)  # q -> 1: the triangle branch
    assert tri >= exact * (1 - 1e-9)
    # how loose: (2 alpha - 1)^2 / (4 alpha (alpha - 1)) exactly (module docstring)
    assert tri / exact == pytest.approx((2 * alpha - 1) ** 2 / (4 * alpha * (alpha - 1)),
                                        rel=1e-6)


# ---------------------------------------------------------------------------------------
# the add/remove curve covers both directions (Mironov, Talwar & Zhang 2019)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("q,z,alpha", [(0.05, 1.0, 3), (0.1, 2.0, 2.5), (0.3, 0.8, 4),
                                       (0.01, 1.0, 6)])
def test_add_remove_curve_bounds_both_directions(q, z, alpha):
    curve = _add_remove(q, z, alpha)
    add = _renyi_1d(alpha, q, z, 1.0, None)      # mixture || N(0): the A_alpha direction
    # remove direction: N(0, z^2) || mixture (the B_alpha direction)
    half = 2.0 * alpha + 3.0 + 40.0 * z
    x, dx = np.linspace(-half, half, 400001, retstep=True)
    log_int = alpha * _log_mix_1d(x, q, None, z) + (1 - alpha) * _log_mix_1d(x, q, 1.0, z)
    remove = (logsumexp(log_int) + math.log(dx)) / (alpha - 1)
    # exact at integer orders; at fractional ones dp-accounting's series is above
    assert curve >= add * (1 - 1e-9)
    assert curve == pytest.approx(add, rel=1e-6 if float(alpha).is_integer() else 2e-2)
    assert remove <= curve * (1 + 1e-9)
    assert remove < add  # the add direction dominates


# ---------------------------------------------------------------------------------------
# the replace-one bound against numerical integration
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("q,z,alpha", CASES)
def test_bound_is_above_the_integrated_replace_one_divergence(q, z, alpha):
    truth = _renyi_1d(alpha, q, z, 1.0, -1.0)  # antipodal rows, the 1-D worst case
    bound = _replace_one(q, z, alpha)
    assert bound >= truth


@pytest.mark.parametrize("alpha", [2, 4, 8])
def test_bound_is_tight_to_first_order_for_small_q_and_large_z(alpha):
    # first order in q: bound / truth = (2a-1)^2 / (4a(a-1)) * 2 / (1 + exp(-1/z^2))
    # (module docstring); 1.15 / 1.04 / 1.02 here
    q, z = 0.01, 5.0
    truth = _renyi_1d(alpha, q, z, 1.0, -1.0)
    predicted = (2 * alpha - 1) ** 2 / (4 * alpha * (alpha - 1)) * 2 / (1 + math.exp(-1 / z**2))
    bound = _replace_one(q, z, alpha)
    assert truth <= bound <= 1.03 * predicted * truth


@pytest.mark.parametrize("q,z,alpha", CASES)
def test_naive_add_remove_curve_under_counts(q, z, alpha):
    """Power of the check above: the add/remove curve read as a replace-one curve (the
    mutation the triangle step prevents) falls below the integrated truth."""
    truth = _renyi_1d(alpha, q, z, 1.0, -1.0)
    assert _add_remove(q, z, alpha) < truth


@pytest.mark.parametrize("q,z,alpha", [(0.05, 1.0, 3), (0.2, 1.5, 4)])
def test_antipodal_is_the_worst_pair_among_those_tried(q, z, alpha):
    u = (1.0, 0.0)
    antipodal = _renyi_2d(alpha, q, z, u, (-1.0, 0.0))
    # the 2-D quadrature agrees with the 1-D one on the antipodal pair
    assert antipodal == pytest.approx(_renyi_1d(alpha, q, z, 1.0, -1.0), rel=1e-4)
    others = [_renyi_2d(alpha, q, z, u, (math.cos(t), math.sin(t)))
              for t in (math.pi / 3, math.pi / 2, 2 * math.pi / 3, 5 * math.pi / 6)]
    others.append(_renyi_2d(alpha, q, z, u, (-0.5, 0.0)))
    others.append(_renyi_2d(alpha, q, z, (0.5, 0.0), (-1.0, 0.0)))
    assert all(o < antipodal for o in others)
    assert np.all(np.diff(others[:4]) > 0)  # increasing with the angle
    assert _replace_one(q, z, alpha) >= antipodal


# ---------------------------------------------------------------------------------------
# (epsilon, delta): above PLD of the same event, and how far above
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("q,z,steps,max_ratio", [
    (0.02, 1.0, 1000, 1.8), (0.05, 1.0, 1000, 1.8), (0.1, 1.0, 100, 2.2),
    (0.02, 2.0, 2000, 1.3), (0.1, 3.0, 500, 1.3), (0.05, 10.0, 1000, 1.2),
])
def test_rdp_epsilon_is_above_pld_and_not_far(q, z, steps, max_ratio):
    delta = 1e-6
    ev = poisson_gaussian_event(q, z, steps)
    pld = get_epsilon(ev, delta)  # PLD under replace-one (dp-accounting's dominating pair)
    via_rdp = rdp_epsilon(ev, delta)
    assert pld <= via_rdp <= max_ratio * pld
    # and the naive add/remove reading is below the PLD value: it would under-count
    naive = rdp_mod.RdpAccountant()  # ADD_OR_REMOVE_ONE
    naive.compose(ev)
    assert naive.get_epsilon(delta) < pld


def test_one_rdp_epsilon_call_on_dpsgd_is_fast():
    ev = poisson_gaussian_event(0.0371, 1.234, 1000)  # fresh (q, z): nothing cached
    t0 = time.perf_counter()
    eps = rdp_epsilon(ev, 1e-6)
    elapsed = time.perf_counter() - t0
    assert math.isfinite(eps)
    assert elapsed < 5.0  # generous: measured about 0.2 s


# ---------------------------------------------------------------------------------------
# private selection over DP-SGD runs
# ---------------------------------------------------------------------------------------
def test_selection_uses_the_replace_one_curve_inside():
    ev = poisson_gaussian_event(0.05, 2.0, 300)
    acc = _rdp._accountant(repeat_and_select_event(ev, 5.0, 1.0))
    inner = 300 * _rdp.replace_one_sampled_gaussian_rdp(0.05, 2.0, ORDERS)
    expected = rdp_mod._compute_rdp_repeat_and_select(ORDERS, inner, 5.0, 1.0)
    assert np.allclose(acc._rdp, expected, rtol=1e-12)


@pytest.mark.parametrize("shape", [0.0, 1.0, math.inf])
def test_selection_over_dpsgd_is_accounted_and_monotone_in_mean(shape):
    sgd = poisson_gaussian_event(0.02, 1.5, 500)
    runs = [sgd, compose(gaussian_event(8.0, 1.0), DeltaDpEvent(1e-9), sgd)]
    for run in runs:
        eps = [rdp_epsilon(repeat_and_select_event(run, m, shape), 1e-6)
               for m in (1.0, 2.0, 5.0, 10.0, 30.0)]
        assert all(math.isfinite(e) for e in eps)
        assert np.all(np.diff(eps) > 0)
        assert eps[0] >= rdp_epsilon(run, 1e-6)
        # get_epsilon routes the selection to the RDP path
        assert get_epsilon(repeat_and_select_event(run, 5.0, shape), 1e-6) == eps[2]


# ---------------------------------------------------------------------------------------
# DeltaDpEvent rules
# ---------------------------------------------------------------------------------------
def test_delta_event_is_subtracted_from_delta():
    g = gaussian_event(4.0, 1.0)
    delta, d_t = 1e-6, 1e-7
    assert rdp_epsilon(compose(g, DeltaDpEvent(d_t)), delta) == rdp_epsilon(g, delta - d_t)
    three = dp_accounting.SelfComposedDpEvent(compose(g, DeltaDpEvent(d_t)), 3)
    assert rdp_epsilon(three, delta) == rdp_epsilon(
        dp_accounting.SelfComposedDpEvent(g, 3), delta - 3 * d_t)
    # the subtraction has an effect (a smaller delta gives a larger epsilon)
    assert rdp_epsilon(g, delta - d_t) > rdp_epsilon(g, delta)


@pytest.mark.parametrize("shape", [0.0, 1.0, math.inf])
def test_delta_event_inside_selection_counts_mean_runs(shape):
    g = gaussian_event(4.0, 1.0)
    delta, d_t, mean = 1e-6, 1e-8, 7.0
    with_t = repeat_and_select_event(compose(g, DeltaDpEvent(d_t)), mean, shape)
    without = repeat_and_select_event(g, mean, shape)
    assert rdp_epsilon(with_t, delta) == rdp_epsilon(without, delta - mean * d_t)
    # composed with something outside the selection as well
    outer = compose(with_t, DeltaDpEvent(2e-8), g)
    assert rdp_epsilon(outer, delta) == rdp_epsilon(
        compose(without, g), delta - mean * d_t - 2e-8)
    # rdp_delta adds the same delta_sum
    eps = 3.0
    assert rdp_delta(with_t, eps) == pytest.approx(rdp_delta(without, eps) + mean * d_t,
                                                   rel=1e-12)
    assert get_delta(with_t, eps) == pytest.approx(rdp_delta(with_t, eps), rel=1e-12)


def test_delta_sum_at_least_delta_is_infinite():
    g = gaussian_event(4.0, 1.0)
    assert rdp_epsilon(compose(g, DeltaDpEvent(1e-6)), 1e-6) == math.inf
    assert rdp_epsilon(repeat_and_select_event(compose(g, DeltaDpEvent(1e-7)), 10.0, 1.0),
                       1e-6) == math.inf
    assert rdp_epsilon(repeat_and_select_event(compose(g, DeltaDpEvent(1e-7)), 9.0, 1.0),
                       1e-6) < math.inf
    assert rdp_epsilon(DeltaDpEvent(1e-7), 1e-6) == 0.0


def test_selection_of_only_delta_events_is_a_noop():
    rest, d = _rdp.peel_delta_events(repeat_and_select_event(DeltaDpEvent(1e-8), 4.0, 1.0))
    assert isinstance(rest, dp_accounting.NoOpDpEvent)
    assert d == pytest.approx(4e-8)


def test_unsupported_events_are_still_refused_next_to_delta_events():
    bad = compose(DeltaDpEvent(1e-8), dp_accounting.LaplaceDpEvent(1.0))
    with pytest.raises(UnsupportedDpEventError, match="cannot be accounted exactly"):
        rdp_epsilon(bad, 1e-6)
    with pytest.raises(UnsupportedDpEventError, match="cannot be accounted exactly"):
        repeat_and_select_event(bad, 3.0, 1.0)
    with pytest.raises(UnsupportedDpEventError):  # also when delta_sum >= delta
        rdp_epsilon(compose(DeltaDpEvent(1e-5), dp_accounting.LaplaceDpEvent(1.0)), 1e-6)


# ---------------------------------------------------------------------------------------
# audit (slow): the claimed epsilon of a selection over subsampled Gaussians is not beaten
# ---------------------------------------------------------------------------------------
def _clopper_pearson_eps(hits_d, hits_d2, n, alpha=0.05):
    from scipy.stats import beta

    p_lo = beta.ppf(alpha / 2, hits_d, n - hits_d + 1) if hits_d > 0 else 0.0
    p_hi = beta.ppf(1 - alpha / 2, hits_d2 + 1, n - hits_d2) if hits_d2 < n else 1.0
    return p_lo, p_hi


def _selection_outputs(rng, n_trials, q, z, steps, mean, row):
    """Best-of-K (geometric K, mean ``mean``) of a sum of ``steps`` Poisson-sampled
    Gaussian steps on a dataset whose differing record contributes ``row`` (others 0);
    the score of a run is its output, and the released value is the best score."""
    gamma = 1.0 / mean
    out = np.empty(n_trials)
    for t in range(n_trials):
        k = rng.geometric(gamma)
        included = rng.random((k, steps)) < q
        runs = (row * included + z * rng.standard_normal((k, steps))).sum(axis=1)
        out[t] = runs.max()
    return out


@pytest.mark.slow
def test_audit_selection_over_subsampled_gaussian():
    """Neighbours: the differing record contributes +1 (D) or -1 (D') at every step it
    is sampled.  A held-out threshold on the released best score gives a Clopper-Pearson
    lower bound on epsilon (95 %) that must stay below the claimed one; an under-noised
    variant (claimed epsilon computed for 10x the noise) must be caught."""
    rng = np.random.default_rng(20240611)
    q, steps, mean, delta, n = 0.2, 10, 3.0, 1e-3, 20000

    def lower_bound(z):
        cal_d = _selection_outputs(rng, 4000, q, z, steps, mean, 1.0)
        cal_d2 = _selection_outputs(rng, 4000, q, z, steps, mean, -1.0)
        thr = np.quantile(cal_d2, 0.99)  # threshold chosen on held-out runs
        a = _selection_outputs(rng, n, q, z, steps, mean, 1.0) > thr
        b = _selection_outputs(rng, n, q, z, steps, mean, -1.0) > thr
        p_lo, p_hi = _clopper_pearson_eps(a.sum(), b.sum(), n)
        return math.log(max(p_lo - delta, 1e-300) / p_hi)

    z = 0.8
    claimed = rdp_epsilon(repeat_and_select_event(poisson_gaussian_event(q, z, steps),
                                                  mean, 1.0), delta)
    assert lower_bound(z) <= claimed
    under = rdp_epsilon(repeat_and_select_event(poisson_gaussian_event(q, 10 * z, steps),
                                                mean, 1.0), delta)
    assert lower_bound(z) > under  # the audit catches a 10x under-noised claim
