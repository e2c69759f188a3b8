r"""Localized DP-SGD with ReSQue blocks (``solver="resque"``, after Carmon, Jambulapati,
Jin, Lee, Liu, Sidford & Tian, FOCS 2023).

Why not the paper's mechanism.  The paper bounds the drift of coupled ReSQue-SGD runs only
with high probability, through moment bounds with an unspecified universal constant, and
accounts it with approximate RDP and a subsampling theorem with its own range conditions
: any constant we chose would be a guess, and a guess voids the (epsilon, delta)
claim.  This solver keeps the paper's *structure* -- ReSQue anchors with reweighting,
FKT20-style localization, subsampling -- and makes every data access a Poisson-subsampled
Gaussian step on contributions clipped to a public norm, so the privacy proof is the
standard DP-SGD one and holds for every hyperparameter value.

Algorithm (scalar-margin GLM losses: logistic, Huber, absolute)
---------------------------------------------------------------
Rows are clipped to ``||a|| <= C`` (intercept column included); ``L = loss.lipschitz(C)``;
``b = batch_size``, ``q = b/n``, ``T = ceil(n_epochs n / b)`` steps split over ``k`` phases
(``T_i`` steps each).  Phase ``i`` starts at the previous phase's average ``c`` (``c = 0``
first) inside the ball ``B_{r_i}(c)``, ``r_i = R shrink^(i-1)``, with step
``eta_i = step_scale r_i/(G sqrt(T_i))``, ``G^2 = L^2 + p (z w_max L / b)^2``, and runs its
steps in **blocks** of ``m_i`` steps (``block_size``, or ``"auto"``:
``max(1, floor(kappa rho/(eta_i G)))``).  A block fixes the anchor ``xbar`` = the current
iterate, samples its ``m_i`` Poisson batches and one query ``t_j = <a_j, xbar> + rho ||a_j|| Z_j``
per (step, example) pair; all the ``l'(t_j)`` depend only on the anchor and these draws
(**one oracle round** per block: one batched pass over the block's gathered rows, a
matrix-vector product and one derivative per query).
Each step of the block then uses the GLM ReSQue estimate
``w_j l'(t_j) a_j`` (``w_j`` the reweighting from ``xbar`` to the current iterate;
``w_j = 1`` when ``m_i = 1``), clipped to ``C_t`` (``L`` if ``m_i = 1``, else ``w_max L``),
sums it over the batch, adds ``N(0, (z C_t)^2 I)``, divides by ``b`` and takes a projected
step (onto ``B_{kappa rho}(xbar)`` when ``m_i > 1``, then ``B_{r_i}(c)`` and ``B_R(0)``).
The output is the last phase's average.  It minimises (an estimate of) the Gaussian-smoothed
objective ``E f(w + N(0, rho^2 I))``, within ``sqrt(2/pi) L rho`` of ``f``.

Privacy (replace-one neighbours)
--------------------------------
Everything that shapes the run -- ``q``, ``T``, the phases, steps, blocks, radii, ``rho``,
``C_t``, ``z`` -- is computed from public quantities before the data is read.  Step ``t``
releases, given everything released before (the anchor and the iterate are functions of
earlier releases; the query draws ``Z`` and the batch coins are independent of the data),
``sum_{j in S_t} v_j + N(0, (z C_t)^2 I)`` with every ``||v_j|| <= C_t`` **by the clip in the
kernel** (:func:`~skdp._solvers._resque_kernel.clipped_weight_scale`; a non-finite value
contributes 0).  Conditioning on the data-independent draws ``Z``, ``v_j`` is a fixed function
of row ``j`` and public state, so replacing one row changes one contribution, by at most
``2 C_t`` when it is sampled: exactly dp-accounting's ``PoissonSampledDpEvent(q,
GaussianDpEvent(z))`` under ``REPLACE_ONE`` (the noise multiplier ``z`` is relative to the
per-record bound ``C_t``, so the ``C_t`` of each phase does not matter), mixed over ``Z`` (joint
convexity of the hockey-stick divergence).  The ``T`` steps compose adaptively:
``SelfComposedDpEvent(..., T)``, accounted by the PLD accountant; ``z`` is the smallest
multiplier it certifies (:func:`skdp.accounting.calibrate_poisson_gaussian`).  Anchors,
averaging and projections are post-processing.  The paper's high-probability drift bound is
never used.  ``calibration="paper"`` is refused (the paper's noise rests on unspecified
constants).

Reported: ``noise_scale = z L`` (per coordinate, on the batch sum, for ``C_t = L``),
``sensitivity = 2 L`` (replace-one, one step's clipped sum, ``C_t = L``); with blocks
``m_i > 1`` the clip and the noise are ``w_max`` times larger (``details``).
``n_gradient_evals`` = oracle queries (sum of the realised batch sizes, data-independent),
``details["sequential_rounds"]`` = oracle rounds ``sum_i ceil(T_i/m_i)``.  Multinomial
logistic is refused (no one-dimensional GLM form).
"""

