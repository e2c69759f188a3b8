"""The numpy/BLAS path of the full-batch sums (small designs): agreement with the kernels,
independence of the thread count, rounding covered by the certificate's allowance, the
clip of the robust gradient on adversarial rows, and no compilation on a first fit."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from skdp._losses import HUBER, LOGISTIC, HuberLoss, LogisticLoss, WelschLoss
from skdp._losses import _vectorised as vec
from skdp._losses._kernels import WELSCH, binary_value_grad
from skdp._mechanisms._summation import UNIT_ROUNDOFF
from skdp._solvers._objective import Objective, gradient_rounding_allowance, uses_vectorised


def _problem(rng, n, d, loss):
    X = np.ascontiguousarray(rng.standard_normal((n, d)) / np.sqrt(d))
    y = (np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss == LOGISTIC
         else 3.0 * rng.standard_normal(n))
    return X, y


def test_binary_value_grad_matches_the_kernel_and_not_the_thread_count(monkeypatch):
    """Value and gradient agree with the fused kernel to rounding, for n below and above
    N_CHUNKS, W = 0 included; the numpy result is bitwise the same on 1 and 2 threads (70,000
    rows: spread over the threads when ``n d >= MIN_THREADED_WORK``, with dense passes
    allowed two threads here -- by default they run on one, ``DENSE_NUMPY_THREADS``)."""
    monkeypatch.setattr(vec, "DENSE_NUMPY_THREADS", 2)
    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.choice([1, 2, 15, 16, 17, 300, 9000, 70000]))
        d = int(rng.integers(1, 20))
        loss = (LOGISTIC, HUBER)[trial % 2]
        X, y = _problem(rng, n, d, loss)
        W = rng.standard_normal((d, 1)) * (0.0 if trial % 7 == 0 else 1.0)
        alpha = (0.0, 1e-3, 0.3)[trial % 3]
        g_ref, g1, g2 = (np.empty_like(W) for _ in range(3))
        v_ref = binary_value_grad(X, y, W, loss, 1.0, alpha, g_ref)
        v1 = vec.binary_value_grad(X, y, W, loss, 1.0, alpha, g1, threads=1)
        v2 = vec.binary_value_grad(X, y, W, loss, 1.0, alpha, g2, threads=2)
        assert v1 == v2 and np.array_equal(g1, g2)
        assert v1 == pytest.approx(v_ref, rel=1e-12, abs=1e-15)
        np.testing.assert_allclose(g1, g_ref, rtol=1e-11, atol=1e-14)


def test_the_path_is_a_public_size_rule():
    """Objective takes the numpy path for one-output logistic designs of at most
    LOGISTIC_NUMPY_MAX_WORK entries and Huber designs of at most NUMPY_MAX_WORK, the
    kernels otherwise; the allowance follows the path."""
    X = np.zeros((10, 3))
    y = np.ones(10)
    assert Objective(X, y, LogisticLoss(), 0.1, 1, 1.0).vectorised
    assert Objective(X, y, HuberLoss(1.0), 0.1, 1, 1.0).vectorised
    assert not Objective(X, y, WelschLoss(1.0), 0.1, 1, 1.0).vectorised
    assert uses_vectorised(vec.LOGISTIC_NUMPY_MAX_WORK, 1, 1, LOGISTIC)
    assert not uses_vectorised(vec.LOGISTIC_NUMPY_MAX_WORK, 2, 1, LOGISTIC)
    assert not uses_vectorised(10, 3, 2, LOGISTIC)
    assert uses_vectorised(vec.NUMPY_MAX_WORK, 1, 1, HUBER)
    assert not uses_vectorised(vec.NUMPY_MAX_WORK, 2, 1, HUBER)
    assert vec.uses_numpy(vec.NUMPY_MAX_WORK, 1) and not vec.uses_numpy(vec.NUMPY_MAX_WORK, 2)
    for n in (1, 2, 16, 17, 1000, 10**6):
        assert vec.chunked_sum_depth(n) <= n
    a_np = gradient_rounding_allowance(30000, 100, 1, 1.0, 1.0, 1e-3, 5.0, vectorised=True)
    a_k = gradient_rounding_allowance(30000, 100, 1, 1.0, 1.0, 1e-3, 5.0)
    assert 0 < a_np < a_k     # depth 1875 + 15 (+64 ulps) against 4096 + 8 + 16 (+10)


def test_blocked_sum_depth():
    """A dense pass's depth is the chunked one while a chunk is one sub-block, at most
    ``n``, and at 10^7 rows near the kernels' (4,096-row blocks) instead of a chunk's
    625,000 rows; a sparse design sums in the same sub-blocks, so its allowance has that
    depth too, and counts a margin's terms as its rows' non-zeros when given."""
    B, N = vec.SUM_BLOCK_ROWS, vec.N_CHUNKS
    for n in (1, 2, 16, 17, 1000, N * B - 1, N * B):
        assert vec.blocked_sum_depth(n) == vec.chunked_sum_depth(n)
    assert vec.blocked_sum_depth(N * B + 1) == vec.chunked_sum_depth(N * B + 1)  # B + 2
    for n in (N * B + N + 1, 10**6, 10**7, 10**9):
        assert vec.blocked_sum_depth(n) < vec.chunked_sum_depth(n) <= n
    assert vec.blocked_sum_depth(10**7) == 4096 + 153 + 14
    dense = gradient_rounding_allowance(10**7, 21, 1, 1.0, 1.0, 1e-3, 5.0, vectorised=True,
                                        scaled=True)
    sparse = gradient_rounding_allowance(10**7, 21, 1, 1.0, 1.0, 1e-3, 5.0, vectorised=True,
                                         scaled=True, sparse=True)
    assert sparse == dense
    fewer = gradient_rounding_allowance(10**7, 21, 1, 1.0, 1.0, 1e-3, 5.0, vectorised=True,
                                        scaled=True, sparse=True, row_terms=4)
    assert fewer < sparse
    assert gradient_rounding_allowance(10**7, 21, 1, 1.0, 1.0, 1e-3, 5.0, vectorised=True,
                                       scaled=True, sparse=True, row_terms=99) == sparse


def test_sparse_pass_sums_in_sub_blocks():
    """A CSR chunk of more than SUM_BLOCK_ROWS rows adds each sub-block's rows in order
    from zero and the sub-block totals in order (the depth blocked_sum_depth counts): the
    bits of that sum written out; one recursive sum over the chunk gives other bits."""
    import scipy.sparse as sp

    from skdp._mechanisms._clipped_rows import ClippedRows
    from skdp._mechanisms._sparse_kernels import csr_accumulate

    B, N = vec.SUM_BLOCK_ROWS, vec.N_CHUNKS
    rng = np.random.default_rng(7)
    n = N * (2 * B + 100)                       # chunks of 2 B + 100 rows: 3 sub-blocks
    X = sp.random(n, 12, density=0.3, format="csr", random_state=3) * 1e3
    rows = ClippedRows(X, 50.0, True, 1.0)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    W = rng.normal(size=(13, 1))
    a, b = 0, n // N
    _, got = vec._sparse_chunk(rows, y, W, a, b, LOGISTIC, 0.0)
    z = rows.matvec(W[:, 0])[a:b]
    _, g = vec.binary_losses(z, y[a:b], LOGISTIC, 0.0)
    SG = rows.scale[a:b, None] * g[:, None]
    expected, whole = np.zeros((13, 1)), np.zeros((13, 1))
    for a2 in range(a, b, B):
        part = np.zeros((13, 1))
        csr_accumulate(X.data, X.indices, X.indptr, a2, min(a2 + B, b), SG[a2 - a:], part)
        expected += part
    csr_accumulate(X.data, X.indices, X.indptr, a, b, SG, whole)
    assert np.array_equal(got[:12], expected[:12])
    assert not np.array_equal(expected[:12], whole[:12])


@pytest.mark.parametrize("loss", [LOGISTIC, HUBER])
def test_dense_pass_sums_in_sub_blocks(loss, monkeypatch):
    """The structure blocked_sum_depth counts: per chunk, one BLAS product per sub-block
    of at most SUM_BLOCK_ROWS rows, added in order (the first to nothing), the chunk
    totals added in order from 0 -- the bits of that sum written out, on a raw array, on
    the rows clipped on the fly (float64 and float32, whose rows are converted a sub-block
    at a time) and on the fused chunk form; a whole-chunk product gives other bits."""
    from skdp._mechanisms._clipped_rows import ClippedRows

    monkeypatch.setattr(vec, "SUM_BLOCK_ROWS", 37)
    rng = np.random.default_rng(5)
    n, d = 5000, 7                                   # chunks of 312-313 rows: 9 sub-blocks
    X, y = _problem(rng, n, d, loss)
    w = rng.standard_normal(d)
    alpha = 0.01

    def reference(X64, z):
        _, g = vec.binary_losses(z, y, loss, 1.0)
        total = np.zeros(d)
        for a, b in vec._chunks(n):
            part = None
            for s0 in range(a, b, 37):
                blk = X64[s0:min(s0 + 37, b)].T @ g[s0:min(s0 + 37, b)]
                part = blk if part is None else part + blk
            total += part
        return total / n + alpha * w

    z = np.concatenate([X[a:b] @ w for a, b in vec._chunks(n)])
    g_raw = np.empty((d, 1))
    vec.binary_value_grad(X, y, w[:, None], loss, 1.0, alpha, g_raw)
    assert np.array_equal(g_raw[:, 0], reference(X, z))
    whole = np.zeros(d)
    _, g = vec.binary_losses(z, y, loss, 1.0)
    for a, b in vec._chunks(n):
        whole += X[a:b].T @ g[a:b]
    assert not np.array_equal(whole / n + alpha * w, g_raw[:, 0])
    for fused_min in (10**9, 0):
        monkeypatch.setattr(vec, "FUSED_MIN_ROWS", fused_min)
        for dtype in (np.float64, np.float32):
            Xd = X.astype(dtype)
            design = ClippedRows(Xd, 100.0, False, 0.0)      # no row clipped: factors 1
            assert np.all(design.scale == 1.0)
            g_lazy = np.empty((d, 1))
            vec.binary_value_grad(design, y, w[:, None], loss, 1.0, alpha, g_lazy)
            X64 = Xd.astype(np.float64)
            z64 = np.concatenate([X64[a:b] @ w for a, b in vec._chunks(n)])
            assert np.array_equal(g_lazy[:, 0], reference(X64, z64))


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                    reason="needs an extended-precision long double for the reference")
@pytest.mark.parametrize("numpy_path", [True, False])
@pytest.mark.parametrize("case", ["logistic", "huber-saturated", "huber-large-W"])
@pytest.mark.parametrize("scaled", [False, True])
def test_rounding_allowance_covers_the_computed_gradient(case, numpy_path, scaled):
    """Rows at the bound, all terms of one sign (no cancellation to hide the summation
    error), and, for Huber, a large ``W`` with every residual inside the threshold (the
    margins' rounding goes straight into the derivative): the computed gradient is within
    the certificate's allowance of a reference in extended precision, on the numpy path and
    on the kernel's, for a clipped copy and for rows clipped on the fly (``scaled``: the
    rows are 3x too long, the factors ~1/3 are not powers of two); the error is not zero
    (the test can fail)."""
    from skdp._mechanisms._clipped_rows import ClippedRows

    rng = np.random.default_rng(3)
    n, d, R = 40000, 24, 1.0
    X = rng.random((n, d)) + 0.1
    X *= (R * (1 - 1e-12) / np.linalg.norm(X, axis=1))[:, None]
    if case == "logistic":
        loss, W = LogisticLoss(), rng.random((d, 1)) * 0.3
        y = np.ones(n)
    elif case == "huber-saturated":
        loss, W = HuberLoss(0.5), rng.random((d, 1)) * 0.3
        y = -5.0 * np.ones(n)
    else:
        loss, W = HuberLoss(0.5), rng.random((d, 1)) * 40.0
        y = X @ W[:, 0] + rng.uniform(-0.4, 0.4, n)
    if scaled:
        design = ClippedRows(X * 3.0, R, False, 0.0)
        obj = Objective(design, y, loss, 1e-3, 1, R)
        Xl = (X * 3.0).astype(np.longdouble) * design.scale.astype(np.longdouble)[:, None]
    else:
        obj = Objective(X, y, loss, 1e-3, 1, R)
        Xl = X.astype(np.longdouble)
    assert obj.vectorised
    if not numpy_path:
        obj.vectorised = False  # the kernel: Huber's above NUMPY_MAX_WORK, Dask workers'
    _, grad = obj.value_grad(W)
    yl, wl = y.astype(np.longdouble), W[:, 0].astype(np.longdouble)
    z = Xl @ wl
    if loss.loss_id == LOGISTIC:
        g = -yl / (1 + np.exp(yl * z))
    else:
        g = np.clip(z - yl, -loss.param, loss.param)
    exact = (Xl.T @ g) / n + np.longdouble(1e-3) * wl
    err = float(np.linalg.norm(grad[:, 0].astype(np.longdouble) - exact))
    allowance = obj.rounding_allowance(W)
    assert 0 < err <= allowance
    assert allowance < 1e-9     # and it stays negligible next to the certificate


def test_kernel_sum_depth_counts_the_blocks_of_one_chunk():
    """The kernels' depth: BLOCK + (blocks of one chunk) + N_CHUNKS, below the count over
    all blocks that the allowance used before (28,527 at n = 1e8, now 5,638)."""
    from skdp._losses._kernels import BLOCK, N_CHUNKS
    from skdp._solvers._objective import kernel_sum_depth

    assert kernel_sum_depth(10**8) == BLOCK + math.ceil(math.ceil(10**8 / N_CHUNKS) / BLOCK) \
        + N_CHUNKS == 5638
    assert kernel_sum_depth(1) == BLOCK + 1 + 1
    assert all(kernel_sum_depth(n) <= BLOCK + -(-n // BLOCK) + N_CHUNKS
               for n in (1, 15, 16, 17, 4096, 65536, 10**6, 10**8))


def test_numpy_logistic_derivative_within_its_ulp_allowance():
    """The vectorised logistic derivative (numpy's exp is not correctly rounded) is within
    DERIVATIVE_ULPS u of the exact value over the whole range of margins."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(4)
    z = np.concatenate([rng.uniform(-40, 40, 1500), rng.uniform(-745, 745, 300),
                        rng.standard_normal(500) * 1e-3])
    y = np.where(rng.random(z.size) < 0.5, -1.0, 1.0)
    _, g = vec.binary_losses(z, y, LOGISTIC, 0.0)
    worst = 0.0
    with mpmath.workdps(40):
        for zi, yi, gi in zip(z, y, g):
            exact = -yi / (1 + mpmath.exp(yi * mpmath.mpf(zi)))
            worst = max(worst, abs(float(gi - exact)) / UNIT_ROUNDOFF)
    assert worst <= vec.DERIVATIVE_ULPS


def _clipped_sum(X, y, w, loss_id, c, row_norm, gclip, safe, threads=1):
    Xs, bound = vec.prepare_clipped_rows(X, row_norm, gclip, safe)
    return vec.sum_clipped_gradients(Xs, y, w, loss_id, c, bound, threads)


def test_clipped_gradient_sum_matches_the_oracle_kernel_and_drops_bad_rows():
    """The refinement's numpy sum equals spider's oracle kernel to rounding; zero rows,
    non-finite rows and NaN targets contribute nothing; every term is clipped."""
    from skdp._solvers._spider_kernel import SAFE, oracle_refresh

    rng = np.random.default_rng(5)
    n, p = 700, 5
    X = rng.standard_normal((n, p)) * 0.3
    X[3] = 0.0
    y = rng.standard_normal(n) * 2.0
    y[7] = np.nan
    w = rng.standard_normal(p)
    xnorm = np.linalg.norm(X, axis=1)
    gclip = 0.05
    ref, weights = np.empty(p), np.empty(n)
    oracle_refresh(X, y, np.arange(n), 0, n, w, WELSCH, 0.7, xnorm, gclip, 1.0, ref, weights)
    got = _clipped_sum(X, y, w, WELSCH, 0.7, xnorm, gclip, SAFE, threads=2)
    np.testing.assert_allclose(got / n, ref, rtol=1e-12, atol=1e-16)
    Xb, nb = X.copy(), xnorm.copy()
    Xb[9], nb[9] = np.inf, np.inf
    bad = _clipped_sum(Xb, y, w, WELSCH, 0.7, nb, gclip, SAFE)
    keep = np.ones(n, bool)
    keep[9] = False
    ok = _clipped_sum(X[keep], y[keep], w, WELSCH, 0.7, xnorm[keep], gclip, SAFE)
    assert np.all(np.isfinite(bad))
    np.testing.assert_allclose(bad, ok, rtol=1e-12, atol=1e-15)
    one = _clipped_sum(X[:1] * 1e6, np.array([1e9]), w, WELSCH, 1e12,
                                   xnorm[:1] * 1e6, gclip, SAFE)
    assert np.linalg.norm(one) <= gclip * (1 + 4 * UNIT_ROUNDOFF)


FIRST_FITS = """
import json, warnings
from numba.core import event
compiled = []

class Listener(event.Listener):
    def on_start(self, e):
        pass

    def on_end(self, e):
        f = getattr(e.data.get("dispatcher"), "py_func", None)
        compiled.append(getattr(f, "__qualname__", "?"))

event.register("numba:compile", Listener())
import skdp
from skdp import datasets
warnings.simplefilter("ignore")
adult, bike = datasets.load_demo_adult(), datasets.load_demo_bike()
for est, data in [
        (skdp.DPLogisticRegression(epsilon=1.0, data_norm=adult.row_norm_bound,
                                   random_state=0), adult),
        (skdp.DPHuberRegressor(epsilon=1.0, data_norm=bike.row_norm_bound,
                               huber_threshold=0.1, random_state=0), bike),
        (skdp.DPNonconvexRegressor(epsilon=1.0, data_norm=bike.row_norm_bound,
                                   loss_scale=0.3, random_state=0), bike)]:
    est.fit(data.data, data.target)
print(json.dumps(compiled))
"""


def test_default_fits_of_the_demo_data_compile_nothing(tmp_path):
    """A fresh process with an empty numba cache fits the three default estimators on the
    demo data without compiling a single kernel (the first-run latency of install.rst)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", FIRST_FITS], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_kernel_path_still_compiles_when_numpy_is_off(monkeypatch):
    """Guard for the test above: with the numpy path switched off a default objective
    (Huber) runs the kernel (so an empty compile list means the numpy path ran)."""
    monkeypatch.setattr(vec, "NUMPY_MAX_WORK", 0)
    X = np.ones((5, 2)) * 0.5
    obj = Objective(X, np.ones(5), HuberLoss(1.0), 0.1, 1, 1.0)
    assert not obj.vectorised
    value, grad = obj.value_grad(np.zeros((2, 1)))
    assert value == pytest.approx(0.5)       # residual -1 at the threshold 1: 1/2
    assert np.all(np.isfinite(grad))


def test_fused_chunk_pass_has_the_bits_of_the_whole_array_pass(monkeypatch):
    """From FUSED_MIN_ROWS rows a pass over rows clipped on the fly runs chunk by chunk
    (margins, losses and gradient part per chunk): the same value and gradient, bit for
    bit, as the whole-array form, on 1 and 2 threads, for float64 C and F order and
    float32 rows, logistic and Huber, with and without the intercept column."""
    from skdp._mechanisms._clipped_rows import ClippedRows

    rng = np.random.default_rng(21)
    fused_min = vec.FUSED_MIN_ROWS
    for trial in range(6):
        n, d = int(rng.integers(40000, 70000)), int(rng.integers(1, 25))
        X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0)
        X = (X.astype(np.float32), np.asfortranarray(X), X)[trial % 3]
        loss = (LOGISTIC, HUBER)[trial % 2]
        y = (np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss == LOGISTIC
             else 2.0 * rng.normal(size=n))
        design = ClippedRows(X, 1.5, trial % 4 != 3, 1.0)
        w = 3.0 * rng.normal(size=design.shape[1])
        assert n >= fused_min
        results = []
        for fused_from in (fused_min, 10**12):
            monkeypatch.setattr(vec, "FUSED_MIN_ROWS", fused_from)
            for threads in (1, 2):
                g = np.empty((design.shape[1], 1))
                results.append((vec._scaled_value_grad(design, y, w, loss, 0.7, 1e-3, g,
                                                       threads), g))
        for value, g in results[1:]:
            assert value == results[0][0] and np.array_equal(g, results[0][1])
