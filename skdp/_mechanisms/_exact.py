r"""Floating-point-safe noise: exact integer samplers and grid releases (numba, int64 only).

Why
---
A float64 release ``v + sigma * N(0, 1)`` is not differentially private as computed: the
low-order bits of the sum depend on ``v`` (Mironov 2012 attacked the sampler; Haney et al.
2022 the addition).  Example: if the noise-free value is 0 on ``D`` and ``W_1 = 0.0198`` on
a neighbour ``D'``, every release under ``D'`` with ``|release| < W_1/2`` is an exact float
sum ``W_1 + n`` (Sterbenz), hence a multiple of ``ulp(W_1)/2``, while under ``D`` the release
is the raw noise whose low bits are free: one coordinate tells the datasets apart with
probability ~1 % -- a delta of 1e-2 against a claimed 1e-6, at any epsilon.

The fix (Canonne, Kamath & Steinke 2020; the grid of OpenDP and Google's libraries)
-------------------------------------------------------------------------------------------
Release each coordinate on a public grid ``gamma = 2^k``:

.. math:: r_i = \gamma \, (\mathrm{rint}(v_i/\gamma) + Z_i), \qquad Z_i \in \mathbb Z,

with ``Z`` drawn *exactly* from the discrete Gaussian ``N_Z(0, s^2)``
(``P(z) \propto \exp(-z^2/(2 s^2))``) or the discrete Laplace ``DLap(t)``
(``P(z) \propto \exp(-|z|/t)``), by the rejection samplers of Canonne, Kamath & Steinke
(NeurIPS 2020, Algorithms 1-3) in integer arithmetic.  ``v_i/gamma``, ``rint`` and the product
by ``gamma`` are exact in float64 while ``|rint(v_i/gamma) + Z_i| < 2^53``, which the clamp of
``v`` to ``[-2^50 gamma, 2^50 gamma]`` (1-Lipschitz, so no sensitivity is added) and the
noise size guarantee.  Every released number is then an integer multiple of ``gamma``
whose law, given ``rint(v/gamma)``, is an exact lattice law: there are no low bits to read.

Accounting (the callers: :func:`gaussian_grid`, :func:`laplace_grid`)
----------------------------------------------------------------------
* **Rounding** moves each coordinate by at most 1/2 grid step, so for neighbouring
  ``a, b``: ``||rint(a/gamma) - rint(b/gamma)||_2 <= ||a - b||_2/gamma + sqrt(p)`` and
  ``||.||_1 <= ||a - b||_1/gamma + p`` (OpenDP's rule): the sensitivity grows by
  ``gamma sqrt(p)`` (L2) or ``gamma p`` (L1).
* **Rounding a Poisson-subsampled sum** (DP-SGD, resque: :func:`subsampled_gaussian_noise`).
  Its event is not a pair sensitivity but a *per-record* bound ``C`` (dp-accounting's
  replace-one pair ``(1-q) N(0) + q N(-C)`` against ``(1-q) N(0) + q N(+C)``; see
  :mod:`skdp.accounting._sampled`): given the other records' sum ``r``, the rounded sum is
  ``rint(r/gamma)`` without the record and ``rint((r + g)/gamma)`` with it, ``||g|| <= C``,
  and each of the two is within ``C/gamma + sqrt(p)`` of ``rint(r/gamma)``.  The rounding
  term therefore adds to the per-record bound, ``C + gamma sqrt(p)`` -- twice the pair's
  ``gamma sqrt(p)`` measured on ``2C`` -- and the grid is fixed on ``C``, not ``2C``.
* **Discrete Gaussian.**  Its zCDP equals the continuous one (CKS 2020, Thm 14), but its
  ``(epsilon, delta)`` curve is not always below the continuous one: exact hockey-stick
  sums for a scalar shift of about ``s`` steps show a relative excess of up to 0.4 % at
  ``s = 16`` and 4e-8 at ``s = 2^12``, shrinking like ``1/s^2``.  The grid makes
  ``s >= 2^12`` (``2^29`` unless a large public bound on the values coarsens it,
  :func:`grid_for`), and the fit records a *dominating* continuous event:
  ``gaussian_event`` with noise ``s gamma / (1 + 2^-10)`` and sensitivity ``Delta + gamma
  sqrt(p)``.  The 0.1 % less noise raises ``delta(epsilon)`` by about ``1e-3 |d ln delta /
  d ln sigma|`` relative -- about 4 % at those shifts, six orders of magnitude above the
  excess (``tests/_mechanisms/test_exact.py`` computes the sums in float64, cross-checked
  with mpmath at ``s = 16``, shows the excess at ``s = 16`` and ``2^12`` and the margin
  covering it at ``s = 2^12, 2^14``).
* **Discrete Laplace.**  ``DLap(t)`` with integer shifts of L1 norm at most ``Delta_1'`` is
  exactly ``Delta_1'/t``-DP (the ratio of the pmfs is ``exp(|z - a|/t - |z - b|/t)``), so pure
  epsilon is recorded exactly.

Word source
-----------
ChaCha20 (Bernstein 2008; RFC 8439), a counter-mode cryptographic generator, as a
``uint64[50]`` state array (16 input words, 16 output words, the read index; the rest
is spare), keyed by 256
bits from the OS (``os.urandom``) when ``random_state=None`` or derived from ``random_state``
through ``numpy.random.SeedSequence`` (reproducible bit for bit -- and predictable to whoever
knows the seed: use ``None`` in production).  Checked against the RFC 8439 test vector.

Keys from an integer seed: one stream per release site
------------------------------------------------------
Two releases composed as independent must draw independent noise: with equal keys both
draw the same integers, whose unit noises cancel in a scaled difference of the two
releases, and the composition under-counts.  An integer ``random_state`` ``s`` is turned
into a key by hashing it (``SeedSequence``) together with a *spawn key* that names the
release site; equal ``(s, spawn key)`` give equal keys, distinct ones distinct keys (but
for a collision of the 256-bit hash) and so unrelated ChaCha20 streams
(:data:`RELEASE_SITES`, :func:`site_seed`):

* ``"dp_transformers"``: ``SeedSequence(s, spawn_key=(0x5EC,))`` -- DPOneHotEncoder,
  DPSplineTransformer, DPRobustScaler (their quantile and count releases);
* ``"default_rng"``: the first 8 words of ``default_rng(s)`` (secure noise), the stream
  itself (float noise, DP-SGD's batches), and for ``"auto"`` bounds the key
  ``SeedSequence(x, spawn_key=(0x5EC,))``, ``x = default_rng(s).integers(2^63)`` -- the
  estimators' solvers and bounds; the private searches draw their splits, candidates,
  fit keys and score noise from ``default_rng(s)`` too;
* ``"target_centre"``: 8 words of ``default_rng(c)``, ``c`` a word of ``SeedSequence(s,
  spawn_key=(0x7A5C,))`` -- the target centre of DPHuberRegressor and
  DPNonconvexRegressor with a ``target_range``;
* ``"base_rate_check"``: ``SeedSequence(s, spawn_key=(0x5EC, 0xBA5E))`` -- the base-rate
  check of DPLogisticRegression;
* ``"standard_scaler"``: ``default_rng(SeedSequence(s, spawn_key=(0x5EC, 0x5CA1E)))`` --
  DPStandardScaler (moments, float noise, and its ``"auto"`` bounds' key, hashed from it).

Every DP class names the sites its fit draws from in ``_release_sites`` (after the dash),
and the accounting (:func:`skdp.accounting.fitted_dp_event`) refuses equal integer seeds
only for two steps that share a site -- where they are equal keys -- and composes the
rest as independent.  A step that draws from two sites (DPLogisticRegression: its solver
and its base-rate check) collides with any step that shares either.
``tests/accounting/test_fitted.py`` opens every site's keys at one seed and checks both
halves: a common site gives a common key, no common site never does.  (An ``"auto"``
bound's key meets a transformer's only for a transformer seed equal to ``x``, a 63-bit
hash of the estimator's seed: never by giving equal seeds.)  A ``Generator`` given as
``random_state`` is drawn from directly at every site: two generators in one state give
the same noise whatever the classes.

Threat model: the released numbers.  Timing is out of scope (the number of words a draw
consumes grows with ``|Z|``); callers draw the noise before they read the data.
"""

