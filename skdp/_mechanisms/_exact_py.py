"""The exact samplers of :mod:`skdp._mechanisms._exact` in plain Python, for small draws.

A fit that draws a few hundred noise integers (objective and output perturbation, the
scaler, a noisy score) should not pay numba's compilation of the sampler chain (about 3.5 s
on a cold cache, every kernel from ChaCha20 to the discrete Gaussian) to save a few
milliseconds.  Up to ``PY_MAX_DRAWS`` integers per call, and until a process has drawn ``PY_BUDGET``
integers this way, :func:`skdp._mechanisms._exact._draw` therefore runs these functions
instead of ``_draw_serial``.

They are line-for-line the same algorithms on the same state array: the same ChaCha20
words are read in the same order, every rejection loop makes the same decisions, and the
integers returned are identical (Python integers are exact, and no intermediate of the
numba kernels overflows int64: denominators stay below ``2^32``, products below ``2^64``
in unsigned words).  ``tests/_mechanisms/test_exact_py.py`` checks the equality draw by
draw against the compiled kernels, state included, so switching paths by size never changes
a released value.
"""

__all__ = ["PY_MAX_DRAWS", "PY_BUDGET", "draw_python"]

#: largest number of integers drawn in Python in one call (above it the compiled kernels
#: run); about 80 us per integer, so at most ~20 ms per call
PY_MAX_DRAWS = 256
#: integers a process draws in Python before the compiled kernel takes over (~0.7 s of
#: Python, a fraction of the kernels' ~3.5 s compilation): the first fits of a session pay
#: no compilation, a loop of thousands of fits (an audit) runs at compiled speed
PY_BUDGET = 8192

_M32 = 0xFFFFFFFF


def _chacha20_block(st):
    """:func:`~skdp._mechanisms._exact.chacha20_block` on a list of Python ints."""
    x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15 = st[:16]
    m = _M32
    for _ in range(10):
        # columns
        x0 = (x0 + x4) & m; x12 ^= x0; x12 = ((x12 << 16) & m) | (x12 >> 16)  # noqa: E702
        x8 = (x8 + x12) & m; x4 ^= x8; x4 = ((x4 << 12) & m) | (x4 >> 20)  # noqa: E702
        x0 = (x0 + x4) & m; x12 ^= x0; x12 = ((x12 << 8) & m) | (x12 >> 24)  # noqa: E702
        x8 = (x8 + x12) & m; x4 ^= x8; x4 = ((x4 << 7) & m) | (x4 >> 25)  # noqa: E702
        x1 = (x1 + x5) & m; x13 ^= x1; x13 = ((x13 << 16) & m) | (x13 >> 16)  # noqa: E702
        x9 = (x9 + x13) & m; x5 ^= x9; x5 = ((x5 << 12) & m) | (x5 >> 20)  # noqa: E702
        x1 = (x1 + x5) & m; x13 ^= x1; x13 = ((x13 << 8) & m) | (x13 >> 24)  # noqa: E702
        x9 = (x9 + x13) & m; x5 ^= x9; x5 = ((x5 << 7) & m) | (x5 >> 25)  # noqa: E702
        x2 = (x2 + x6) & m; x14 ^= x2; x14 = ((x14 << 16) & m) | (x14 >> 16)  # noqa: E702
        x10 = (x10 + x14) & m; x6 ^= x10; x6 = ((x6 << 12) & m) | (x6 >> 20)  # noqa: E702
        x2 = (x2 + x6) & m; x14 ^= x2; x14 = ((x14 << 8) & m) | (x14 >> 24)  # noqa: E702
        x10 = (x10 + x14) & m; x6 ^= x10; x6 = ((x6 << 7) & m) | (x6 >> 25)  # noqa: E702
        x3 = (x3 + x7) & m; x15 ^= x3; x15 = ((x15 << 16) & m) | (x15 >> 16)  # noqa: E702
        x11 = (x11 + x15) & m; x7 ^= x11; x7 = ((x7 << 12) & m) | (x7 >> 20)  # noqa: E702
        x3 = (x3 + x7) & m; x15 ^= x3; x15 = ((x15 << 8) & m) | (x15 >> 24)  # noqa: E702
        x11 = (x11 + x15) & m; x7 ^= x11; x7 = ((x7 << 7) & m) | (x7 >> 25)  # noqa: E702
        # diagonals
        x0 = (x0 + x5) & m; x15 ^= x0; x15 = ((x15 << 16) & m) | (x15 >> 16)  # noqa: E702
        x10 = (x10 + x15) & m; x5 ^= x10; x5 = ((x5 << 12) & m) | (x5 >> 20)  # noqa: E702
        x0 = (x0 + x5) & m; x15 ^= x0; x15 = ((x15 << 8) & m) | (x15 >> 24)  # noqa: E702
        x10 = (x10 + x15) & m; x5 ^= x10; x5 = ((x5 << 7) & m) | (x5 >> 25)  # noqa: E702
        x1 = (x1 + x6) & m; x12 ^= x1; x12 = ((x12 << 16) & m) | (x12 >> 16)  # noqa: E702
        x11 = (x11 + x12) & m; x6 ^= x11; x6 = ((x6 << 12) & m) | (x6 >> 20)  # noqa: E702
        x1 = (x1 + x6) & m; x12 ^= x1; x12 = ((x12 << 8) & m) | (x12 >> 24)  # noqa: E702
        x11 = (x11 + x12) & m; x6 ^= x11; x6 = ((x6 << 7) & m) | (x6 >> 25)  # noqa: E702
        x2 = (x2 + x7) & m; x13 ^= x2; x13 = ((x13 << 16) & m) | (x13 >> 16)  # noqa: E702
        x8 = (x8 + x13) & m; x7 ^= x8; x7 = ((x7 << 12) & m) | (x7 >> 20)  # noqa: E702
        x2 = (x2 + x7) & m; x13 ^= x2; x13 = ((x13 << 8) & m) | (x13 >> 24)  # noqa: E702
        x8 = (x8 + x13) & m; x7 ^= x8; x7 = ((x7 << 7) & m) | (x7 >> 25)  # noqa: E702
        x3 = (x3 + x4) & m; x14 ^= x3; x14 = ((x14 << 16) & m) | (x14 >> 16)  # noqa: E702
        x9 = (x9 + x14) & m; x4 ^= x9; x4 = ((x4 << 12) & m) | (x4 >> 20)  # noqa: E702
        x3 = (x3 + x4) & m; x14 ^= x3; x14 = ((x14 << 8) & m) | (x14 >> 24)  # noqa: E702
        x9 = (x9 + x14) & m; x4 ^= x9; x4 = ((x4 << 7) & m) | (x4 >> 25)  # noqa: E702
    out = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    for i in range(16):
        st[16 + i] = (out[i] + st[i]) & m
    st[12] = (st[12] + 1) & m
    if st[12] == 0:
        st[13] = (st[13] + 1) & m
    st[32] = 0


