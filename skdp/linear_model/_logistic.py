"""Differentially private logistic regression (binary and multinomial)."""

import functools
import numbers
import warnings

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._losses import LogisticLoss, MultinomialLoss
from ._base import (
    _AUTO_N_FEATURES_DOC,
    _RULE_WIDTH_ATTRS_DOC,
    _CONVEX_SOLVER_PARAMS_DOC,
    _PRIVACY_DOC,
    CONVEX_MODEL_CONSTRAINTS,
    BaseDPLinear,
    DaskScoreMixin,
    FIT_DTYPES,
    FIT_SPARSE_FORMATS,
    _refuse_sample_weight,
    _validate_fit_data,
    linear_scores,
)
from .._dask import dask_design, is_dask_collection
from .._raw_input import validate_numeric_data
from .._fitted_attributes import atomic_fit
from .._stacklevel import user_stacklevel
from ..exceptions import PrivacyLeakWarning




def _encode_binary(y, positive):
    """``+1`` for the positive class, ``-1`` otherwise (labels already checked)."""
    return np.where(np.asarray(y) == positive, 1.0, -1.0)


def _encode_index(y, classes):
    """The index of each label in the sorted public ``classes``, as float64 (the
    multinomial loss's targets; labels already checked)."""
    return np.searchsorted(classes, np.asarray(y)).astype(np.float64)


