r"""Private SGD baseline (Bassily, Smith & Thakurta, FOCS 2014), mini-batch form.

The baseline of the paper's Table 3 for the
convex linear models: losses ``LOGISTIC``, ``MULTINOMIAL``, ``HUBER`` of :mod:`skdp._losses`
on a coefficient matrix ``W`` of shape ``(p_in, K)`` (``p = p_in K`` coordinates), objective

    F(W) = (1/n) sum_i l(x_i W, y_i) + (alpha/2) ||W||_F^2.

Notation: ``n`` rows (public), ``m = batch_size`` (expected batch size), ``q = m/n``,
``T`` steps, ``L = clip_fraction * loss.lipschitz(data_norm)`` the per-example clip
(``loss.lipschitz`` bounds ``||grad_W l||_F`` for rows with ``||x|| <= data_norm``;
``clip_fraction = 1`` unless given), ``beta_l = loss.smoothness(data_norm)``, ``mu = alpha``.

Algorithm
---------
Rows are clipped (and augmented with the intercept column) exactly as by
:func:`~skdp._mechanisms.clip_and_augment` in output perturbation, but one at a time as
they are sampled: the factors ``s_i = min(1, r/||x_i||)`` are computed once
(:class:`~skdp._mechanisms._clipped_rows.ClippedRows`), and the kernel forms
``[s_i x_i, intercept]`` from the user's dense rows or CSR arrays, bit for bit the copy's
rows (``tests/_solvers/test_dpsgd_rows.py``), so no clipped copy of ``X`` is made and a
sparse step costs the non-zeros of its batch.  The clipped rows are all the kernel's
arithmetic ever reads.  From ``W_0 = 0``, for ``t = 1..T``:

1. **Poisson sampling.**  Every row is included independently with probability ``q``.
   Implemented in ``O(B)`` expected time per step: draw ``B ~ Binomial(n, q)``, then
   ``B`` distinct uniform indices.  This is the Poisson law exactly: under Poisson
   sampling ``P(S) = q^|S| (1-q)^(n-|S|)`` depends on the set ``S`` only through ``|S|``,
   so ``|S| ~ Binomial(n, q)`` and, given ``|S| = b``, ``S`` is uniform over the
   b-subsets.  The b indices are the first b distinct values of an i.i.d. uniform
   sequence (each new value is uniform over those not yet taken; expected draws
   ``<= 2b`` when ``2b <= n``), or, when ``2b > n``, the first b entries of a partial
   Fisher-Yates shuffle of a scratch permutation (a uniform b-subset of its *positions*,
   mapped through the permutation left by earlier steps -- a bijection independent of the
   fresh draws -- is a uniform b-subset of the rows).  Fresh draws at every step make the
   batches of different steps independent, and independent of the data.
2. **Clipped sum.**  ``s_t = sum_{i in S_t} clip_L(grad_W l(x_i W_{t-1}, y_i))`` where
   ``clip_L(v) = v min(1, L'/||v||_F)``, at ``L = clip_fraction * loss.lipschitz(data_norm)``
   (``clip_fraction = 1`` by default; below 1 this is the clipped SGD of Abadi et al.
   2016: the noise and the sensitivity shrink with the clip, and rows whose gradient is
   longer are down-weighted -- for the logistic loss ``||grad|| = |sigmoid(z) - y'|
   ||x||`` (``y'`` in {0, 1}) with ``|sigmoid(z) - y'| <= 1/2`` exactly when the row is
   classified right, so a clip at half the Lipschitz bound leaves every such row, and
   every row at ``W = 0``, unclipped), ``L' = L (1 - 1e-12 - 4(p + 8) u)`` (``u = 2^-53``:
   the margin absorbs the rounding of the norm and of the scaled product, so the bound
   holds for the floating-point contribution); a per-example gradient that is not finite
   contributes zero.  Every contribution has norm ``<= L`` *by construction*, whatever
   the loss spec claims (a no-op when ``L`` is the true Lipschitz constant).  The
   *computed* sum is not the exact one, and its rounding depends on the data; ``L'`` is
   further divided by ``1 + n gamma_{n}`` (``gamma_k = k u/(1 - k u)``; a batch has at
   most ``n`` rows, summed in any order), which makes the float64 sum's replace-one
   sensitivity at most ``2L`` (derivation in :mod:`skdp._mechanisms._summation`; the
   factor is ``1 + 5.8e-8`` at ``n = 22792``, ``1 + 1.1e-4`` at ``10^6``).  A batch of
   expected work ``m p >= PARTS_MIN_WORK`` is summed in ``BATCH_PARTS`` fixed parts on
   numba's threads, their sums added in order (:func:`batch_parts`): another tree of
   additions, of depth below ``n``, so the same factor covers it, and the parts depend on
   public sizes only, so a seed gives the same bits on any number of threads.
3. **Noise.**  ``s_t + N(0, sigma^2 I_p)``, ``sigma = z L`` (``z`` below).
4. **Step.**  ``g_t = (s_t + noise)/m + alpha W_{t-1}``, divided by the *expected* batch
   size ``m`` (public) -- not by the realised ``|S_t|``, which is private.  The regulariser
   gradient is a function of the previous (already private) iterate only, so it costs no
   privacy and is not clipped.  ``W_t = Pi(W_{t-1} - eta_t g_t)``, ``Pi`` the projection
   onto the public ball ``||W||_F <= R``.
5. **Output** the last iterate ``W_T`` (BST14's Algorithm 1 outputs ``theta_{n^2}``) by
   default, or with ``tail_average > 0`` the suffix average ``W_bar = mean(W_t0, ...,
   W_T)`` of the last ``ceil(tail_average T)`` iterates.  The iterates are all
   post-processings of the noisy sums, so any function of them costs no privacy (see
   Privacy below).  Averaging trades noise for lag: a direction of curvature ``lambda``
   carries the noise of its last ~``1/(eta lambda)`` steps, which averaging ``k`` iterates
   divides by up to ``k eta lambda`` (the alpha-suffix averaging of Rakhlin, Shamir &
   Sridharan, ICML 2012), but a flat direction still drifting at step ``T`` is released
   where it was ~``k/2`` steps earlier.  Measured (paired seeds): alone, averaging the
   last half lifted private pipelines on raw Adult (cubic splines, 755 steps, 10 seeds)
   from 0.829 / 0.879 to 0.836 / 0.886 (accuracy / AUC) at total epsilon 0.5; with the
   half-bound clip of ``skdp.linear_model._auto.DPSGD_CLIP_FRACTION`` in place its gain
   fell to +0.002 there and to nothing at epsilon 1 and on Bank, while it cost the
   multinomial stall cells of ``benchmarks/bench_dpsgd_stall.py`` up to 0.03-0.035
   (imbalanced min-max columns at epsilon 0.5-2, nearly constant columns at 5-10;
   averaging the last quarter: up to 0.025).  The default is therefore the last
   iterate.
   ``coef``/``intercept`` are split as in output perturbation (the intercept is the last
   row times ``intercept_scaling``).

Ball and steps (public)
-----------------------
``R = max_coef_norm`` if given; otherwise, for ``alpha > 0``, ``R = D = min(L/alpha,
sqrt(2 f0/alpha))`` with ``f0 = loss.sup_loss_at_zero(y_bound)`` -- a bound on
``||W_hat||`` valid for every dataset, so the projection never excludes the
minimiser.  ``alpha = 0`` requires ``max_coef_norm`` (BST14's convex set ``C``); without
it the step size has no public scale and a ``ValueError`` is raised.

* ``alpha > 0`` (``alpha``-strongly convex objective): ``eta_t = min(1/(alpha t),
  c/(beta_l + alpha))``, ``c = STEP_CAP_FACTOR = 1.9`` -- BST14's ``1/(mu t)``, capped
  below the stability limit of gradient descent on the ``(beta_l + alpha)``-smooth
  objective: by the descent lemma ``F(w - eta g) <= F(w) - eta (1 - eta beta/2) ||g||^2``
  for the full gradient ``g``, so any ``eta < 2/beta`` decreases ``F`` (5 % margin here).
  The cap binds for all ``T`` steps whenever ``alpha T < beta`` (the usual case at the
  ``alpha`` of the ``auto`` rule), so it sets the speed of the run.  ``beta_l`` bounds the
  curvature of the worst row; on real designs most directions are much flatter (features
  far below the public bound next to the intercept column), and those directions move
  ``c`` times faster than with the former cap ``1/(beta_l + alpha)``: on adult at 20
  epochs and ``alpha = 1e-5``, noise-free, test accuracy 0.808 -> 0.817 against 0.826 at
  the exact minimiser of the same objective (3 seeds), and 0.792 -> 0.806, 0.802 -> 0.814,
  0.807 -> 0.817 at epsilon = 0.5, 1, 10 (4 seeds).  A cap of ``4/beta`` measured better
  still at large epsilon but is not provably stable.
* ``alpha = 0``: ``eta_t = R / (G sqrt(t))``, ``G^2 = L^2 + p sigma^2 / m^2`` (a bound on
  ``E||g_t||^2``: gradient part ``<= L^2``, noise part ``p (sigma/m)^2``).  BST14 write the
  diameter ``||C||_2`` (``= 2R``) in the numerator; we use the radius (a constant
  factor in the step).

Number of steps: ``T = n_steps`` if given, else ``ceil(n^2/m^2)`` (keeps
``q sqrt(T) = 1`` as in BST14's ``n^2`` steps of one row).  ``max_iter`` does **not** cap
``T`` (it would silently change the privacy calibration and the baseline); it is ignored.

Privacy (replace-one neighbours)
----------------------------------------------
Everything that shapes the run -- ``q``, ``T``, ``m``, ``R``, ``eta_t``, ``L``, ``sigma`` -- is
computed from public quantities before the data is touched.  Fix neighbours ``S, S'``
differing in row ``i``.  Step ``t`` is, given the previous iterate, the release of
``s_t + N(0, sigma^2 I)`` where ``s_t`` is a Poisson-subsampled sum of contributions of norm
``<= L``: replacing row ``i`` changes its contribution (when sampled) by at most ``2L``,
the replace-one sensitivity of one step's sum.  This is exactly dp-accounting's
``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` under ``REPLACE_ONE`` with ``z = sigma/L``
(noise over the per-record bound; see :mod:`skdp.accounting._sampled`).  The ``T`` steps
compose adaptively (``W_t`` is a post-processing of ``W_{t-1}`` and the noisy sum), so all
iterates together are ``SelfComposedDpEvent(..., T)``-private, and ``W_T`` -- or the mean of
any of them -- is a post-processing of them.  The event is accounted with the PLD accountant (never RDP: under
``REPLACE_ONE`` it reads ``GaussianDpEvent`` with half the sensitivity).

Noise calibration
-----------------
``calibration="tight"`` (default): ``z`` = the smallest multiplier that the PLD accountant
(:func:`skdp.accounting.calibrate_poisson_gaussian`, the same discretisation as
:func:`skdp.accounting.get_epsilon`) certifies ``(epsilon, delta)``-DP for the event above.

``calibration="paper"``: BST14's printed noise mapped to the mini-batch form.  BST14
Algorithm 1 adds ``b_t ~ N(0, sigma_B^2 I)``, ``sigma_B^2 = 32 L^2 n^2 ln(n/delta)
ln(1/delta)/epsilon^2``, to ``n grad l`` of one row (replace sensitivity ``2nL``), i.e. a
noise of ``sigma_B/(2nL) = sqrt(8 ln(n/delta) ln(1/delta))/epsilon`` sensitivities per step.
Their proof only uses this per-step ratio, the sampling rate and the number of steps
(amplification ``(eps0, delta0) -> (2 q eps0, q delta0)``, advanced composition over ``T``
steps): with ``q sqrt(T) = 1`` (our default ``T``) the composed epsilon is the same as for
``q = 1/n``, ``T = n^2``, and the composed delta (``T q delta0 = n delta0 / m``) is smaller.
Keeping the ratio on the mini-batch sum (sensitivity ``2L``, noise ``z L``) gives

    z_paper = 2 sqrt(8 ln(n/delta) ln(1/delta)) / epsilon
            = sqrt(32 ln(n/delta) ln(1/delta)) / epsilon.

Such printed chains need not close exactly, so the paper noise is
*certified* by the accountant: if the event with ``z_paper`` is not ``(epsilon, delta)``-DP
by the PLD accountant a ``ValueError`` is raised.  For the default ``T`` it is certified
with a wide margin: at ``n = 45211``, ``m = 50``, ``delta = 1e-3`` and epsilon = 0.1 / 0.5 /
1 / 2, ``z_paper`` = 624 / 125 / 62.4 / 31.2 is 10-14 times the tight ``z`` and the
accountant certifies epsilon = 0.017 / 0.051 / 0.080 / 0.137.  The reported event is always
the mechanism actually run.

Reported quantities
-------------------
``noise_scale = sigma = z L``: the standard deviation per coordinate of the noise added to
the **sum** of a batch's clipped gradients (``sigma/m`` on the averaged gradient).
``sensitivity = 2L``: replace-one sensitivity of one step's clipped sum.
``n_iter = T``; ``n_gradient_evals`` = total number of per-example gradients computed (the
sum of the realised batch sizes, about ``T m``; data-independent since the sampling is);
``details["full_gradient_equivalents"]`` is that divided by ``n``.

``delta = 0`` is refused (the Gaussian mechanism has no pure-DP guarantee), as is
``n < 2``.  The random numbers (batch sizes, indices, noise) come serially from ``rng``
inside one numba kernel: the same seed gives bitwise identical coefficients.  The
estimators pass a ``noise_source`` by default (``secure_noise``): every step's sum is then
an exact discrete-Gaussian grid release; only without it (``secure_noise=False``) does the
floating-point Gaussian sampler run, which is not hardened against Mironov-style attacks.
"""

