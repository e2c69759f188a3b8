r"""Private SpiderBoost with adaptive batches and Hessian-model escapes (Liu & Talwar, v2).

Finds an approximate second-order stationary point of a nonconvex robust regression loss
``f(w; (a, y)) = l(a.w - y)`` (Tukey, Welsch, Cauchy; :mod:`skdp._losses`) in **one pass**
over the data: Algorithm 3 of Liu & Talwar (2025, v2) with its errata fixed and the target
accuracy chosen by a public rule.

Constants.  Rows ``a = [x, intercept_scaling]`` are clipped to ``||a|| <= R =
data_norm``; then ``G = L1 R``, ``M = L2 R^2``, ``rho = L3 R^3`` bound the per-example
gradient, its Lipschitz constant and the Hessian's Lipschitz constant, and
``B = sup l(-y)`` bounds ``F(0) - inf F`` (start ``x_0 = 0``).

Algorithm (per-epoch tree).  A random order of the rows is drawn first;
batches are consecutive, never reused (a data-use counter ``ptr``; the run stops when the
next batch cannot be filled).  An *epoch* starts with a refresh batch of size ``b``:
``grad = O1(x)``, ``H = O3(x)`` (kept as Hessian weights, never formed), and a new binary
tree.  Each further step draws ``b_t = b_t(D_t)`` rows, ``D_t = ||x_t - x_{t-1}||``, and
adds the gradient difference ``O2`` (and Hessian difference ``O4``).  The private
gradient is ``grad + TREE(j)`` (``j`` = leaf index in the epoch).  When it is small
(``<= thr``) and no escape is pending, an escape phase follows the frozen model
``g = g_a + H_a (x - x_a) + xi``, ``xi ~ N(0, sigma_esc^2 I)``, for at most ``Gamma`` steps
or until ``||x - x_a|| >= Xi``.  Steps are ``x <- x - eta (g + alpha x)``, ``eta = 1/(M +
alpha)``.  A new epoch starts when the drift (sum of step norms) reaches ``kappa``, after
``K`` escapes, or when the tree is full (``j = Sigma``).

Privacy (replace-one, with sensitivity ``2G/b``).  Released: every private
gradient (through the tree's node sums) and every escape direction; everything else
(iterates, ``D_t``, ``b_t``, the refresh and escape decisions, the data consumed, the
stopping time) is a function of those and public inputs.

* Tree leaves: O1 has sensitivity ``2 c1/b`` and O2 ``2 c2/b_t`` with the per-row clips
  ``c1 = min(G, s_g b/2)``, ``c2 = min(M D_t, s_g b_t/2)`` (kernel docstring), so every leaf
  moves by ``<= s_g`` for every history.  ``b >= 2G/s_g`` and ``b_t >= 2 M D_t/s_g`` make
  the clips no-ops for the true constants.  A record is in one leaf of one epoch tree, so
  it enters ``<= m = floor(log2 Sigma) + 1`` node releases: ``sqrt(m) s_g/sigma_tree``-GDP
  (:mod:`skdp._mechanisms._tree`).
* Escape releases: ``g_a`` is already private, ``x, x_a`` are public and
  ``||x - x_a|| < Xi``; ``H_a`` is a sum of per-row terms over the anchor epoch, each in one
  batch, clipped to operator norm ``min(M, s_H b/2)/b`` (O3) or ``min(rho D, s_H b_t/2)/b_t``
  (O4), so replacing a record moves ``H_a`` by ``<= s_H`` and each release by
  ``<= s_H Xi``.  A record influences ``H`` only in its epoch, at most ``K`` escapes anchor
  per epoch (the ``count >= K`` refresh), each releasing ``<= Gamma`` vectors: at most
  ``K Gamma`` Gaussian releases with ``mu = s_H Xi / sigma_esc``.
* Composition (a record may be in both, O1/O3 and O2/O4 share batches):
  ``mu^2 = m (s_g/sigma_tree)^2 + K Gamma (s_H Xi/sigma_esc)^2`` -- exact (GDP of adaptive
  Gaussian compositions).  The dp-accounting event is the composition of
  ``SelfComposed(gaussian_event(sigma_tree, s_g), m)`` and
  ``SelfComposed(gaussian_event(sigma_esc, s_H Xi), K Gamma)``.

Adaptive batch sizes are safe: ``b_t`` is a function of ``D_t`` (post-processing of
released outputs) chosen so that the sensitivity bound holds for every history (Thm 2.2
allows adaptively chosen leaves).  Nothing that shapes the run reads the un-noised
gradient or Hessian.

Calibration (``k_tree = sigma_tree/s_g``, ``k_esc = sigma_esc/(s_H Xi)``).
``"tight"`` (default): ``mu*`` = the largest GDP parameter within
``(epsilon, delta)``, split evenly: ``k_tree = sqrt(2m)/mu*``, ``k_esc = sqrt(2 K Gamma)/mu*``.
``"paper"``: Thm 2.2 and Lemma 3.13 at ``(epsilon/2, delta/2)`` with the errata fixed:
``k_tree = 8 sqrt(ln(max(Sigma, 2)) ln(2/delta))/epsilon``,
``k_esc = 4 sqrt(K Gamma ln(2/delta))/epsilon``.  Either way the event is checked against
the target before the data is touched.

Parameters from ``gamma`` (``c_b = c_T = 4``, ``K = 1``, ``c_thr = 2``,
``iota = 0.1``): ``Xi = sqrt(gamma/rho)``, ``varkappa = sqrt(rho gamma)/2``,
``Gamma = ceil((2M/sqrt(rho gamma)) ln(32 sqrt(p) M/(iota^2 sqrt(rho gamma))))``,
``T_max = Sigma = ceil(c_T (B M/gamma^2 + Gamma B sqrt(rho)/gamma^{3/2}))``,
``sigma_tree = gamma/sqrt(p m)``, ``s_g = sigma_tree/k_tree``,
``sigma_esc = gamma/sqrt(p ln(T_max/iota))``, ``s_H = sigma_esc/(k_esc Xi)``,
``b = max(2G/s_g, c_b G^2/gamma^2, 2M/s_H, c_b M^2/varkappa^2)``,
``kappa = max(gamma sqrt(b/c_b), gamma)``,
``b_t(D) = max(1, ceil(D max(2M/s_g, 2 rho/s_H, c_b kappa M/gamma^2, 4 c_b rho kappa/(M gamma))))``,
``thr = c_thr gamma``.  ``gamma`` itself is the smallest value of a geometric grid (ratio
1.02, from ``G`` down) whose predicted data use ``N(gamma)`` fits the training rows
with ``b <= n/4``: a public computation.  If none does, a ``ValueError`` names the ``n``
required; if ``gamma >= G/2`` the fit is flagged as vacuous (every point is nearly a
``gamma``-stationary point).

Output.  ``selection="last"``: the last iterate (post-processing).
``selection="private"``: ``n_v = ceil(0.1 n)`` rows are split off by the random order (a
data-independent split) and never enter the stream; ``K_c = min(32, t)`` evenly spaced
iterates are scored on them by ``s(x) = max(||grad F_v(x)||, sqrt(thr/rho) (-lambda_min(
hess F_v(x)))_+)`` (curvature term for ``p <= 500``), each score with sensitivity
``Delta_s = (2/n_v) max(G, M sqrt(thr/rho))`` (Weyl; the max and ``(.)_+`` are
1-Lipschitz).  The vector of scores is released with Gaussian noise of GDP parameter
``mu`` equal to the training run's (L2 sensitivity ``sqrt(K_c) Delta_s``) and the arg-min
is returned.  A replaced record is either in the training part (the selection is
post-processing of the run, whose scores then move by 0) or in the held-out part (the run
is unchanged; the selection is ``mu``-GDP): both are ``mu``-GDP, so the fit is ``mu``-GDP
and its event is the training event.  Falls back to ``"last"`` when ``n_v < 200``.
``selection="average"``: the mean of the last half of the logged iterates (the stored
trajectory -- every ``stride``-th iterate, ``stride = 1`` unless ``T_max p`` exceeds the
storage budget -- followed by the final iterate when it is not already stored; entries
``k >= K//2`` of those ``K``).  Every iterate is a function of the released noisy tree sums,
escape directions and public inputs, so the average is post-processing: it reads no data,
draws no noise, and the run (all rows train) and its event are those of ``"last"``.
"""

