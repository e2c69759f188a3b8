r"""NOT PRIVATE -- non-private reference of the accelerated ReSQue pipeline (Carmon et al. 2023, Sec. 3: ball acceleration over ReSQue ball oracles).

**This module is NOT PRIVATE and never ships as a solver.**  It adds no noise, clips nothing
by default and evaluates the objective on the data to *measure* progress.  It exists only to
count gradient queries and sequential depth of the paper's accelerated pipeline (Carmon et
al., "ReSQueing Parallel and Private Stochastic Convex Optimization", FOCS 2023, Thm 1 /
Prop. 1-2) against its claims: depth ``d^(1/3) eps^(-2/3)`` and total queries
``d^(1/3) eps^(-2/3) + eps^(-2)`` (``L = R = 1``, logs dropped), and against SGD's depth
``eps^(-2)``.  ``benchmarks/bench_resque_reference.py`` runs the grid.

Problem (Problem 1 of the paper, finite sum).  ``F(x) = (1/n) sum_i l(<a_i, x>; y_i)`` with
rows ``||a_i|| = 1`` (so ``L = 1`` for the absolute and logistic losses), domain
``B_R(0)``.  A *query* ``(i, xi)`` returns the subgradient ``l'(<a_i, xi>; y_i) a_i`` of a
uniformly drawn row at a point ``xi``: an unbiased stochastic subgradient of ``F``.
The pipeline minimises the Gaussian convolution ``F_rho`` (closed form for the GLM:
``l_s`` of :mod:`skdp._losses._smoothed` for the absolute loss, Gauss-Hermite for logistic)
and reports ``F_rho(x) - min F_rho`` and the unsmoothed ``F(x)``.

The pipeline (:func:`run_accelerated`) -- Monteiro-Svaiter ball acceleration (Carmon et al. 2023)::

    v <- x0; x <- x0; A <- 0
    for k = 0, 1, ...:
        a(lam) = (1 + sqrt(1 + 4 lam A))/(2 lam);  y(lam) = (A x + a(lam) v)/(A + a(lam))
        lo, hi = log lam_*, log(L/r)
        repeat N_BISECT = 6 times:            # line search, fixed count
            lam = exp((lo + hi)/2);  xt = Ball(y(lam), lam)
            if ||xt - y(lam)|| >= THETA r: lo = log lam  else: hi = log lam
        lam_k = exp(hi); y = y(lam_k)
        x <- Ball(y, lam_k)                   # ball-optimisation oracle
        g <- lam_k (y - x)                    # stochastic proximal oracle = ball output reused
        v <- Proj_{B_R(x0)}(v - a(lam_k) g);  A <- A + a(lam_k)

``Ball(c, lam)`` approximates ``argmin_{B_r(c)} F_rho(x) + lam/2 ||x - c||^2`` by ReSQue-SGD
(the paper's Algorithm 1 in spirit): **one** batched oracle round draws *all* its queries at
the fixed centre ``c`` -- ``N(lam)`` pairs ``(i_j, xi_j)``, ``i_j ~ U[n]``,
``xi_j ~ N(c, rho^2 I)`` -- and evaluates them; then ``N(lam)`` projected SGD steps with
step ``2/(lam (t + 2))`` and the ``t+1``-weighted average (Lacoste-Julien et al. 2012: error
``<= 2 G^2/(lam (N + 1))``) use the ReSQue estimate ``w_x(xi_t) g_t`` reweighted to the
current iterate ``x`` (:func:`skdp._solvers._resque_kernel.resque_estimates_full`, general
form, default; or the 1-D GLM form built from
:func:`~skdp._solvers._resque_kernel.resque_logw_glm` and
:func:`~skdp._solvers._resque_kernel.clipped_weight_scale` on the round's precomputed
answers ``l'(t_j)``, ``t_j = <a_j, c> + rho ||a_j|| Z_j``).  No further query is made
inside a call, so one call = one unit of query depth; the queries of a round depend only on
the centre and the random generator, never on the iterates (tested).

Counters (exact, incremented where the oracle is called): ``queries`` = subgradients
evaluated, ``rounds`` = batched oracle rounds (query depth), ``outer`` = MS iterations
``K``, ``line_search_calls`` = ball calls made by the line search (``6 K``), ``ball_calls``.
Each iteration is ``6 + 1 = 7`` sequential rounds (as in ``_resque_reference.schedule``).

Constants (the paper gives none -- these are ours):

* ``rho = eps/(L sqrt d)`` (the paper's smoothing; for a GLM the bias is only
  ``sqrt(2/pi) L rho``, so this is conservative but is what the claims are stated for);
* ``r = rho`` (polylog = 1): ``E w^2 <= exp(||x - c||^2/rho^2) <= e`` on the ball;
* ``lam_* = eps/(R^(2/3) r^(4/3))`` (Carmon et al. 2023), line-search bracket ``[lam_*, L/r]``,
  ``N_BISECT = 6`` bisections on ``log lam``, acceptance ``THETA = 0.7``
  (``||xt - y|| < 0.7 r``: the ball constraint inactive, so ``lam (y - x)`` is a gradient);
* queries per ball call ``N(lam) = ceil(C_N (1 + e L^2/(lam r)^2))``, ``C_N = 8``, within
  ``[N_MIN, N_MAX] = [16, 10^6]``: SGD error ``2 G^2/(lam N) <= lam r^2/(C_N/2)`` with
  ``G^2 = e L^2 + (lam r)^2`` (ball tolerance ``phi = lam r^2/polylog``, polylog = 4);
* ``K_theory = ceil((R/r)^(2/3))`` (reported; runs stop at the target or at ``k_max``);
* baselines: (i) non-accelerated ball iteration ``x <- Ball(x, lam_*)`` (one round per
  iteration, expected ``~ (R/r) log`` rounds), (ii) sequential SGD on ``F_rho``
  (query at ``xi ~ N(x_t, rho^2 I)``, the ReSQue weight is 1; depth = queries = steps),
  step ``R/(L sqrt t)``, projection on ``B_R``, step-weighted average.

Deviations from the paper (all documented choices, none affects what is counted): the
stochastic proximal oracle reuses the ball output (no MLMC bias reduction, Alg.
6); the line search is a fixed 6-step bisection on the distance test instead of the
paper's ``O(log)`` calls with tolerance ``Delta`` (Prop. 1); the ball oracle is projected SGD
with weighted averaging instead of EpochSGD/AC-SA (Algs 1-2; same ``1/(lam N)`` rate, one
round either way); the ball oracles do not also project on ``B_R(x0)`` (the minimiser is
inside by construction).

Progress is measured (not queried: measurement only) with the closed-form ``F_rho`` after
each outer iteration (SGD: at checkpoints ``x 1.25``); "to target" = the first point with
``F_rho - min F_rho <= eps``.  ``min F_rho`` comes from L-BFGS on the closed form (the
minimiser is inside ``B_R`` by construction, checked).
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.optimize import minimize

from skdp._losses._kernels import LOGISTIC
from skdp._losses._smoothed import ABSOLUTE, raw_margin_derivative, smoothed_margin_arrays
from skdp._solvers._resque_kernel import (LOGW_CAP, clipped_weight_scale, resque_estimates_full,
                                          resque_logw_glm)

__all__ = ["GLMProblem", "QueryOracle", "Counters", "Schedule", "make_problem", "schedule_for",
           "draw_round", "ball_oracle", "run_accelerated", "run_ball_iteration", "run_sgd",
           "LOGW_CAP"]

N_BISECT = 6
THETA = 0.7
C_N = 8.0
N_MIN = 16
N_MAX = 1_000_000
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite.hermgauss(40)


# ----------------------------------------------------------------------------- problem
@njit(cache=True)
def _query_full(A, y, idx, Xi, loss_id, param, G):
    """``G[j] = l'(<a_{idx_j}, Xi_j>; y_{idx_j}) a_{idx_j}``: one subgradient per query."""
    M, p = Xi.shape
    for j in range(M):
        i = idx[j]
        m = 0.0
        for k in range(p):
            m += A[i, k] * Xi[j, k]
        g = raw_margin_derivative(m, y[i], loss_id, param)
        for k in range(p):
            G[j, k] = g * A[i, k]


