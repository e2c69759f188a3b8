"""The exact samplers of :mod:`skdp._mechanisms._exact` in plain Python, for small draws.

A fit that draws a few hundred noise integers (objective and output perturbation, the
scaler, a noisy score) should not pay numba's compilation of the sampler chain (about 3.5 s
on a cold cache, every kernel from ChaCha20 to the discrete Gaussian) to save a few
milliseconds.  Up to ``PY_MAX_DRAWS`` integers per call, and until a process has drawn ``PY_BUDGET``
integers this way, :func:`skdp._mechanisms._exact._draw` therefore runs these functions
instead of ``_draw_serial``.

They are line-for-line the same algorithms; the ChaCha20 words come from a
:class:`_Stream` over the kernels' state array, which computes blocks ahead in vectorised
numpy and writes back the state the kernels would leave.  The same words are read in the
same order, every rejection loop makes the same decisions, and the
integers returned are identical (Python integers are exact, and no intermediate of the
numba kernels overflows int64: denominators stay below ``2^32``, products below ``2^64``
in unsigned words).  ``tests/_mechanisms/test_exact_py.py`` checks the equality draw by
draw against the compiled kernels, state included, so switching paths by size never changes
a released value.
"""

import numpy as np

__all__ = ["PY_MAX_DRAWS", "PY_BUDGET", "draw_python"]

#: largest number of integers drawn in Python in one call (above it the compiled kernels
#: run); about 20 us per integer with the vectorised cipher, so at most ~5 ms per call
PY_MAX_DRAWS = 256
#: integers a process draws in Python before the compiled kernel takes over (~0.15 s of
#: Python, a fraction of the kernels' ~3.5 s compilation): the first fits of a session pay
#: no compilation, a loop of thousands of fits (an audit) runs at compiled speed
PY_BUDGET = 8192

_M32 = 0xFFFFFFFF


def _keystream(inputs, counter, n_blocks):
    """``n_blocks`` consecutive ChaCha20 blocks (RFC 8439) of the input words ``inputs``
    (16 ints) with 64-bit block counters ``counter, counter + 1, ...`` in words 12 (low) and
    13 (high), computed side by side in numpy uint32 arithmetic (wrapping adds, as the
    cipher's); the words in stream order as a list of Python ints.

    The state is held as four ``(4, n_blocks)`` rows of the 4 x 4 matrix (``a`` = words
    0-3, ``b`` = 4-7, ``c`` = 8-11, ``d`` = 12-15), so one vectorised quarter round does
    the four column rounds at once; the diagonal rounds are the column rounds after
    rotating ``b``, ``c``, ``d`` left by 1, 2, 3 words (``(0,5,10,15)``, ``(1,6,11,12)``,
    ... become columns), rotated back after.  About 300 numpy calls a batch whatever its
    size (the one-array-per-word form took 960, 2.3x the time), so a draw of a few hundred
    integers spends its time in the samplers' logic, not in the cipher.
    ``tests/_mechanisms/test_exact_py.py`` compares the words with the compiled cipher."""
    ctr = np.arange(n_blocks, dtype=np.uint64) + np.uint64(counter)
    start = np.empty((16, n_blocks), dtype=np.uint32)
    start[:] = np.asarray(inputs, dtype=np.uint32)[:, None]
    start[12] = (ctr & np.uint64(_M32)).astype(np.uint32)
    start[13] = (ctr >> np.uint64(32)).astype(np.uint32)
    a, b, c, d = (start[4 * k:4 * k + 4].copy() for k in range(4))
    tmp = np.empty_like(a)

    def rotl(v, k):                       # v <- v <<< k, in place
        np.right_shift(v, np.uint32(32 - k), out=tmp)
        np.left_shift(v, np.uint32(k), out=v)
        np.bitwise_or(v, tmp, out=v)

    def quarter_rounds(a, b, c, d):
        a += b
        d ^= a
        rotl(d, 16)
        c += d
        b ^= c
        rotl(b, 12)
        a += b
        d ^= a
        rotl(d, 8)
        c += d
        b ^= c
        rotl(b, 7)

    left1, left2, left3 = [1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2]
    for _ in range(10):
        quarter_rounds(a, b, c, d)                       # columns
        b, c, d = b[left1], c[left2], d[left3]
        quarter_rounds(a, b, c, d)                       # diagonals
        b, c, d = b[left3], c[left2], d[left1]
    out = np.concatenate((a, b, c, d))
    out += start
    return out.T.ravel().tolist()