import functools
import math
import warnings

import dp_accounting
import numpy as np

from ..accounting import compose, gaussian_delta, gaussian_event, gaussian_mu_for, get_delta
from .._mechanisms import clip_and_augment, release_gaussian
from .._mechanisms._exact import MAX_EXACT_DRAWS, exact_gaussian_noise
from .._mechanisms._summation import summation_factor
from .._numba_cache import with_defaults
from .._mechanisms._tree import tree_height, tree_node_sensitivity
from .._mechanisms._clipping import row_norms
from ._result import SolverResult, split_intercept
from ._validation import check_gaussian_solver_args
from ._spider_kernel import (
    FLAG_ANCHOR,
    FLAG_ESCAPE,
    FLAG_REFRESH,
    I_B,
    I_ESCAPE,
    I_GAMMA,
    I_HORIZON,
    I_K,
    I_M,
    I_STRIDE,
    I_TMAX,
    N_FLOAT,
    N_INT,
    F_ALPHA,
    F_BT_COEF,
    F_ETA,
    F_G,
    F_KAPPA,
    F_M,
    F_RHO,
    F_SG,
    F_SH,
    F_SIGMA_ESC,
    F_SIGMA_TREE,
    F_THR,
    F_XI,
    spider_loop,
)
from .._stacklevel import user_stacklevel