import contextlib
import contextvars
import os

import numpy as np

from .._parallel import chunk_pool, current_threads
from ._exact_py import PY_BUDGET, PY_MAX_DRAWS, draw_python

__all__ = [
    "new_word_source", "next_u64", "uniform_below", "bernoulli_exp", "discrete_laplace",
    "discrete_gaussian", "gaussian_grid", "laplace_grid", "release_on_grid", "GRID_BITS",
    "DOMINANCE_MARGIN", "CLAMP_STEPS", "exact_gaussian_noise", "exact_laplace_noise",
    "subsampled_gaussian_noise",
    "grid_value", "coupled_gaussian_noise", "coupled_laplace_noise", "COUPLING_STEPS",
    "RELEASE_SITES", "site_seed",
]

#: the grid is ``gamma = 2^(floor(log2 sigma) - GRID_BITS)``: ``s = sigma/gamma in [2^29, 2^31)``
GRID_BITS = 29
#: fewest grid bits per noise std (``s >= 2^12``) when a large public bound on the released
#: values forces a coarser grid (:func:`grid_for`)
MIN_GRID_BITS = 12
#: draws per parallel chunk, and the size from which a vector is drawn in parallel chunks
PARALLEL_CHUNK = 1024
PARALLEL_MIN = 2048
#: relative noise given up in the recorded (dominating) continuous Gaussian event
DOMINANCE_MARGIN = 2.0 ** -10
#: largest number of exact noise integers a solver pre-draws for one fit (256 MiB of int64)
MAX_EXACT_DRAWS = 1 << 25
#: per-coordinate distance, in grid steps, within which a discrete Gaussian draw stays of
#: the continuous Gaussian it is coupled with (``1/2 + 1/8``, :func:`coupled_gaussian_noise`)
COUPLING_STEPS = 0.625
#: ``|v|/gamma`` is clamped to this, so ``|rint(v/gamma) + Z| < 2^53`` (exact in float64)
CLAMP_STEPS = 2.0 ** 50

