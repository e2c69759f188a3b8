"""Differentially private robust regression with nonconvex losses (Tukey, Welsch, Cauchy)."""

import math
import numbers

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._fitted_attributes import atomic_fit
from .._losses import ROBUST_LOSSES
from .._solvers import NONCONVEX_SOLVERS
from ._base import (
    _AUTO_N_FEATURES_DOC,
    _RULE_WIDTH_ATTRS_DOC,
    _PRIVACY_DOC,
    PLANNERS,
    SMOOTHING_MAX,
    SMOOTHING_MIN,
    BaseDPLinear,
    DPLinearRegressorMixin,
    _refuse_sample_weight,
)
from ._target_range import effective_loss_scale, in_target_units


_ZEROTH_ORDER = ("zeroth_order", "zeroth_order_naive")


def _loss_of(est):
    """The loss spec of ``est``: ``loss="auto"`` is ``"capped_absolute"`` for the
    zeroth-order solvers and ``"welsch"`` otherwise; a callable is a
    :class:`~skdp._losses._nonsmooth.UserLoss` (zeroth-order solvers only)."""
    from .._losses._nonsmooth import NONSMOOTH_LOSSES, UserLoss

    loss, lip = est.loss, getattr(est, "loss_lipschitz", None)
    if callable(loss):
        if est.solver not in _ZEROTH_ORDER + ("auto",):
            raise ValueError(f"a callable loss needs solver='zeroth_order' or "
                             f"'zeroth_order_naive' (it is only evaluated), got {est.solver!r}")
        if lip is None:
            raise ValueError("a callable loss needs loss_lipschitz, its declared Lipschitz "
                             "constant in the prediction (privacy is enforced by clipping)")
        return UserLoss(loss, float(lip))
    if lip is not None:
        raise ValueError("loss_lipschitz applies to a callable loss only (the built-in losses "
                         "state their constants)")
    if loss == "auto":
        loss = "capped_absolute" if est.solver in _ZEROTH_ORDER else "welsch"
    if loss in NONSMOOTH_LOSSES:
        if est.solver in ("spider", "rrpsgd") or (est.solver == "dpsgd" and est.alpha > 0):
            raise ValueError(
                f"loss={loss!r} is nonsmooth: use solver='zeroth_order' (or 'dpsgd' with "
                f"alpha=0, which uses a subgradient), not solver={est.solver!r}"
                + (" with alpha > 0" if est.solver == "dpsgd" else ""))
        return NONSMOOTH_LOSSES[loss](loss_scale=_loss_scale(est))
    return ROBUST_LOSSES[loss](loss_scale=_loss_scale(est))


def _loss_scale(est):
    """The loss's scale in the model's units (:func:`effective_loss_scale`: ``"auto"``
    resolved, divided by a ``target_range``'s half-width) -- of the estimator, or of a
    plan's view (:meth:`skdp.linear_model._auto.FitPlan.view`, already resolved)."""
    params = est.get_params(deep=False) if hasattr(est, "get_params") else vars(est)
    return effective_loss_scale(params)


def _plan_spider(est, n_samples):
    """Event of :func:`~skdp._solvers._spider.solve_spider` from public quantities only
    (``n``, the number of features, the parameters): the same function the solver uses."""
    from .._solvers._spider import spider_plan

    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    _, event, _, _ = spider_plan(
        n_samples, p, _loss_of(est), epsilon=est.epsilon, delta=est.delta, alpha=est.alpha,
        data_norm=float(est.row_bound), y_bound=est.y_bound, calibration=est.calibration,
        max_iter=est.max_iter, selection=est.selection,
    )
    return event


PLANNERS.setdefault("spider", _plan_spider)


