"""Exact samplers and grid releases (skdp._mechanisms._exact): the cipher against RFC 8439,
the discrete laws against their exact pmfs, the grid invariants, and the dominance margin
against exact hockey-stick sums."""

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from skdp._mechanisms import _exact as E
from skdp._mechanisms._noise import release_gaussian, release_laplace
from skdp.accounting import gaussian_delta


def test_chacha20_block_matches_rfc8439():
    """RFC 8439, section 2.3.2: key 00..1f, counter 1, nonce 00:00:00:09:00:00:00:4a:00..."""
    st = np.zeros(50, np.uint64)
    st[:4] = E._SIGMA
    st[4:12] = np.frombuffer(bytes(range(32)), dtype="<u4")
    st[12], st[13], st[14], st[15] = 1, 0x09000000, 0x4A000000, 0
    E.chacha20_block(st)
    expected = [0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033,
                0x9AAA2204, 0x4E6CD4C3, 0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9,
                0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2]
    assert [int(w) for w in st[16:32]] == expected
    assert int(st[12]) == 2   # the counter advanced


def _chi2_p(draws, pmf_of, support):
    counts = np.array([np.sum(draws == k) for k in support])
    probs = np.array([pmf_of(k) for k in support])
    tail = len(draws) - counts.sum()
    expected = len(draws) * probs
    obs = np.append(counts, tail)
    exp = np.append(expected, len(draws) * (1 - probs.sum()))
    keep = exp >= 5
    obs = np.append(obs[keep], obs[~keep].sum())
    exp = np.append(exp[keep], exp[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("s", [1, 2, 3, 10])
def test_discrete_gaussian_matches_its_pmf(s):
    z = E.discrete_gaussian_noise(E.new_word_source(s), s, 200_000)
    support = np.arange(-8 * s, 8 * s + 1)
    norm = sum(math.exp(-k * k / (2 * s * s)) for k in range(-40 * s, 40 * s + 1))
    p = _chi2_p(z, lambda k: math.exp(-k * k / (2 * s * s)) / norm, support)
    assert p > 1e-4, p


@pytest.mark.parametrize("t", [1, 3, 20])
def test_discrete_laplace_matches_its_pmf(t):
    z = E.discrete_laplace_noise(E.new_word_source(100 + t), t, 200_000)
    r = math.exp(-1 / t)
    p = _chi2_p(z, lambda k: (1 - r) / (1 + r) * r ** abs(k), np.arange(-10 * t, 10 * t + 1))
    assert p > 1e-4, p


def test_large_scale_is_gaussian_with_free_low_bits():
    s = 2**29 + 12_345
    z = E.discrete_gaussian_noise(E.new_word_source(7), s, 100_000)
    assert stats.kstest(z / s, "norm").pvalue > 1e-4
    low = z & 255   # low bits uniform: nothing to read below the grid either
    assert stats.chisquare(np.bincount(low, minlength=256)).pvalue > 1e-4


def test_same_key_same_bits_and_os_keys_differ():
    a = E.discrete_gaussian_noise(E.new_word_source(5), 1000, 50)
    b = E.discrete_gaussian_noise(E.new_word_source(5), 1000, 50)
    c = E.discrete_gaussian_noise(E.new_word_source(None), 1000, 50)
    d = E.discrete_gaussian_noise(E.new_word_source(None), 1000, 50)
    assert np.array_equal(a, b) and not np.array_equal(c, d)
    g1 = E.new_word_source(np.random.default_rng(3))
    g2 = E.new_word_source(np.random.default_rng(3))
    assert np.array_equal(g1, g2)


def test_grid_release_invariants():
    rng = np.random.default_rng(0)
    values = rng.normal(size=1000) * 3.0
    out, std = release_gaussian(values, 0.37, 0.01, None, E.new_word_source(1), bound=10.0)
    gamma, s, rec_sigma, rec_sens = E.gaussian_grid(0.37, 0.01, 1000, 10.0)
    steps = out / gamma
    assert np.array_equal(steps, np.rint(steps))          # every output on the grid
    assert std == s * gamma and 0.37 <= std <= 0.37 * 1.002
    assert rec_sigma / rec_sens >= 0.37 / 0.01              # dominating event at least as noisy
    assert rec_sens == pytest.approx(0.01 + gamma * math.sqrt(1000))
    assert np.std(out - values) == pytest.approx(std, rel=0.1)
    # pure: per-coordinate discrete Laplace on the L1 bound, rounding included
    out, scale = release_laplace(values, 0.01, 0.5, None, E.new_word_source(2))
    gamma, t = E.laplace_grid(0.5, math.sqrt(1000) * 0.01, 1000)
    assert np.array_equal(out / gamma, np.rint(out / gamma))
    assert (math.sqrt(1000) * 0.01 / gamma + 1000) / t <= 0.5


def test_large_bound_coarsens_the_grid_instead_of_clamping():
    sigma = 1e-8
    assert E.grid_for(sigma) == 2.0 ** (math.floor(math.log2(sigma)) - 29)
    gamma = E.grid_for(sigma, bound=100.0)
    assert 100.0 / gamma <= 2.0**50 and sigma / gamma >= 2.0**E.MIN_GRID_BITS
    out, _ = release_gaussian(np.array([99.0, -42.5]), sigma, 1e-9, None,
                              E.new_word_source(0), bound=100.0)
    assert np.allclose(out, [99.0, -42.5], atol=1e-6)     # not clamped
    # without a bound, values beyond 2^50 grid steps are clamped (1-Lipschitz)
    out, _ = release_gaussian(np.array([99.0]), sigma, 1e-9, None, E.new_word_source(0))
    assert abs(out[0]) < 2.0**51 * E.grid_for(sigma)


def _delta_discrete(s, shift, eps):
    """Exact hockey-stick divergence of N_Z(0, s^2) vs N_Z(shift, s^2) (float64 log-space)."""
    k = np.arange(-40 * s, 40 * s + shift + 1, dtype=np.float64)
    logp = -k * k / (2.0 * s * s)
    logq = -(k - shift) ** 2 / (2.0 * s * s)
    lz = logsumexp(-np.arange(-40 * s, 40 * s + 1, dtype=np.float64) ** 2 / (2.0 * s * s))
    terms = np.exp(logp - lz) * -np.expm1(np.minimum(0.0, eps + logq - logp))
    return float(np.sum(terms[logp > logq - eps]))


def test_float_hockey_stick_agrees_with_mpmath():
    mpmath.mp.dps = 40
    s, shift, eps = 16, 16, 1.0
    ks = range(-40 * s, 40 * s + shift + 1)
    z = mpmath.fsum(mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s * s)) for k in range(-40 * s,
                                                                                40 * s + 1))
    exact = mpmath.fsum(max(mpmath.mpf(0), (mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s * s))
                                            - mpmath.exp(eps) * mpmath.exp(
                            -mpmath.mpf(k - shift) ** 2 / (2 * s * s))) / z) for k in ks)
    assert _delta_discrete(s, shift, eps) == pytest.approx(float(exact), rel=1e-9)