import math
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ..accounting import (calibrate_poisson_gaussian, compose, gaussian_event,
                          gaussian_mu_for, poisson_gaussian_event)
from .._mechanisms._clipped_rows import ClippedRows
from .._mechanisms._exact import subsampled_gaussian_noise
from .._mechanisms._summation import UNIT_ROUNDOFF, summation_clip, summation_factor
from .._mechanisms._clipping import row_norms_at
from .._numba_cache import with_defaults
from .._parallel import current_threads
from ._dask_objective import DaskDesign, clipped_design, partition_sum
from ._dpsgd_kernel import (_batch_size, _clipped_batch_gradient, _fill_batch, dpsgd_loop,
                            sgd_update)
from ._result import SolverResult, split_intercept
from ._validation import check_gaussian_solver_args, check_int, require_certified
from ._threads import solver_threads

__all__ = ["solve_dpsgd"]

#: integers of exact noise drawn ahead at a time (``secure_noise``): 16 MiB of int64
SECURE_CHUNK_DRAWS = 1 << 21
#: the exact noise of a run is drawn in at least this many chunks; with one thread per
#: step, each while the steps of the previous one run, so that sampling overlaps training
#: (:class:`ExactStepNoise`)
SECURE_PIPELINE_CHUNKS = 8
#: a run whose exact noise is at most this many integers draws it on the calling thread:
#: a helper thread's start and its hand-offs (about 2 ms a run here) cost more than the
#: draws it would hide (about 0.35 us an integer, so 1.4 ms for these); the integers are
#: the same either way (:class:`ExactStepNoise`)
SECURE_INLINE_DRAWS = 4096
#: a step's batch is summed in ``BATCH_PARTS`` fixed parts, side by side on numba's threads
#: (:func:`batch_parts`), when its expected work -- batch size times coefficients -- is at
#: least ``PARTS_MIN_WORK`` entries: below it a parallel region costs more than it saves
BATCH_PARTS = 8
PARTS_MIN_WORK = 1 << 15
#: expected batch size when ``batch_size=None``
DEFAULT_BATCH_SIZE = 50
#: fraction of the last iterates whose mean is released by default (module docstring,
#: step 5): 0, the last iterate
TAIL_AVERAGE = 0.0
#: eta_t <= STEP_CAP_FACTOR / (beta + alpha): below the gradient-descent stability limit
#: 2/beta (module docstring).
STEP_CAP_FACTOR = 1.9