def _plan_zeroth_order(est, n_samples):
    """Event of :func:`~skdp._solvers._zeroth_order.solve_zeroth_order` (or of the naive
    baseline) from public quantities only: the same ``zeroth_order_plan`` the solver calls."""
    from .._solvers._zeroth_order import zeroth_order_plan

    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    _, event = zeroth_order_plan(
        n_samples, p, _loss_of(est), epsilon=est.epsilon, delta=est.delta,
        data_norm=float(est.row_bound), y_bound=est.y_bound, calibration=est.calibration,
        alpha=est.alpha, max_iter=est.max_iter, smoothing_radius=est.smoothing_radius,
        naive=est.solver == "zeroth_order_naive",
    )
    return event


PLANNERS.setdefault("zeroth_order", _plan_zeroth_order)
PLANNERS.setdefault("zeroth_order_naive", _plan_zeroth_order)


def _plan_rrpsgd(est, n_samples):
    """Event of :func:`~skdp._solvers._rrpsgd.solve_rrpsgd` from public quantities only
    (the same :func:`~skdp._solvers._rrpsgd.rrpsgd_plan` the solver calls)."""
    from .._solvers._rrpsgd import rrpsgd_plan

    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    return rrpsgd_plan(
        n_samples, p, _loss_of(est), epsilon=est.epsilon, delta=est.delta, alpha=est.alpha,
        data_norm=float(est.row_bound), y_bound=est.y_bound, calibration=est.calibration,
        batch_size=est.batch_size, n_steps=est.n_steps,
    )["event"]


PLANNERS.setdefault("rrpsgd", _plan_rrpsgd)


def _plan_warm_gd(est, n_samples):
    """Event of :func:`~skdp._solvers._warm_gd.solve_warm_gd` (its public plan)."""
    from .._solvers._warm_gd import warm_gd_plan

    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    return warm_gd_plan(n_samples, p, est.loss_, epsilon=est.epsilon, delta=est.delta,
                        alpha=est.alpha, row_bound=est.row_bound,
                        loss_scale=est.loss_scale, n_steps=est.n_steps,
                        calibration=est.calibration,
                        rule_features=getattr(est, "rule_features", None))["event"]


PLANNERS.setdefault("warm_gd", _plan_warm_gd)