@pytest.mark.parametrize("s", [2**12, 2**14])
@pytest.mark.parametrize("z", [0.5, 1.0, 2.0, 5.0])
def test_recorded_continuous_event_dominates_the_discrete_law(s, z):
    """At the grid sizes used (s >= 2^12 noise steps), the continuous Gaussian recorded with
    DOMINANCE_MARGIN less noise has a larger delta(epsilon) than the exact discrete law for a
    scalar shift of ``s/z`` steps (plus the rounding step), over epsilons where delta spans
    1e-2 .. 1e-9."""
    shift = int(math.ceil(s / z)) + 1
    recorded_mu = shift / (s / (1.0 + E.DOMINANCE_MARGIN))
    for eps in np.linspace(0.05, 1.0, 5) * (recorded_mu**2 / 2 + 6 * recorded_mu):
        exact = _delta_discrete(s, shift, float(eps))
        if exact < 1e-12:
            continue
        assert exact <= gaussian_delta(float(eps), recorded_mu), (eps, exact)


def test_the_margin_is_needed_and_covers_the_excess():
    """Without the margin the discrete law exceeds the continuous profile (its (eps, delta)
    curve is not always below it: up to +0.4 % at s = 16, ~1/s^2 smaller at 2^12); the recorded
    2^-10 less noise raises the continuous delta by ~4 %, far above the excess."""
    for s in (16, 2**12):
        shift = s + 1
        excess, covered = [], []
        for eps in np.linspace(0.05, 1.0, 5) * ((shift / s) ** 2 / 2 + 6 * shift / s):
            exact = _delta_discrete(s, shift, float(eps))
            excess.append(exact - gaussian_delta(float(eps), shift / s))
            covered.append(exact <= gaussian_delta(float(eps),
                                                   shift / s * (1 + E.DOMINANCE_MARGIN)))
        assert max(excess) > 0 and all(covered)