def _next_u32(st):
    i = st[32]
    if i >= 16:
        _chacha20_block(st)
        i = 0
    st[32] = i + 1
    return st[16 + i]


def _next_u64(st):
    hi = _next_u32(st)
    lo = _next_u32(st)
    return (hi << 32) | lo


def _uniform_below(st, d):
    if d <= 1:
        return 0
    if d <= 4294967296:
        m = _next_u32(st) * d
        low = m & _M32
        if low < d:
            threshold = (4294967296 - d) % d
            while low < threshold:
                m = _next_u32(st) * d
                low = m & _M32
        return m >> 32
    mask = (1 << (d - 1).bit_length()) - 1
    while True:
        x = _next_u64(st) & mask
        if x < d:
            return x


def _bernoulli_exp_le1(st, n1, d1, n2, d2):
    if n1 == 0 or n2 == 0:
        return True
    k = 1
    while True:
        if (_uniform_below(st, d1) < n1 and _uniform_below(st, d2) < n2
                and _uniform_below(st, k) == 0):
            k += 1
        else:
            return k % 2 == 1


def _bernoulli_exp(st, num, den):
    while num > den:
        if not _bernoulli_exp_le1(st, 1, 1, 1, 1):
            return False
        num -= den
    return _bernoulli_exp_le1(st, num, den, 1, 1)


def _discrete_laplace(st, t):
    while True:
        u = _uniform_below(st, t)
        if not _bernoulli_exp(st, u, t):
            continue
        v = 0
        while _bernoulli_exp(st, 1, 1):
            v += 1
        x = u + t * v
        negative = (_next_u32(st) >> 31) == 1
        if negative and x == 0:
            continue
        return -x if negative else x


def _discrete_gaussian(st, s):
    while True:
        y = _discrete_laplace(st, s)
        a = abs(abs(y) - s)
        a1 = a // s
        a0 = a - a1 * s
        if not _bernoulli_exp(st, a1 * a1, 2):
            continue
        if not _bernoulli_exp(st, a1 * a0, s):
            continue
        if not _bernoulli_exp_le1(st, a0, s, a0, 2 * s):
            continue
        return y


def draw_python(state, scale, out, gaussian):
    """``_draw_serial`` in Python: fill the int64 array ``out`` with ``N_Z(0, scale^2)``
    (``gaussian``) or ``DLap(scale)`` integers from the ChaCha20 ``state`` (uint64 array),
    and advance ``state`` exactly as the compiled kernel would."""
    st = [int(w) for w in state]
    scale = int(scale)
    draw = _discrete_gaussian if gaussian else _discrete_laplace
    for i in range(out.shape[0]):
        out[i] = draw(st, scale)
    state[:] = st
