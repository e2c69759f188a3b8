"""Non-private inner optimisers used by the output-perturbation solver.

* :func:`gradient_descent` — exactly ``n_steps`` full-batch steps from a data-independent
  start, optional projection onto a public ball.  Its sensitivity has closed forms.
* :func:`certified_minimize` — Newton steps from 0 on small single-output designs (at
  most ``NEWTON_EARLY_MAX_COEF`` coefficients, fewer than ``WARM_START_MIN_ROWS`` rows;
  ``NEWTON_EARLY = 0`` L-BFGS iterations first), otherwise L-BFGS, then Newton polishing
  for single-output losses with at most 2000 coefficients after ``NEWTON_AFTER``
  iterations or as soon as ``STALL_EVALS`` evaluations in a row fail to improve the
  certificate; run until a *rigorous* certificate
  ``||grad F(w)|| + rounding allowance <= mu * tau`` holds, which
  implies ``||w - w_hat|| <= tau`` by mu-strong convexity
  (``||grad F(w)|| >= mu ||w - w_hat||``).
  On designs of ``WARM_START_MIN_ROWS`` rows or more it first solves a subsample (every
  k-th row) and takes Newton steps from there with the subsample's Hessian and the full
  gradient, the exact Hessian once that pays (:class:`_SubsampledHessian`: 7-9 passes
  instead of 14-22 on 10^6 x 21, 6-10 instead of 13-17 on 10^5 rows);
  designs wider than 2000 coefficients get Hessian-free Newton-CG steps when L-BFGS
  stalls (:func:`_newton_cg_polish`).
  If the certificate cannot be reached it falls back to enough gradient-descent steps from
  zero to guarantee ``||w - w_hat|| <= tau`` by contraction; either way the returned point
  is within ``tau`` of the exact minimiser, which is all the privacy proof uses.
"""

import math

import numpy as np
from scipy.optimize import OptimizeResult, minimize


def gradient_descent(objective, step, n_steps, radius=0.0, W0=None):
    """Run ``n_steps`` of ``W <- Pi_radius(W - step * grad F(W))`` from ``W0`` (default 0)."""
    W = np.zeros(objective.shape) if W0 is None else W0.copy()
    for _ in range(int(n_steps)):
        _, grad = objective.value_grad(W)
        W -= step * grad
        if radius > 0.0:
            nrm = np.linalg.norm(W)
            if nrm > radius:
                W *= radius / nrm
    return W


#: most coefficients of a dense ``p x p`` Hessian (Newton); wider single-output designs get
#: Hessian-free Newton-CG steps
DENSE_HESSIAN_MAX_COEF = 2000
#: designs of at least this many rows start from a subsample's minimiser
WARM_START_MIN_ROWS = 50_000
#: rows of that subsample (every ``k``-th row, ``k = n // WARM_START_ROWS``) ...
WARM_START_ROWS = 50_000
#: ... and at most ``1/WARM_START_MIN_STEP`` of the rows.  Measured (one thread, quiet,
#: logistic / Huber, 3 seeds, then Newton with the exact-Hessian switch of
#: :class:`_SubsampledHessian`): 10^5 x 20 56 -> 46 / 49 -> 32 ms, 10^5 x 50 158 -> 110 /
#: 98 -> 80 ms, 5 * 10^4 x 20 27 -> 24 / 24 -> 18 ms, 2 * 10^5 x 20 127 -> 109 / 68 -> 56 ms
#: (the subsample was 50,000 rows there, ``k = 4``; with ``k = 8`` its L-BFGS run costs
#: about two full passes); the passes fall from 13-17 to 6-10.
WARM_START_MIN_STEP = 8
#: designs wider than 2000 coefficients (Newton-CG's, no dense Hessian) start from a
#: subsample from this many rows: below, a sparse one starts with Newton-CG from 0
#: (``NEWTON_CG_FIRST``, measured on the 10^5 x 10^5 TF-IDF-like design)
WIDE_WARM_START_MIN_ROWS = 200_000