@njit(cache=True)
def _query_glm(A, y, idx, centre, rho, Z, loss_id, param, t, g):
    """GLM-form queries: ``t_j = <a_j, c> + rho ||a_j|| Z_j``, ``g_j = l'(t_j; y_j)``."""
    p = A.shape[1]
    for j in range(idx.shape[0]):
        i = idx[j]
        tb = 0.0
        nrm = 0.0
        for k in range(p):
            tb += A[i, k] * centre[k]
            nrm += A[i, k] * A[i, k]
        t[j] = tb + rho * math.sqrt(nrm) * Z[j]
        g[j] = raw_margin_derivative(t[j], y[i], loss_id, param)


class GLMProblem:
    """Empirical risk ``F(x) = mean_i l(<a_i, x>; y_i)`` on ``B_R(0)`` (rows ``||a_i|| <= 1``)."""

    def __init__(self, A, y, loss_id, R, param=0.0):
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.loss_id = int(loss_id)
        self.param = float(param)
        self.R = float(R)
        self.norms = np.linalg.norm(self.A, axis=1)
        self.L = float(self.norms.max())  # |l'| <= 1 for absolute and logistic
        self.n, self.d = self.A.shape

    def smoothed(self, x, rho):
        """``(F_rho(x), grad F_rho(x))`` in closed form (absolute) / Gauss-Hermite (logistic)."""
        m = self.A @ x
        s = rho * self.norms
        if self.loss_id == LOGISTIC:
            if rho > 0:
                u = m[:, None] + math.sqrt(2.0) * s[:, None] * _GH_NODES[None, :]
                yy = self.y[:, None]
                val = np.logaddexp(0.0, -yy * u) @ _GH_WEIGHTS / math.sqrt(math.pi)
                der = (-yy / (1.0 + np.exp(yy * u))) @ _GH_WEIGHTS / math.sqrt(math.pi)
            else:
                val = np.logaddexp(0.0, -self.y * m)
                der = -self.y / (1.0 + np.exp(self.y * m))
        else:
            val = np.empty(self.n)
            der = np.empty(self.n)
            smoothed_margin_arrays(m, self.y, self.loss_id, self.param, s, val, der)
        return float(val.mean()), self.A.T @ der / self.n

    def value(self, x, rho=0.0):
        """``F_rho(x)`` (``rho = 0``: the unsmoothed empirical risk)."""
        return self.smoothed(x, rho)[0]

    def minimise(self, rho, x_start=None):
        """``(x*, min F_rho)`` by L-BFGS on the closed form; raises if ``||x*|| >= R``."""
        x_start = np.zeros(self.d) if x_start is None else np.asarray(x_start, float)
        res = minimize(lambda w: self.smoothed(w, rho), x_start, jac=True, method="L-BFGS-B",
                       options={"maxiter": 20000, "maxcor": 30, "ftol": 1e-15,
                                "gtol": 1e-11})
        x = res.x
        if np.linalg.norm(x) >= self.R:
            raise RuntimeError("minimiser of F_rho not inside B_R: the unconstrained solve "
                               "does not give min over the ball")
        return x, self.smoothed(x, rho)[0]