def test_parallel_chunks_do_not_depend_on_threads_and_never_repeat():
    import numba

    assert 200_000 >= E.PARALLEL_MIN   # the pmf tests above ran the parallel path
    before = numba.get_num_threads()
    try:
        a = E.discrete_gaussian_noise(E.new_word_source(3), 1000, 5000)
        numba.set_num_threads(1)
        b = E.discrete_gaussian_noise(E.new_word_source(3), 1000, 5000)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(a, b)
    src = E.new_word_source(3)
    c = E.discrete_gaussian_noise(src, 1000, 5000)
    d = E.discrete_gaussian_noise(src, 1000, 5000)      # same source, next call: fresh nonce
    assert np.array_equal(a, c) and not np.array_equal(c, d)
    chunks = c.reshape(-1, 1000)[:4]                    # chunks are distinct streams
    assert len({tuple(ch) for ch in chunks}) == 4


def test_dpsgd_secure_steps_are_grid_releases_and_chunking_runs(monkeypatch):
    """DP-SGD's exact path: pre-drawn integer noise per chunk of steps (a tiny chunk forces
    several chunks), the recorded event unchanged, the fit reproducible for a seed."""
    import skdp._solvers._dpsgd as dpsgd_mod
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (600, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    kw = dict(data_norm=1.0, classes=[0, 1], solver="dpsgd", batch_size=60, n_steps=25,
              random_state=4)
    float_fit = DPLogisticRegression(secure_noise=False, **kw).fit(X, y)
    monkeypatch.setattr(dpsgd_mod, "SECURE_CHUNK_DRAWS", 8)     # 2 steps per chunk (p = 4)
    seen = []
    original = dpsgd_mod.dpsgd_loop

    def spy(*args, **kwargs):
        if len(args) > 17:
            seen.append((args[17], args[18].shape, args[19]))
        return original(*args, **kwargs)

    monkeypatch.setattr(dpsgd_mod, "dpsgd_loop", spy)
    a = DPLogisticRegression(**kw).fit(X, y)
    b = DPLogisticRegression(**kw).fit(X, y)
    assert a.secure_noise_ and not float_fit.secure_noise_
    assert a.dp_event_ == float_fit.dp_event_
    assert np.array_equal(a.coef_, b.coef_) and a.score(X, y) > 0.7   # it learns (0.80)
    starts = [t0 for t0, _, _ in seen[: len(seen) // 2]]
    assert starts == list(range(1, 26, 2))                      # 13 chunks cover 25 steps
    assert all(shape[1] == 4 for _, shape, _ in seen)
    gamma = seen[0][2]
    assert math.log2(gamma).is_integer()


@pytest.mark.parametrize("inline_draws", [-1, 1 << 40])
def test_pipelined_noise_is_the_sequential_draw(monkeypatch, inline_draws):
    """run_steps draws chunk k + 1 on a helper thread while chunk k's steps run: the
    integers each chunk receives are exactly those of drawing the chunks one after the
    other from the same source (no race on the source, no reordering)."""
    import skdp._solvers._dpsgd as dpsgd_mod
    from skdp._mechanisms._exact import new_word_source, subsampled_gaussian_noise

    monkeypatch.setattr(dpsgd_mod, "SECURE_INLINE_DRAWS", inline_draws)  # helper, inline
    seen = []
    original = dpsgd_mod.dpsgd_loop

    def spy(*args, **kwargs):
        seen.append((args[17], args[18].copy()))
        return original(*args, **kwargs)

    monkeypatch.setattr(dpsgd_mod, "dpsgd_loop", spy)
    rng = np.random.default_rng(0)
    n, p, T = 300, 4, 37
    X = rng.uniform(-0.5, 0.5, (n, p))
    y = np.sign(rng.normal(size=n))
    xnorm = np.sqrt(np.sum(X * X, axis=1))
    W = np.zeros((p, 1))
    args = (X, y, 0, 0.0, 1.0, xnorm, W)
    hyper = (0.1, 30.0, 2.0, 0.01, 100.0, False, 1.0, 10.0, np.random.default_rng(1))
    dpsgd_mod.run_steps(args, T, hyper, new_word_source(5), 2.0, 1.0, p, bound=n)
    assert len(seen) == dpsgd_mod.SECURE_PIPELINE_CHUNKS           # 37 steps, chunks of 5
    source = new_word_source(5)
    for t0, Z in seen:
        _, expected, _ = subsampled_gaussian_noise(source, 2.0, 1.0, p, n, Z.size)
        np.testing.assert_array_equal(Z.ravel(), expected)
    assert [t0 for t0, _ in seen] == list(range(1, T + 1, 5))


def test_every_solver_has_an_exact_path_and_auto_reports_it():
    from skdp import DPHuberRegressor, DPNonconvexRegressor
    from skdp._solvers import SOLVERS, SECURE_NOISE_SOLVERS

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (400, 2)) / 2
    y = X @ [1.0, -1.0]
    # no solver is float-only any more (spider and zeroth_order were the last)
    assert set(SOLVERS) == SECURE_NOISE_SOLVERS
    est = DPNonconvexRegressor(data_norm=1.0, random_state=0).fit(X, y)   # warm_gd
    assert est.solver_ == "warm_gd" and est.secure_noise_ is True
    X2 = rng.uniform(-1, 1, (1000, 2)) / 2      # spider needs ~450 rows at epsilon = 50
    for solver in ("zeroth_order", "spider"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)   # nearly vacuous at this n
            est = DPNonconvexRegressor(data_norm=1.0, solver=solver, epsilon=50.0,
                                       secure_noise=True, random_state=0).fit(
                                           X2, X2 @ [1.0, -1.0])
        assert est.secure_noise_ is True
    assert DPHuberRegressor(data_norm=1.0, random_state=0).fit(X, y).secure_noise_ is True
    assert DPHuberRegressor(data_norm=1.0, random_state=0,
                            secure_noise=False).fit(X, y).secure_noise_ is False


def test_rrpsgd_exact_rounds(monkeypatch):
    """rrpsgd's rounds run through dpsgd's chunked exact path: pre-drawn integer noise on a
    power-of-two grid, the float path's event, reproducible, and the model learns."""
    import skdp._solvers._dpsgd as dpsgd_mod
    from skdp import DPNonconvexRegressor

    seen = []
    original = dpsgd_mod.dpsgd_loop

    def spy(*args, **kwargs):
        if len(args) > 17:
            seen.append((args[18].dtype.kind, args[19]))
        return original(*args, **kwargs)

    monkeypatch.setattr(dpsgd_mod, "dpsgd_loop", spy)
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (3000, 2)) / 2
    y = X @ [1.0, -1.0] + 0.05 * rng.standard_normal(3000)
    kw = dict(solver="rrpsgd", epsilon=5.0, data_norm=1.0, batch_size=100, n_steps=400,
              random_state=2)
    a = DPNonconvexRegressor(**kw).fit(X, y)
    assert a.secure_noise_ and seen and all(k == "i" for k, _ in seen)
    assert all(math.log2(g).is_integer() for _, g in seen)
    b = DPNonconvexRegressor(**kw).fit(X, y)
    f = DPNonconvexRegressor(secure_noise=False, **kw).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and not f.secure_noise_
    assert a.dp_event_ == f.dp_event_
    assert a.score(X, y) > 0.5


@pytest.mark.parametrize("block_size", [1, 4])
def test_resque_exact_steps(block_size, monkeypatch):
    """resque's steps are grid releases: one row of pre-drawn integers per step, a
    power-of-two grid per phase (weighted blocks clip w_max times higher, so their grid is
    set from that bound), the float path's event, reproducible, and the model learns."""
    import skdp._solvers._resque as resque_mod
    from skdp import DPLogisticRegression

    seen = []
    original = resque_mod.resque_loop

    def spy(*args):
        seen.append(args[21:])
        return original(*args)

    monkeypatch.setattr(resque_mod, "resque_loop", spy)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (4000, 3)) / 2
    y = (X @ [1.0, -1.0, 0.5] + 0.1 * rng.standard_normal(4000) > 0).astype(int)
    kw = dict(solver="resque", epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=0,
              block_size=block_size)
    a = DPLogisticRegression(**kw).fit(X, y)
    noise_int, gammas = seen[-1]
    assert a.secure_noise_ and noise_int.dtype == np.int64
    assert noise_int.shape == (a.n_iter_, 4)                    # one row per step, p = 4
    assert all(math.log2(g).is_integer() for g in gammas)
    b = DPLogisticRegression(**kw).fit(X, y)
    f = DPLogisticRegression(secure_noise=False, **kw).fit(X, y)
    # the float path: no noise integers, the empty defaults given (with_defaults)
    assert [extra.shape for extra in seen[-1]] == [(0, 0), (0,)]
    assert np.array_equal(a.coef_, b.coef_) and not f.secure_noise_
    assert a.dp_event_ == f.dp_event_
    assert a.score(X, y) > 0.85