#: gradient norm (times ``row_bound``) at which the subsample's L-BFGS stops.  Its minimiser
#: is only a start: it sits ``O(1/sqrt(rows))`` from the full one whatever the precision,
#: and Newton's first steps on the full design remove the rest.  1e-7 -> 1e-4, default
#: logistic fits, one thread, full passes (warm start included) and median time, one run:
#: 10^5 x 50 8.5 -> 7.8 (82 -> 74 ms; Huber 10.9 -> 9.8, 65 -> 56 ms), float32 8.8-9.0 ->
#: 8.4-8.5; 10^5 x 20 7.5 -> 7.1; 10^6 x 20 8.8 -> 7.6 (460 -> 408 ms); 10^6 x 50 8.7 ->
#: 8.6; 2 * 10^5 x 100 8.1-8.5 -> 7.4-7.5; one-hot 2.5 * 10^5 x 5000 29.6-30.6 ->
#: 28.2-29.2, every score the same to 5 decimals; 1e-5 and 1e-3 gave less
WARM_START_GTOL = 1e-4


def _warm_start(objective, max_iter):
    """Start point for large designs: the minimiser of the same objective on every k-th
    row (about ``WARM_START_ROWS`` rows, at most an eighth of a design's and a sixteenth
    of a sparse design's: a data-independent choice).  Measured on
    10^6 x 50 logistic problems it cuts the full passes from 12-18 to about 11.  Only the
    path changes: the certificate is checked on the full objective."""
    k = max(WARM_START_MIN_STEP, objective.n // WARM_START_ROWS)
    if getattr(objective, "sparse", False):
        # a sparse subsample is a copy of its rows (a dense one is a strided view):
        # at most a sixteenth of them
        k = max(k, 16)
    sub = objective.subsample(k)
    res = minimize(sub.value_grad_flat, np.zeros(objective.shape[0] * objective.shape[1]),
                   jac=True, method="L-BFGS-B",
                   options={"maxiter": int(max_iter),
                            "gtol": WARM_START_GTOL * objective.row_bound})
    objective.extra_example_gradients += sub.n_example_gradients
    return res.x, sub


#: Newton steps a fresh exact Hessian is expected to need (quadratic convergence from
#: where the subsample's Hessian has brought the gradient)
EXACT_NEWTON_STEPS = 2


class _SubsampledHessian:
    """``objective`` with its Hessian taken on the warm start's subsample ``sub`` (the
    same regularised mean risk on every k-th row): a ``p x p`` Hessian costs ``k`` times
    less than on all rows, and Newton steps with it still divide the full gradient by
    about ``1/(relative error of the Hessian)`` each.  Values and gradients are the full
    objective's, so the certificate is unchanged (only the path differs).

    That linear rate does not improve with a new subsample Hessian: when a step divides
    the gradient by ``r`` (less than ``LAGGED_HESSIAN_GAIN``) and about
    ``log(||g||/stop)/log r`` such steps remain, while the full design's Hessian costs
    :func:`exact_hessian_passes` passes and ``EXACT_NEWTON_STEPS`` steps more,
    :meth:`consider_exact_hessian` switches to the exact Hessian.  Measured (one thread):
    10^5 x 51 logistic, gradient 1.7e-6 after three steps of rate ~1/8 against a stop of
    1e-11: 6 more steps, or one Hessian (~3 passes) and 2 steps."""

    def __init__(self, objective, sub):
        self.objective = objective
        self.sub = sub
        self.exact = False

    def value_grad(self, W):
        return self.objective.value_grad(W)

    def hessian(self, W):
        if self.exact:
            return self.objective.hessian(W)
        before = self.sub.n_example_gradients
        H = self.sub.hessian(W)
        self.objective.extra_example_gradients += self.sub.n_example_gradients - before
        return H

    def consider_exact_hessian(self, g_old, g_new, stop):
        """After a Newton step from gradient norm ``g_old`` to ``g_new`` (target
        ``stop``): use the exact Hessian from now on if it costs fewer passes than the
        subsample's remaining steps.  The gradient norms are the data's, so this choice,
        like every step's, shapes only the path: what is released is decided by the
        certificate, checked on the full objective."""
        if self.exact or not 0.0 < stop < g_new < g_old:
            return
        steps_left = math.log(g_new / stop) / math.log(g_old / g_new)
        if steps_left > exact_hessian_passes(self.objective) + EXACT_NEWTON_STEPS:
            self.exact = True


#: columns of a dense design whose Hessian (``n p^2 / 2`` flops in BLAS ``syrk``) costs
#: about one pass (``2 n p`` flops, memory-bound) beyond its curvature pass; measured on
#: one thread: 10^5 x 21 a Hessian 2.4 passes' time, 10^5 x 51 2.0, 10^6 x 21 1.1
HESSIAN_COLUMNS_PER_PASS = 25


def exact_hessian_passes(objective):
    """The passes' worth of time of one exact Hessian: ``1 + p/HESSIAN_COLUMNS_PER_PASS``
    on a dense design; unbounded on a sparse one, whose Hessian is a sparse product of
    unknown cost (the subsample's is kept there)."""
    if getattr(objective, "sparse", False):
        return math.inf
    return 1.0 + objective.shape[0] / HESSIAN_COLUMNS_PER_PASS


class _Certified(Exception):
    """Raised inside the objective to stop L-BFGS at the first certified point."""

    def __init__(self, W):
        super().__init__()
        self.W = W


class _Stalled(Exception):
    """Raised inside the objective when ``STALL_EVALS`` evaluations in a row have not
    lowered the best certificate margin: L-BFGS's line search is working on function
    values whose changes are below their rounding (measured: 4e6 x 21 logistic, 23 of
    44 evaluations spent so), and Newton steps, which need gradients only, take over."""

    def __init__(self, W):
        super().__init__()
        self.W = W


def _armijo_newton_step(objective, W, grad, direction, max_halvings=40):
    """``(W_new, grad_new, step)`` of a Newton step halved until Armijo's sufficient
    decrease ``F(W - t d) <= F(W) - 1e-4 t <g, d>`` holds (``d = H^{-1} g`` is a descent
    direction for a positive definite ``H``); ``(None, None, 0)`` if no step passes."""
    value, _ = objective.value_grad(W)
    slope = float(np.sum(grad * direction))
    if not slope > 0.0:
        return None, None, 0.0
    step = 1.0
    for _ in range(max_halvings):
        W_new = W - step * direction
        v_new, g_new = objective.value_grad(W_new)
        if v_new <= value - 1e-4 * step * slope:
            return W_new, g_new, step
        step *= 0.5
    return None, None, 0.0


def _newton_polish(objective, W, stop, margin, max_steps, grad=None):
    """Newton steps from ``W`` (single-output objectives with a ``hessian``), each step
    halved until the gradient norm decreases: near the optimum L-BFGS's line search works
    on function values whose changes fall below their rounding (``~||g||^2``), so it
    crawls; Newton only needs gradients.  ``grad``: the gradient at ``W`` if the caller
    has it (the evaluation is deterministic, so reusing it changes nothing but the pass
    count).  Returns ``(W, certified)``."""
    if grad is None:
        _, grad = objective.value_grad(W)
    H = None
    for _ in range(max_steps):
        if margin(W, grad) <= stop:
            return W, True
        if H is None:
            H = objective.hessian(W)
        try:
            direction = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return W, False
        g_norm = float(np.linalg.norm(grad))
        step = 1.0
        for _ in range(30):
            W_new = W - step * direction
            _, g_new = objective.value_grad(W_new)
            g_new_norm = float(np.linalg.norm(g_new))
            if g_new_norm < g_norm:
                break
            step *= 0.5
        else:
            # A piecewise-quadratic loss (Huber with a small threshold: residuals crossing
            # it change the Hessian) can make every Newton step raise the gradient norm
            # while still descending: fall back to Armijo's test on the objective's value
            # (the damped Newton iteration converges on a strongly convex C^{1,1}
            # objective with its generalised Hessian).  Without it the fit went on to the
            # contraction fallback's millions of steps.
            W_new, g_new, step = _armijo_newton_step(objective, W, grad, direction)
            if W_new is None:
                return W, False
            g_new_norm = float(np.linalg.norm(g_new))
        # keep the Hessian while it still divides the gradient norm by LAGGED_HESSIAN_GAIN
        # per step (a Hessian costs several gradients); recompute it otherwise
        if step < 1.0 or g_new_norm > g_norm / LAGGED_HESSIAN_GAIN:
            H = None
            upgrade = getattr(objective, "consider_exact_hessian", None)
            if upgrade is not None:
                upgrade(g_norm, g_new_norm, stop)
        W, grad = W_new, g_new
    return W, margin(W, grad) <= stop


def _preconditioned_cg(hessp, rhs, diag, rtol, max_iter):
    """Approximate ``H^{-1} rhs`` by conjugate gradients preconditioned with ``diag(H)``
    (Jacobi), stopped at relative residual ``rtol`` or after ``max_iter`` products."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = r / diag
    d = z.copy()
    rz = float(r @ z)
    goal = rtol * float(np.linalg.norm(rhs))
    for _ in range(max_iter):
        Hd = hessp(d)
        dHd = float(d @ Hd)
        if not dHd > 0.0:
            break
        step = rz / dHd
        x += step * d
        r -= step * Hd
        if float(np.linalg.norm(r)) <= goal:
            break
        z = r / diag
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    return x


#: relative residual of Newton-CG's inner solves: ``min(MAX, max(RTOL, sqrt(||g||)))``,
#: the forcing term ``eta_k = min(0.5, sqrt(||g_k||))`` of Nocedal & Wright (*Numerical
#: Optimization*, 2006, §7.1: superlinear convergence), floored at ``RTOL`` (each late step
#: divides the gradient by about that much).  Far from the minimiser a rough direction is
#: enough: on the 10^6 x 10^4 one-hot fit the first step took 3 products instead of 7-8,
#: 39 -> 25 passes in all.  Then the cap on Hessian-vector products per step.
NEWTON_CG_RTOL = 1e-3
NEWTON_CG_RTOL_MAX = 0.5
NEWTON_CG_MAX_PRODUCTS = 100


def _newton_cg_polish(objective, W, stop, margin, max_steps):
    """Hessian-free Newton steps from ``W`` for single-output objectives too wide for a
    dense Hessian (more than 2000 coefficients: one-hot and text designs): each direction
    solves ``H d = grad`` by Jacobi-preconditioned conjugate gradients on Hessian-vector
    products (:meth:`Objective.hessp`: one read of a sparse design's rows, two of a dense
    one's; the curvatures at the current point come from its evaluation's margins on a
    sparse design), each step halved until the
    gradient norm decreases.  The preconditioner is the Hessian's diagonal at the first
    step's curvatures, kept for the later steps (any fixed positive diagonal is a valid
    preconditioner for each solve): recomputed at every step it cost a pass a step and
    changed no step's product count (one-hot 10^6 x 10^4 and 2 10^5 x 5000, TF-IDF 10^5 x
    10^5, epsilon 0.3, 1 and 3, two seeds: 1.93 -> 1.87 s on the first at epsilon 1, one
    thread).  As :func:`_newton_polish`, it needs gradients only (L-BFGS's
    line search stalls on function values below their rounding); the certificate decides.
    Returns ``(W, certified)``."""
    _, grad = objective.value_grad(W)
    diagonal = None
    for _ in range(max_steps):
        if margin(W, grad) <= stop:
            return W, True
        curv = objective.curvature(W)
        g = grad[:, 0]
        if diagonal is None:
            diagonal = objective.hessian_diagonal(curv)
        direction = _preconditioned_cg(lambda v: objective.hessp(curv, v), g, diagonal,
                                       min(NEWTON_CG_RTOL_MAX, max(NEWTON_CG_RTOL, math.sqrt(
                                           float(np.linalg.norm(grad))))),
                                       NEWTON_CG_MAX_PRODUCTS)[:, None]
        g_norm = float(np.linalg.norm(grad))
        step = 1.0
        for _ in range(30):
            W_new = W - step * direction
            _, g_new = objective.value_grad(W_new)
            if float(np.linalg.norm(g_new)) < g_norm:
                break
            step *= 0.5
        else:
            return W, False
        W, grad = W_new, g_new
    return W, margin(W, grad) <= stop


#: L-BFGS iterations before Newton polishing (single-output objectives with a Hessian)
NEWTON_AFTER = 100
#: ... and on designs of at most ``NEWTON_EARLY_MAX_COEF`` coefficients, where a Hessian
#: (``n p^2`` flops in BLAS) costs a few evaluations: Newton after ``NEWTON_EARLY``
#: iterations.  Measured (certificate and result unchanged, warm fits): adult 22,792 x 105
#: logistic 81 -> 16 evaluations, 0.31 -> 0.19 s; bike 12,165 x 62 Huber 113 -> 14, 0.22 ->
#: 0.03 s; 2e5 x 50 logistic 0.27 -> 0.24 s; 2e4 x 300 0.17 -> 0.19 s and 2e4 x 1000
#: 0.31 -> 1.0 s, hence the cap.  Not on designs of ``WARM_START_MIN_ROWS`` rows or more
#: (they start from a subsample's minimiser, then Newton).  Public sizes, so only the path
#: depends on them.  Then ``NEWTON_EARLY`` 10 -> 0 (Newton from 0; the gradient-norm
#: halving and the Armijo fallback of :func:`_newton_polish` keep its steps safe), default
#: estimators, 5 seeds, median fit, one run: adult logistic 22 -> 15 passes (ε = 0.5), 26
#: -> 17 (ε = 2); bank 25 -> 12-14; wine Huber 19-21 -> 10-11 (7.3 -> 3.9 ms); bike 17-20
#: -> 10 (31 -> 20 ms); 10^4 x 20 synthetic logistic 15 -> 13, Huber 16 -> 8.
NEWTON_EARLY = 0
NEWTON_EARLY_MAX_COEF = 200
#: a Newton step that divides the gradient norm by at least this keeps its Hessian for the
#: next step
LAGGED_HESSIAN_GAIN = 8.0
NEWTON_STEPS = 30
#: wide sparse designs (Newton-CG's, more than 2000 coefficients) below the warm-start size
#: start with Newton-CG instead of L-BFGS (:func:`certified_minimize`)
NEWTON_CG_FIRST = True
#: evaluations without a better certificate margin before Newton takes over
STALL_EVALS = 6


def certified_minimize(objective, mu, tau, smoothness, coef_bound, max_iter, tau_stop=None):
    """Return ``(W, info)`` with ``||W - argmin F|| <= tau`` guaranteed (mu > 0).

    Parameters
    ----------
    objective : Objective
    mu : float
        Strong-convexity modulus of F (the L2 strength ``alpha``).
    tau : float
        Required distance to the exact minimiser.
    smoothness : float
        ``beta_l``, smoothness of the unregularised loss (for the fallback step size).
    coef_bound : float
        Public bound ``D >= ||argmin F||`` valid for every dataset (fallback iterations).
    max_iter : int
        Iteration cap of L-BFGS.
    tau_stop : float, optional
        Stop at the first evaluated point certified within ``tau_stop <= tau`` of the
        minimiser (default ``tau``).  Smaller values only buy precision.

    Every gradient evaluation is checked against ``||grad|| + allowance <= mu tau_stop``;
    L-BFGS is aborted at the first point that passes (mid line search is fine: any point
    with a small gradient is certified).  If L-BFGS ends without such a point, its final
    point is accepted when it passes the privacy threshold ``mu tau``; otherwise the
    gradient-descent fallback runs.
    """
    p = objective.shape[0] * objective.shape[1]
    target = mu * tau
    stop = mu * (tau if tau_stop is None else min(tau, tau_stop))
    cache = {}

    def margin(W, grad):
        return float(np.linalg.norm(grad)) + objective.rounding_allowance(W)

    newton_after = NEWTON_EARLY if (objective.shape[0] <= NEWTON_EARLY_MAX_COEF
                                    and objective.n < WARM_START_MIN_ROWS) else NEWTON_AFTER
    newton = objective.shape[1] == 1 and hasattr(objective, "hessian") \
        and objective.shape[0] <= DENSE_HESSIAN_MAX_COEF and int(max_iter) > newton_after
    # wider single-output designs: Hessian-free Newton once L-BFGS stalls
    newton_cg = objective.shape[1] == 1 and objective.shape[0] > DENSE_HESSIAN_MAX_COEF \
        and hasattr(objective, "hessp")
    best = {"margin": math.inf, "W": None, "since": 0, "watch": newton or newton_cg}

    def fun(w):
        value, grad = objective.value_grad_flat(w)
        W = w.reshape(objective.shape)
        m = margin(W, grad)
        if m <= stop:
            raise _Certified(W.copy())
        if best["watch"]:
            if m < best["margin"]:
                best.update(margin=m, W=W.copy(), grad=grad.copy(), since=0)
            else:
                best["since"] += 1
                if best["since"] >= STALL_EVALS:
                    raise _Stalled(best["W"])
        # copies: the certificate is later checked on this gradient (Newton's start, the
        # final margin), so nothing scipy does with the arrays it is handed may change it
        cache["w"], cache["grad"] = w.copy(), grad.copy()
        return value, grad

    start = np.zeros(p)
    if objective.n >= (WARM_START_MIN_ROWS if objective.shape[0] <= DENSE_HESSIAN_MAX_COEF
                       else WIDE_WARM_START_MIN_ROWS):
        start, sub = _warm_start(objective, max_iter)
        if objective.shape[1] == 1 and objective.shape[0] <= DENSE_HESSIAN_MAX_COEF \
                and hasattr(sub, "hessian"):
            # Newton steps from the warm start with the subsample's Hessian: on 10^6 x 21
            # logistic data 2-4 full passes after the warm start, where L-BFGS took ~25
            W, ok = _newton_polish(_SubsampledHessian(objective, sub),
                                   start.reshape(objective.shape), stop, margin,
                                   NEWTON_STEPS)
            if ok:
                return W, {"inner_solver": "subsampled_newton",
                           "n_iter": objective.n_evals}
            start = W.ravel()
        del sub        # a sparse subsample is a copy of its rows: not kept through L-BFGS
        if newton_cg:
            # wide designs (one-hot, text): Newton-CG from the warm start at once.  L-BFGS
            # spent ~9 full passes there without lowering the gradient (its first steps
            # overshoot; the stall switch then handed over to Newton-CG anyway): 10^6 x
            # 10^4 one-hot logistic (bench_scale), 48 -> 39 passes, 25 with the forcing
            # term of _newton_cg_polish
            W, ok = _newton_cg_polish(objective, start.reshape(objective.shape), stop,
                                      margin, NEWTON_STEPS)
            if ok:
                return W, {"inner_solver": "warm_start+newton_cg",
                           "n_iter": objective.n_evals}
            start = W.ravel()
    elif newton_cg and NEWTON_CG_FIRST and getattr(objective, "sparse", False):
        # wide sparse designs below the warm-start size: Newton-CG from 0, whose memory is a
        # few p-vectors where L-BFGS keeps 2 x 20 (32 MB at p = 10^5, half the TF-IDF
        # design's CSR arrays).  TF-IDF-like 10^5 x 10^5 logistic, 3 seeds, quiet: 21
        # passes and 0.59 / 0.38 s (1 / 2 threads) against 22-32 passes and 1.07 / 0.77 s
        # for L-BFGS then Newton-CG, the same accuracy.  Not on dense wide designs, whose
        # Hessian-vector products form the clipped rows block by block: 20,000 x 2,500
        # logistic 0.69 -> 1.29 s, Huber 0.62 -> 1.87 s.  L-BFGS runs on if it fails
        W, ok = _newton_cg_polish(objective, start.reshape(objective.shape), stop, margin,
                                  NEWTON_STEPS)
        if ok:
            return W, {"inner_solver": "newton_cg", "n_iter": objective.n_evals}
        start = W.ravel()
    lbfgs_iter = min(int(max_iter), newton_after) if newton else int(max_iter)
    stalled = None
    if lbfgs_iter == 0:
        # Newton from the start (small designs, NEWTON_EARLY = 0): L-BFGS only continues
        # if Newton's steps stop short of the certificate
        res = OptimizeResult(x=start, nit=0)
    else:
        try:
            res = minimize(
                fun,
                start,
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": lbfgs_iter, "ftol": 0.0, "gtol": 0.0, "maxcor": 20},
            )
        except _Certified as done:
            return done.W, {"inner_solver": "lbfgs", "n_iter": objective.n_evals}
        except _Stalled as stop_early:
            stalled = stop_early.W
    best["watch"] = False          # the continuation below runs L-BFGS to its end
    if newton_cg:
        W0 = stalled if stalled is not None else res.x.reshape(objective.shape)
        W, ok = _newton_cg_polish(objective, W0, stop, margin, NEWTON_STEPS)
        if ok:
            return W, {"inner_solver": "lbfgs+newton_cg", "n_iter": objective.n_evals}
        res = OptimizeResult(x=W.ravel(), nit=objective.n_evals)   # checked below
    if newton:
        W0 = stalled if stalled is not None else res.x.reshape(objective.shape)
        # the gradient at W0 when it was evaluated last (L-BFGS's final point usually is,
        # a stalled run's best point always): one pass fewer
        if stalled is not None:
            grad0 = best["grad"].reshape(objective.shape)
        elif "w" in cache and np.array_equal(cache["w"], res.x):
            grad0 = cache["grad"].reshape(objective.shape)
        else:
            grad0 = None
        W, ok = _newton_polish(objective, W0, stop, margin, NEWTON_STEPS, grad=grad0)
        if ok:
            return W, {"inner_solver": "lbfgs+newton" if lbfgs_iter else "newton",
                       "n_iter": objective.n_evals}
        try:
            res = minimize(fun, W.ravel(), jac=True, method="L-BFGS-B",
                           options={"maxiter": max(1, int(max_iter) - lbfgs_iter),
                                    "ftol": 0.0, "gtol": 0.0, "maxcor": 20})
        except _Certified as done:
            return done.W, {"inner_solver": "lbfgs", "n_iter": objective.n_evals}
    w = res.x
    if "w" in cache and np.array_equal(cache["w"], w):
        grad = cache["grad"]
    else:
        _, grad = objective.value_grad_flat(w)
    W = w.reshape(objective.shape)
    info = {"inner_solver": "lbfgs", "n_iter": int(res.nit)}
    if margin(W, grad) <= target:
        return W, info
    # Fallback: GD from 0 with step 2/(beta_l + 2 mu) contracts ||W - W_hat|| by
    # (1 - step*mu) per step (F is mu-SC and (beta_l + mu)-smooth), and ||W_hat|| <= D.
    step = 2.0 / (smoothness + 2.0 * mu)
    rate = 1.0 - step * mu
    if rate >= 1.0:
        # 2 mu/(beta + 2 mu) below 2^-53: more than ~2^53 log(D/tau) steps
        raise ValueError(
            f"alpha={mu:.3g} is too small against the loss's smoothness beta={smoothness:.3g} "
            "(alpha/beta < 2^-53) for the certified minimiser's gradient-descent fallback: "
            "raise alpha, or rescale X publicly (beta grows with data_norm^2)")
    # rate = beta/(beta + 2 mu), which rounds to 0 when mu >> beta: log1p is exact there
    log_rate = math.log(rate) if rate > 0.0 else -math.log1p(2.0 * mu / smoothness) \
        if smoothness > 0.0 else -math.inf
    n_steps = max(1, math.ceil(math.log(coef_bound / tau) / -log_rate))
    W = gradient_descent(objective, step, n_steps)
    info.update(inner_solver="gd_fallback", n_iter=info["n_iter"] + n_steps)
    return W, info