def make_problem(n, d, loss="absolute", seed=0, noise=0.1):
    """Synthetic GLM with unit rows whose margins along ``u = e_1`` are O(1) in every ``d``.

    ``a_i = z_i/||z_i||``, ``z_i = c_i e_1 + nu_i``, ``c_i ~ N(0, 1)``, ``nu_i ~ N(0, I/d)``
    (so ``F(0) - F*`` does not vanish as ``d`` grows; the claims' ``d`` enters through
    ``rho``).  absolute: ``R = 1``, ``w* = 0.6 e_1``, ``y = <a, w*> + noise Laplace(1)``
    (``noise = 0``: a sharp minimum);
    logistic: ``R = 4``, ``w* = 2.4 e_1``, ``P(y = 1) = sigmoid(<a, w*>)``, ``y = +-1``.
    """
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d)) / math.sqrt(d)
    Z[:, 0] += rng.standard_normal(n)
    A = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    if loss == "absolute":
        R = 1.0
        w = np.zeros(d)
        w[0] = 0.6 * R
        y = A @ w + noise * rng.laplace(size=n)
        return GLMProblem(A, y, ABSOLUTE, R)
    if loss == "logistic":
        R = 4.0
        w = np.zeros(d)
        w[0] = 0.6 * R
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        y = np.where(rng.random(n) < p, 1.0, -1.0)
        return GLMProblem(A, y, LOGISTIC, R)
    raise ValueError(f"unknown loss {loss!r}")