__all__ = ["solve_spider", "spider_parameters", "spider_plan", "choose_gamma",
           "noisy_argmin", "SpiderParameters"]

C_B = 4.0
C_T = 4.0
K_ESCAPES = 1
C_THR = 2.0
IOTA = 0.1
GAMMA_RATIO = 1.02
GAMMA_GRID_DECADES = 8
TRAJ_BUDGET = 4_000_000   # stored iterate coordinates
VALIDATION_FRACTION = 0.1
MIN_VALIDATION = 200
N_CANDIDATES = 32
CURVATURE_MAX_DIM = 500


class SpiderParameters(dict):
    """The public parameters of one run (a dict with attribute access)."""

    __getattr__ = dict.__getitem__


@functools.lru_cache(maxsize=64)
def _mu_star(epsilon, delta):
    """Largest GDP parameter within (epsilon, delta), less a relative margin of 1e-9 that
    absorbs the rounding of splitting it between the tree and the escapes and composing it
    back (cached: the gamma scan asks often).  Without it the split run's ``mu`` could land
    an ulp above the boundary, where the guard refused it (seen at epsilon = 50)."""
    return gaussian_mu_for(epsilon, delta) * (1.0 - 1e-9)


def _k_values(epsilon, delta, horizon, m, K, Gamma, calibration):
    """Noise-to-sensitivity ratios ``(k_tree, k_esc)``."""
    if calibration == "paper":
        l2d = math.log(2.0 / delta)
        k_tree = 8.0 * math.sqrt(math.log(max(horizon, 2)) * l2d) / epsilon
        k_esc = 4.0 * math.sqrt(K * Gamma * l2d) / epsilon
    else:
        mu_half = _mu_star(epsilon, delta) / math.sqrt(2.0)
        k_tree = math.sqrt(m) / mu_half
        k_esc = math.sqrt(K * Gamma) / mu_half
    return k_tree, k_esc