def _sandwich_holds(s, c):
    """The coupling lemma's ``F_X(k + 1/2 - c) <= F_Z(k) <= F_X(k + 1/2 + c)`` for every
    ``|k| <= s^2/2`` (tails through the side holding less mass), in mpmath."""
    mpmath.mp.dps = 50
    s, c = mpmath.mpf(s), mpmath.mpf(c)
    K = int(s * s / 2)
    J = K + int(40 * s)
    g = [mpmath.exp(-mpmath.mpf(j) ** 2 / (2 * s * s)) for j in range(-J, J + 1)]
    total = mpmath.fsum(g)
    left, acc = {}, mpmath.mpf(0)
    for j in range(-J, 1):
        acc += g[j + J]
        left[j] = acc / total                       # F_Z(j)
    right, acc = {}, mpmath.mpf(0)
    for j in range(J, -1, -1):
        right[j] = acc / total                      # P(Z > j)
        acc += g[j + J]
    for k in range(-K, K + 1):
        if k < 0:
            ok = (mpmath.ncdf((k + 0.5 - c) / s) <= left[k]
                  <= mpmath.ncdf((k + 0.5 + c) / s))
        else:
            ok = (mpmath.ncdf(-(k + 0.5 + c) / s) <= right[k]
                  <= mpmath.ncdf(-(k + 0.5 - c) / s))
        if not ok:
            return False
    return True