# ------------------------------------------------------------------------------ oracle
class QueryOracle:
    """The stochastic subgradient oracle: a batch of queries is evaluated in one call.

    ``full(idx, Xi)`` returns ``G`` (``M x d``: ``l'(<a_i, xi>; y_i) a_i``); ``glm(idx,
    centre, rho, Z)`` returns ``(t, g)`` with ``t_j = <a_j, c> + rho ||a_j|| Z_j`` (the
    margin of the query point) and ``g_j = l'(t_j; y_j)``.  Every call is one batched round.
    """

    def __init__(self, problem):
        self.problem = problem

    def full(self, idx, Xi):
        P = self.problem
        G = np.empty_like(Xi)
        _query_full(P.A, P.y, idx, Xi, P.loss_id, P.param, G)
        return G

    def glm(self, idx, centre, rho, Z):
        P = self.problem
        t = np.empty(idx.shape[0])
        g = np.empty(idx.shape[0])
        _query_glm(P.A, P.y, idx, centre, rho, Z, P.loss_id, P.param, t, g)
        return t, g


@dataclass
class Counters:
    """Exact counts: subgradient queries, batched oracle rounds (depth), iterations."""

    queries: int = 0
    rounds: int = 0
    outer: int = 0
    line_search_calls: int = 0
    ball_calls: int = 0

    def snapshot(self):
        return dict(queries=self.queries, rounds=self.rounds, outer=self.outer,
                    line_search_calls=self.line_search_calls, ball_calls=self.ball_calls)


@dataclass(frozen=True)
class Schedule:
    """Our constants for a target ``eps`` (module docstring)."""

    eps: float
    rho: float
    r: float
    lam_star: float
    lam_max: float
    K_theory: int
    L: float
    R: float


def schedule_for(problem, eps):
    """``rho = eps/(L sqrt d)``, ``r = rho``, ``lam_* = eps/(R^(2/3) r^(4/3))``, ``L/r``."""
    L, R, d = problem.L, problem.R, problem.d
    rho = eps / (L * math.sqrt(d))
    r = rho
    return Schedule(eps=eps, rho=rho, r=r, lam_star=eps / (R ** (2 / 3) * r ** (4 / 3)),
                    lam_max=L / r, K_theory=math.ceil((R / r) ** (2 / 3)), L=L, R=R)


def queries_per_call(lam, sch, c_n=C_N):
    """``N(lam) = ceil(C_N (1 + e L^2/(lam r)^2))`` within ``[N_MIN, N_MAX]``."""
    N = math.ceil(c_n * (1.0 + math.e * sch.L ** 2 / (lam * sch.r) ** 2))
    return int(min(max(N, N_MIN), N_MAX))


# -------------------------------------------------------------------------- ball oracle
@njit(cache=True)
def _project(x, c, r):
    sq = 0.0
    for k in range(x.shape[0]):
        sq += (x[k] - c[k]) ** 2
    if sq > r * r:
        f = r / math.sqrt(sq)
        for k in range(x.shape[0]):
            x[k] = c[k] + (x[k] - c[k]) * f