def spider_parameters(gamma, *, p, G, M, rho, B, epsilon, delta, calibration="tight",
                      alpha=0.0, max_iter=None):
    """All public parameters of a run with target accuracy ``gamma``.

    Returns a :class:`SpiderParameters` with ``eta, Xi, Gamma, T_max, horizon, m, k_tree,
    k_esc, sigma_tree, s_g, sigma_esc, s_H, b, kappa, bt_coef, thr, K, mu, N`` (``N`` is the
    predicted data use; ``mu`` the GDP parameter of the whole run).

    Examples
    --------
    >>> from skdp._solvers._spider import spider_parameters
    >>> P = spider_parameters(0.1, p=10, G=0.4289, M=1.0, rho=1.9518, B=0.5,
    ...                       epsilon=1.0, delta=1e-5)
    >>> P.b > 0 and P.Gamma > 0 and P.m == P.T_max.bit_length()
    True
    """
    gamma = float(gamma)
    rg = math.sqrt(rho * gamma)
    Xi = math.sqrt(gamma / rho)
    varkappa = rg / 2.0
    Gamma = int(math.ceil((2.0 * M / rg) * math.log(32.0 * math.sqrt(p) * M / (IOTA**2 * rg))))
    Gamma = max(Gamma, 1)
    T_max = int(math.ceil(C_T * (B * M / gamma**2 + Gamma * B * math.sqrt(rho) / gamma**1.5)))
    T_max = max(T_max, 1)
    if max_iter is not None:
        T_max = min(T_max, int(max_iter))
    horizon = T_max
    m = tree_height(horizon)
    K = K_ESCAPES
    k_tree, k_esc = _k_values(epsilon, delta, horizon, m, K, Gamma, calibration)
    sigma_tree = gamma / math.sqrt(p * m)
    s_g = sigma_tree / k_tree
    sigma_esc = gamma / math.sqrt(p * math.log(T_max / IOTA))
    s_H = sigma_esc / (k_esc * Xi)
    b = max(math.ceil(2 * G / s_g), math.ceil(C_B * G**2 / gamma**2), math.ceil(2 * M / s_H),
            math.ceil(C_B * M**2 / varkappa**2), 1)
    kappa = max(gamma * math.sqrt(b / C_B), gamma)
    terms = (2 * M / s_g, 2 * rho / s_H, C_B * kappa * M / gamma**2,
             4 * C_B * rho * kappa / (M * gamma))
    bt_coef = max(terms)
    N = (b * (1 + B * M / (gamma * kappa) + B * math.sqrt(rho) / gamma**1.5)
         + sum(terms) * B / gamma + T_max)
    mu = math.sqrt(m * (s_g / sigma_tree) ** 2 + K * Gamma * (s_H * Xi / sigma_esc) ** 2)
    return SpiderParameters(
        gamma=gamma, eta=1.0 / (M + alpha), Xi=Xi, varkappa=varkappa, Gamma=Gamma,
        T_max=T_max, horizon=horizon, m=m, K=K, k_tree=k_tree, k_esc=k_esc,
        sigma_tree=sigma_tree, s_g=s_g, sigma_esc=sigma_esc, s_H=s_H, b=int(b), kappa=kappa,
        bt_coef=bt_coef, thr=C_THR * gamma, mu=mu, N=N, G=G, M=M, rho=rho, B=B, p=p,
    )


def choose_gamma(n_train, **kwargs):
    """Smallest grid ``gamma`` with ``N(gamma) <= n_train`` and ``b <= n_train/4``.

    The grid is ``G * 1.02^-k`` over eight decades.  Raises ``ValueError`` naming the ``n``
    the smallest feasible grid value would need when none fits.

    Examples
    --------
    >>> from skdp._solvers._spider import choose_gamma
    >>> P = choose_gamma(10**5, p=10, G=0.4289, M=1.0, rho=1.9518, B=0.5,
    ...                  epsilon=1.0, delta=3e-6)
    >>> 0.05 < P.gamma < 0.2
    True
    """
    G = kwargs["G"]
    n_steps = int(GAMMA_GRID_DECADES * math.log(10) / math.log(GAMMA_RATIO))
    best, need = None, math.inf
    for k in range(n_steps + 1):
        gamma = G * GAMMA_RATIO ** (-k)
        P = spider_parameters(gamma, **kwargs)
        required = max(P.N, 4 * P.b)
        need = min(need, required)
        if required <= n_train:
            best = P
        elif best is not None:
            break  # N grows as gamma shrinks: the previous grid point is the smallest
    if best is None:
        raise ValueError(
            f"solver='spider' needs at least n = {int(math.ceil(need))} training rows for "
            f"any target accuracy gamma <= G = {G:.4g} at epsilon = {kwargs['epsilon']:g} "
            f"(it has {n_train}); use more data, a larger epsilon, or solver='dpsgd'"
        )
    return best