def _clip_bound(L, p, n_terms=1):
    """Per-example clipping threshold with a rounding margin (see module docstring): the
    margin for the norm and the scaled product, then the summation margin of
    :func:`~skdp._mechanisms._summation.summation_clip` for a computed sum of up to
    ``n_terms`` contributions (any order), so that sum's replace-one sensitivity is at most
    ``2 L`` in floating point too."""
    check_batch_sum(n_terms)
    return summation_clip(L * (1.0 - 1e-12 - 4.0 * (p + 8) * UNIT_ROUNDOFF), n_terms)


def check_batch_sum(n_terms, solver="dpsgd"):
    """Refuse, from the public ``n`` alone, a batch sum whose float64 rounding the clip
    cannot absorb.  A Poisson batch may hold all ``n`` rows, summed in any order, so the
    clip is divided by ``F = 1 + n gamma_n`` (:mod:`skdp._mechanisms._summation`), which
    reaches 2 at ``n`` near ``2^26.5`` (about ``9.5e7`` rows): beyond, the rounding of the
    computed sum could exceed the sensitivity the noise is calibrated to.  Planners call
    this too, so that a pipeline or a search refuses before its first release."""
    try:
        summation_factor(n_terms)
    except ValueError:
        instead = ("solver='warm_gd' (the default)" if solver == "rrpsgd" else
                   "solver='objective_perturbation' (binary and Huber)")
        raise ValueError(
            f"solver={solver!r}: a batch may hold all {int(n_terms)} rows, and a float64 "
            "sum of that many clipped gradients can round by more than the sensitivity "
            "its noise is calibrated to (the limit is about 9.4e7 rows): use "
            f"{instead} or fit a public subsample") from None