@njit(cache=True)
def _ball_sgd_full(G, Xi, centre, x_start, lam, rho, r, clip, logw_cap, out, trace):
    """ReSQue-SGD on ``F_rho + lam/2 ||. - c||^2`` over ``B_r(c)`` from the round's answers.

    Step ``t``: ``g_t = resque_estimates_full(G_t, Xi_t; anchor c, iterate x)`` (general form)
    ``+ lam (x - c)``; ``x <- Proj_{B_r(c)}(x - 2/(lam (t+2)) g_t)``; ``out`` = the
    ``(t+1)``-weighted average.  ``trace[t]`` = ``x[0]`` after step ``t`` (tests).
    """
    M, p = G.shape
    x = x_start.copy()
    est = np.empty((1, p))
    wsum = 0.0
    for k in range(p):
        out[k] = 0.0
    for t in range(M):
        resque_estimates_full(G[t:t + 1], Xi[t:t + 1], centre, x, rho, clip, logw_cap, est)
        eta = 2.0 / (lam * (t + 2.0))
        for k in range(p):
            x[k] -= eta * (est[0, k] + lam * (x[k] - centre[k]))
        _project(x, centre, r)
        w = t + 1.0
        wsum += w
        for k in range(p):
            out[k] += w * x[k]
        trace[t] = x[0]
    for k in range(p):
        out[k] /= wsum


@njit(cache=True)
def _ball_sgd_glm(A, idx, t_q, g_q, centre, x_start, lam, rho, r, clip, logw_cap, out,
                  trace):
    """As :func:`_ball_sgd_full` with the 1-D GLM weight (doc/solvers/resque.rst) on the round's answers:
    ``est = clip(exp(resque_logw_glm(t_j, <a_j, c>, <a_j, x>, rho ||a_j||)) g_j a_j)``
    (``clipped_weight_scale``), i.e. the value of ``resque_estimates_glm`` for that query."""
    p = A.shape[1]
    M = idx.shape[0]
    x = x_start.copy()
    wsum = 0.0
    for k in range(p):
        out[k] = 0.0
    for t in range(M):
        i = idx[t]
        tb = 0.0
        tx = 0.0
        nrm = 0.0
        for k in range(p):
            tb += A[i, k] * centre[k]
            tx += A[i, k] * x[k]
            nrm += A[i, k] * A[i, k]
        nrm = math.sqrt(nrm)
        g = g_q[t]
        c = clipped_weight_scale(resque_logw_glm(t_q[t], tb, tx, rho * nrm), abs(g) * nrm,
                                 clip, logw_cap)
        cg = c * g if c > 0.0 else 0.0
        eta = 2.0 / (lam * (t + 2.0))
        for k in range(p):
            x[k] -= eta * (cg * A[i, k] + lam * (x[k] - centre[k]))
        _project(x, centre, r)
        w = t + 1.0
        wsum += w
        for k in range(p):
            out[k] += w * x[k]
        trace[t] = x[0]
    for k in range(p):
        out[k] /= wsum


def draw_round(rng, n, centre, M, rho, form):
    """The draws of one oracle round: ``idx ~ U[n]^M`` and ``xi_j = c + rho Z_j`` (full) or
    the scalars ``Z_j`` (GLM form).  Depends on ``rng``, ``centre`` and ``M`` only."""
    idx = rng.integers(0, n, size=M)
    if form == "full":
        Xi = centre[None, :] + rho * rng.standard_normal((M, centre.shape[0]))
        return idx, Xi
    return idx, rng.standard_normal(M)


