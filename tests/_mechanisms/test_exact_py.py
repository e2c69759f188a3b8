"""The plain-Python exact samplers draw exactly what the compiled kernels draw."""

import numpy as np
import pytest

from skdp._mechanisms import _exact
from skdp._mechanisms._exact import _draw_serial, discrete_gaussian_noise, new_word_source
from skdp._mechanisms._exact_py import PY_MAX_DRAWS, draw_python

SCALES = (1, 2, 3, 7, 1000, 2**20 + 3, 2**29 + 12345, 2**30 + 1, 2**31 - 1)


@pytest.mark.parametrize("gaussian", [True, False])
@pytest.mark.parametrize("scale", SCALES + (2**32,))
def test_same_integers_and_state_as_the_kernel(gaussian, scale):
    if gaussian and scale >= 2**31:
        pytest.skip("the discrete Gaussian takes s < 2^31")
    drawn = []
    for seed in range(6):
        compiled = new_word_source(seed)
        python = compiled.copy()
        size = 1 + 17 * seed
        a = np.empty(size, np.int64)
        b = np.empty(size, np.int64)
        _draw_serial(compiled, np.int64(scale), gaussian, a)
        draw_python(python, scale, b, gaussian)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(compiled, python)     # the next draws agree too
        drawn.append(a)
    assert np.abs(np.concatenate(drawn)).max() > 0       # not a degenerate comparison


def test_wide_uniform_and_block_counter_carry():
    """The 64-bit masked rejection path (d > 2^32) and the counter carry into word 13."""
    from skdp._mechanisms._exact import uniform_below
    from skdp._mechanisms._exact_py import _Stream, _uniform_below

    compiled = new_word_source(3)
    compiled[12] = 0xFFFFFFFF          # the next block wraps the low counter word
    python = _Stream(compiled.copy())
    for d in (2**32 + 1, 2**40 + 7, 2**62, 5, 2**32):
        for _ in range(40):
            assert uniform_below(compiled, d) == _uniform_below(python, d)
    np.testing.assert_array_equal(compiled, python.state(compiled))
    assert python.state(compiled)[13] == 1


@pytest.mark.parametrize("read_index", [0, 5, 15, 16])
@pytest.mark.parametrize("n_words", [0, 1, 3, 11, 16, 17, 40, 400])
def test_stream_state_matches_the_kernel_after_any_number_of_reads(read_index, n_words):
    """Blocks computed ahead in batches never show in the state: after ``n_words`` reads
    from any read position the state is the compiled kernel's (counter, output block and
    read index), and the words are the RFC 8439 stream's."""
    from skdp._mechanisms._exact import _next_u32 as compiled_u32
    from skdp._mechanisms._exact_py import _Stream

    compiled = new_word_source(5)
    if read_index < 16:                # a partly read current block
        for _ in range(16 + read_index):
            compiled_u32(compiled)
    python = _Stream(compiled.copy(), hint=3)
    for _ in range(n_words):
        assert python.u32() == int(compiled_u32(compiled))
    np.testing.assert_array_equal(python.state(compiled), compiled)


def test_size_switch_is_invisible(monkeypatch):
    """Below and at PY_MAX_DRAWS the public entry point runs Python; forcing the kernel
    instead gives the same integers."""
    monkeypatch.setattr(_exact, "_python_draws", 0)
    got = discrete_gaussian_noise(new_word_source(11), 2**29 + 1, PY_MAX_DRAWS)
    assert _exact._python_draws == PY_MAX_DRAWS                    # it ran in Python
    monkeypatch.setattr(_exact, "_python_draws", _exact.PY_BUDGET)  # budget spent
    ref = discrete_gaussian_noise(new_word_source(11), 2**29 + 1, PY_MAX_DRAWS)
    np.testing.assert_array_equal(got, ref)
    # and the distribution is the discrete Gaussian's (std within 5 % at 256 draws)
    assert 0.8 < got.std() / (2**29 + 1) < 1.2