@pytest.mark.parametrize("s", [8, 16, 32])
def test_coupling_lemma_sandwich(s):
    """The quantile coupling of N_Z(0, s^2) with N(0, s^2) moves no draw by more than
    COUPLING_STEPS = 1/2 + 1/8 (for |k| <= s^2/2); the needed c is ~|k|/(24 s^2) (1/48 at
    the edge), so c = 1/64 must fail -- the check is not vacuous."""
    from skdp._mechanisms._exact import COUPLING_STEPS

    assert _sandwich_holds(s, COUPLING_STEPS - 0.5)
    assert not _sandwich_holds(s, 1.0 / 64.0)


def test_coupled_gaussian_noise_grid_scale_and_reproducibility():
    from skdp._mechanisms._exact import coupled_gaussian_noise, grid_for

    sigma = 3.7
    b, gamma, std = coupled_gaussian_noise(E.new_word_source(11), sigma, 4000)
    assert gamma == grid_for(sigma) and 2**29 <= std / gamma <= 2**30
    assert sigma <= std <= sigma * (1 + 2**-29)
    np.testing.assert_array_equal(b / gamma, np.rint(b / gamma))
    assert abs(b.std() / std - 1) < 0.05
    b2, _, _ = coupled_gaussian_noise(E.new_word_source(11), sigma, 4000)
    np.testing.assert_array_equal(b, b2)


