"""dpsgd's optional suffix average of its iterates (``tail_average``, post-processing): the
kernel's running sum equals a step-by-step replay of the same run, on the float and the
exact-noise paths; the default (``tail_average=0``) is the last iterate; the event does not
depend on the averaging."""

import numpy as np
import pytest

import skdp._solvers._dpsgd as dpsgd
from skdp._losses import LogisticLoss, MultinomialLoss
from skdp._mechanisms import clip_and_augment
from skdp._mechanisms._clipping import row_norms
from skdp._mechanisms._exact import new_word_source, subsampled_gaussian_noise
from skdp._solvers._dpsgd import averaging_start, run_steps, solve_dpsgd
from skdp._solvers._dpsgd_kernel import dpsgd_loop


def _problem(n=300, d=4, K=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    if K == 1:
        y = np.where(X @ np.linspace(1.0, -1.0, d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    else:
        y = np.argmax(X @ rng.normal(size=(d, K)), axis=1).astype(float)
    return X, y


@pytest.mark.parametrize("T, frac, start", [(1, 0.5, 1), (2, 0.5, 2), (10, 0.5, 6),
                                            (11, 0.5, 6), (10, 0.0, 10), (10, 1.0, 1),
                                            (7, 0.25, 6)])
def test_averaging_start(T, frac, start):
    assert averaging_start(T, frac) == start


def _replay(args, T, hyper, t0, noise=None):
    """Step-by-step reference: one kernel call per step, the mean of W_t0..W_T in Python."""
    W = args[6]
    acc, count = np.zeros_like(W), 0
    for t in range(1, T + 1):
        if noise is None:
            dpsgd_loop(*args, 1, *hyper, t)
        else:
            gamma, Z = noise
            dpsgd_loop(*args, 1, *hyper, t, Z[t - 1:t], gamma)
        if t >= t0:
            acc += W
            count += 1
    return acc / count


@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("secure", [False, True])
def test_kernel_sum_equals_a_step_by_step_replay(K, secure):
    X, y = _problem(K=K)
    loss = LogisticLoss() if K == 1 else MultinomialLoss(K)
    C, T, t0, m = 2.0, 40, 21, 30
    Xc = clip_and_augment(X, C, True, 1.0)
    xnorm = np.empty(Xc.shape[0])
    row_norms(Xc, xnorm)
    L = float(loss.lipschitz(C))
    clip = dpsgd._clip_bound(L, Xc.shape[1] * K, Xc.shape[0])
    sigma = 2.0 * L

    def fresh(seed):
        W = np.zeros((Xc.shape[1], K))
        args = (Xc, y, int(loss.loss_id), float(loss.param), clip, xnorm, W)
        hyper = (m / Xc.shape[0], float(m), sigma, 0.05, 20.0, False, 0.5, 50.0,
                 np.random.default_rng(seed))
        return W, args, hyper

    p = Xc.shape[1] * K
    if secure:
        src_a, src_b = new_word_source(np.random.default_rng(3)), \
            new_word_source(np.random.default_rng(3))
    W_a, args_a, hyper_a = fresh(1)
    run_steps(args_a, T, hyper_a, src_a if secure else None, sigma, L, p,
              bound=X.shape[0] * L, average_from=t0)
    W_b, args_b, hyper_b = fresh(1)
    noise = None
    if secure:
        gamma, Z, _ = subsampled_gaussian_noise(src_b, sigma, L, p, X.shape[0] * L, T * p)
        noise = (gamma, Z.reshape(T, p))
    # run_steps draws the same integers in chunks of steps (same stream, same order; the
    # draws stay below the parallel threshold at these sizes)
    reference = _replay(args_b, T, hyper_b, t0, noise)
    np.testing.assert_allclose(W_a, reference, rtol=1e-12, atol=1e-15)
    # and the averaged W is not the last iterate (the test can fail)
    assert not np.allclose(W_a, W_b)


def test_default_is_the_last_iterate_and_averaging_keeps_the_event():
    X, y = _problem()
    kw = dict(epsilon=1.0, delta=1e-5, alpha=0.05, data_norm=2.0, batch_size=30, n_steps=50)
    last = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(4), **kw)
    mean = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(4), tail_average=0.5,
                       **kw)
    assert dpsgd.TAIL_AVERAGE == 0.0
    assert mean.details["averaged_steps"] == (26, 50)
    assert last.details["averaged_steps"] == (50, 50)
    assert mean.dp_event == last.dp_event and mean.noise_scale == last.noise_scale
    assert mean.n_gradient_evals == last.n_gradient_evals      # same batches
    assert not np.allclose(mean.coef, last.coef)
    # the run with W_T alone: replay T steps without averaging in the kernel
    again = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(4), tail_average=0.0,
                        **kw)
    np.testing.assert_array_equal(again.coef, last.coef)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_tail_average_out_of_range_refused(bad):
    X, y = _problem(n=50)
    with pytest.raises(ValueError, match="tail_average"):
        solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.05,
                    data_norm=2.0, rng=np.random.default_rng(0), tail_average=bad)


def test_averaging_reduces_the_noise_of_the_released_model(monkeypatch):
    """With the noise only (a fixed multiplier, many steps at the capped step size), the
    spread of the released coefficients over seeds is smaller for the suffix average than
    for the last iterate, on the same batches and noise."""
    monkeypatch.setattr(dpsgd, "_noise_multiplier", lambda *args: 2.0)
    X, y = _problem(n=400)
    kw = dict(epsilon=1.0, delta=1e-5, alpha=1e-4, data_norm=2.0, batch_size=40,
              n_steps=400)
    last, mean = [], []
    for seed in range(30):
        for frac, out in ((0.0, last), (0.5, mean)):
            r = solve_dpsgd(X, y, LogisticLoss(), rng=np.random.default_rng(seed),
                            tail_average=frac, **kw)
            out.append(np.r_[r.coef.ravel(), r.intercept])
    spread_last = np.std(np.array(last), axis=0).mean()
    spread_mean = np.std(np.array(mean), axis=0).mean()
    assert spread_mean < 0.7 * spread_last