_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)   # "expand 32-byte k"

#: spawn key of the DP transformers' keys from an integer seed (:func:`new_word_source`)
_KEY_STREAM = 0x5EC
#: every release site and how it derives its noise from an integer seed ``s`` (module
#: docstring, "Keys from an integer seed"): the spawn key of ``SeedSequence(s,
#: spawn_key=...)`` (:func:`site_seed`), or None for numpy's ``default_rng(s)`` itself.
#: The DP classes name theirs in ``_release_sites``; the accounting compares seeds by site
#: (:func:`skdp.accounting._fitted._release_sites`).
RELEASE_SITES = {
    "dp_transformers": (_KEY_STREAM,),
    "default_rng": None,
    "target_centre": (0x7A5C,),
    "base_rate_check": (_KEY_STREAM, 0xBA5E),
    "standard_scaler": (_KEY_STREAM, 0x5CA1E),
}


#: the numba kernels (:mod:`skdp._mechanisms._exact_kernels`), re-exported lazily
#: (:func:`__getattr__`): a fit that draws its few integers in Python imports no numba
_KERNELS = frozenset({"_qr", "chacha20_block", "_next_u32", "next_u64", "_bit_length",
                      "uniform_below", "_bernoulli_exp_le1", "bernoulli_exp",
                      "discrete_laplace", "discrete_gaussian", "_draw_serial", "grid_value",
                      "_draw_chunks"})


