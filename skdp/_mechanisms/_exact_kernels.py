"""numba kernels of :mod:`skdp._mechanisms._exact` (its docstring has the algorithms, the
accounting and the threat model): the ChaCha20 word source, the exact Bernoulli, discrete
Laplace and discrete Gaussian samplers, the serial and parallel draws and the per-coordinate
grid release.  Apart from the Python-level API so that a fit whose few noise integers are
drawn in Python (:mod:`skdp._mechanisms._exact_py`) imports no numba."""

import numpy as np

from .._numba_cache import ensure_cache_locator, kernel
from ._exact import CLAMP_STEPS, PARALLEL_CHUNK

__all__ = ["chacha20_block", "next_u64", "uniform_below", "bernoulli_exp", "discrete_laplace",
           "discrete_gaussian", "grid_value"]

_MASK32 = np.uint64(0xFFFFFFFF)


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def _qr(a, b, c, d):
    """The ChaCha quarter round on four 32-bit words held in uint32 scalars."""
    a = np.uint32(a + b)
    d ^= a
    d = np.uint32((d << np.uint32(16)) | (d >> np.uint32(16)))
    c = np.uint32(c + d)
    b ^= c
    b = np.uint32((b << np.uint32(12)) | (b >> np.uint32(20)))
    a = np.uint32(a + b)
    d ^= a
    d = np.uint32((d << np.uint32(8)) | (d >> np.uint32(24)))
    c = np.uint32(c + d)
    b ^= c
    b = np.uint32((b << np.uint32(7)) | (b >> np.uint32(25)))
    return a, b, c, d


@kernel
def chacha20_block(state):
    """Fill ``state[16:32]`` with the ChaCha20 block of the input words ``state[:16]`` and
    advance the 64-bit block counter (words 12-13); reset the read index ``state[32]``.
    The 20 rounds run on 16 uint32 scalars (registers), not on the array."""
    x0 = np.uint32(state[0])
    x1 = np.uint32(state[1])
    x2 = np.uint32(state[2])
    x3 = np.uint32(state[3])
    x4 = np.uint32(state[4])
    x5 = np.uint32(state[5])
    x6 = np.uint32(state[6])
    x7 = np.uint32(state[7])
    x8 = np.uint32(state[8])
    x9 = np.uint32(state[9])
    x10 = np.uint32(state[10])
    x11 = np.uint32(state[11])
    x12 = np.uint32(state[12])
    x13 = np.uint32(state[13])
    x14 = np.uint32(state[14])
    x15 = np.uint32(state[15])
    for _ in range(10):
        x0, x4, x8, x12 = _qr(x0, x4, x8, x12)
        x1, x5, x9, x13 = _qr(x1, x5, x9, x13)
        x2, x6, x10, x14 = _qr(x2, x6, x10, x14)
        x3, x7, x11, x15 = _qr(x3, x7, x11, x15)
        x0, x5, x10, x15 = _qr(x0, x5, x10, x15)
        x1, x6, x11, x12 = _qr(x1, x6, x11, x12)
        x2, x7, x8, x13 = _qr(x2, x7, x8, x13)
        x3, x4, x9, x14 = _qr(x3, x4, x9, x14)
    out = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    for i in range(16):
        state[16 + i] = (np.uint64(out[i]) + state[i]) & _MASK32
    state[12] = (state[12] + np.uint64(1)) & _MASK32
    if state[12] == 0:
        state[13] = (state[13] + np.uint64(1)) & _MASK32
    state[32] = 0


@kernel
def _next_u32(state):
    i = np.int64(state[32])
    if i >= 16:
        chacha20_block(state)
        i = 0
    state[32] = np.uint64(i + 1)
    return state[16 + i]


@kernel
def next_u64(state):
    """One uniform 64-bit word (two ChaCha20 output words)."""
    hi = _next_u32(state)
    lo = _next_u32(state)
    return (hi << np.uint64(32)) | lo


@kernel(inline="always")
def _bit_length(m):
    """Number of bits of ``0 < m < 2^63`` (six halving steps, not a 63-step loop)."""
    bits = 1
    for shift in (32, 16, 8, 4, 2, 1):
        if m >> shift:
            m >>= shift
            bits += shift
    return bits


@kernel
def uniform_below(state, d):
    """Uniform integer in ``[0, d)``, exact.  ``d <= 2^32``: Lemire's multiply-and-reject
    on one 32-bit word (``x d >> 32`` is uniform once the low half ``l`` of the product is
    at least ``2^32 mod d``); larger ``d <= 2^62``: masked rejection on 64-bit words."""
    if d <= 1:
        return 0
    if d <= 4294967296:
        du = np.uint64(d)
        m = _next_u32(state) * du
        low = m & _MASK32
        if low < du:
            threshold = (np.uint64(4294967296) - du) % du
            while low < threshold:
                m = _next_u32(state) * du
                low = m & _MASK32
        return np.int64(m >> np.uint64(32))
    mask = np.uint64((1 << _bit_length(d - 1)) - 1)
    while True:
        x = np.int64(next_u64(state) & mask)
        if x < d:
            return x


