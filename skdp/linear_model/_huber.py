"""Differentially private Huber (and, with ``huber_threshold=0``, absolute-loss) regression."""

import numbers

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from .._fitted_attributes import atomic_fit
from .._losses import HuberLoss
from ._base import (
    _AUTO_N_FEATURES_DOC,
    _RULE_WIDTH_ATTRS_DOC,
    _CONVEX_SOLVER_PARAMS_DOC,
    _PRIVACY_DOC,
    CONVEX_MODEL_CONSTRAINTS,
    BaseDPLinear,
    DPLinearRegressorMixin,
    _refuse_sample_weight,
)
from ._target_range import effective_huber_threshold, in_target_units


#: solvers that handle huber_threshold=0 (the absolute loss) by Gaussian smoothing (closed
#: form in phased, randomized ReSQue queries in resque)
_NONSMOOTH_SOLVERS = {"phased", "resque"}


class DPHuberRegressor(DPLinearRegressorMixin, BaseDPLinear):
    __doc__ = (
        r"""Huber regression with a differentially private fit.

    Minimises

    .. math:: F(w) = \frac1n \sum_i h(x_i^\top w - y_i) + \frac{\alpha}{2}\|w\|^2,
       \quad h(r) = \begin{cases} r^2/2 & |r| \le \kappa \\
       \kappa(|r| - \kappa/2) & \text{otherwise}\end{cases}

    with ``kappa = huber_threshold``, on rows clipped to
    ``||[x_i, intercept_scaling]|| <= data_norm = C``.  Its gradient in ``w`` is bounded by
    ``L = kappa C`` *whatever the target* (the derivative of ``h`` is clipped to
    ``[-kappa, kappa]``), so no bound on ``y`` is needed for privacy; ``beta = C^2``.
    Unlike scikit-learn's ``HuberRegressor`` no scale is co-estimated: give the target's
    public range, ``target_range=(low, high)``, so that the model shrinks towards the
    targets' private mean rather than towards 0 and the fit is unit-free (the targets are
    divided by the range's half-width, the threshold is 5 % of its width); without one,
    scale the target publicly so that residuals of order ``huber_threshold`` are "normal".

    Solvers and calibration as in :class:`DPLogisticRegression`: by default the noise-free
    minimiser is certified within ``tau = 0.01 L/(n alpha)`` and released with the
    analytic Gaussian mechanism at sensitivity ``2L/(n alpha) + 2 tau``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon > 0.
    delta : float, default=1e-6
        Privacy parameter delta in [0, 1); 0 gives pure epsilon-DP (norm-Laplace noise).
        Should be << 1/n.
    huber_threshold : float or "auto", default="auto"
        Threshold ``kappa > 0`` between the quadratic and linear parts, a residual in the
        target's units.  ``"auto"``: 1, or with a ``target_range`` 5 % of its width
        (``TARGET_RANGE_THRESHOLD`` half-widths: the fit is then unit-free).
        ``0`` is the absolute loss ``|x.w - y|`` (``L = C``), nonsmooth: supported by
        ``solver="phased"`` and ``"resque"`` (Gaussian smoothing), refused by the others.
    data_norm : float or None, default=None
        Public bound on the L2 norm of each feature row (without the intercept column);
        rows are clipped to it.  ``None`` reads it from the data (not private, warns).
    y_bound : float or None, default=None
        Optional public bound on ``|y|``; targets are clipped to it.  Not needed for the
        guarantee; in ``calibration="paper"`` it tightens the public bound on
        ``||w_hat||`` (``sqrt(2 h(y_bound)/alpha)``).
    target_range : (float, float) or None, default=None
        Public range ``(low, high)`` of the target -- a documented range or the physical
        domain, never the rows' minimum and maximum.  The fit then clips the targets to
        it, releases their mean with ``TARGET_CENTRE_SHARE`` (5 %) of its Gaussian-DP
        budget ``mu^2`` (``target_centre_``), and fits the model on the targets minus that
        mean divided by the half-width ``h = (high - low)/2`` (``target_scale_``;
        ``y_bound`` must be left None); ``coef_`` and ``intercept_`` are in the target's
        units again.  A private model shrinks towards 0 where the data carry little
        signal; with the range it shrinks towards the targets' private mean instead (raw
        targets of 100-150 dB scored a test R^2 of -52 at epsilon 1 through
        ``make_private_pipeline``), and the fit is unit-free: ``huber_threshold`` is
        divided by ``h`` and ``alpha`` is the penalty of the divided targets' model (its
        ``"auto"`` rule times ``TARGET_RANGE_ALPHA_FACTOR``); the absolute loss
        (``huber_threshold=0``) has no scale and keeps the target's units.  ``epsilon_`` covers the
        mean and the model; needs ``delta > 0``; on Dask inputs the mean is released
        from the partitions' sums (:mod:`skdp.linear_model._target_range`).
    model_epsilon : float or None, default=None
        With releases of its own before the model (``y_bound="auto"``, a ``target_range``): the
        epsilon of the model after them.  None: the largest that composes with them
        within ``(epsilon, delta)`` (a search, ``budget_split_["model"]``).  A private
        pipeline sets it from its one split of the budget (restored after the fit); a
        value that does not compose within ``(epsilon, delta)`` under the exact
        accountant is not used (the search runs).
"""
        + _AUTO_N_FEATURES_DOC
        + r"""    alpha : float or "auto", default="auto"
        L2 regularisation strength (of the mean loss).  ``"auto"``: a public rule of
        ``n``, ``p``, ``epsilon``, ``delta`` and the bounds that balances the
        regulariser's bias against the noise (``skdp.linear_model._auto``; derivation in
        ``doc/defaults.rst``); the value used is ``alpha_``.
    fit_intercept : bool, default=True
        Fit an intercept, as a regularised constant feature ``intercept_scaling`` that is
        clipped together with the row.
    intercept_scaling : float, default=1.0
        Value of the constant column appended for the intercept after the features are
        clipped; the row bound is ``sqrt(data_norm^2 + intercept_scaling^2)``.
    solver : {"auto", "objective_perturbation", "output_perturbation", "dpsgd", "phased", "resque"}, default="auto"
        ``"auto"``: a public rule picks the solver (reported in ``solver_``):
        ``"objective_perturbation"`` for binary logistic and Huber, ``"dpsgd"`` for
        multinomial, ``"phased"`` for the absolute loss, ``"output_perturbation"`` under
        ``calibration="paper"`` (``skdp.linear_model._auto``).
        ``"objective_perturbation"``: the minimiser of the objective plus a random
        linear term ``<b, w>/n`` (Chaudhuri, Monteleoni & Sarwate 2011; Kifer, Smith &
        Thakurta 2012), certified to within ``gamma`` of it and released with a small
        output noise (approximate minimum perturbation, Iyengar et al. 2019); its noise
        is damped by the data's own curvature, so it needs little regularisation.
        Binary logistic and Huber (``huber_threshold > 0``); ``delta = 0`` gives pure
        epsilon-DP.  ``alpha`` is raised to ``beta/(n expm1(epsilon/2))`` if below (the
        Jacobian term of the proof).  See ``doc/solvers/objective_perturbation.rst``.
        ``"output_perturbation"``: the certified minimiser plus noise calibrated to its
        sensitivity ``2L/(n alpha)`` (Zhang et al. 2017, Alg. 1).
        ``"dpsgd"``: the private-SGD baseline (Bassily, Smith & Thakurta 2014) with
        Poisson mini-batches, per-example clipping to ``L`` and noise calibrated by the PLD
        accountant for the sampling used; needs ``delta > 0``.
        ``"phased"``: phased SGD of Feldman, Koren & Talwar (2020) on disjoint blocks of
        ``n/2, n/4, ...`` rows, one pass, each phase's averaged iterate released with the
        analytic Gaussian mechanism (disjoint phases compose in parallel); nonsmooth
        losses are replaced by their exact Gaussian smoothing.  Linear time, optimal
        rate; needs ``delta > 0``.  See ``doc/solvers/phased.rst``.
        ``"resque"``: localized DP-SGD whose steps are grouped in blocks sharing one
        ReSQue anchor (Carmon et al. 2023, practical form): each block of
        ``block_size`` steps needs one batched oracle round, every step is a
        Poisson-subsampled Gaussian step on clipped contributions accounted exactly by
        the PLD accountant; needs ``delta > 0`` and ``calibration="tight"``.
        See ``doc/solvers/resque.rst``.
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the least noise an exact accounting of the mechanism run proves
        sufficient; ``"paper"``: the paper's printed sensitivities and noise.
    max_iter : int, default=10000
        Cap on optimiser iterations (public).
"""
        + _CONVEX_SOLVER_PARAMS_DOC
        + r"""    max_coef_norm : float or None, default=None
        Required when ``alpha = 0``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the noise.  Leave None in production.
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
        Ledger that accounts this fit: the planned event is reserved (and the fit
        refused with ``BudgetExceededError`` if it would overspend) before the data
        is read, and the released event is recorded.  Survives ``clone``, pickling,
        joblib and Dask workers.

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
        With a ``target_range``: its half-width ``(high - low)/2``, the unit of the
        targets the model was fitted on (``alpha_`` is that model's penalty).
    epsilon_, delta_, dp_event_, noise_scale_, sensitivity_, data_norm_, row_bound_, solver_, alpha_, solver_params_, secure_noise_ : see
        :class:`DPLogisticRegression`
    privacy_guaranteed_ : bool
        False iff a bound was read from the data (``data_norm=None``).
    n_gradient_evals_, n_iter_ : int
        Per-example gradients computed and optimiser iterations.  Unprotected
        diagnostics (they may depend on the data), removed from the models the private
        searches return; see :class:`DPLogisticRegression`.
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
    >>> from sklearn.datasets import load_diabetes
    >>> from skdp import DPHuberRegressor
    >>> X, y = load_diabetes(return_X_y=True)   # features already scaled, ||x|| <= 0.5
    >>> reg = DPHuberRegressor(epsilon=1.0, data_norm=1.2, huber_threshold=1.0,
    ...                        random_state=0).fit(X, y / 100)
    >>> reg.epsilon_ <= 1.0, reg.coef_.shape
    (True, (10,))
    """
    )

    #: where an integer random_state keys the noise (solver and "auto" bounds; a
    #: target_range's centre, centre_seed): skdp._mechanisms._exact.RELEASE_SITES,
    #: read by fitted_dp_event
    _release_sites = ("default_rng", "target_centre")

    _parameter_constraints: dict = {
        **BaseDPLinear._parameter_constraints,
        **CONVEX_MODEL_CONSTRAINTS,
        # "auto_spline": the auto rule for a private spline basis, which a private pipeline
        # hands its final model for the fit (linear_model/_auto.py, SPLINE_BASIS_ALPHA);
        # "auto_target_range": a target_range fit's own model (TARGET_RANGE_ALPHA)
        "alpha": [*BaseDPLinear._parameter_constraints["alpha"],
                  Hidden(StrOptions({"auto_spline", "auto_target_range"}))],
        "huber_threshold": [Interval(numbers.Real, 0, None, closed="left"),
                            StrOptions({"auto"})],
        "y_bound": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"}),
                    None],
        "target_range": ["array-like", None],
        "model_epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "auto_n_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-6,
        huber_threshold="auto",
        data_norm=None,
        y_bound=None,
        target_range=None,
        model_epsilon=None,
        auto_n_features=None,
        alpha="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        solver="auto",
        calibration="tight",
        max_iter=10_000,
        max_coef_norm=None,
        batch_size=None,
        n_steps=None,
        smoothing=None,
        step_scale=None,
        block_size="auto",
        n_phases=5,
        phase_shrink=0.5,
        n_epochs=10,
        n_jobs=None,
        random_state=None,
        verbose=0,
        privacy_ledger=None,
        secure_noise="auto",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.huber_threshold = huber_threshold
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
        self.max_iter = max_iter
        self.max_coef_norm = max_coef_norm
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.smoothing = smoothing
        self.step_scale = step_scale
        self.block_size = block_size
        self.n_phases = n_phases
        self.phase_shrink = phase_shrink
        self.n_epochs = n_epochs
        self.n_jobs = n_jobs
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
        y : array-like of shape (n_samples,)
        sample_weight : None
            Not supported (weights change the sensitivity); anything else raises.

        Returns
        -------
        self
        """
        _refuse_sample_weight(sample_weight)
        self._check_public_params()
        if self._huber_threshold() == 0 and self.solver not in _NONSMOOTH_SOLVERS | {"auto"}:
            raise ValueError(
                "huber_threshold=0 (absolute loss) is nonsmooth: solver="
                f"{self.solver!r} needs a smooth loss; use huber_threshold > 0 or "
                f"solver in {sorted(_NONSMOOTH_SOLVERS)}"
            )
        X, y = self._regression_inputs(X, y)
        self._check_n_samples(X.shape[0])
        loss, _ = self._planning_loss()
        # a target_range takes the released-bounds path, which sets the model's y_bound
        attrs, result = self._run_solver(X, y, loss, n_outputs=1, y_bound=self.y_bound)
        coef, intercept = in_target_units(attrs, result.coef[:, 0],
                                          float(result.intercept[0]))
        attrs["coef_"] = np.ascontiguousarray(coef)
        attrs["intercept_"] = intercept
        self._set_fitted(attrs)
        return self

    def _huber_threshold(self):
        """The model's threshold: in units of the range's half-width with a
        ``target_range`` (``"auto"``: ``TARGET_RANGE_THRESHOLD``), else as given
        (``"auto"``: 1) -- :func:`skdp.linear_model._target_range.effective_huber_threshold`."""
        return effective_huber_threshold(self.get_params(deep=False))

    def _planning_loss(self):
        threshold = self._huber_threshold()
        if threshold == 0:
            from .._losses._smoothed import AbsoluteLoss  # numba kernels: only when needed

            return AbsoluteLoss(), 1
        return HuberLoss(huber_threshold=threshold), 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