def _spider_event(P):
    return compose(
        dp_accounting.SelfComposedDpEvent(gaussian_event(P.sigma_tree, P.s_g), P.m),
        dp_accounting.SelfComposedDpEvent(gaussian_event(P.sigma_esc, P.s_H * P.Xi),
                                          P.K * P.Gamma),
    )


def _scores(Xv, yv, cand, loss, alpha, weight):
    """Selection scores of the candidate rows ``cand`` on the held-out rows."""
    from .._losses._kernels import robust_derivatives

    n_v, p = Xv.shape
    out = np.empty(cand.shape[0])
    D = np.empty((n_v, 4))
    for k, w in enumerate(cand):
        robust_derivatives(Xv @ w - yv, loss.loss_id, loss.param, D)
        grad = Xv.T @ D[:, 1] / n_v + alpha * w
        s = float(np.linalg.norm(grad))
        if p <= CURVATURE_MAX_DIM and weight > 0:
            H = (Xv.T * D[:, 2]) @ Xv / n_v + alpha * np.eye(p)
            lam = float(np.linalg.eigvalsh(H)[0])
            s = max(s, weight * max(0.0, -lam))
        out[k] = s
    return out


def spider_plan(n, p, loss, *, epsilon, delta, alpha, data_norm, y_bound=None,
                calibration="tight", max_iter=None, selection="last", escape=True, gamma=None,
                warn=False):
    """Everything public about a run on ``n`` rows of ``p`` coordinates, before any data.

    Returns ``(P, event, n_v, selection)``: the :class:`SpiderParameters`, the dp-accounting
    event the run releases, the held-out size and the effective output rule.  Used by the
    solver and by the estimator's privacy-ledger planner (same function, same event).

    Examples
    --------
    >>> from skdp._losses import WelschLoss
    >>> from skdp._solvers._spider import spider_plan
    >>> P, event, n_v, sel = spider_plan(10**5, 3, WelschLoss(), epsilon=1.0, delta=1e-6,
    ...                                  alpha=0.0, data_norm=1.0, selection="private")
    >>> n_v, sel, len(event.events)
    (10000, 'private', 2)
    """
    epsilon, delta, alpha = float(epsilon), float(delta), float(alpha)
    if not hasattr(loss, "hessian_lipschitz"):
        raise ValueError(
            f"solver='spider' needs a loss with a Hessian-Lipschitz constant (Tukey, Welsch, "
            f"Cauchy), got {type(loss).__name__}"
        )
    epsilon, delta, alpha = check_gaussian_solver_args(epsilon, delta, alpha, calibration,
                                                       "spider")
    if selection not in ("last", "private", "average"):
        raise ValueError(
            f"selection must be 'last', 'private' or 'average', got {selection!r}")
    B = loss.sup_loss_at_zero(y_bound)
    if not math.isfinite(B):
        raise ValueError(
            f"{type(loss).__name__} is unbounded: solver='spider' needs a public y_bound to "
            "bound F(0) - inf F (targets are clipped to it)"
        )
    G, M, rho = loss.constants(data_norm)
    n_v = int(math.ceil(VALIDATION_FRACTION * n)) if selection == "private" else 0
    if selection == "private" and n_v < MIN_VALIDATION:
        selection, n_v = "last", 0
    kw = dict(p=p, G=G, M=M, rho=rho, B=B, epsilon=epsilon, delta=delta,
              calibration=calibration, alpha=alpha, max_iter=max_iter)
    P = spider_parameters(gamma, **kw) if gamma is not None else choose_gamma(n - n_v, **kw)
    if not escape:
        P = SpiderParameters(P, K=0, mu=math.sqrt(P.m) * P.s_g / P.sigma_tree)
    if warn and P.gamma >= G / 2:
        warnings.warn(
            f"solver='spider': the smallest target accuracy the data allows, gamma = "
            f"{P.gamma:.3g}, is >= G/2 = {G / 2:.3g}; the fit is nearly vacuous (every point "
            "is almost a gamma-stationary point). Use more data or a larger epsilon.",
            UserWarning, stacklevel=user_stacklevel(),
        )
    event = _spider_event(P) if escape else dp_accounting.SelfComposedDpEvent(
        gaussian_event(P.sigma_tree, P.s_g), P.m)
    if gaussian_delta(epsilon, P.mu) > delta or get_delta(event, epsilon) > delta:
        raise ValueError(  # never reached with the calibrations above; a guard
            f"the calibrated run is not ({epsilon}, {delta})-DP (mu = {P.mu:.6g})")
    return P, event, n_v, selection