class DPLogisticRegression(DaskScoreMixin, ClassifierMixin, BaseDPLinear):
    __doc__ = (
        r"""Logistic regression with a differentially private fit.

    Minimises the L2-regularised mean logistic loss

    .. math:: F(w) = \frac1n \sum_i \ell(x_i^\top w, y_i) + \frac{\alpha}{2}\|w\|^2

    on rows clipped to ``||[x_i, intercept_scaling]|| <= data_norm`` (the intercept is a
    regularised constant feature), and releases the minimiser with calibrated noise.
    Two classes use the binary loss ``log(1 + exp(-y x.w))`` (``L = C``,
    ``beta = C^2/4``); three or more one multinomial (softmax) model with
    ``L = sqrt(2) C``, ``beta = C^2/2`` and no splitting of epsilon.

    The default ``solver="auto"`` runs objective perturbation for two classes and DP-SGD
    for more (``solver_`` reports which).  With ``solver="output_perturbation"`` and
    ``calibration="tight"``, the noise-free solution is certified to lie within ``tau =
    0.01 L/(n alpha)`` of the exact minimiser, its replace-one sensitivity is ``2L/(n
    alpha) + 2 tau`` and Gaussian noise is calibrated by the analytic Gaussian mechanism
    (``delta > 0``) or norm-Laplace noise (``delta = 0``, pure epsilon-DP).
    ``calibration="paper"`` reproduces Algorithm 1 of Zhang et al. (IJCAI 2017) with its
    Lemma 2/3 sensitivities and printed noise.
    ``alpha = 0`` runs plain gradient descent for a public number of steps and needs
    ``max_coef_norm``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon > 0.
    delta : float, default=1e-6
        Privacy parameter delta in [0, 1); 0 gives pure epsilon-DP.  Should be << 1/n.
    data_norm : float or None, default=None
        Public bound on the L2 norm of each feature row (``x``, without the intercept
        column); rows are clipped to it.  ``None`` reads it from the data (not private,
        warns; ``epsilon_`` is then infinite).
    alpha : float or "auto", default="auto"
        L2 regularisation strength (of the mean loss).  ``"auto"``: a public rule of
        ``n``, ``p``, ``epsilon``, ``delta`` and the bounds that balances the
        regulariser's bias against the noise (``skdp.linear_model._auto``; derivation in
        ``doc/defaults.rst``); the value used is ``alpha_``.
"""
        + _AUTO_N_FEATURES_DOC
        + r"""    fit_intercept : bool, default=True
        Fit an intercept, as a regularised constant feature ``intercept_scaling`` that is
        clipped together with the row.
    intercept_scaling : float, default=1.0
        Value of the constant column appended for the intercept after the features are
        clipped; the row bound is ``sqrt(data_norm^2 + intercept_scaling^2)``.
    classes : array-like or None, default=None
        Public label set -- the private way to fit a classifier.  ``None`` reads the
        labels present in ``y``: one row with a new label would turn a binary model into a
        multinomial one, so the fit warns (:class:`~skdp.exceptions.PrivacyLeakWarning`)
        and reports ``privacy_guaranteed_ = False`` and ``epsilon_ = inf``.
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
        the PLD accountant; needs ``delta > 0`` and ``calibration="tight"``.  Binary
        only (multinomial is refused).
        See ``doc/solvers/resque.rst``.
    calibration : {"tight", "paper"}, default="tight"
        ``"tight"``: the least noise an exact accounting of the mechanism run proves
        sufficient; ``"paper"``: the paper's printed sensitivities and noise.
    max_iter : int, default=10000
        Cap on optimiser iterations (public).
"""
        + _CONVEX_SOLVER_PARAMS_DOC
        + r"""    max_coef_norm : float or None, default=None
        Public bound on the norm of the minimiser; required when ``alpha = 0``.
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
    base_rate_fallback : {"auto", False}, default="auto"
        ``"auto"``: a fit by objective perturbation (binary) or dpsgd (multinomial, or
        binary on request) with ``delta > 0``, ``calibration="tight"`` and an intercept
        ends with a private check, planned with the fit and included in ``epsilon_``: one
        Gaussian release of the class counts and of the rows the released model classifies
        right (replace-one L2 sensitivity ``sqrt 2`` for two classes, ``sqrt 3`` for more;
        GDP parameter 0.2 times the model's, which costs the model ~2 % of its noise
        budget).  If the majority class classifies more rows, the model is replaced by its
        base-rate fallback: coefficients shrunk until no score of a row within
        ``data_norm`` moves by more than 1e-3 (same ranking) and the intercept at the
        private class rates' logits, so it predicts the majority class
        (``base_rate_fallback_``).  Where the features carry little signal, a private model
        otherwise lands below the majority rate.  With the check, the multinomial default
        regularises little (``alpha`` rule in ``skdp.linear_model._auto``).  ``False``: no
        check (and the multinomial rule without it).  Derivation in
        ``skdp.linear_model._base_rate``.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Private coefficients (one row for two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Private intercept (0 when ``fit_intercept=False``).
    classes_ : ndarray of shape (n_classes,)
        Class labels (``classes`` if given, else the labels seen in ``y``, which voids the
        guarantee).
    epsilon_ : float
        Epsilon this fit actually has at ``delta_`` (<= ``epsilon``; ``inf`` when
        ``data_norm`` or ``classes`` is None).
    delta_ : float
        Delta of the guarantee (the requested ``delta``).
    dp_event_ : dp_accounting.DpEvent
        Description of the release, composable with :func:`skdp.accounting.compose`.
    noise_scale_ : float
        Gaussian standard deviation per coordinate (or norm-Laplace scale).
    sensitivity_ : float
        Replace-one L2 sensitivity of the noise-free coefficients.
    data_norm_ : float
        Feature-row bound enforced (``data_norm``, or a power of two read from the data).
    row_bound_ : float
        Bound on the augmented row, ``sqrt(data_norm_^2 + intercept_scaling^2)``: the
        constant of every sensitivity.
    solver_ : str
        The solver that ran (what ``solver="auto"`` chose).
    alpha_ : float
        The L2 strength used (what ``alpha="auto"`` chose, possibly raised by the solver).
    solver_params_ : dict
        Resolved schedule of ``dpsgd`` (``batch_size``, ``n_steps``, and ``clip_fraction``
        for the binary loss: its per-example clip over the Lipschitz bound);
        ``follow_up_ratio`` when the base-rate check runs; empty otherwise.
    secure_noise_ : bool
        Whether the release used exact grid noise (``secure_noise``, resolved).
    base_rate_fallback_ : bool
        Whether the base-rate check replaced the model by its fallback (always False
        when the check does not run; ``solver_params_["follow_up_ratio"]`` is present when
        it runs).
    privacy_guaranteed_ : bool
        False iff a bound or the label set was read from the data (``data_norm=None``
        or ``classes=None``).
    n_gradient_evals_ : int
        Per-example gradients computed.  Unprotected diagnostic: may depend on the data;
        removed from the models the private searches return.
    n_iter_ : int
        Optimiser iterations (``solver="dpsgd"``: noisy steps).  Unprotected diagnostic:
        the certified minimisers iterate until a data-dependent stopping test holds.
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
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from skdp import DPLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = MinMaxScaler().fit_transform(X) / 5.5  # public scaling: rows of norm <= 1
    >>> clf = DPLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.5, classes=[0, 1],
    ...                            random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.epsilon_ <= 1.0, clf.privacy_guaranteed_
    (True, True)
    """
    )

    #: where an integer random_state keys the noise (solver and "auto" bounds; the
    #: base-rate check, base_rate_word_source): skdp._mechanisms._exact.RELEASE_SITES,
    #: read by fitted_dp_event
    _release_sites = ("default_rng", "base_rate_check")

    _parameter_constraints: dict = {
        **BaseDPLinear._parameter_constraints,
        **CONVEX_MODEL_CONSTRAINTS,
        "classes": ["array-like", None],
        "base_rate_fallback": [StrOptions({"auto"}), Options(bool, {False})],
        "auto_n_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-6,
        data_norm=None,
        alpha="auto",
        fit_intercept=True,
        intercept_scaling=1.0,
        classes=None,
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
        base_rate_fallback="auto",
        auto_n_features=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
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
        self.base_rate_fallback = base_rate_fallback
        self.auto_n_features = auto_n_features

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : None
            Not supported: weights change the sensitivity.  Passing anything else raises.

        Returns
        -------
        self
        """
        _refuse_sample_weight(sample_weight)
        self._check_public_params()
        classes = None if self.classes is None else np.unique(np.asarray(self.classes))
        if classes is not None and classes.size < 2:
            raise ValueError(
                f"DPLogisticRegression needs at least 2 classes; got classes={classes!r}")
        if is_dask_collection(X):
            X, y_enc = self._dask_inputs(X, y, classes)
            if classes.size == 2:
                return self._fit_encoded(X, y_enc, LogisticLoss(), 1, classes)
            return self._fit_encoded(X, y_enc, MultinomialLoss(n_classes=int(classes.size)),
                                     int(classes.size), classes)
        X, y = _validate_fit_data(self, X, y, accept_sparse=FIT_SPARSE_FORMATS,
                                  dtype=FIT_DTYPES)
        check_classification_targets(y)
        self._check_n_samples(X.shape[0])
        if classes is not None:
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                # the public classes only: y's labels (and how many are unknown) are private
                raise ValueError(
                    f"y contains labels not in classes={classes.tolist()!r} (the labels of "
                    "y are private and not shown); pass the full public label set")
        else:
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError(
                    "DPLogisticRegression needs at least 2 classes, and y holds a single "
                    "one (not shown: it is private); pass the public label set as "
                    "classes=[...]")
            warnings.warn(
                "classes is None: the label set is read from the private data. One row with "
                "a new label turns a binary model into a multinomial one, which no noise "
                "hides (privacy_guaranteed_ = False, epsilon_ = inf). Pass the public label "
                "set as classes=[...] (the labels read from y are private and not shown).",
                PrivacyLeakWarning,
                stacklevel=user_stacklevel(),
            )
        y_index = np.searchsorted(classes, y)
        if classes.size == 2:
            loss = LogisticLoss()
            y_enc = np.where(y_index == 1, 1.0, -1.0)
            n_outputs = 1
        else:
            loss = MultinomialLoss(n_classes=int(classes.size))
            y_enc = y_index.astype(np.float64)
            n_outputs = int(classes.size)
        del y_index     # n integers: not kept alive through the fit
        return self._fit_encoded(X, y_enc, loss, n_outputs, classes)

    def _fit_encoded(self, X, y_enc, loss, n_outputs, classes):
        attrs, result = self._run_solver(X, y_enc, loss, n_outputs=n_outputs)
        attrs["coef_"] = np.ascontiguousarray(result.coef.T)
        attrs["intercept_"] = result.intercept.copy()
        attrs["base_rate_fallback_"] = False
        mu_f = float(result.details.get("mu_follow_up", 0.0))
        if mu_f > 0.0:
            # the check planned with the fit and accounted in its epsilon_
            # (skdp.linear_model._base_rate)
            self._apply_base_rate_fallback(X, y_enc, attrs, mu_f)
        attrs["classes_"] = classes
        self._set_fitted(attrs)
        return self

    def _apply_base_rate_fallback(self, X, y_enc, attrs, mu_f):
        """Release the base-rate counts and replace the model by its fallback if the
        majority class classifies more training rows (:mod:`._base_rate`)."""
        from ._base_rate import (base_rate_fallback, base_rate_word_source,
                                 release_base_rate_counts)

        source = base_rate_word_source(self.random_state)
        counts = release_base_rate_counts(X, y_enc, attrs["coef_"], attrs["intercept_"],
                                          mu_f, source)
        coef, intercept, fell_back = base_rate_fallback(
            attrs["coef_"], attrs["intercept_"], counts, X.shape[0], attrs["data_norm_"])
        attrs["coef_"] = np.ascontiguousarray(coef)
        attrs["intercept_"] = intercept
        attrs["base_rate_fallback_"] = bool(fell_back)

    def _dask_inputs(self, X, y, classes):
        """``(DaskDesign, its targets)`` of a fit on a Dask collection: labels checked and
        encoded on the workers (+-1 for two classes, the class index for more); the public
        ``classes`` is required (reading the label set would need a pass over the private
        data)."""
        if classes is None:
            raise ValueError(
                "DPLogisticRegression.fit on a Dask collection needs the public label set "
                "(reading it from y would need a pass over the private data): pass "
                "classes=[negative, positive], or every class of a multiclass target")
        encode = (functools.partial(_encode_binary, positive=classes[1]) if classes.size == 2
                  else functools.partial(_encode_index, classes=classes))
        design = dask_design(self, X, y, encode, labels=classes)
        self._check_n_samples(design.shape[0])
        return design, design.y

    def _data_derived_inputs(self):
        return super()._data_derived_inputs() + (["classes"] if self.classes is None else [])

    def _planning_loss(self):
        """Binary or multinomial, from the public ``classes`` (or the fitted labels)."""
        classes = self.classes if self.classes is not None else getattr(self, "classes_", None)
        k = 2 if classes is None else int(np.unique(np.asarray(classes)).size)
        if k <= 2:
            return LogisticLoss(), 1
        return MultinomialLoss(n_classes=k), k

    def decision_function(self, X):
        """Scores ``X @ coef_.T + intercept_``: shape ``(n_samples,)`` for two classes (the
        score of ``classes_[1]``), ``(n_samples, n_classes)`` otherwise.

        Post-processing of the private coefficients: costs no privacy.  (scikit-learn's
        ``LinearClassifierMixin`` computes the same; it is not used so that importing this
        estimator does not import ``sklearn.linear_model``.)

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            A lazy Dask array for a Dask ``X`` (computed per block on the workers).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return self._lazy("decision_function", X, float)
        X = validate_numeric_data(self, X, accept_sparse=FIT_SPARSE_FORMATS, reset=False)
        scores = linear_scores(X, self.coef_.T, self.intercept_)
        return scores.reshape(-1) if scores.ndim > 1 and scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predicted class labels: ``classes_[1]`` where the score is positive (two
        classes), else the class of the largest score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            A lazy Dask array for a Dask ``X``.
        """
        if is_dask_collection(X):
            check_is_fitted(self)
            return self._lazy("predict", X, self.classes_.dtype)
        scores = self.decision_function(X)
        indices = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        return np.take(self.classes_, indices, axis=0)

    def predict_proba(self, X):
        """Class probabilities (sigmoid for two classes, softmax otherwise).

        Post-processing of the private coefficients: costs no privacy.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score (not clipped: prediction does not touch the training data).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class in the order of ``classes_``; a lazy Dask array for
            a Dask ``X``.
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return self._lazy("predict_proba", X, float)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = expit(scores)
            return np.column_stack([1.0 - p1, p1])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probability of each class in the order of ``classes_``; a lazy Dask array
            for a Dask ``X``.
        """
        if is_dask_collection(X):
            check_is_fitted(self)
            return self._lazy("predict_log_proba", X, float)
        return np.log(self.predict_proba(X))

    def _lazy(self, method, X, dtype):
        """The in-memory ``method`` over the row blocks of the Dask ``X``, lazily."""
        from .._dask_predict import lazy_rowwise

        k = self.classes_.size
        tail = () if method == "predict" or (method == "decision_function" and k == 2) \
            else (k,)
        return lazy_rowwise(getattr(self, method), X, tail, dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = True
        return tags