def __getattr__(name):
    if name in _KERNELS:
        from . import _exact_kernels

        return getattr(_exact_kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def new_word_source(random_state=None):
    """A keyed ChaCha20 state (``uint64[50]``).

    ``None``: 256 bits from ``os.urandom``.  A ``Generator``/``RandomState``: 8 words drawn
    from it (the estimators pass their seeded Generator: the key is its first draws, and
    every later float draw comes after them).  An int or ``SeedSequence``: the key is
    ``SeedSequence(random_state, spawn_key=(0x5EC, )).generate_state(8)``.  A seeded key is
    reproducible bit for bit -- and known to whoever knows the seed.
    """
    if random_state is None:
        key = np.frombuffer(os.urandom(32), dtype=np.uint32).astype(np.uint64)
    elif isinstance(random_state, np.random.Generator):
        key = random_state.integers(0, 2**32, size=8, dtype=np.uint64)
    elif isinstance(random_state, np.random.RandomState):
        key = random_state.randint(0, 2**32, size=8, dtype=np.uint64)
    else:
        seq = random_state if isinstance(random_state, np.random.SeedSequence) else \
            site_seed(random_state, "dp_transformers")
        key = seq.generate_state(8, dtype=np.uint32).astype(np.uint64)
    state = np.zeros(50, dtype=np.uint64)
    state[:4] = _SIGMA
    state[4:12] = key
    state[32] = 16          # empty output buffer: the first read computes block 0
    return state


def site_seed(seed, site):
    """``SeedSequence(seed, spawn_key=RELEASE_SITES[site])``: the seed of the release site
    ``site``'s noise from an integer ``seed`` (not for ``"default_rng"``, which is
    ``default_rng(seed)`` itself).

    Privacy: a ``SeedSequence`` hashes its entropy together with its spawn key, so two
    sites given the same user seed get keys as unrelated as two distinct seeds' -- a
    stream no other site derives from that seed (module docstring, "Keys from an integer
    seed"), and their releases compose as independent mechanisms.  Without it a site that
    hashed ``seed`` like its neighbours drew their exact integers.

    >>> site_seed(7, "base_rate_check").spawn_key == (0x5EC, 0xBA5E)
    True
    """
    spawn_key = RELEASE_SITES[site]
    if spawn_key is None:
        raise ValueError(f"the release site {site!r} draws from default_rng(seed) itself")
    return np.random.SeedSequence(int(seed), spawn_key=spawn_key)


def release_on_grid(values, gamma, noise):
    """``gamma * (rint(clip(values/gamma, +-2^50)) + noise)``, exact in float64."""
    steps = np.rint(np.clip(np.asarray(values, dtype=np.float64) / gamma,
                            -CLAMP_STEPS, CLAMP_STEPS))
    return gamma * (steps + noise.astype(np.float64).reshape(steps.shape))


def grid_for(scale, bound=None):
    """The public grid ``gamma = 2^(floor(log2 scale) - bits)`` of a noise ``scale``.

    ``bits = GRID_BITS`` (29), reduced when a public ``bound`` on the released values'
    magnitude requires it, so that ``bound/gamma <= 2^50`` and values up to ``bound`` are
    never clamped -- down to ``MIN_GRID_BITS`` (12: ``s >= 2^12`` noise steps, where the
    dominance margin still covers the discrete law's excess; module docstring).  Beyond
    ``2^38`` noise stds the clamp at ``2^50 gamma`` applies (a float release would lose the
    noise below the value's own rounding there anyway)."""
    bits = GRID_BITS
    if bound is not None and bound > 0:
        room = 50 - int(np.ceil(np.log2(bound / scale))) - 1
        bits = max(MIN_GRID_BITS, min(GRID_BITS, room))
    return float(2.0 ** (np.floor(np.log2(scale)) - bits))


def gaussian_grid(sigma, sensitivity, p, bound=None):
    """``(gamma, s, recorded_sigma, recorded_sensitivity)`` of an exact Gaussian release of
    ``p`` coordinates that is at least as private as ``N(0, sigma^2 I)`` on an L2 sensitivity
    ``sensitivity``: the grid of ``sigma``, the rounding term added to the sensitivity, and the
    integer ``s`` such that the recorded dominating event (noise ``s gamma/(1 +
    DOMINANCE_MARGIN)``, sensitivity ``sensitivity + gamma sqrt(p)``) has a noise multiplier
    at least ``sigma/sensitivity`` (module docstring).  ``bound``: public bound on the
    values' magnitude (:func:`grid_for`)."""
    gamma = grid_for(sigma, bound)
    recorded_sens = float(sensitivity) + gamma * np.sqrt(p)
    s = int(np.ceil(sigma / sensitivity * recorded_sens * (1.0 + DOMINANCE_MARGIN) / gamma))
    recorded_sigma = s * gamma / (1.0 + DOMINANCE_MARGIN)
    return gamma, s, recorded_sigma, recorded_sens


def laplace_grid(epsilon, l1_sensitivity, p, bound=None):
    """``(gamma, t)`` of an exact per-coordinate Laplace release of ``p`` coordinates that is
    ``epsilon``-DP for an L1 sensitivity ``l1_sensitivity``: the grid of the Laplace scale
    ``b = l1_sensitivity/epsilon`` and ``t = ceil((l1_sensitivity/gamma + p)/epsilon)``, so
    that the L1 shift in grid units (rounding included) over ``t`` is at most epsilon.
    ``bound``: public bound on the values' magnitude (:func:`grid_for`)."""
    gamma = grid_for(l1_sensitivity / epsilon, bound)
    t = int(np.ceil((l1_sensitivity / gamma + p) / epsilon))
    return gamma, t


#: integers drawn so far by the Python samplers in this process (:func:`_draw`)
_python_draws = 0


#: draws memoised by :func:`public_noise_memo` (None: no memo)
_PUBLIC_DRAWS = contextvars.ContextVar("skdp_public_noise_memo", default=None)


@contextlib.contextmanager
def public_noise_memo():
    """Within: :func:`_draw` remembers its integers and the source's state after them,
    keyed by ``(source state, scale, size, kind)``, and a second identical request gets
    them without sampling (the same integers, the source left in the same state).

    Only for fits on *public* placeholder data with *public* seeds: a composite's plan
    (:func:`skdp._plan.make_plan`) fits its transformers on placeholder rows twice (their
    events, then the design width), each with the same public key, and drew the spline's
    count-tree noise twice (about 30 ms of a 3,000-row plan).  The memo lives as long as
    the ``with`` block (one plan) and only in the context that opened it."""
    token = _PUBLIC_DRAWS.set({})
    try:
        yield
    finally:
        _PUBLIC_DRAWS.reset(token)


def _draw(state, scale, size, gaussian):
    memo = _PUBLIC_DRAWS.get()
    if memo is None:
        return _draw_fresh(state, scale, size, gaussian)
    key = (state.tobytes(), int(scale), int(size), bool(gaussian))
    hit = memo.get(key)
    if hit is None:
        out = _draw_fresh(state, scale, size, gaussian)
        memo[key] = hit = (out.copy(), state.copy())
        return out
    state[:] = hit[1]
    return hit[0].copy()


def _draw_fresh(state, scale, size, gaussian):
    global _python_draws
    out = np.empty(int(size), dtype=np.int64)
    if out.shape[0] <= PY_MAX_DRAWS and _python_draws < PY_BUDGET:
        # The same integers and state as _draw_serial, without compiling the sampler chain:
        # a session's first few fits pay no compilation; past PY_BUDGET integers (many
        # fits, e.g. an audit) the compiled kernel takes over, the results unchanged.
        _python_draws += out.shape[0]
        draw_python(state, scale, out, gaussian)
        return out
    from ._exact_kernels import _draw_chunks, _draw_serial, next_u64

    if out.shape[0] < PARALLEL_MIN:
        _draw_serial(state, np.int64(scale), gaussian, out)
        return out
    tag0 = tag1 = 0
    while tag0 == 0 and tag1 == 0:
        word = int(next_u64(state))
        tag0, tag1 = word >> 32, word & 0xFFFFFFFF
    n_chunks = -(-out.shape[0] // PARALLEL_CHUNK)
    threads = max(1, min(current_threads(), n_chunks))
    bounds = [g * n_chunks // threads for g in range(threads + 1)]
    args = (state, np.uint64(tag0), np.uint64(tag1), np.int64(scale), gaussian, out)
    if threads == 1:
        _draw_chunks(*args, 0, n_chunks)
        return out
    futures = [chunk_pool().submit(_draw_chunks, *args, bounds[g], bounds[g + 1])
               for g in range(threads)]
    for future in futures:
        future.result()
    return out


def discrete_gaussian_noise(state, s, size):
    """``size`` independent ``N_Z(0, s^2)`` integers (int64).  Up to ``PY_MAX_DRAWS`` draws
    in plain Python (:mod:`skdp._mechanisms._exact_py`: the same integers and state as the
    compiled serial kernel, without its compilation) until the process has drawn
    ``PY_BUDGET`` integers that way; from ``PARALLEL_MIN`` draws on, in
    parallel chunks with their own streams (:func:`_draw_chunks` on threads)."""
    return _draw(state, s, size, True)


def discrete_laplace_noise(state, t, size):
    """``size`` independent ``DLap(t)`` integers (int64); parallel as
    :func:`discrete_gaussian_noise`."""
    return _draw(state, t, size, False)


def exact_gaussian_noise(source, sigma, sensitivity, p, bound=None, size=None):
    """``(gamma, Z, noise_std)``: the grid, the discrete Gaussian integers and their
    standard deviation ``s gamma`` in output units, for an exact release of ``p``
    coordinates at least as private as ``N(0, sigma^2)`` on the L2 ``sensitivity``
    (:func:`gaussian_grid`); ``size`` integers (default ``p``; a multiple of ``p`` for
    independent repeated releases).  Release with :func:`release_on_grid`."""
    gamma, s, _, _ = gaussian_grid(float(sigma), float(sensitivity), p, bound)
    z = discrete_gaussian_noise(source, s, p if size is None else size)
    return gamma, z, float(s * gamma)


def subsampled_gaussian_noise(source, sigma, record_bound, p, bound=None, size=None):
    """:func:`exact_gaussian_noise` for the sum of a Poisson-subsampled batch whose event is
    ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma/record_bound))`` (replace-one): each
    record's contribution is at most ``record_bound`` in L2, and the grid's rounding term
    ``gamma sqrt(p)`` is added to that per-record bound (module docstring), so that the
    dominating continuous noise ``s gamma/(1 + DOMINANCE_MARGIN)`` is at least
    ``sigma/record_bound`` times ``record_bound + gamma sqrt(p)``.  (Passing the pair
    sensitivity ``2 record_bound`` to :func:`exact_gaussian_noise` would count the rounding
    once for two records' centres, i.e. half of it.)"""
    return exact_gaussian_noise(source, sigma, record_bound, p, bound, size)


def exact_laplace_noise(source, epsilon, l1_sensitivity, p, bound=None, size=None):
    """``(gamma, Z, scale)``: the grid, the discrete Laplace integers and their scale
    ``t gamma`` in output units, for an exactly ``epsilon``-DP release of ``p`` coordinates
    with L1 ``l1_sensitivity`` (:func:`laplace_grid`); ``size`` integers as in
    :func:`exact_gaussian_noise`.  Release with :func:`release_on_grid`."""
    gamma, t = laplace_grid(float(epsilon), float(l1_sensitivity), p, bound)
    z = discrete_laplace_noise(source, t, p if size is None else size)
    return gamma, z, float(t * gamma)


def coupled_gaussian_noise(source, sigma, size):
    r"""``(values, gamma, noise_std)``: ``gamma Z`` with ``Z`` exact ``N_Z(0, s^2)`` integers
    on the grid ``gamma`` of ``sigma`` (``s = ceil(sigma/gamma)``, so ``s in [2^29, 2^30]``
    and ``noise_std = s gamma >= sigma``), for noise that is *not released* but must be
    analysed as a continuous Gaussian: the random linear term of objective perturbation.

    Such a mechanism's proof is a change of variables on a *density*, which no lattice law
    has.  It does not need one: it needs a continuous ``X ~ N(0, (s gamma)^2 I)`` such that
    the program's noise ``gamma Z`` is a fixed function of ``X`` within a known distance.
    Then the program is a post-processing of the continuous mechanism plus a bounded
    displacement, which the caller adds to a sensitivity (objective perturbation: to its
    output step, :mod:`skdp._solvers._objective_perturbation`).

    **Coupling lemma.**  For an integer ``s >= 8``, let ``F_Z``, ``F_X`` be the CDFs of
    ``N_Z(0, s^2)`` and ``N(0, s^2)``.  For every integer ``|k| <= s^2/2``,

    .. math:: F_X(k + \tfrac12 - c) \le F_Z(k) \le F_X(k + \tfrac12 + c), \qquad c = 1/8.

    Hence the quantile coupling ``Z = F_Z^{-1}(F_X(X))`` (a fixed map) has ``|Z - X| <=
    1/2 + c = COUPLING_STEPS`` whenever ``|X| <= s^2/2 - 2``: every integer ``j`` in range with
    ``j + 1/2 + c < X`` has ``F_Z(j) < F_X(X)``, and every one with ``j + 1/2 - c >= X`` has
    ``F_Z(j) >= F_X(X)``.  Per coordinate the exception has probability at most
    ``2 exp(-s^2/9)``, below ``exp(-3 10^16)`` at ``s >= 2^29``: the guarantee of a caller is
    ``(epsilon, delta + tau)`` with ``tau = 2 p exp(-s^2/9)``, far below the smallest
    positive float64 (the clamp of ``|Z|`` to ``2^50``, which keeps ``gamma Z`` exact, also
    acts only there).

    *Proof of the sandwich.*  With ``g(x) = exp(-x^2/(2 s^2))``: (i) Poisson summation gives
    ``sum_j g(j) = sqrt(2 pi) s (1 + 2 sum_{m>=1} exp(-2 pi^2 m^2 s^2))``: the normalisers
    agree to a relative ``3 exp(-2 pi^2 s^2)``.  (ii) The Gaussian mass of the cell of ``j``
    is ``int_{-1/2}^{1/2} g(j + t) dt = g(j) int_0^{1/2} 2 cosh(j t/s^2) exp(-t^2/(2 s^2))
    dt``, between ``g(j)(1 - 1/(24 s^2))`` and ``g(j) sinh(a_j)/a_j <= g(j)(1 + a_j^2/5)``,
    ``a_j = |j|/(2 s^2) <= 1``.  (iii) So the lattice tail beyond ``k`` (the left tail for
    ``k < 0``, the right one for ``k >= 0``: the side with less than half the mass) is
    within a relative ``1/(23 s^2)`` above, and ``E[(j/(2 s^2))^2/5 | tail] <= (k^2 + 2 s^2)/(20
    s^4)`` below, the Gaussian tail beyond ``k + 1/2`` (``E[X^2 | X > x] <= x^2 + 2 s^2``
    by Mills' ratio; the cells beyond ``s^2`` weigh ``exp(-3 s^2/8)`` relative).  (iv) That
    Gaussian tail's log-derivative is at least ``max(sqrt(2/pi)/s, |x|/s^2)`` (Mills' ratio
    again), so moving its argument by ``c`` changes it by a factor at least ``exp(c
    max(...))``: ``c >= max(0.19/s, 3|k|/(20 s^2))``, at most ``0.075`` for ``|k| <= s^2/2``,
    suffices.  ``tests/_mechanisms/test_exact.py`` checks the sandwich with mpmath at ``s =
    8 ... 64`` for every ``|k| <= s^2/2`` (the needed ``c`` is 0.021 there, ~``|k|/(24 s^2)``).
    """
    return _coupled_lattice_noise(discrete_gaussian_noise, source, sigma, size)


def coupled_laplace_noise(source, scale, size):
    r"""``(values, gamma, noise_scale)``: ``gamma Z`` with ``Z`` exact ``DLap(t)`` integers on
    the grid ``gamma`` of ``scale`` (``t = ceil(scale/gamma) in [2^29, 2^30]``,
    ``noise_scale = t gamma >= scale``): the per-coordinate Laplace counterpart of
    :func:`coupled_gaussian_noise`, for the pure variant of objective perturbation.

    **Coupling.**  The quantile map from a continuous ``X ~ Laplace(t)`` (lattice units) to
    ``Z`` moves no draw by more than ``COUPLING_STEPS``, with **no exception**: both tails
    are exponential at the same rate, so the CDFs match exactly at a constant shift.  For
    ``k >= 0``, ``P(Z > k) = e^{-(k+1)/t}/(1 + e^{-1/t})`` and ``P(X > x) = e^{-x/t}/2``, hence
    ``F_Z(k) = F_X(k + 1/2 + c_0)`` with ``c_0 = 1/2 - t log(2/(1 + e^{-1/t})) = 1/(8t) +
    O(t^-2)``; by symmetry ``F_Z(k) = F_X(k + 1/2 - c_0)`` for ``k < 0``.  The sandwich of
    :func:`coupled_gaussian_noise` holds for every ``k`` with ``c = c_0 < 1/8``, so ``|Z - X|
    <= 1/2 + c_0`` for every ``X``.  (The clamp of ``|Z|`` to ``2^50``, which keeps ``gamma Z``
    exact, acts with probability ``e^{-2^20}``: the int64 range of any such sampler.)
    """
    return _coupled_lattice_noise(discrete_laplace_noise, source, scale, size)


def _coupled_lattice_noise(draw, source, scale, size):
    """``gamma Z`` for ``size`` integers ``Z`` from ``draw(source, steps, size)`` with
    ``steps = ceil(scale/gamma)`` on the grid ``gamma`` of ``scale``, clamped to ``2^50``
    steps (exact in float64); returns ``(values, gamma, steps gamma)``."""
    gamma = grid_for(float(scale))
    steps = int(np.ceil(float(scale) / gamma))
    z = np.clip(draw(source, steps, size), -(1 << 50), 1 << 50)
    return gamma * z.astype(np.float64), gamma, float(steps * gamma)