import math
import numbers

import numba
import numpy as np

from .._losses._kernels import HUBER, LOGISTIC
from .._losses._smoothed import ABSOLUTE, HINGE
from .._mechanisms import clip_and_augment
from ..accounting import calibrate_poisson_gaussian, poisson_gaussian_event
from .._mechanisms._exact import MAX_EXACT_DRAWS, subsampled_gaussian_noise
from .._mechanisms._summation import summation_clip, summation_factor
from ._dpsgd import _clip_bound
from .._mechanisms._clipping import row_norms
from .._numba_cache import with_defaults
from ._phased import public_radius
from ._resque_kernel import PARALLEL_ROUND_WORK, resque_loop
from ._result import SolverResult, split_intercept
from ._threads import resolve_n_jobs, solver_threads
from ._validation import check_gaussian_solver_args, check_int

__all__ = ["solve_resque", "resque_plan", "plan_resque_event"]

SUPPORTED = (LOGISTIC, HUBER, ABSOLUTE, HINGE)
DEFAULT_STEP_SCALE = 8.0
KAPPA = 2.0
W_MAX = 1.5


def default_batch_size(n):
    """Default batch size ``min(n/10, max(256, 4 sqrt(n)))`` (at least 1): a public
    function of ``n`` only.

    >>> from skdp._solvers._resque import default_batch_size
    >>> default_batch_size(10_000), default_batch_size(100_000), default_batch_size(1_000)
    (400, 1264, 100)
    """
    return max(1, int(min(n // 10, max(256.0, 4.0 * math.sqrt(n)))))


def _ledger(n, batch_size, n_epochs, epsilon, delta, calibration):
    """``(b, q, T, z)``: batch size, sampling rate, steps and noise multiplier, from public
    values only."""
    if calibration != "tight":
        raise ValueError(
            "solver='resque' supports calibration='tight' only: the paper's private mechanism "
            "bounds its sensitivity only with high probability through unspecified constants "
            "and cannot be reproduced exactly"
        )
    n = int(n)
    if n < 2:
        raise ValueError(f"solver='resque' needs at least 2 samples, got n={n}")
    if batch_size is None:
        batch_size = default_batch_size(n)
    b = check_int("batch_size", batch_size, 1, n, high_name="n_samples")
    n_epochs = float(n_epochs)
    if not (n_epochs > 0.0 and math.isfinite(n_epochs)):
        raise ValueError(f"n_epochs must be finite and > 0, got {n_epochs!r}")
    q = b / n
    T = max(1, math.ceil(n_epochs * n / b))
    z = float(_noise_multiplier(epsilon, delta, q, T))
    return b, q, T, z


def _noise_multiplier(epsilon, delta, q, steps):
    """PLD-calibrated multiplier (module level so tests can under-noise it)."""
    return calibrate_poisson_gaussian(epsilon, delta, q, steps)


def plan_resque_event(est, n_samples):
    """Ledger planner: the event of a resque fit from public quantities only."""
    epsilon, delta, _ = check_gaussian_solver_args(
        est.epsilon, est.delta, est.alpha, est.calibration, "resque")
    _, q, T, z = _ledger(n_samples, est.batch_size, est.n_epochs, epsilon, delta,
                      est.calibration)
    return poisson_gaussian_event(q, z, T)


def resque_plan(n, p, loss, *, epsilon, delta, alpha, data_norm, y_bound=None,
                calibration="tight", max_coef_norm=None, batch_size=None, n_epochs=10,
                n_phases=5, phase_shrink=0.5, block_size="auto", smoothing=None,
                step_scale=None, kappa=KAPPA, w_max=W_MAX):
    """Everything public about a resque run on ``n`` rows of ``p`` coordinates.

    Returns a dict (phase steps, step sizes, blocks, radii, ``rho``, ``q``, ``T``, ``z``,
    sequential rounds, the dp-accounting ``event``).  Used by the solver and (through
    :func:`plan_resque_event`, same ledger) by the estimators' planner.

    Examples
    --------
    >>> from skdp._losses import LogisticLoss
    >>> from skdp._solvers._resque import resque_plan
    >>> plan = resque_plan(10_000, 3, LogisticLoss(), epsilon=1.0, delta=1e-6, alpha=0.01,
    ...                    data_norm=1.0, batch_size=100, n_epochs=2, block_size=4)
    >>> plan["steps"], plan["blocks"].tolist(), plan["sequential_rounds"]
    (200, [4, 4, 4, 4, 4], 50)
    """
    epsilon, delta, alpha = check_gaussian_solver_args(
        epsilon, delta, alpha, calibration, "resque", pure_dp_solver="output_perturbation")
    if loss.loss_id not in SUPPORTED:
        raise ValueError(
            f"solver='resque' supports scalar-margin losses (binary logistic, Huber, absolute); "
            f"got {type(loss).__name__} (multinomial logistic has no one-dimensional ReSQue "
            "form: use solver='phased' or 'dpsgd')"
        )
    b, q, T, z = _ledger(n, batch_size, n_epochs, epsilon, delta, calibration)
    if isinstance(n_phases, (bool, np.bool_)) or not isinstance(n_phases, numbers.Integral) \
            or n_phases < 1:
        raise ValueError(f"n_phases must be a positive integer, got {n_phases!r}")
    shrink = float(phase_shrink)
    if not 0.0 < shrink <= 1.0:
        raise ValueError(f"phase_shrink must be in (0, 1], got {phase_shrink!r}")
    step_scale = DEFAULT_STEP_SCALE if step_scale is None else float(step_scale)
    if not (step_scale > 0.0 and math.isfinite(step_scale)):
        raise ValueError(f"step_scale must be finite and > 0, got {step_scale!r}")
    if not (kappa > 0.0 and w_max >= 1.0):
        raise ValueError("need kappa > 0 and w_max >= 1")
    L = float(loss.lipschitz(data_norm))
    if not (L > 0.0 and math.isfinite(L)):
        raise ValueError(f"solver='resque' needs a finite positive Lipschitz constant, got {L}")
    R = public_radius(loss, data_norm=data_norm, alpha=alpha, max_coef_norm=max_coef_norm,
                      y_bound=y_bound, solver="resque")
    if smoothing is None:
        rho = min(R / 4.0, 10.0 * R / math.sqrt(n))
    else:
        rho = float(smoothing)
        if not (rho >= 0.0 and math.isfinite(rho)):
            raise ValueError(f"smoothing must be finite and >= 0, got {smoothing!r}")
    k = min(int(n_phases), T)
    steps = np.full(k, T // k, dtype=np.int64)
    steps[: T % k] += 1
    radii = R * shrink ** np.arange(k, dtype=np.float64)
    G = math.sqrt(L * L + p * (z * w_max * L / b) ** 2)
    etas = step_scale * radii / (G * np.sqrt(steps.astype(np.float64)))
    if block_size == "auto":
        # capped at the phase's steps before the integer cast (a large rho must not wrap)
        blocks = np.minimum(np.maximum(1.0, np.floor(kappa * rho / (etas * G))),
                            steps).astype(np.int64)
    else:
        if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size,
                                                                      numbers.Integral) \
                or block_size < 1:
            raise ValueError(f"block_size must be a positive integer or 'auto', "
                             f"got {block_size!r}")
        blocks = np.full(k, int(block_size), dtype=np.int64)
    blocks = np.minimum(blocks, steps)
    if np.any(blocks > 1) and not rho > 0.0:
        raise ValueError("ReSQue blocks (block_size > 1) need a smoothing radius > 0")
    rounds = int(sum(-(-int(t) // int(m)) for t, m in zip(steps, blocks)))
    return {
        "sampling_rate": q, "batch_size": b, "steps": int(T), "noise_multiplier": z,
        "phase_steps": steps, "etas": etas, "blocks": blocks, "radii": radii, "rho": rho,
        "coef_bound": R, "lipschitz": L, "G": G, "kappa": kappa, "w_max": w_max,
        "step_scale": step_scale, "sequential_rounds": rounds,
        "event": poisson_gaussian_event(q, z, T),
    }


def solve_resque(X, y, loss, **kwargs):
    """Localized DP-SGD with ReSQue blocks; see the module docstring.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
        Raw features; rows are clipped here.
    y : ndarray of shape (n,)
        Encoded targets (±1 logistic, real Huber/absolute).
    loss : ``LogisticLoss``, ``HuberLoss`` or ``AbsoluteLoss`` (``HingeLoss`` in tests)
    epsilon, delta : float
        Privacy target, ``delta`` in (0, 1).
    alpha : float
        L2 strength ``>= 0``.
    data_norm : float
        Public bound on ``||[x, intercept_scaling]||``, enforced by clipping.
    n_outputs : int, default=1
        Must be 1.
    fit_intercept, intercept_scaling, y_bound, calibration, max_coef_norm
        As for ``dpsgd`` (``calibration="tight"`` only).
    max_iter : int
        Ignored (the number of steps fixes the calibration).
    rng : numpy.random.Generator
        Source of the batches, the queries and the noise.
    batch_size : int or None, default=None
        Expected batch size ``b`` (None: :func:`default_batch_size`,
        ``min(n/10, max(256, 4 sqrt(n)))``).
    n_epochs : float, default=10
        ``T = ceil(n_epochs n / b)`` steps.
    n_phases : int, default=5
    phase_shrink : float, default=0.5
    block_size : int or "auto", default="auto"
        Steps per ReSQue block (one oracle round each).
    smoothing : float or None, default=None
        ReSQue radius ``rho`` (None: ``min(R/4, 10 R/sqrt(n))``).
    step_scale : float or None, default=None
        Step multiplier (None: 8).
    n_jobs : int or None, default=None
        Threads of the batched oracle round of blocks with at least
        ``PARALLEL_ROUND_WORK`` entries (None or 1: serial; -1: all numba threads).  The
        model is bitwise reproducible for a given setting and the same for every thread
        count >= 2; serial and threaded runs differ by rounding only (chunked
        matrix-vector products).  Privacy does not depend on it.
    noise_source : numpy.ndarray or None, default=None
        A ChaCha20 word source: every step's clipped sum is an exact grid release, the
        discrete Gaussian integers of all steps drawn ahead (:func:`_exact_noise`, at most
        ``MAX_EXACT_DRAWS``); the batches and the query draws still come from ``rng``.
        None: float noise.

    Returns
    -------
    SolverResult
    """
    threads = resolve_n_jobs(kwargs.pop("n_jobs", None))
    with solver_threads(X.shape[0], X.shape[1] + 1, threads if threads > 1 else None):
        return _solve(X, y, loss, parallel=threads > 1, **kwargs)




def _exact_noise(plan, clip, p, n, source):
    """``(noise_int, phase_gamma)`` for :func:`resque_loop`'s exact path.  Phase ``i``'s
    steps release sums of contributions clipped to ``C_i`` (``clip``, or ``w_max clip`` for
    weighted blocks): per-record bound ``C_i`` (replace-one sensitivity ``2 C_i``), noise
    ``z C_i``, ``|sum| <= n C_i``; each phase gets the grid of its ``sigma_i = z C_i`` and
    discrete Gaussian integers of the matching scale, so the dominating continuous Gaussian
    has at least the recorded multiplier ``z`` over the per-record bound plus the grid's
    rounding (:func:`skdp._mechanisms._exact.subsampled_gaussian_noise`)."""
    steps = np.asarray(plan["phase_steps"], dtype=np.int64)
    total = int(steps.sum())
    if total * p > MAX_EXACT_DRAWS:
        raise ValueError(
            f"secure_noise: solver='resque' would pre-draw {total * p} exact noise integers "
            f"(limit {MAX_EXACT_DRAWS}); use fewer epochs, secure_noise=False, or "
            "solver='dpsgd' (drawn in chunks)")
    z = float(plan["noise_multiplier"])
    noise = np.empty((total, p), dtype=np.int64)
    gammas = np.empty(steps.size)
    row = 0
    for i, T_i in enumerate(steps):
        C = clip * (plan["w_max"] if plan["blocks"][i] > 1 else 1.0)
        gammas[i], Z, _ = subsampled_gaussian_noise(source, z * C, C, p, n * C,
                                                    int(T_i) * p)
        noise[row:row + T_i] = Z.reshape(int(T_i), p)
        row += int(T_i)
    return noise, gammas


def _solve(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1, fit_intercept=True,
           intercept_scaling=1.0, y_bound=None, calibration="tight", max_iter=10_000,
           max_coef_norm=None, rng, batch_size=None, n_epochs=10, n_phases=5,
           phase_shrink=0.5, block_size="auto", smoothing=None, step_scale=None,
           parallel=False, noise_source=None):
    n = X.shape[0]
    if int(n_outputs) != 1:
        raise ValueError("solver='resque' supports binary logistic, Huber and absolute losses "
                         "only (one output); use solver='phased' for multinomial")
    p = X.shape[1] + int(bool(fit_intercept))
    plan = resque_plan(n, p, loss, epsilon=epsilon, delta=delta, alpha=alpha,
                       data_norm=data_norm, y_bound=y_bound, calibration=calibration,
                       max_coef_norm=max_coef_norm, batch_size=batch_size, n_epochs=n_epochs,
                       n_phases=n_phases, phase_shrink=phase_shrink, block_size=block_size,
                       smoothing=smoothing, step_scale=step_scale)
    L = plan["lipschitz"]
    Xc = clip_and_augment(X, data_norm, fit_intercept, intercept_scaling)
    yc = np.ascontiguousarray(y, dtype=np.float64)
    xnorm = np.empty(n)
    row_norms(Xc, xnorm)
    stats = np.zeros(3, dtype=np.int64)
    clip = _clip_bound(L, p)
    exact = () if noise_source is None else _exact_noise(plan, clip, p, n, noise_source)
    exact = with_defaults(exact, (np.zeros((0, 0), dtype=np.int64), np.zeros(0)))
    # The kernel clips contributions to C and adds noise z C.  Its computed sums (at most n
    # terms, any order) have replace-one sensitivity 2 C F(n), F = summation_factor(n)
    # (skdp._mechanisms._summation): so it clips to clip/F and draws noise (z F)(clip/F) =
    # z clip -- the noise the event records, against a float64 sensitivity <= 2 clip.
    F = summation_factor(n)
    center = resque_loop(
        Xc, yc, xnorm, int(loss.loss_id), float(loss.param), plan["sampling_rate"],
        float(plan["batch_size"]), plan["noise_multiplier"] * F, summation_clip(clip, n),
        plan["w_max"], float(plan["rho"]), plan["kappa"], float(alpha), plan["coef_bound"],
        plan["phase_steps"], np.ascontiguousarray(plan["etas"]), plan["blocks"],
        np.ascontiguousarray(plan["radii"]), rng, stats,
        PARALLEL_ROUND_WORK if parallel else np.iinfo(np.int64).max, *exact,
    )
    W = center.reshape(p, 1)
    coef, intercept = split_intercept(W, fit_intercept, intercept_scaling)
    details = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
               for k, v in plan.items() if k != "event"}
    details.update(oracle_queries=int(stats[0]), sequential_rounds=int(stats[1]),
                   n_steps=int(stats[2]), calibration=calibration,
                   full_gradient_equivalents=float(stats[0]) / n,
                   oracle_threads=numba.get_num_threads() if parallel else 1,
                   max_iter_ignored=int(max_iter))
    return SolverResult(
        coef=np.ascontiguousarray(coef),
        intercept=np.asarray(intercept, dtype=float).reshape(1),
        n_iter=int(stats[2]),
        n_gradient_evals=int(stats[0]),
        noise_scale=float(plan["noise_multiplier"] * L),
        sensitivity=float(2.0 * L),
        dp_event=plan["event"],
        data_norm=float(data_norm),
        details=details,
    )