@kernel
def _bernoulli_exp_le1(state, n1, d1, n2, d2):
    """Bernoulli(exp(-gamma)) for ``gamma = (n1/d1)(n2/d2) <= 1`` (CKS 2020, Algorithm 1):
    draw ``A_k ~ Bernoulli(gamma/k)`` for k = 1, 2, ... until the first 0 at ``K``; ``K`` is
    odd with probability ``exp(-gamma)``.  ``Bernoulli(gamma/k)`` is the product of the
    independent ``Bernoulli(n1/d1)``, ``Bernoulli(n2/d2)`` and ``Bernoulli(1/k)``: every
    denominator stays small (no overflow, one 32-bit word per factor).  ``gamma = 0`` is
    certain (``K = 1``) and draws nothing."""
    if n1 == 0 or n2 == 0:
        return True
    k = np.int64(1)
    while True:
        # a factor with denominator 1 (and Bernoulli(1/1) at k = 1) is certain and draws
        # no word: skipping its call changes no draw, only the call overhead (-30 % time)
        if d1 > 1 and uniform_below(state, d1) >= n1:
            return k % 2 == 1
        if d2 > 1 and uniform_below(state, d2) >= n2:
            return k % 2 == 1
        if k > 1 and uniform_below(state, k) != 0:
            return k % 2 == 1
        k += 1


@kernel
def bernoulli_exp(state, num, den):
    """Bernoulli(exp(-num/den)) for integers ``num >= 0``, ``1 <= den <= 2^32``:
    ``exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma)))``."""
    while num > den:
        if not _bernoulli_exp_le1(state, np.int64(1), np.int64(1), np.int64(1), np.int64(1)):
            return False
        num -= den
    return _bernoulli_exp_le1(state, np.int64(num), np.int64(den), np.int64(1), np.int64(1))


@kernel
def discrete_laplace(state, t):
    """``Z ~ DLap(t)``, ``P(z) ∝ exp(-|z|/t)``, integer ``1 <= t <= 2^32`` (CKS 2020,
    Algorithm 2): ``U`` uniform in ``[0, t)`` kept with probability ``exp(-U/t)``, plus ``t``
    times a geometric count of ``exp(-1)`` successes, with a random sign (``-0`` refused)."""
    one = np.int64(1)
    while True:
        u = uniform_below(state, t)
        # exp(-u/t) with u < t: Algorithm 1 directly (bernoulli_exp's loop would not run)
        if not _bernoulli_exp_le1(state, np.int64(u), np.int64(t), one, one):
            continue
        v = 0
        while _bernoulli_exp_le1(state, one, one, one, one):   # exp(-1)
            v += 1
        x = u + t * v
        negative = (_next_u32(state) >> np.uint64(31)) == 1
        if negative and x == 0:
            continue
        return -x if negative else x


@kernel
def discrete_gaussian(state, s):
    """``Z ~ N_Z(0, s^2)``, ``P(z) ∝ exp(-z^2/(2 s^2))``, integer ``1 <= s < 2^31`` (CKS 2020,
    Algorithm 3 with proposal ``DLap(s)``): ``Y`` is kept with probability
    ``exp(-(|Y| - s)^2/(2 s^2))``.  With ``a = ||Y| - s| = a_1 s + a_0`` (``0 <= a_0 < s``) that
    is ``exp(-a_1^2/2) exp(-a_1 a_0/s) exp(-a_0^2/(2 s^2))``, three exact Bernoullis whose
    denominators stay below ``2^32`` (the last as ``(a_0/s)(a_0/(2s))``)."""
    while True:
        y = discrete_laplace(state, s)
        a = abs(abs(y) - s)
        a1 = a // s
        a0 = a - a1 * s
        # gamma = 0 is certain and draws nothing: a1 = 0 (the usual case) skips both calls
        if a1 > 0 and not bernoulli_exp(state, np.int64(a1 * a1), np.int64(2)):
            continue
        if a1 > 0 and not bernoulli_exp(state, np.int64(a1 * a0), np.int64(s)):
            continue
        # exp(-a0^2/(2 s^2)) with gamma = (a0/s)(a0/(2s)) <= 1/2: 32-bit denominators
        if not _bernoulli_exp_le1(state, np.int64(a0), np.int64(s), np.int64(a0),
                                  np.int64(2 * s)):
            continue
        return y


@kernel(nogil=True)
def _draw_serial(state, scale, gaussian, out):
    for i in range(out.shape[0]):
        out[i] = discrete_gaussian(state, scale) if gaussian else discrete_laplace(state, scale)


@kernel(inline="always")
def grid_value(value, gamma, noise):
    """One coordinate of :func:`release_on_grid`, for the per-step kernels (dpsgd, resque,
    the exact tree of :mod:`skdp._mechanisms._tree`):
    ``gamma (rint(clip(value/gamma, +-CLAMP_STEPS)) + noise)``; the clamp is 1-Lipschitz,
    so it adds no sensitivity."""
    return gamma * (np.rint(min(max(value / gamma, -CLAMP_STEPS), CLAMP_STEPS)) + noise)


@kernel(nogil=True)
def _draw_chunks(state, tag0, tag1, scale, gaussian, out, c_start, c_stop):
    """Chunks ``c_start .. c_stop - 1`` of ``out`` (``PARALLEL_CHUNK`` draws each), chunk
    ``c`` from its own ChaCha20 stream: the caller's key, the per-call random nonce
    ``(tag0, tag1)`` and the block counter starting at ``c 2^32``.  Streams never overlap
    (distinct counters within a call; a fresh 64-bit nonce per call, never the ``(0, 0)``
    of the caller's own stream), so chunks can be drawn on any threads in any grouping and
    the result does not depend on the number of threads.  ``nogil``: the caller runs
    groups of chunks on Python threads (:func:`skdp._mechanisms._exact._draw`), which
    compiles in a fraction of a ``prange`` kernel's time."""
    n = out.shape[0]
    st = state.copy()
    for c in range(c_start, c_stop):
        st[12] = 0
        st[13] = np.uint64(c)
        st[14] = tag0
        st[15] = tag1
        st[32] = 16
        stop = min(n, (c + 1) * PARALLEL_CHUNK)
        for i in range(c * PARALLEL_CHUNK, stop):
            out[i] = discrete_gaussian(st, scale) if gaussian else discrete_laplace(st, scale)