def noisy_argmin(scores, score_sensitivity, mu, rng, source=None):
    """Index of the smallest of ``scores + N(0, sigma^2 I)``, ``sigma = sqrt(K) Delta/mu``.

    Each of the ``K`` scores moves by at most ``Delta`` between neighbours, so the score
    vector moves by at most ``sqrt(K) Delta`` in L2 and its Gaussian release is ``mu``-GDP;
    the arg-min is post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._solvers._spider import noisy_argmin
    >>> noisy_argmin(np.array([3.0, 0.0, 2.0]), 1e-3, 1.0, np.random.default_rng(0))
    1
    """
    scores = np.asarray(scores, dtype=float)
    sigma = math.sqrt(scores.size) * float(score_sensitivity) / float(mu)
    if source is not None:   # the scores' exact grid release (same event), then argmin
        noisy, _ = release_gaussian(scores, sigma, math.sqrt(scores.size) *
                                    float(score_sensitivity), rng, source)
        return int(np.argmin(noisy))
    return int(np.argmin(scores + sigma * rng.standard_normal(scores.size)))


def exact_sensitivities(P, n):
    """``(s_tree, s_esc)``: the leaf and escape sensitivities the grid releases are
    calibrated for, rounding included (:mod:`skdp._mechanisms._summation`).

    A leaf is a float64 mean of at most ``n`` clipped terms (sensitivity ``s_g F(n)``) of
    norm ``<= s_g b_t/2 <= s_g n/2``; a node sums at most ``horizon`` leaves (depth
    ``<= horizon - 1``), which errs by ``gamma_h h s_g n/2`` on each side
    (:func:`~skdp._mechanisms._tree.tree_node_sensitivity`).  An escape
    release ``H_a v`` is a sum of at most ``n`` terms of norm ``<= s_H Xi/2``: ``s_H Xi
    F(n)``."""
    s_tree = tree_node_sensitivity(P.s_g, n, P.s_g * n / 2.0, P.horizon)
    s_esc = P.s_H * P.Xi * summation_factor(n)
    return s_tree, float(np.nextafter(s_esc, np.inf))