def ball_oracle(oracle, centre, lam, M, sch, rng, counters, *, form="full", x_start=None,
                clip=math.inf, logw_cap=math.inf, trace=None):
    """One ball-optimisation call: ONE batched round of ``M`` queries at ``centre``, then
    ``M`` ReSQue-SGD steps (no further query).  Returns the weighted-average iterate."""
    P = oracle.problem
    centre = np.ascontiguousarray(centre, dtype=np.float64)
    x_start = centre if x_start is None else np.ascontiguousarray(x_start, dtype=np.float64)
    idx, draws = draw_round(rng, P.n, centre, M, sch.rho, form)
    out = np.empty(P.d)
    tr = np.empty(M) if trace is None else trace
    if form == "full":
        G = oracle.full(idx, draws)
        counters.rounds += 1
        counters.queries += M
        _ball_sgd_full(G, draws, centre, x_start, lam, sch.rho, sch.r, clip, logw_cap, out, tr)
    elif form == "glm":
        t_q, g_q = oracle.glm(idx, centre, sch.rho, draws)
        counters.rounds += 1
        counters.queries += M
        _ball_sgd_glm(P.A, idx, t_q, g_q, centre, x_start, lam, sch.rho, sch.r, clip,
                      logw_cap, out, tr)
    else:
        raise ValueError(f"form must be 'full' or 'glm', got {form!r}")
    counters.ball_calls += 1
    return out


# ------------------------------------------------------------------------ the pipelines
@dataclass
class RunResult:
    """Final point, counters, per-iteration trace and the first point at the target."""

    x: np.ndarray
    counters: Counters
    schedule: Schedule
    trace: list = field(default_factory=list)
    at_target: dict = None
    wall_s: float = 0.0


def _record(res, problem, x, sch, f_star, counters, stop):
    gap = problem.value(x, sch.rho) - f_star if f_star is not None else math.nan
    row = dict(counters.snapshot(), gap=gap)
    res.trace.append(row)
    if res.at_target is None and gap <= sch.eps:
        res.at_target = dict(row, F_raw=problem.value(x, 0.0))
        return stop
    return False


def run_accelerated(problem, eps, *, seed=0, form="full", k_max=None, f_star=None,
                    stop_at_target=True, oracle=None, n_bisect=N_BISECT, theta=THETA,
                    c_n=C_N, clip=math.inf, logw_cap=math.inf):
    """NOT PRIVATE.  Monteiro-Svaiter ball acceleration with ReSQue ball oracles (module
    docstring); ``k_max`` defaults to ``3 K_theory``."""
    t0 = time.perf_counter()
    sch = schedule_for(problem, eps)
    oracle = QueryOracle(problem) if oracle is None else oracle
    rng = np.random.default_rng(seed)
    k_max = 3 * sch.K_theory if k_max is None else int(k_max)
    cnt = Counters()
    x0 = np.zeros(problem.d)
    x = x0.copy()
    v = x0.copy()
    A = 0.0
    res = RunResult(x=x, counters=cnt, schedule=sch)
    kw = dict(form=form, clip=clip, logw_cap=logw_cap)

    def y_of(lam):
        a = (1.0 + math.sqrt(1.0 + 4.0 * lam * A)) / (2.0 * lam)
        return a, (A * x + a * v) / (A + a)

    for _ in range(k_max):
        lo, hi = math.log(sch.lam_star), math.log(sch.lam_max)
        for _ in range(n_bisect):
            mid = 0.5 * (lo + hi)
            lam = math.exp(mid)
            _, y = y_of(lam)
            xt = ball_oracle(oracle, y, lam, queries_per_call(lam, sch, c_n), sch, rng, cnt,
                             **kw)
            cnt.line_search_calls += 1
            if np.linalg.norm(xt - y) >= theta * sch.r:
                lo = mid
            else:
                hi = mid
        lam = math.exp(hi)
        a, y = y_of(lam)
        x = ball_oracle(oracle, y, lam, queries_per_call(lam, sch, c_n), sch, rng, cnt, **kw)
        g = lam * (y - x)  # stochastic proximal oracle: the ball output reused
        v = v - a * g
        nv = np.linalg.norm(v - x0)
        if nv > problem.R:
            v = x0 + (v - x0) * (problem.R / nv)
        A += a
        cnt.outer += 1
        if _record(res, problem, x, sch, f_star, cnt, stop_at_target):
            break
    res.x = x
    res.wall_s = time.perf_counter() - t0
    return res


