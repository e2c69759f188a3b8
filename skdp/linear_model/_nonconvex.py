"""Differentially private robust regression with nonconvex losses (Tukey, Welsch, Cauchy)."""

import math
import numbers

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from .._losses import ROBUST_LOSSES
from .._solvers._spider import spider_plan
from ._base import _PRIVACY_DOC, DPLinearRegressorMixin, PLANNERS, BaseDPLinear, _refuse_sample_weight


def _loss_of(est):
    return ROBUST_LOSSES[est.loss](loss_scale=float(est.loss_scale))


def _plan_spider(est, n_samples):
    """Event of :func:`~skdp._solvers._spider.solve_spider` from public quantities only
    (``n``, the number of features, the parameters): the same function the solver uses."""
    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    _, event, _, _ = spider_plan(
        n_samples, p, _loss_of(est), epsilon=est.epsilon, delta=est.delta, alpha=est.alpha,
        data_norm=float(est.data_norm), y_bound=est.y_bound, calibration=est.calibration,
        max_iter=est.max_iter, selection=est.selection,
    )
    return event


PLANNERS.setdefault("spider", _plan_spider)


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
    nonconvexity.  The default solver ``"spider"`` is the private SpiderBoost of Liu &
    Talwar (2025, v2): one pass over the data, a binary-tree mechanism on the stream of
    gradient estimates, adaptive batch sizes and Hessian-model escapes from saddle points;
    it outputs an approximate **second-order** stationary point (``||grad F|| <= ~gamma_``
    and no direction of curvature below ``-sqrt(rho gamma_)``) with high probability.

    On rows clipped to ``||[x_i, intercept_scaling]|| <= data_norm = R`` the per-example
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
    loss : {"welsch", "tukey", "cauchy"}, default="welsch"
        The robust loss.
    loss_scale : float, default=1.0
        Residual scale ``c > 0``; residuals much larger than ``c`` are treated as outliers.
        Must be public (fixed a priori, not estimated on the private data).
    data_norm : float or None, default=None
        Public bound on each row's norm including the intercept column.  None reads it from
        the data (``PrivacyLeakWarning``, ``privacy_guaranteed_ = False``).
    y_bound : float or None, default=None
        Public bound on ``|y|``; targets are clipped to it.  Required for ``loss="cauchy"``
        with ``solver="spider"``
        (an unbounded loss: it bounds ``F(0) - inf F``, which sets the iteration budget);
        optional otherwise.  Never needed for privacy.
    alpha : float, default=0.0
        L2 regularisation strength; its gradient ``alpha w`` is added to the private
        gradient (a function of the public iterate, no privacy cost).
    fit_intercept : bool, default=True
        Fit an intercept, as a constant feature ``intercept_scaling`` clipped with the row.
    intercept_scaling : float, default=1.0
        Value of the constant column appended for the intercept (must be < data_norm).
    solver : {"spider", "dpsgd"}, default="spider"
        ``"spider"``: private SpiderBoost with escapes (Liu & Talwar v2).  ``"dpsgd"``: the
        private-SGD baseline (Poisson mini-batches, per-example clipping to ``G``, noise
        calibrated by the PLD accountant; multi-pass); it needs ``max_coef_norm`` when
        ``alpha = 0`` (radius of the ball its iterates are projected onto).
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the exact Gaussian-DP composition of the tree and escape releases,
        budget split evenly; ``"paper"``: Thm 2.2 / Lemma 3.13 at ``(epsilon/2, delta/2)``
        with the paper's errata fixed (more noise, same mechanism).
    selection : {"private", "last"}, default="private"
        Output rule.  ``"private"``: 10 % of the rows (a random, data-independent split)
        are held out and never enter the training stream; up to 32 iterates are scored on
        them (gradient norm and negative curvature) and the best is chosen with Gaussian
        noise on the scores (no extra privacy cost: parallel composition); falls back to
        ``"last"`` below 2000 rows.  ``"last"``: the last iterate.
    max_iter : int, default=100000
        Public cap on the iterations of ``"spider"`` (applied to the rule's ``T_max`` before
        the noise is calibrated; the default does not bind below ~10^7 rows).  Ignored by
        ``"dpsgd"`` (its step count is ``n_steps``).
    batch_size : int, default=50
        Expected mini-batch size of ``solver="dpsgd"`` (ignored otherwise).
    n_steps : int or None, default=None
        Steps of ``solver="dpsgd"``; default ``ceil(n^2/batch_size^2)`` (ignored otherwise).
    max_coef_norm : float or None, default=None
        Projection radius of ``solver="dpsgd"`` (required there when ``alpha = 0``).
    random_state : int, Generator, RandomState or None, default=None
        Seeds the data order and the noise.  Leave None in production.
    verbose : int, default=0
        Print the solver's diagnostics after the fit when > 0.
    privacy_ledger : :class:`~skdp.accounting.PrivacyLedger` or None, default=None
        Ledger that accounts this fit: the planned event is reserved before the data is
        read (``BudgetExceededError`` if it would overspend) and the released event is
        recorded.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Private coefficients.
    intercept_ : float
        Private intercept (0 when ``fit_intercept=False``).
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
        Per-example derivative evaluations (gradient differences count 2, Hessian-vector
        products 1 per buffered row).
    n_iter_ : int
        Steps taken (the run stops when the next batch cannot be filled).
    n_escapes_ : int
        Escape phases started (the private gradient fell below the threshold); 0 for
        ``"dpsgd"``.
    n_refreshes_ : int
        Full-batch refreshes (epochs); 0 for ``"dpsgd"``.
    gamma_ : float
        Target accuracy chosen by the public rule (NaN for ``"dpsgd"``).
    n_features_in_ : int
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

    _parameter_constraints: dict = {
        **BaseDPLinear._parameter_constraints,
        "loss": [StrOptions(set(ROBUST_LOSSES))],
        "loss_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "y_bound": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "solver": [StrOptions({"spider", "dpsgd"})],
        "selection": [StrOptions({"private", "last"})],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        *,
        loss="welsch",
        loss_scale=1.0,
        data_norm=None,
        y_bound=None,
        alpha=0.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        solver="spider",
        calibration="tight",
        selection="private",
        max_iter=100_000,
        batch_size=50,
        n_steps=None,
        max_coef_norm=None,
        random_state=None,
        verbose=0,
        privacy_ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.loss = loss
        self.loss_scale = loss_scale
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.solver = solver
        self.calibration = calibration
        self.selection = selection
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.max_coef_norm = max_coef_norm
        self.random_state = random_state
        self.verbose = verbose
        self.privacy_ledger = privacy_ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (clipped to ``data_norm`` inside the solver).
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
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
        self._check_privacy_params(X.shape[0])
        if self.delta == 0:
            raise ValueError(
                f"solver={self.solver!r} adds Gaussian noise and needs delta > 0 (it has no "
                "pure epsilon-DP guarantee)"
            )
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
        if not math.isfinite(self.loss_scale):
            raise ValueError(f"loss_scale must be finite, got {self.loss_scale!r}")
        y = np.asarray(y, dtype=np.float64)
        if self.y_bound is not None:
            y = np.clip(y, -self.y_bound, self.y_bound)
        attrs, result = self._run_solver(X, y, _loss_of(self), n_outputs=1, y_bound=self.y_bound)
        attrs["coef_"] = np.ascontiguousarray(result.coef[:, 0])
        attrs["intercept_"] = float(result.intercept[0])
        attrs["n_escapes_"] = int(result.details.get("n_escapes", 0))
        attrs["n_refreshes_"] = int(result.details.get("n_refreshes", 0))
        attrs["gamma_"] = float(result.details.get("gamma", np.nan))
        self._set_fitted(attrs)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