def _paper_multiplier(epsilon, delta, n):
    """BST14's printed noise as a multiplier of the per-record bound (module docstring)."""
    return math.sqrt(32.0 * math.log(n / delta) * math.log(1.0 / delta)) / epsilon


def _noise_multiplier(epsilon, delta, q, n_steps, n, calibration, follow_up_mu=0.0):
    """Noise multiplier ``z`` (noise std over the per-example bound L); public only.
    ``follow_up_mu > 0``: the steps composed with a Gaussian follow-up of that GDP
    parameter (the base-rate check, :mod:`skdp.linear_model._base_rate`) meet the target.

    Kept as a module-level function so tests can replace it (e.g. by 0 for noise-free runs).
    """
    if follow_up_mu:
        if calibration == "paper":
            raise ValueError("calibration='paper' has no follow-up release")
        return calibrate_poisson_gaussian(epsilon, delta, q, n_steps, follow_up_mu)
    if calibration == "paper":
        z = _paper_multiplier(epsilon, delta, n)
        require_certified(poisson_gaussian_event(q, z, n_steps), epsilon, delta,
                          f"BST14's printed noise (z = {z:.4g}) for {n_steps} steps at "
                          f"sampling rate {q:.4g}")
        return z
    return calibrate_poisson_gaussian(epsilon, delta, q, n_steps)


def follow_up_mu(epsilon, delta, ratio):
    """GDP parameter of the base-rate check after a dpsgd fit: ``ratio`` times the GDP
    parameter of the whole ``(epsilon, delta)`` budget (0 for ``ratio = 0``); the steps get
    what is left under the exact accountant (:func:`_noise_multiplier`)."""
    ratio = float(ratio)
    if not ratio:
        return 0.0
    if not (ratio > 0.0 and math.isfinite(ratio)):
        raise ValueError(f"follow_up_ratio must be finite and > 0, got {ratio!r}")
    return ratio * gaussian_mu_for(float(epsilon), float(delta))


def averaging_start(n_steps, tail_average):
    """First step ``t0`` of the suffix average of a run of ``n_steps`` steps: the last
    ``ceil(tail_average * n_steps)`` iterates (at least one) are averaged; ``tail_average
    = 0`` gives ``t0 = n_steps``, the last iterate alone."""
    tail = max(1, math.ceil(float(tail_average) * int(n_steps)))
    return int(n_steps) - min(tail, int(n_steps)) + 1


def batch_parts(batch_size, p):
    """Parts a step's batch is summed in (:func:`_batch_gradient_in_parts`): ``BATCH_PARTS``
    when the expected batch ``batch_size`` (public) times the ``p`` coefficients reaches
    ``PARTS_MIN_WORK`` and the batch has at least 4 rows a part, else 1 (the serial sum).
    Public sizes only, never the thread count, so a seed gives the same bits on any
    machine.  Measured on adult (default schedule, 902 steps of 722 rows x 109, the loop
    alone, best of 5, one run): 2 threads 142 -> 72-74 ms with 2 or 8 parts; one thread
    145 -> 137-142 ms."""
    if batch_size * p >= PARTS_MIN_WORK and batch_size >= 4 * BATCH_PARTS:
        return BATCH_PARTS
    return 1


