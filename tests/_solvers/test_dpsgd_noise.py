"""DP-SGD's exact noise (``ExactStepNoise``): drawn in step order whatever the schedule,
on a helper thread or (small runs) on the caller's, started before the rows are read, and
stopped cleanly when preparing them fails."""

import threading

import numpy as np
import pytest

import skdp._solvers._dpsgd as dpsgd_mod
from skdp._losses import LogisticLoss
from skdp._mechanisms import new_word_source
from skdp._mechanisms._clipped_rows import ClippedRows
from skdp._mechanisms._exact import subsampled_gaussian_noise
from skdp._parallel import available_threads, current_threads, set_current_threads


def _noise_threads():
    return [t for t in threading.enumerate() if t.name.startswith("skdp-noise")]


@pytest.fixture(params=["helper", "inline"])
def drawing(request, monkeypatch):
    """Both ways of drawing: a helper thread (every run) or the calling thread (every
    run), whatever ``SECURE_INLINE_DRAWS`` would choose for these sizes."""
    monkeypatch.setattr(dpsgd_mod, "SECURE_INLINE_DRAWS",
                        -1 if request.param == "helper" else 1 << 40)
    return request.param


def test_small_runs_draw_inline_and_large_ones_on_a_helper():
    """The default threshold: a run of at most ``SECURE_INLINE_DRAWS`` integers starts no
    thread, one integer more starts the helper."""
    limit = dpsgd_mod.SECURE_INLINE_DRAWS
    small = dpsgd_mod.ExactStepNoise(new_word_source(1), 2.0, 1.0, 4, 10.0, limit // 4, 1)
    assert small._pool is None and not _noise_threads()
    small.close()
    large = dpsgd_mod.ExactStepNoise(new_word_source(1), 2.0, 1.0, 1, 10.0, limit + 1, 1)
    assert large._pool is not None
    large.close()
    assert not _noise_threads()


@pytest.mark.parametrize("n_parts, threads", [(1, 1), (8, 1), (8, 2)])
def test_chunks_are_the_sequential_draw_in_any_schedule(n_parts, threads, drawing):
    """Pipelined (one thread a step) or in groups (steps in parts on several threads), on
    a helper thread or inline: every chunk holds exactly the integers of drawing the
    chunks one after the other from the same source, and the chunks cover the steps 1..T
    in order."""
    if threads > available_threads():
        pytest.skip("needs two threads")
    p, T = 7, 53
    previous = current_threads()
    try:
        set_current_threads(threads)
        noise = dpsgd_mod.ExactStepNoise(new_word_source(9), 2.0, 1.0, p, 100.0, T, n_parts)
        assert noise.pipelined == (n_parts == 1 or threads == 1)
        assert (noise._pool is None) == (drawing == "inline")
        chunks = list(noise)
    finally:
        set_current_threads(previous)
    source = new_word_source(9)
    step = 1
    for t0, steps, gamma, Z in chunks:
        assert t0 == step and Z.shape == (steps, p)
        g, expected, _ = subsampled_gaussian_noise(source, 2.0, 1.0, p, 100.0, steps * p)
        assert gamma == g
        np.testing.assert_array_equal(Z.ravel(), expected)
        step += steps
    assert step == T + 1
    assert not _noise_threads()


def test_the_noise_starts_before_the_rows_are_read(monkeypatch):
    """The fit builds its noise (public quantities only) before it reads the rows, so the
    first draw overlaps the row norms."""
    events = []
    original_init = dpsgd_mod.ExactStepNoise.__init__
    original_norms = ClippedRows.clipped_row_norms

    def init(self, *args, **kwargs):
        events.append("noise")
        original_init(self, *args, **kwargs)

    def norms(self):
        events.append("rows")
        return original_norms(self)

    monkeypatch.setattr(dpsgd_mod.ExactStepNoise, "__init__", init)
    monkeypatch.setattr(ClippedRows, "clipped_row_norms", norms)
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (400, 3))
    y = np.sign(rng.normal(size=400))
    dpsgd_mod.solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=1e-2,
                          data_norm=2.0, batch_size=40, n_steps=20,
                          rng=np.random.default_rng(1), noise_source=new_word_source(2))
    assert events == ["noise", "rows"]