@pytest.mark.parametrize("t", [1, 4, 64, 2**29])
def test_laplace_coupling_is_a_constant_shift(t):
    """DLap(t) against Laplace(t): F_Z(k) = F_X(k + 1/2 + c0) for k >= 0 and F_X(k + 1/2 - c0)
    for k < 0, with one c0 = 1/2 - t log(2/(1 + e^{-1/t})) < 1/8 -- checked against the
    pmf summed in mpmath at small t, so the coupling of coupled_laplace_noise moves no
    draw by more than COUPLING_STEPS, without exception."""
    from skdp._mechanisms._exact import COUPLING_STEPS

    mpmath.mp.dps = 40
    tt = mpmath.mpf(t)
    q = mpmath.exp(-1 / tt)
    c0 = mpmath.mpf(1) / 2 - tt * mpmath.log(2 / (1 + q))
    assert 0 < c0 < COUPLING_STEPS - 0.5
    assert abs(c0 * 8 * tt - 1) < 0.2          # ~1/(8t)
    if t > 64:
        return
    norm = (1 - q) / (1 + q)
    # F_Z(k) = sum of the pmf over j = -60 t .. k, accumulated in k (40 digits: the
    # rounding of 12 t additions stays far below the 1e-25 tolerance)
    F_Z = mpmath.fsum(norm * q ** abs(j) for j in range(-60 * t, -6 * t))
    for k in range(-6 * t, 6 * t + 1):
        F_Z += norm * q ** abs(k)
        x = k + 0.5 + (c0 if k >= 0 else -c0)
        F_X = 1 - q ** x / 2 if x >= 0 else q ** (-x) / 2
        assert abs(F_Z - F_X) < mpmath.mpf(10) ** -25 + q ** (60 * t)


def test_coupled_laplace_noise_grid_scale_and_reproducibility():
    from skdp._mechanisms._exact import coupled_laplace_noise, grid_for

    scale = 0.37
    b, gamma, s = coupled_laplace_noise(E.new_word_source(3), scale, 4000)
    assert gamma == grid_for(scale) and 2**29 <= s / gamma <= 2**30
    assert scale <= s <= scale * (1 + 2**-29)
    np.testing.assert_array_equal(b / gamma, np.rint(b / gamma))
    assert abs(np.mean(np.abs(b)) / s - 1) < 0.06
    b2, _, _ = coupled_laplace_noise(E.new_word_source(3), scale, 4000)
    np.testing.assert_array_equal(b, b2)