def _exact_noise(P, p, n, escape, source):
    """``(noise_tree, gamma_tree, noise_esc, gamma_esc)`` of :func:`spider_loop`'s exact
    path: one tree node per step and at most one escape release per step (``T_max`` rows
    of ``p`` integers each), on grids calibrated for :func:`exact_sensitivities` with the
    noise scaled by the same factor, so the recorded multipliers ``sigma/s`` still hold."""
    count = P.T_max * p * (2 if escape else 1)
    if count > MAX_EXACT_DRAWS:
        raise ValueError(
            f"secure_noise: solver='spider' would pre-draw {count} exact noise integers "
            f"(limit {MAX_EXACT_DRAWS}); use max_iter, secure_noise=False or another solver")
    s_tree, s_esc = exact_sensitivities(P, n)
    # public bounds on the released coordinates: a node sums <= horizon leaves of norm <= G
    leaf = max(P.G, P.s_g * n / 2.0)
    g_t, z_t, _ = exact_gaussian_noise(source, P.sigma_tree * s_tree / P.s_g, s_tree, p,
                                       P.horizon * leaf, P.T_max * p)
    if not escape:
        return (np.ascontiguousarray(z_t.reshape(P.T_max, p)), float(g_t))
    g_e, z_e, _ = exact_gaussian_noise(source, P.sigma_esc * s_esc / (P.s_H * P.Xi), s_esc,
                                       p, n * P.M * P.Xi, P.T_max * p)
    return (np.ascontiguousarray(z_t.reshape(P.T_max, p)), float(g_t),
            np.ascontiguousarray(z_e.reshape(P.T_max, p)), float(g_e))