class ExactStepNoise:
    """The exact noise of a run's ``n_steps`` steps (``p`` coordinates each, every record's
    contribution at most ``L``, values bounded by ``bound``, on the grid of ``sigma``;
    :func:`skdp._mechanisms._exact.subsampled_gaussian_noise`): drawn from
    ``source`` in chunks of steps, always in step order, so the integers never depend on
    when or on which thread a chunk is drawn.

    The chunks (at most ``SECURE_CHUNK_DRAWS`` integers, at least
    ``SECURE_PIPELINE_CHUNKS`` of them) are drawn on a helper thread (a run of at most
    ``SECURE_INLINE_DRAWS`` integers draws them on the calling thread), starting at once:
    the first while the caller prepares the rows (a design's row norms, 7-10 ms on adult),
    which is why a solver builds this before it touches the data (adult, default DP-SGD,
    2 threads, median of 9 fits in three alternating runs: 117-119 -> 113-116 ms, the
    float-noise fit 96-102 ms).  Then, when a step runs on one
    thread (``n_parts == 1`` or a single numba thread), chunk ``k + 1`` is drawn while the
    steps of chunk ``k`` run (both kernels release the GIL), so the sampling hides behind
    the training.  When the steps' parts run on several threads, the chunks are drawn in
    groups of ``SECURE_CHUNK_DRAWS`` integers, a group only when the steps of the previous
    one are done: the steps wait for their slowest part at every step, and a helper
    drawing on the same cores preempted them (adult, 2 threads: 168 ms against 125 with
    float noise); drawing between the chunks' steps was no better, each draw meeting the
    OpenMP workers still spinning (33 ms of draws there, 16 ms back to back).

    Iterate once for ``(t0, steps, gamma, Z)`` per chunk; :meth:`close` (also run when the
    iteration ends or fails) waits for a draw in flight."""

    def __init__(self, source, sigma, L, p, bound, n_steps, n_parts):
        self.source, self.sigma, self.L, self.p, self.bound = source, sigma, L, p, bound
        self.n_steps = int(n_steps)
        self.chunk = max(1, min(SECURE_CHUNK_DRAWS // p,
                                -(-self.n_steps // SECURE_PIPELINE_CHUNKS)))
        starts = list(range(1, self.n_steps + 1, self.chunk))
        self.pipelined = n_parts == 1 or current_threads() == 1
        per_group = 1 if self.pipelined else max(1, SECURE_CHUNK_DRAWS // (self.chunk * p))
        self.groups = [starts[g:g + per_group] for g in range(0, len(starts), per_group)]
        self._pool = (None if self.n_steps * self.p <= SECURE_INLINE_DRAWS else
                      ThreadPoolExecutor(max_workers=1, thread_name_prefix="skdp-noise"))
        self._pending = self._submit(0)

    def _submit(self, k):
        """Start drawing group ``k``: on the helper thread, or at once on this one for a
        run of at most ``SECURE_INLINE_DRAWS`` integers (same groups, same order, so the
        same integers)."""
        if self._pool is not None:
            return self._pool.submit(self._draw_group, k)
        drawn = Future()
        drawn.set_result(self._draw_group(k))
        return drawn

    def _draw_group(self, k):
        out = []
        for t0 in self.groups[k]:
            steps = min(self.chunk, self.n_steps + 1 - t0)
            # ``steps`` independent releases of the p coordinates, on the same public grid;
            # the event bounds each record by L (the grid's rounding adds to L, not to 2L)
            gamma, Z, _ = subsampled_gaussian_noise(self.source, self.sigma, self.L, self.p,
                                                    self.bound, steps * self.p)
            out.append((t0, steps, gamma, Z.reshape(steps, self.p)))
        return out

    def __iter__(self):
        try:
            for k in range(len(self.groups)):
                drawn = self._pending.result()
                self._pending = None
                more = k + 1 < len(self.groups)
                if more and self.pipelined:
                    self._pending = self._submit(k + 1)
                yield from drawn
                if more and not self.pipelined:
                    self._pending = self._submit(k + 1)
        finally:
            self.close()

    def close(self):
        """Wait for a draw in flight and stop the helper thread (idempotent)."""
        self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def run_steps(args, n_steps, hyper, noise_source, sigma, L, p, bound, average_from=None,
              rows=(), noise=None):
    """Run ``n_steps`` steps of :func:`dpsgd_loop` (``args``: its arguments before
    ``n_steps``; ``hyper``: the ones after) with float noise, or, with a ``noise_source``,
    exact grid noise pre-drawn per chunk of steps (:class:`ExactStepNoise`; ``noise``: one
    the caller started before preparing ``args``, else one is started here): each step's
    clipped sum (replace-one sensitivity ``2L``, the clip's rounding margin included;
    ``|s| <= bound``) is released as ``gamma (rint(s/gamma) + Z)`` on the grid of
    ``sigma``.  Returns ``(total, dropped)``.  ``average_from = t0``: ``W`` (``args[6]``)
    ends as the mean of the iterates ``W_t0 .. W_T`` instead of ``W_T`` (post-processing;
    the noise and the batches are unchanged).  ``rows``: :func:`dpsgd_loop`'s trailing row
    arguments (``scale``, ``intercept``, CSR arrays; :func:`design_rows`), empty for a
    clipped copy.  The noise does not depend on the data, the threads or the timing: the
    same seed gives the same integers."""
    W = args[6]
    n_parts = batch_parts(hyper[1], p)
    # every row argument given: the loop's cached code is found again (with_defaults);
    # then the parts' scratch sums, or None for the serial sum
    rows = with_defaults(rows, (np.zeros(0), 0.0, np.zeros(0), np.zeros(0, dtype=np.int32),
                                np.zeros(0, dtype=np.int64)))
    rows += (None if n_parts == 1 else np.empty((n_parts,) + W.shape),)
    if average_from is None:
        w_sum, average_from = np.zeros((0, 0)), 0
    else:
        w_sum, average_from = np.zeros_like(W), int(average_from)

    if noise_source is None:
        total, dropped, _ = dpsgd_loop(*args, n_steps, *hyper, 1,
                                       np.zeros((0, 0), dtype=np.int64), 0.0, w_sum,
                                       average_from, *rows)
    else:
        if noise is None:
            noise = ExactStepNoise(noise_source, sigma, L, p, bound, n_steps, n_parts)
        total = dropped = 0
        try:
            for t0, steps, gamma, Z in noise:
                tot, drp, _ = dpsgd_loop(*args, steps, *hyper, t0, Z, gamma, w_sum,
                                         average_from, *rows)
                total += tot
                dropped += drp
        finally:
            noise.close()      # a failed step leaves no draw running on the source
    if w_sum.shape[0]:
        W[...] = w_sum / (n_steps - average_from + 1)
    return total, dropped


def design_rows(design):
    """``(X, rows)``: :func:`dpsgd_loop`'s first argument and trailing row arguments for a
    :class:`~skdp._mechanisms._clipped_rows.ClippedRows` design: the user's dense rows
    with their factors, or an empty ``(0, d)`` array and the CSR arrays."""
    if design.sparse:
        X = design.X
        return (np.empty((0, design.n_features_in)),
                (design.scale, design.intercept, X.data, X.indices, X.indptr))
    return design.X, (design.scale, design.intercept)


class BatchDraws:
    """The Poisson batches of :func:`dpsgd_loop`, drawn on the client of a Dask fit from
    the same ``rng`` by the same kernels (:func:`_batch_size`, :func:`_fill_batch`), so the
    Dask steps read the rows the in-memory steps read, in the same order of draws.

    Memory: one byte a row (``seen``: the values taken at this step, reset after it, where
    the in-memory loop keeps an ``int64`` stamp of the step) and the batch; the scratch
    permutation of the ``2B > n`` case (eight bytes a row) only once a batch that large is
    drawn, kept until :meth:`new_chunk` -- the in-memory loop starts each call (a chunk of
    steps, :class:`ExactStepNoise`) from ``arange(n)``."""

    def __init__(self, n, q, rng):
        self.n, self.q, self.rng = int(n), float(q), rng
        self.seen = np.zeros(self.n, dtype=np.uint8)
        self.perm = None

    def new_chunk(self):
        self.perm = None

    def draw(self):
        """The next batch: its row indices in the order drawn."""
        if self.q >= 1.0:
            return np.arange(self.n)
        B = int(_batch_size(self.rng, self.n, self.q))
        idx = np.empty(B, dtype=np.int64)
        if 2 * B > self.n and self.perm is None:
            self.perm = np.arange(self.n)
        _fill_batch(self.rng, self.n, B, idx,
                    self.perm if self.perm is not None else _NO_PERM, self.seen, 1)
        self.seen[idx] = 0
        return idx


_NO_PERM = np.zeros(0, dtype=np.int64)


def _partition_batch_sum(X, y, W, idx, loss_id, param, clip, clip_rows=None):
    """On a partition's worker: the clipped gradient sum of its rows ``idx`` (local
    positions, in the order drawn); ``(sum, B)``.  ``clip_rows = (row_bound,
    fit_intercept, intercept_scaling)``: ``X`` holds raw (CSR) rows, and the sampled ones
    are clipped and augmented here (:func:`~skdp._mechanisms.clip_and_augment`, row by
    row: the rows of the clipped copy)."""
    B = int(idx.shape[0])
    if clip_rows is not None:
        from .._mechanisms import clip_and_augment

        X = clip_and_augment(X[idx], *clip_rows)
        y = np.asarray(y)[idx]
        idx = np.arange(B)
    Wc = np.ascontiguousarray(W, dtype=np.float64)
    out = np.empty_like(Wc)
    K = Wc.shape[1]
    _clipped_batch_gradient(X, np.ascontiguousarray(y, dtype=np.float64), Wc,
                            idx.astype(np.int64), B, loss_id, param, clip,
                            row_norms_at(X, idx), out, np.empty(K), np.empty(K))
    return out, B


def partition_positions(idx, offsets):
    """The rows ``idx`` (global positions) of each partition, as positions in it, in the
    order drawn: ``offsets`` are the partitions' first rows and ``n`` (public lengths).
    One stable sort, ``O(B log B)`` whatever the number of partitions."""
    owner = np.searchsorted(offsets, idx, side="right") - 1
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(offsets.shape[0]))
    local = idx[order] - offsets[owner[order]]
    return [local[bounds[k]:bounds[k + 1]] for k in range(offsets.shape[0] - 1)]


def run_dask_steps(design, loss, clip, W, n_steps, hyper, noise_source, L,
                   average_from=None):
    r"""DP-SGD on a clipped :class:`DaskDesign`: :func:`dpsgd_loop`'s steps with the batch
    sum reduced over the partitions.  Returns ``(total, dropped)`` like :func:`run_steps`
    (``dropped`` is not counted here: 0).

    The in-memory run's randomness, step for step.  The batches are drawn on the client
    from the same ``rng`` by the same kernels (:class:`BatchDraws`), and each partition
    receives the positions of its rows among them (public randomness, independent of the
    data: a Poisson(``q``) sample of all ``n`` rows, the mechanism of the accountant's
    event).  The exact noise is pre-drawn in the in-memory chunks (:class:`ExactStepNoise`;
    float noise: from ``rng`` after each batch, as in memory), and the step is
    :func:`sgd_update`, the in-memory loop's own.  So a Dask fit reads the in-memory fit's
    rows with its noise; only the batch sum is added in another order.

    Rounding.  The client adds the partition sums in partition order.  A term's path to the
    total has at most ``B_k - 1`` additions in its partition and one per non-empty partition
    after it (adding an exact zero vector does not round), so at most ``n - 1``: the clip's
    summation margin for ``n`` terms in any order (:func:`_clip_bound`) covers it.  The
    iterates then differ from the in-memory ones by that rounding (and a grid step where a
    sum's rounding crosses a grid point of the exact release).

    What travels per step: ``W`` and the positions of its sampled rows to each partition,
    one ``p``-vector and the (public) batch size back; the noise, the step, the projection
    and the suffix average (``average_from`` as in :func:`run_steps`) run on the client."""
    q, batch_size, sigma, mu, step_coef, step_power_half, step_cap, R, rng = hyper
    n = design.shape[0]
    p = W.size
    offsets = np.concatenate([[0], np.cumsum(design.X.chunks[0])]).astype(np.int64)
    draws = BatchDraws(n, q, rng)
    loss_id, param = int(loss.loss_id), float(loss.param)
    if average_from is None:
        w_sum, average_from = np.zeros((0, 0)), 0
    else:
        w_sum, average_from = np.zeros_like(W), int(average_from)
    secure = noise_source is not None
    chunks = (ExactStepNoise(noise_source, sigma, L, p, n * L, n_steps,
                             batch_parts(batch_size, p)) if secure
              else [(1, n_steps, 0.0, np.zeros((0, 0), dtype=np.int64))])
    no_row = np.zeros(0, dtype=np.int64)
    total = 0
    try:
        for t0, steps, gamma, Z in chunks:
            draws.new_chunk()
            for t in range(t0, t0 + steps):
                idx = draws.draw()
                s, batch = partition_sum(design, _partition_batch_sum, W,
                                         per_partition={"idx": partition_positions(idx,
                                                                                   offsets)},
                                         loss_id=loss_id, param=param, clip=clip,
                                         clip_rows=design.clip_rows)
                total += int(batch)
                sgd_update(W, s, t, 1.0 / batch_size, sigma, mu, step_coef, step_power_half,
                           step_cap, R, rng, secure, float(gamma),
                           Z[t - t0] if secure else no_row, w_sum, average_from)
    finally:
        if secure:
            chunks.close()      # a failed step leaves no draw running on the source
    if w_sum.shape[0]:
        W[...] = w_sum / (n_steps - average_from + 1)
    return total, 0


def solve_dpsgd(X, y, loss, **kwargs):
    """Private SGD (BST14 baseline, mini-batch form with Poisson sampling).

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite, or DaskDesign
        Raw features; rows are clipped here (every path goes through the clip; on the
        workers for a Dask design, whose steps reduce over the partitions:
        :func:`run_dask_steps`).
    y : ndarray of shape (n,), float64
        Encoded targets (±1 for logistic, class index for multinomial, real for Huber).
    loss : loss spec (:mod:`skdp._losses`)
    epsilon, delta : float
        Privacy target; ``delta`` must be in (0, 1).
    alpha : float
        L2 strength ``mu >= 0``.
    data_norm : float
        Public bound on ``||[x, intercept_scaling]||_2``, enforced by clipping.
    n_outputs : int, default=1
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0
    y_bound : float or None
        Public target bound (tightens the public ball radius for Huber).
    calibration : {"tight", "paper"}, default="tight"
    max_iter : int, default=10000
        Ignored: the number of steps is ``n_steps`` (it fixes the privacy calibration and
        is never capped silently).
    max_coef_norm : float or None
        Radius of the public ball the iterates are projected onto (required when
        ``alpha == 0``; default for ``alpha > 0``: ``min(L/alpha, sqrt(2 f0/alpha))``).
    rng : numpy.random.Generator
        Source of the batches and the noise.
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source: every step's noisy sum is an exact grid release
        (discrete Gaussian, :mod:`skdp._mechanisms._exact`), pre-drawn in chunks of
        ``SECURE_CHUNK_DRAWS`` integers; the batches still come from ``rng``.  None: float.
    batch_size : int or None, default=None
        Expected batch size ``m`` (None: 50); sampling rate ``q = m/n``.
    n_steps : int or None
        Number of steps ``T``; default ``ceil(n^2/m^2)``.
    clip_fraction : float in (0, 1], default=1.0
        Per-example gradients are clipped at ``clip_fraction * L`` (module docstring,
        step 2); the noise and the sensitivity scale with the clip.
    tail_average : float in [0, 1] or None, default=None
        None: ``TAIL_AVERAGE`` (0, the last iterate).
        The released coefficients are the mean of the last ``ceil(tail_average T)``
        iterates (at least the last one; 0: BST14's last iterate).  Post-processing: the
        event does not change.
    follow_up_ratio : float, default=0.0
        Budget of a Gaussian follow-up release (the base-rate check), ``mu_f/mu`` with
        ``mu`` the GDP parameter of ``(epsilon, delta)``: the steps' noise is calibrated so
        that steps and follow-up together meet the target (:func:`follow_up_mu`);
        ``details["mu_follow_up"]`` is ``mu_f``.

    Returns
    -------
    SolverResult
    """
    with solver_threads(X.shape[0], X.shape[1] + 1):
        return _solve(X, y, loss, **kwargs)


def _solve(
    X,
    y,
    loss,
    *,
    epsilon,
    delta,
    alpha,
    data_norm,
    n_outputs=1,
    fit_intercept=True,
    intercept_scaling=1.0,
    y_bound=None,
    calibration="tight",
    max_iter=10_000,
    max_coef_norm=None,
    rng,
    batch_size=None,
    n_steps=None,
    noise_source=None,
    follow_up_ratio=0.0,
    tail_average=None,
    clip_fraction=1.0,
):
    n = X.shape[0]
    p_in = X.shape[1] + int(bool(fit_intercept))
    K = int(n_outputs)
    p = p_in * K
    mu = float(alpha)
    epsilon = float(epsilon)
    delta = float(delta)

    # 0. Validate (public quantities only).
    if n < 2:
        raise ValueError(f"solver='dpsgd' needs at least 2 samples, got n={n}")
    epsilon, delta, mu = check_gaussian_solver_args(
        epsilon, delta, mu, calibration, "dpsgd", pure_dp_solver="output_perturbation")
    batch_size = check_int("batch_size", DEFAULT_BATCH_SIZE if batch_size is None
                           else batch_size, 1, n, high_name="n_samples")
    if n_steps is None:
        T = math.ceil(n * n / (batch_size * batch_size))
    else:
        T = check_int("n_steps", n_steps, 1)
    tail_average = float(TAIL_AVERAGE if tail_average is None else tail_average)
    if not 0.0 <= tail_average <= 1.0:
        raise ValueError(f"tail_average must be in [0, 1], got {tail_average!r}")
    t_average = averaging_start(T, tail_average)
    q = batch_size / n
    lipschitz = float(loss.lipschitz(data_norm))
    beta_l = float(loss.smoothness(data_norm))
    if not (lipschitz > 0.0 and math.isfinite(lipschitz)):
        raise ValueError(
            f"solver='dpsgd' needs a finite positive Lipschitz constant, got {lipschitz!r} "
            "(huber_threshold=0 is not supported)"
        )
    clip_fraction = float(clip_fraction)
    if not 0.0 < clip_fraction <= 1.0:
        raise ValueError(f"clip_fraction must be in (0, 1], got {clip_fraction!r}")
    # the per-example bound every privacy quantity below is relative to: the clip
    L = clip_fraction * lipschitz

    # 1. Public ball and step schedule.
    if max_coef_norm is not None:
        R = float(max_coef_norm)
        if not (R > 0.0 and math.isfinite(R)):
            raise ValueError(f"max_coef_norm must be finite and > 0, got {max_coef_norm!r}")
    elif mu > 0.0:
        f0 = float(loss.sup_loss_at_zero(y_bound))
        R = (min(lipschitz / mu, math.sqrt(2.0 * f0 / mu)) if math.isfinite(f0)
             else lipschitz / mu)
    else:
        raise ValueError(
            "solver='dpsgd' with alpha=0 needs a public bound max_coef_norm (the radius of "
            "the convex set the iterates are projected onto, which fixes the step size "
            "R/(G sqrt(t))); set max_coef_norm, or use alpha > 0"
        )

    # 2. Noise, before the data is touched.
    mu_f = follow_up_mu(epsilon, delta, follow_up_ratio)
    z = float(_noise_multiplier(epsilon, delta, q, T, n, calibration, mu_f))
    sigma = z * L
    if mu > 0.0:
        step_coef, step_power_half, step_cap = 1.0 / mu, False, STEP_CAP_FACTOR / (beta_l + mu)
    else:
        G = math.sqrt(L * L + p * sigma * sigma / (batch_size * batch_size))
        step_coef, step_power_half, step_cap = R / G, True, math.inf
    # a Poisson batch has at most n rows: the summation margin for n terms
    clip = _clip_bound(L, p, n)
    dp_event = poisson_gaussian_event(q, z, T)
    if mu_f > 0.0:
        dp_event = compose(dp_event, gaussian_event(1.0 / mu_f, 1.0))
    details = {
        "mu_follow_up": mu_f,
        "lipschitz": lipschitz,
        "clip_fraction": clip_fraction,
        "smoothness": beta_l,
        "calibration": calibration,
        "sampling_rate": q,
        "batch_size": batch_size,
        "noise_multiplier": z,
        "n_steps": T,
        "coef_bound": R,
        "clip_bound": clip,
        "step_schedule": (f"min(1/(alpha t), {STEP_CAP_FACTOR}/(beta + alpha))" if mu > 0.0
                          else "R / (G sqrt(t))"),
        "step_coef": step_coef,
        "step_cap": step_cap,
        "max_iter_ignored": int(max_iter),
        "averaged_steps": (t_average, T),
    }

    # 3. The run, on clipped rows only.
    W = np.zeros((p_in, K))
    hyper = (q, float(batch_size), sigma, mu, step_coef, step_power_half, step_cap, R, rng)
    # the last iterate alone (the default) needs no running sum
    average_from = t_average if t_average < T else None
    if isinstance(X, DaskDesign):
        design = clipped_design(X, data_norm, fit_intercept, intercept_scaling)
        total, dropped = run_dask_steps(design, loss, clip, W, T, hyper, noise_source, L,
                                        average_from)
    else:
        # the exact noise starts drawing (public quantities only) while the rows' norms
        # are computed
        noise = None if noise_source is None else ExactStepNoise(
            noise_source, sigma, L, p, n * L, T, batch_parts(hyper[1], p))
        try:
            # the rows clipped as they are sampled: no copy of X, dense or CSR
            design = ClippedRows(X, data_norm, fit_intercept, intercept_scaling)
            Xk, rows = design_rows(design)
            yc = np.ascontiguousarray(y, dtype=np.float64)
            args = (Xk, yc, int(loss.loss_id), float(loss.param), clip,
                    design.clipped_row_norms(), W)
            total, dropped = run_steps(args, T, hyper, noise_source, sigma, L, p,
                                       bound=n * L, average_from=average_from, rows=rows,
                                       noise=noise)
        finally:
            if noise is not None:
                noise.close()      # whatever failed, no draw is left running
    if noise_source is not None:
        details["secure_noise"] = True
    # ``dropped`` counts non-finite per-example gradients: a private quantity, so it is
    # deliberately not reported.
    del dropped
    details["full_gradient_equivalents"] = total / n

    # 4. Release the last iterate (or the mean of the last ones, tail_average > 0).
    coef, intercept = split_intercept(W, fit_intercept, intercept_scaling)
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(K),
        n_iter=int(T),
        n_gradient_evals=int(total),
        noise_scale=float(sigma),
        sensitivity=float(2.0 * L),
        dp_event=dp_event,
        data_norm=float(data_norm),
        details=details,
    )