def run_ball_iteration(problem, eps, *, seed=0, form="full", k_max=None, f_star=None,
                       stop_at_target=True, oracle=None, c_n=C_N, clip=math.inf,
                       logw_cap=math.inf):
    """NOT PRIVATE.  Non-accelerated baseline: ``x <- Ball(x, lam_*)`` (same oracle, one
    round per iteration); ``k_max`` defaults to ``40 R/r``."""
    t0 = time.perf_counter()
    sch = schedule_for(problem, eps)
    oracle = QueryOracle(problem) if oracle is None else oracle
    rng = np.random.default_rng(seed)
    k_max = int(40 * sch.R / sch.r) if k_max is None else int(k_max)
    cnt = Counters()
    x = np.zeros(problem.d)
    res = RunResult(x=x, counters=cnt, schedule=sch)
    N = queries_per_call(sch.lam_star, sch, c_n)
    for _ in range(k_max):
        x = ball_oracle(oracle, x, sch.lam_star, N, sch, rng, cnt, form=form, clip=clip,
                        logw_cap=logw_cap)
        cnt.outer += 1
        if _record(res, problem, x, sch, f_star, cnt, stop_at_target):
            break
    res.x = x
    res.wall_s = time.perf_counter() - t0
    return res


@njit(cache=True)
def _sgd_chunk(A, y, loss_id, param, idx, Z, rho, R, L, x, avg, state):
    """Sequential SGD steps on ``F_rho``: query ``xi = x + rho Z_t`` (one round per step,
    ReSQue weight 1), ``x <- Proj_{B_R}(x - eta_t g)``, ``eta_t = R/(L sqrt t)``;
    ``avg`` = step-weighted average; ``state = [t, sum eta]``."""
    p = x.shape[0]
    t = state[0]
    seta = state[1]
    for j in range(idx.shape[0]):
        i = idx[j]
        m = 0.0
        for k in range(p):
            m += A[i, k] * (x[k] + rho * Z[j, k])
        g = raw_margin_derivative(m, y[i], loss_id, param)
        t += 1.0
        eta = R / (L * math.sqrt(t))
        for k in range(p):
            x[k] -= eta * g * A[i, k]
        sq = 0.0
        for k in range(p):
            sq += x[k] * x[k]
        if sq > R * R:
            f = R / math.sqrt(sq)
            for k in range(p):
                x[k] *= f
        for k in range(p):
            avg[k] = (seta * avg[k] + eta * x[k]) / (seta + eta)
        seta += eta
    state[0] = t
    state[1] = seta


def run_sgd(problem, eps, *, seed=0, t_max=None, f_star=None, stop_at_target=True,
            first=2, ratio=1.25):
    """NOT PRIVATE.  Sequential SGD on ``F_rho`` (depth = queries = steps); progress checked
    at ``first * ratio^j`` steps; ``t_max`` defaults to ``400 (L R/eps)^2``."""
    t0 = time.perf_counter()
    sch = schedule_for(problem, eps)
    rng = np.random.default_rng(seed)
    t_max = int(400 * (sch.L * sch.R / eps) ** 2) if t_max is None else int(t_max)
    cnt = Counters()
    x = np.zeros(problem.d)
    avg = np.zeros(problem.d)
    state = np.zeros(2)
    res = RunResult(x=avg, counters=cnt, schedule=sch)
    done = 0
    nxt = first
    while done < t_max:
        m = min(int(nxt), t_max) - done
        idx = rng.integers(0, problem.n, size=m)
        Z = rng.standard_normal((m, problem.d))
        _sgd_chunk(problem.A, problem.y, problem.loss_id, problem.param, idx, Z, sch.rho,
                   problem.R, sch.L, x, avg, state)
        done += m
        cnt.queries = cnt.rounds = cnt.outer = done
        if _record(res, problem, avg, sch, f_star, cnt, stop_at_target):
            break
        nxt = max(nxt * ratio, done + 1)
    res.x = avg
    res.wall_s = time.perf_counter() - t0
    return res