class DPNonconvexRegressor(DPLinearRegressorMixin, BaseDPLinear):
    __doc__ = (
        r"""Robust linear regression with a nonconvex loss and a differentially private fit.

    Minimises

    .. math:: F(w) = \frac1n \sum_i \ell(x_i^\top w - y_i) + \frac{\alpha}{2}\|w\|^2

    with a bounded-influence loss of scale ``c = loss_scale`` (``u = r/c``):

    * ``"tukey"``: :math:`\ell = \frac{c^2}{6}(1 - (1 - u^2)^3)` for ``|u| <= 1``, else
      :math:`c^2/6`;
    * ``"welsch"``: :math:`\ell = \frac{c^2}{2}(1 - e^{-u^2})`;
    * ``"cauchy"``: :math:`\ell = \frac{c^2}{2}\ln(1 + u^2)`.

    Gross outliers get (almost) zero weight, which a convex loss cannot do; the price is
    nonconvexity.  The default ``solver="auto"`` runs ``"warm_gd"`` for the smooth losses
    (``"zeroth_order"`` for the nonsmooth and user losses): a private convex warm start --
    objective perturbation on the Huber loss with threshold ``loss_scale`` -- then a few
    steps of noisy full-batch gradient descent on the robust loss, projected onto a ball of
    radius ``2 loss_scale/R`` around the warm start, the two stages composed into one
    guarantee (``skdp._solvers._warm_gd``; ``doc/defaults.rst``).  It fits every ``n >= 2``
    and cannot diverge.  ``"spider"`` is the private SpiderBoost of Liu &
    Talwar (2025, v2): one pass over the data, a binary-tree mechanism on the stream of
    gradient estimates, adaptive batch sizes and Hessian-model escapes from saddle points;
    it outputs an approximate **second-order** stationary point (``||grad F|| <= ~gamma_``
    and no direction of curvature below ``-sqrt(rho gamma_)``) with high probability.

    On feature rows clipped to ``data_norm`` and augmented with the intercept column,
    ``||[x_i, intercept_scaling]|| <= R = sqrt(data_norm^2 + intercept_scaling^2)``, the
    per-example
    gradient is bounded by ``G = sup|l'| R``, its Lipschitz constant by ``M = sup|l''| R^2``
    and the Hessian's by ``rho = Lip(l'') R^3`` (``skdp._losses``); no target bound is needed
    for privacy (``l'`` and ``l''`` are bounded).  The target accuracy ``gamma_`` is chosen
    by a public rule from ``n``, ``epsilon``, ``delta`` and these constants: the smallest
    value whose predicted data use fits the data; a ``ValueError`` names the ``n`` needed
    when none does.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon > 0.
    delta : float, default=1e-6
        Privacy parameter delta in (0, 1) (the solver adds Gaussian noise; 0 is refused).
        Should be << 1/n.
    loss : {"auto", "welsch", "tukey", "cauchy", "capped_absolute", "absolute", "truncated_squared"} or callable, default="auto"
        The robust loss.  ``"auto"``: ``"capped_absolute"`` for the zeroth-order solvers,
        ``"welsch"`` for the others.  The nonsmooth losses (``tau = loss_scale``):
        ``"capped_absolute"`` :math:`\min(|r|, \tau)` (1-Lipschitz in the prediction),
        ``"absolute"`` :math:`|r|` (1-Lipschitz), ``"truncated_squared"``
        :math:`\min(r^2, \tau^2)` (``2 tau``-Lipschitz); they need ``solver="zeroth_order"``
        (or ``"dpsgd"`` with ``alpha=0``, which follows a subgradient).  A callable
        ``loss(z, y) -> float`` of the prediction ``z = x.w + b`` and the target (numba
        compilable, e.g. an ``@njit`` function) needs a zeroth-order solver and
        ``loss_lipschitz``; it is compiled into an uncached kernel at the first fit.
    loss_lipschitz : float or None, default=None
        Declared Lipschitz constant of a callable ``loss`` in the prediction ``z``
        (required for a callable, refused otherwise).  Privacy does **not** rest on the
        declaration: the solver clips every finite difference ``loss(z + h, y) - loss(z',
        y)`` to ``loss_lipschitz |z + h - z'|``-type bounds and every per-row estimate to the
        norm the sensitivity proof uses, so a wrong value only biases the fit.
    loss_scale : float or "auto", default="auto"
        Residual scale ``c > 0`` in the target's units; residuals much larger than ``c``
        are treated as outliers.  Must be public (fixed a priori, not estimated on the
        private data).  ``"auto"``: 1, or with a ``target_range``
        ``TARGET_RANGE_LOSS_SCALE`` half-widths of it (the fit is then unit-free;
        ``skdp.linear_model._auto``).
    data_norm : float or None, default=None
        Public bound on the norm of each feature row (the intercept column is appended
        after clipping; ``row_bound_`` reports ``sqrt(data_norm^2 + intercept_scaling^2)``).
        None reads it from the data (``PrivacyLeakWarning``, ``privacy_guaranteed_ =
        False``, ``epsilon_ = inf``).
    y_bound : float or None, default=None
        Public bound on ``|y|``; targets are clipped to it.  Required for ``loss="cauchy"``
        with ``solver="spider"``
        (an unbounded loss: it bounds ``F(0) - inf F``, which sets the iteration budget);
        optional otherwise.  Never needed for privacy.
    target_range : (float, float) or None, default=None
        Public range ``(low, high)`` of the target -- a documented range or the physical
        domain, never the rows' minimum and maximum -- as for
        :class:`DPHuberRegressor`: the fit clips the targets to it, releases their mean
        with ``TARGET_CENTRE_SHARE`` (5 %) of its Gaussian-DP budget ``mu^2``
        (``target_centre_``), and fits the model on the targets minus that mean divided
        by the half-width ``h = (high - low)/2`` (``target_scale_``; ``y_bound`` must be
        left None), with ``loss_scale`` divided by ``h``; ``coef_`` and ``intercept_`` are
        in the target's units again.  Without it a private model shrinks towards 0 where
        the data carry little signal, which for a raw target far from 0 is far from every
        row.  ``loss="absolute"`` has no scale and keeps the target's units; a callable
        loss is refused (it is written in the target's units).  ``epsilon_`` covers the
        mean and the model (:mod:`skdp.linear_model._target_range`).
    model_epsilon : float or None, default=None
        With releases of its own before the model (``y_bound="auto"``, a
        ``target_range``): the
        epsilon of the model after them.  None: the largest that composes with them
        within ``(epsilon, delta)`` (a search, ``budget_split_["model"]``).  A private
        pipeline sets it from its one split of the budget (restored after the fit); a
        value that does not compose within ``(epsilon, delta)`` under the exact
        accountant is not used (the search runs).
"""
        + _AUTO_N_FEATURES_DOC
        + r"""    alpha : float, default=0.0
        L2 regularisation strength; its gradient ``alpha w`` is added to the private
        gradient (a function of the public iterate, no privacy cost).
    fit_intercept : bool, default=True
        Fit an intercept, as a constant feature ``intercept_scaling`` clipped with the row.
    intercept_scaling : float, default=1.0
        Value of the constant column appended for the intercept after clipping.
    solver : {"auto", "warm_gd", "spider", "dpsgd", "rrpsgd", "zeroth_order", "zeroth_order_naive"}, default="auto"
        ``"auto"``: ``"warm_gd"`` for the smooth robust losses, ``"zeroth_order"`` for the
        nonsmooth and callable ones (reported in ``solver_``; inside a private search,
        which composes in Gaussian DP, ``"spider"``).  ``"warm_gd"``: private Huber warm
        start, then ``n_steps`` (default 3; skipped at small ``n epsilon``) noisy gradient
        steps on the robust loss; needs ``delta > 0`` and ``calibration="tight"``.
        ``"spider"``: private SpiderBoost with escapes (Liu & Talwar v2).  ``"dpsgd"``: the
        private-SGD baseline (Poisson mini-batches, per-example clipping to ``G``, noise
        calibrated by the PLD accountant; multi-pass); it needs ``max_coef_norm`` when
        ``alpha = 0`` (radius of the ball its iterates are projected onto).
        ``"rrpsgd"``: random-round private SGD (Zhang et al. 2017, Alg. 2): constant-step
        noisy SGD on Poisson batches of ``batch_size`` (1: the paper's form; ``n``: full
        batch) for ``n_steps`` rounds, output at a uniformly random round drawn before the
        data is read; accounted as the full composition of all rounds (the random round
        is for utility only).  ``"paper"`` calibration: the printed noise, certified by the
        accountant, ``epsilon <= 1``.
        ``"zeroth_order"``: private zeroth-order Online-to-Nonconvex conversion (Zhang, Tran
        & Cutkosky 2024): evaluates the loss only (two values per random direction), finds a
        Goldstein-stationary point of a nonsmooth nonconvex loss in one pass, with a
        variance-reduced oracle and tree-mechanism noise; outputs the last period's average
        iterate (``selection`` is ignored).  ``"zeroth_order_naive"``: its naive baseline
        (fresh rows and fresh noise every round; for ablations).
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the exact Gaussian-DP composition of the tree and escape releases,
        budget split evenly; ``"paper"``: Thm 2.2 / Lemma 3.13 at ``(epsilon/2, delta/2)``
        with the paper's errata fixed (more noise, same mechanism).  Zeroth-order solvers:
        ``"tight"`` is the exact Gaussian-DP accounting of the tree's node releases,
        ``"paper"`` the paper's RDP statement ``sigma = sqrt(c_T) s/rho``.
    selection : {"average", "private", "last"}, default="average"
        Output rule of ``solver="spider"``.  ``"average"``: the mean of the last half of the
        iterates -- post-processing of the released noisy sums (it reads no data): same run
        and privacy event as ``"last"``; a smaller ``||grad F||`` than ``"private"`` in 11
        of 17 settings of ``benchmarks/bench_nonconvex.py`` (majority of 2-3 seeds: 11 of
        the 12 synthetic settings), but larger on the 5 small real-data settings (wine,
        bike), where ``"private"`` is the better choice.
        ``"private"``: 10 % of the rows (a random, data-independent split) are held out and
        never enter the training stream; up to 32 iterates are scored on
        them (gradient norm and negative curvature) and the best is chosen with Gaussian
        noise on the scores (no extra privacy cost: parallel composition); falls back to
        ``"last"`` below 2000 rows.  ``"last"``: the last iterate.
    smoothing_radius : float or None, default=None
        Radius ``delta`` of the uniform smoothing of the zeroth-order solvers (public, a
        hyperparameter in parameter space; the output is near-stationary for the
        Goldstein ``2 delta``-subdifferential).  None: ``0.2 y_bound/data_norm`` (or
        ``0.4 loss_scale/data_norm`` without ``y_bound``).  In ``[1e-100, 1e100]``.
        Ignored by other solvers.
    max_iter : int, default=100000
        Public cap on the iterations of ``"spider"`` (applied to the rule's ``T_max`` before
        the noise is calibrated; the default does not bind below ~10^7 rows).  Ignored by
        ``"dpsgd"`` and ``"rrpsgd"`` (their step count is ``n_steps``).
    batch_size : int, default=50
        Expected mini-batch size of ``solver="dpsgd"`` and ``"rrpsgd"`` (ignored otherwise).
    n_steps : int, "bst14" or None, default=None
        Steps (rounds) of ``solver="dpsgd"`` (None: the practical schedule of at most 20
        epochs, ``skdp.linear_model._auto``; ``"bst14"``: ``ceil(n^2/batch_size^2)``),
        ``"rrpsgd"`` (None: ``ceil(n^2/batch_size^2)``) and the refinement of
        ``"warm_gd"`` (None: 3).  Ignored otherwise.
    max_coef_norm : float or None, default=None
        Projection radius of ``solver="dpsgd"`` (required there when ``alpha = 0``).
    random_state : int, Generator, RandomState or None, default=None
        Seeds the data order and the noise.  Leave None in production.
    verbose : int, default=0
        ``1``: print the public plan of the fit (solver, alpha, noise); ``2``: also the
        solver's unprotected diagnostics (iterations, work), labelled as such.
    secure_noise : {"auto", True, False}, default="auto"
        Floating-point-safe noise: the released coefficients are ``gamma (rint(w/gamma) +
        Z)`` on a public power-of-two grid ``gamma`` with ``Z`` an exact discrete Gaussian or
        Laplace drawn from ChaCha20 (``doc/floating_point.rst``).  A float sum ``w +
        noise`` leaks through its low-order bits (measured: epsilon >= 5 at a claimed 1).
        ``"auto"`` and ``True``: on (every solver has an exact path, objective
        perturbation's never-released linear term ``b`` included, see the page);
        ``False``: float noise, for comparisons.  The value used is
        ``secure_noise_``.  With an integer ``random_state`` the ChaCha20 key is derived
        from it: reproducible, but the noise is known to whoever knows the seed -- use
        ``random_state=None`` (key from the OS) in production.
    privacy_ledger : :class:`~skdp.accounting.PrivacyLedger` or None, default=None
        Ledger that accounts this fit: the planned event is reserved before the data is
        read (``BudgetExceededError`` if it would overspend) and the released event is
        recorded.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Private coefficients.
    intercept_ : float
        Private intercept (0 when ``fit_intercept=False``; with a ``target_range`` it
        includes ``target_centre_``).
    target_centre_ : float
        With a ``target_range``: the released mean of the targets clipped to it (the
        level the model is fitted around).  ``budget_split_`` then lists the
        ``"target centre"`` and the ``"model"`` shares.
    target_scale_ : float
        With a ``target_range``: its half-width ``(high - low)/2`` (1 for
        ``loss="absolute"``), the unit of the targets the model was fitted on.
    epsilon_ : float
        Epsilon of the fit at ``delta_`` (exact GDP accounting; <= ``epsilon``).
    delta_ : float
        The delta of the guarantee.
    dp_event_ : dp_accounting.DpEvent
        What the fit released: the tree's node releases and the escape releases.
    noise_scale_ : float
        Standard deviation of each tree node's noise (per coordinate).
    sensitivity_ : float
        Replace-one L2 sensitivity ``s_g`` of every tree leaf.
    data_norm_ : float
        The row-norm bound enforced.
    privacy_guaranteed_ : bool
        False iff a bound was read from the data (``data_norm=None``).
    n_gradient_evals_ : int
        Unprotected diagnostic (as ``n_iter_``, ``n_escapes_`` and ``n_refreshes_``: may
        depend on the data, not covered by the guarantee, removed from the models the
        private searches return).  Per-example derivative evaluations (gradient
        differences count 2, Hessian-vector products 1 per buffered row).  Zeroth-order solvers: rows read (each once; every
        row costs ``2 m`` loss evaluations, ``m = p`` directions, 1 for the naive one).
    n_iter_ : int
        Steps taken (the run stops when the next batch cannot be filled); for
        ``"rrpsgd"`` the random output round ``R`` (data-independent); for ``"warm_gd"``
        the warm start's iterations plus the refinement steps (``solver_params_``:
        ``{"n_steps": T, "refinement": "ran"}``, or ``"skipped"`` with ``T = 0`` when the
        public plan returns the warm start unchanged).
    n_escapes_ : int
        Escape phases started (the private gradient fell below the threshold); 0 for
        ``"dpsgd"``.
    n_refreshes_ : int
        Full-batch refreshes (epochs); 0 for ``"dpsgd"``.
    gamma_ : float
        Target accuracy chosen by the public rule (NaN for ``"dpsgd"``).
    secure_noise_ : bool
        Whether the release used exact grid noise (False for the per-step solvers).
"""
        + _RULE_WIDTH_ATTRS_DOC
        + """    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray
        Defined when X has string feature names.

"""
        + _PRIVACY_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPNonconvexRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(60_000, 2))
    >>> y = X @ [1.0, -0.5] + 0.1 * rng.normal(size=60_000)
    >>> y[:6_000] = 20.0                                  # 10 % gross outliers
    >>> reg = DPNonconvexRegressor(epsilon=1.0, data_norm=2.0, loss_scale=1.0,
    ...                            random_state=0).fit(X, y)
    >>> reg.epsilon_ <= 1.0, bool(np.abs(reg.coef_ - [1.0, -0.5]).max() < 0.3)
    (True, True)
    """
    )

    #: where an integer random_state keys the noise (solver and "auto" bounds; a
    #: target_range's centre, centre_seed): skdp._mechanisms._exact.RELEASE_SITES,
    #: read by fitted_dp_event
    _release_sites = ("default_rng", "target_centre")

    _parameter_constraints: dict = {
        **BaseDPLinear._parameter_constraints,
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "loss": [StrOptions(set(ROBUST_LOSSES) | {"auto", "capped_absolute", "absolute",
                                                   "truncated_squared"}), callable],
        "loss_lipschitz": [Interval(numbers.Real, 0, None, closed="neither"), None],
        # the range of the convex models' ``smoothing``: outside it the zeroth-order
        # steps, the noise calibration or the model overflow or vanish
        "smoothing_radius": [Interval(numbers.Real, SMOOTHING_MIN, SMOOTHING_MAX,
                                      closed="both"), None],
        "loss_scale": [Interval(numbers.Real, 0, None, closed="neither"),
                       StrOptions({"auto"})],
        "target_range": ["array-like", None],
        "y_bound": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"}),
                    None],
        "model_epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "auto_n_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "solver": [StrOptions(set(NONCONVEX_SOLVERS) | {"auto"})],
        "selection": [StrOptions({"private", "last", "average"})],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-6,
        loss="auto",
        loss_scale="auto",
        loss_lipschitz=None,
        data_norm=None,
        y_bound=None,
        target_range=None,
        model_epsilon=None,
        auto_n_features=None,
        alpha=0.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        solver="auto",
        calibration="tight",
        selection="average",
        max_iter=100_000,
        smoothing_radius=None,
        batch_size=50,
        n_steps=None,
        max_coef_norm=None,
        random_state=None,
        verbose=0,
        privacy_ledger=None,
        secure_noise="auto",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.loss = loss
        self.loss_scale = loss_scale
        self.loss_lipschitz = loss_lipschitz
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.target_range = target_range
        self.model_epsilon = model_epsilon
        self.auto_n_features = auto_n_features
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.solver = solver
        self.calibration = calibration
        self.selection = selection
        self.max_iter = max_iter
        self.smoothing_radius = smoothing_radius
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.max_coef_norm = max_coef_norm
        self.random_state = random_state
        self.verbose = verbose
        self.privacy_ledger = privacy_ledger
        self.secure_noise = secure_noise

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (clipped to ``data_norm`` inside the solver).  A Dask array or
            DataFrame stays on the workers with ``solver="warm_gd"`` (the default for the
            smooth robust losses; ``data_norm`` must be given): see the user guide "Data
            larger than memory".
        y : array-like of shape (n_samples,)
            Targets (clipped to ``y_bound`` when given).
        sample_weight : None
            Not supported (weights change the sensitivity); anything else raises.

        Returns
        -------
        self : DPNonconvexRegressor
            The fitted estimator.
        """
        _refuse_sample_weight(sample_weight)
        if self.delta == 0:
            raise ValueError(
                f"solver={self.solver!r} adds Gaussian noise and needs delta > 0 (it has no "
                "pure epsilon-DP guarantee)"
            )
        self._check_public_params()
        if self.solver == "dpsgd" and self.alpha == 0 and self.max_coef_norm is None:
            raise ValueError(
                "solver='dpsgd' with alpha=0 needs a public max_coef_norm (the radius of the "
                "ball its iterates are projected onto)"
            )
        if self.loss == "cauchy" and self.y_bound is None and self.solver == "spider":
            raise ValueError(
                "loss='cauchy' is unbounded: pass a public y_bound (targets are clipped to it; "
                "it bounds F(0) - inf F, which sets the iteration budget)"
            )
        if not isinstance(self.loss_scale, str) and not math.isfinite(self.loss_scale):
            raise ValueError(f"loss_scale must be finite, got {self.loss_scale!r}")
        X, y = self._regression_inputs(X, y)
        self._check_n_samples(X.shape[0])
        # a target_range takes the released-bounds path, which sets the model's y_bound
        # and loss scale (linear_model/_target_range.py)
        attrs, result = self._run_solver(X, y, _loss_of(self), n_outputs=1, y_bound=self.y_bound)
        coef, intercept = in_target_units(attrs, result.coef[:, 0],
                                          float(result.intercept[0]))
        attrs["coef_"] = np.ascontiguousarray(coef)
        attrs["intercept_"] = intercept
        attrs["n_escapes_"] = int(result.details.get("n_escapes", 0))
        attrs["n_refreshes_"] = int(result.details.get("n_refreshes", 0))
        attrs["gamma_"] = float(result.details.get("gamma", np.nan))
        self._set_fitted(attrs)
        return self

    #: inside a private search (Gaussian-DP composition) solver="auto" becomes spider
    _GAUSSIAN_AUTO_SOLVER = "spider"
    #: selects the nonconvex solver rule of skdp.linear_model._auto
    _NONCONVEX = True

    def _planning_loss(self):
        return _loss_of(self), 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