def solve_spider(X, y, loss, *, epsilon, delta, alpha, data_norm, n_outputs=1,
                 fit_intercept=True, intercept_scaling=1.0, y_bound=None, calibration="tight",
                 max_iter=None, max_coef_norm=None, rng, selection="last", escape=True,
                 gamma=None, noise_source=None):
    """Private SpiderBoost (module docstring).  Returns a :class:`SolverResult`.

    ``loss`` must be a nonconvex robust loss spec (``hessian_lipschitz``); ``n_outputs``
    must be 1; ``max_coef_norm`` is ignored (the run is unconstrained); ``max_iter`` caps
    ``T_max`` (public, before calibration); ``escape=False`` runs the FOSP variant
    (ablation: no escape phases, no escape releases); ``gamma`` overrides the rule
    """
    n, d = X.shape
    p = d + int(bool(fit_intercept))
    if int(n_outputs) != 1:
        raise ValueError("solver='spider' fits a single-output regression")
    # 1. Public split, parameters and event (no data read).
    P, event, n_v, selection = spider_plan(
        n, p, loss, epsilon=epsilon, delta=delta, alpha=alpha, data_norm=data_norm,
        y_bound=y_bound, calibration=calibration, max_iter=max_iter, selection=selection,
        escape=escape, gamma=gamma, warn=True)
    epsilon, delta, alpha = float(epsilon), float(delta), float(alpha)
    G, M, rho = P.G, P.M, P.rho
    n_train = n - n_v

    # 2. The run, on clipped rows only.
    Xc = clip_and_augment(X, data_norm, fit_intercept, intercept_scaling)
    yc = np.ascontiguousarray(y, dtype=np.float64)
    norms = np.empty(n)
    row_norms(Xc, norms)
    order = rng.permutation(n).astype(np.int64)
    val_rows, stream = order[:n_v], np.ascontiguousarray(order[n_v:])
    fpar = np.zeros(N_FLOAT)
    fpar[F_ETA], fpar[F_ALPHA], fpar[F_G], fpar[F_M], fpar[F_RHO] = P.eta, alpha, G, M, rho
    fpar[F_SG], fpar[F_SH], fpar[F_KAPPA], fpar[F_XI], fpar[F_THR] = (
        P.s_g, P.s_H, P.kappa, P.Xi, P.thr)
    fpar[F_SIGMA_TREE], fpar[F_SIGMA_ESC], fpar[F_BT_COEF] = P.sigma_tree, P.sigma_esc, P.bt_coef
    if noise_source is None:
        # float noise: the rounding-inclusive sensitivities of the grid releases, the
        # noise scaled by the same factors (the recorded multipliers sigma/s hold)
        s_tree, s_esc = exact_sensitivities(P, n)
        fpar[F_SIGMA_TREE] = float(np.nextafter(P.sigma_tree * (s_tree / P.s_g), np.inf))
        fpar[F_SIGMA_ESC] = float(np.nextafter(P.sigma_esc * (s_esc / (P.s_H * P.Xi)),
                                               np.inf))
    stride = max(1, math.ceil(P.T_max * p / TRAJ_BUDGET))
    ipar = np.zeros(N_INT, dtype=np.int64)
    ipar[I_B], ipar[I_K], ipar[I_GAMMA], ipar[I_HORIZON] = P.b, max(P.K, 1), P.Gamma, P.horizon
    ipar[I_TMAX], ipar[I_M], ipar[I_ESCAPE], ipar[I_STRIDE] = P.T_max, P.m, int(escape), stride
    traj = np.zeros((P.T_max // stride + 1, p))
    log_bt = np.zeros(P.T_max, dtype=np.int64)
    log_D = np.zeros(P.T_max)
    log_flag = np.zeros(P.T_max, dtype=np.int64)
    log_ptr = np.zeros(P.T_max, dtype=np.int64)
    w = np.zeros(p)
    exact = () if noise_source is None else _exact_noise(P, p, n, escape, noise_source)
    exact = with_defaults(exact, (np.zeros((0, 0), dtype=np.int64), 0.0,
                                  np.zeros((0, 0), dtype=np.int64), 0.0))
    t, ptr, n_esc, n_ref, n_evals, n_stored = spider_loop(
        Xc, yc, stream, int(loss.loss_id), float(loss.param), norms, fpar, ipar, rng, traj,
        log_bt, log_D, log_flag, log_ptr, w, *exact)

    # 3. Output rule.
    selected, n_averaged = t, 1
    if selection == "private" and t > 0:
        iterates = np.vstack([traj[:n_stored], w[None, :]])
        steps = np.append(np.arange(1, n_stored + 1) * stride, t)
        K_c = min(N_CANDIDATES, iterates.shape[0])
        pick = np.unique(np.round(np.linspace(0, iterates.shape[0] - 1, K_c)).astype(int))
        weight = math.sqrt(P.thr / rho)
        # + rounding: the scores are float64 means of n_v bounded terms (summation factor)
        delta_s = 2.0 / n_v * max(G, M * weight) * (1.0 + 1e-9) * summation_factor(n_v)
        curv_w = weight if p <= CURVATURE_MAX_DIM else 0.0
        scores = _scores(Xc[val_rows], yc[val_rows], iterates[pick], loss, alpha, curv_w)
        k = noisy_argmin(scores, delta_s, P.mu, rng, noise_source)
        w = iterates[pick[k]].copy()
        selected = int(steps[pick[k]])
        n_evals += pick.size * n_v
    elif selection == "average" and t > 0:
        # post-processing of released iterates only (module docstring): no data, no noise
        iterates = traj[:n_stored]
        if n_stored * stride != t:
            iterates = np.vstack([iterates, w[None, :]])
        n_averaged = iterates.shape[0] - iterates.shape[0] // 2
        w = iterates[iterates.shape[0] // 2:].mean(axis=0)

    coef, intercept = split_intercept(w, fit_intercept, intercept_scaling)
    details = {
        **{k: v for k, v in P.items()},
        "calibration": calibration,
        "selection": selection,
        "selected_step": selected,
        "n_averaged": int(n_averaged),
        "n_escapes": int(n_esc),
        "n_refreshes": int(n_ref),
        "rows_used": int(ptr),
        "n_train": int(n_train),
        "n_validation": int(n_v),
        "steps": int(t),
        "log_bt": log_bt[:t],
        "log_D": log_D[:t],
        "log_flag": log_flag[:t],
        "log_ptr": log_ptr[:t],
        "stride": stride,
        "trajectory": traj[:n_stored],
        "full_gradient_equivalents": n_evals / n,
    }
    return SolverResult(
        coef=np.ascontiguousarray(coef).reshape(-1, 1),
        intercept=intercept,
        n_iter=int(t),
        n_gradient_evals=int(n_evals),
        noise_scale=float(P.sigma_tree),
        sensitivity=float(P.s_g),
        dp_event=event,
        data_norm=float(data_norm),
        details=details,
    )


# flags re-exported for tests
FLAGS = {"refresh": FLAG_REFRESH, "escape": FLAG_ESCAPE, "anchor": FLAG_ANCHOR}