class _Stream:
    """The words of a ChaCha20 state (``uint64[50]``, layout of
    :func:`~skdp._mechanisms._exact.new_word_source`) in the order the compiled
    ``_next_u32`` reads them: the rest of the current output block, then the blocks of the
    next counters -- computed ahead in batches (:func:`_keystream`).  :meth:`state` gives
    the state the compiled kernels would have after the same number of reads (counter,
    output block and read index), whatever was computed ahead."""

    __slots__ = ("inputs", "counter0", "words", "pos", "n_left", "read0", "hint")

    def __init__(self, state, hint=8):
        st = [int(w) for w in state]
        self.inputs = st[:16]
        self.counter0 = st[12] | (st[13] << 32)
        self.read0 = st[32]
        self.words = st[16 + self.read0:32] if self.read0 < 16 else []
        self.n_left = len(self.words)       # words of the current block not read yet
        self.pos = 0
        self.hint = max(1, int(hint))

    def u32(self):
        p = self.pos
        if p >= len(self.words):
            done = (len(self.words) - self.n_left) // 16
            self.words.extend(_keystream(self.inputs, self.counter0 + done, self.hint))
            self.hint = max(4, self.hint // 2)
        self.pos = p + 1
        return self.words[p]

    def state(self, like):
        """The compiled kernels' state after the reads so far (a copy of ``like``'s dtype)."""
        st = [int(w) for w in like]
        if self.pos <= self.n_left:
            st[32] = self.read0 + self.pos
            return np.array(st, dtype=like.dtype)
        k = self.pos - self.n_left                 # words read from computed blocks
        b = (k - 1) // 16                          # the block the last word came from
        first = self.n_left + 16 * b
        st[16:32] = self.words[first:first + 16]
        counter = (self.counter0 + b + 1) & 0xFFFFFFFFFFFFFFFF
        st[12], st[13] = counter & _M32, counter >> 32
        st[32] = (k - 1) % 16 + 1
        return np.array(st, dtype=like.dtype)


def _next_u32(st):
    return st.u32()


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
        if d1 > 1 and _uniform_below(st, d1) >= n1:
            return k % 2 == 1
        if d2 > 1 and _uniform_below(st, d2) >= n2:
            return k % 2 == 1
        if k > 1 and _uniform_below(st, k) != 0:
            return k % 2 == 1
        k += 1


def _bernoulli_exp(st, num, den):
    while num > den:
        if not _bernoulli_exp_le1(st, 1, 1, 1, 1):
            return False
        num -= den
    return _bernoulli_exp_le1(st, num, den, 1, 1)


def _discrete_laplace(st, t):
    while True:
        u = _uniform_below(st, t)
        if not _bernoulli_exp_le1(st, u, t, 1, 1):
            continue
        v = 0
        while _bernoulli_exp_le1(st, 1, 1, 1, 1):
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
        if a1 > 0 and not _bernoulli_exp(st, a1 * a1, 2):
            continue
        if a1 > 0 and not _bernoulli_exp(st, a1 * a0, s):
            continue
        if not _bernoulli_exp_le1(st, a0, s, a0, 2 * s):
            continue
        return y


def draw_python(state, scale, out, gaussian):
    """``_draw_serial`` in Python: fill the int64 array ``out`` with ``N_Z(0, scale^2)``
    (``gaussian``) or ``DLap(scale)`` integers from the ChaCha20 ``state`` (uint64 array),
    and advance ``state`` exactly as the compiled kernel would."""
    # blocks to compute ahead: about 0.9 per discrete Gaussian (14.5 words), 0.55 per
    # discrete Laplace -- one batch either way, as each batch has a fixed numpy cost;
    # blocks computed and not read never show in the state
    st = _Stream(state, hint=out.shape[0] + 4)
    scale = int(scale)
    draw = _discrete_gaussian if gaussian else _discrete_laplace
    for i in range(out.shape[0]):
        out[i] = draw(st, scale)
    state[:] = st.state(state)