def test_a_failure_while_reading_the_rows_stops_the_noise(monkeypatch, drawing):
    """If preparing the rows raises, the error reaches the caller and no noise thread is
    left drawing."""
    def broken(self):
        raise RuntimeError("rows could not be read")

    monkeypatch.setattr(ClippedRows, "clipped_row_norms", broken)
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (400, 3))
    y = np.sign(rng.normal(size=400))
    with pytest.raises(RuntimeError, match="rows could not be read"):
        dpsgd_mod.solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=1e-2,
                              data_norm=2.0, batch_size=40, n_steps=20,
                              rng=np.random.default_rng(1), noise_source=new_word_source(2))
    assert not _noise_threads()


def test_a_failing_step_stops_the_noise(monkeypatch, drawing):
    """If a chunk's steps raise, the error reaches the caller once the draw in flight has
    finished: no noise thread is left using the source."""
    calls = []

    def failing_loop(*args, **kwargs):
        calls.append(1)
        raise FloatingPointError("step failed")

    monkeypatch.setattr(dpsgd_mod, "dpsgd_loop", failing_loop)
    rng = np.random.default_rng(0)
    n, p, T = 300, 4, 37
    X = rng.uniform(-0.5, 0.5, (n, p))
    args = (X, np.sign(rng.normal(size=n)), 0, 0.0, 1.0, np.sqrt(np.sum(X * X, axis=1)),
            np.zeros((p, 1)))
    hyper = (0.1, 30.0, 2.0, 0.01, 100.0, False, 1.0, 10.0, np.random.default_rng(1))
    with pytest.raises(FloatingPointError, match="step failed"):
        dpsgd_mod.run_steps(args, T, hyper, new_word_source(5), 2.0, 1.0, p, bound=n)
    assert calls == [1]
    assert not _noise_threads()


def test_a_fit_releases_the_same_model_inline_or_on_a_helper(monkeypatch):
    """Where the integers are drawn changes no bit of the model: the same seed gives the
    same coefficients with the noise drawn on a helper thread and on the caller's."""
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, (500, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=500) > 0).astype(int)
    kw = dict(data_norm=1.0, classes=[0, 1], solver="dpsgd", batch_size=50, n_steps=30,
              random_state=11)
    coefs = []
    for inline_draws in (-1, 1 << 40):
        monkeypatch.setattr(dpsgd_mod, "SECURE_INLINE_DRAWS", inline_draws)
        fit = DPLogisticRegression(**kw).fit(X, y)
        assert fit.secure_noise_
        coefs.append(np.append(fit.coef_.ravel(), fit.intercept_))
    np.testing.assert_array_equal(coefs[0], coefs[1])
    other = DPLogisticRegression(**{**kw, "random_state": 12}).fit(X, y)   # noise matters
    assert not np.array_equal(coefs[0][:-1], other.coef_.ravel())


def _grid_steps_drawn(monkeypatch):
    """Record the discrete Gaussian scale ``s`` (in grid steps) of every exact draw."""
    import skdp._mechanisms._exact as exact_mod
    scales, draw = [], exact_mod.discrete_gaussian_noise

    def recording(source, s, size):
        scales.append(s)
        return draw(source, s, size)

    monkeypatch.setattr(exact_mod, "discrete_gaussian_noise", recording)
    return scales


def dominates_the_per_record_event(s, gamma, sigma, record_bound, p):
    """The dominating continuous noise ``s gamma/(1 + margin)`` over the per-record bound
    plus the grid's rounding ``gamma sqrt(p)`` is at least the recorded multiplier
    ``sigma/record_bound`` (``skdp._mechanisms._exact``, Poisson-subsampled sums)."""
    from skdp._mechanisms._exact import DOMINANCE_MARGIN
    recorded = s * gamma / (1.0 + DOMINANCE_MARGIN)
    return recorded / (record_bound + gamma * np.sqrt(p)) >= sigma / record_bound


def test_the_grid_rounding_adds_to_the_per_record_bound(monkeypatch):
    """DP-SGD's event is ``PoissonSampled(q, Gaussian(sigma/L))``: each record moves the
    rounded sum by up to ``L/gamma + sqrt(p)`` grid steps, so the grid's noise must cover
    ``L + gamma sqrt(p)`` at multiplier ``sigma/L``.  Charging the rounding on the pair
    sensitivity ``2L`` covered half of it: at ``z sqrt(p) = 1000`` the old scale fell about
    500 grid steps short (failed before)."""
    scales = _grid_steps_drawn(monkeypatch)
    sigma, L, p = 50.0, 1.0, 400
    noise = dpsgd_mod.ExactStepNoise(new_word_source(3), sigma, L, p, 1e4, 2, 1)
    gammas = [gamma for _, _, gamma, _ in noise]
    assert scales and gammas
    assert all(dominates_the_per_record_event(s, gammas[0], sigma, L, p) for s in scales)
