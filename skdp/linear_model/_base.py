"""What the DP linear estimators share: parameters, validation, privacy attributes.

Privacy ledger hook
-------------------
Every estimator built on :class:`BaseDPLinear` takes ``privacy_ledger``
(:class:`skdp.accounting.PrivacyLedger` or None).  :meth:`BaseDPLinear._run_solver`

1. computes the *planned* event of the fit from public quantities only
   (:func:`planned_dp_event`: ``epsilon``, ``delta``, ``calibration``, ``n`` and the solver's
   public options -- never the data) and reserves it in the ledger, which raises
   :class:`~skdp.exceptions.BudgetExceededError` before the solver touches the data;
2. runs the solver;
3. commits the event the solver actually returned (checked again, atomically) before the
   fitted attributes are set, so a refused fit releases nothing.

A solver without an entry in ``PLANNERS`` (a new solver added by subclassing) still works
under a ledger: step 1 only checks that the store is reachable and the budget check
happens at step 3 -- after the computation, still before the release (see
:mod:`skdp.accounting._ledger`).  Register a planner to get the early check.  A fit with
``data_norm=None`` reads its bound from the data: it is planned and recorded as
``NonPrivateDpEvent`` (infinite epsilon), i.e. refused under any finite budget.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._mechanisms import max_row_norm
from .._solvers import CONVEX_SOLVERS, SOLVER_OPTIONS, SOLVERS
from .._solvers._phased import plan_phased_event
from .._solvers._resque import plan_resque_event
from ..accounting import get_delta, get_epsilon
from ..accounting._ledger import PrivacyLedger, ledger_reservation
from ..exceptions import PrivacyLeakWarning

#: docstring entries of the solver hyperparameters shared by the convex models
_CONVEX_SOLVER_PARAMS_DOC = r"""    batch_size : int or None, default=None
        Expected mini-batch size of ``solver="dpsgd"`` (None: 50) and ``"resque"`` (None:
        ``min(n/10, max(256, 4 sqrt(n)))``, spec §5.5; a function of the public ``n``).
        Ignored otherwise.
    n_steps : int or None, default=None
        Steps of ``solver="dpsgd"``; default ``ceil(n^2/batch_size^2)`` (ignored otherwise).
    smoothing : float or None, default=None
        Gaussian smoothing radius ``rho`` (the objective becomes
        ``E f(w + N(0, rho^2 I))``, within ``sqrt(2/pi) L rho`` of ``f``).
        ``solver="phased"``: applied to the nonsmooth losses only; None picks the
        smallest radius that makes the step admissible.  ``solver="resque"``: the ReSQue
        radius; None gives ``min(R/4, 10 R/sqrt(n))``.  Ignored by the other solvers.
    step_scale : float or None, default=None
        Step multiplier of ``solver="phased"`` (None: 1, the theory step) and
        ``solver="resque"`` (None: 8).  Ignored by the other solvers.
    block_size : int or "auto", default="auto"
        ``solver="resque"``: steps per ReSQue block, i.e. per batched oracle round
        (``"auto"``: ``max(1, floor(2 rho/(eta G)))``).  Ignored otherwise.
    n_phases : int, default=5
        ``solver="resque"``: localization phases.  Ignored otherwise.
    phase_shrink : float, default=0.5
        ``solver="resque"``: factor by which each phase shrinks the trust radius.
    n_epochs : float, default=10
        ``solver="resque"``: passes over the data (``T = ceil(n_epochs n/batch_size)``
        steps, fixed before the data is read).  Ignored otherwise.
    n_jobs : int or None, default=None
        ``solver="resque"``: threads evaluating the batched oracle round of each large
        block (at least 5·10⁵ entries; ``None``: serial, ``-1``: all numba threads).  One
        parallel region per block: worth it on large data when the cores are otherwise
        idle (``doc/solvers/resque.rst``).  Results differ from the serial run by rounding
        only; privacy does not depend on it.  Ignored otherwise.
"""

_PRIVACY_DOC = """\
    Privacy
    -------
    Neighbouring datasets differ by **replacing one row** of ``(X, y)``; ``n`` is public.
    The released model (``coef_``, ``intercept_``) is ``(epsilon_, delta_)``-DP provided
    ``data_norm`` is given: every row ``[x, intercept_scaling]`` is clipped to that norm
    before any computation, so the bound holds for any input.  With ``data_norm=None`` the
    bound is read from the data, a :class:`~skdp.exceptions.PrivacyLeakWarning` is issued
    and ``privacy_guaranteed_`` is False.  The class labels seen in ``y`` (``classes_``) are
    treated as public.  Not protected: fit time and ``n_gradient_evals_`` (they may depend
    on the data), and the exact floating-point bits of the noise (the samplers are not
    hardened against floating-point attacks, Mironov 2012).  A fixed ``random_state``
    reuses the same noise: two fits on different data with the same seed reveal the
    difference of their noise-free models -- use it for tests only.
"""


def _refuse_sample_weight(sample_weight):
    if sample_weight is not None:
        raise ValueError(
            "sample_weight is not supported: per-sample weights change the sensitivity of "
            "the fit and void the privacy guarantee"
        )


def _check_random_state(random_state):
    """A ``numpy.random.Generator`` from an int, None, Generator or RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    return np.random.default_rng(random_state)


def _plan_output_perturbation(est, n_samples):
    """Event of :func:`~skdp._solvers.solve_output_perturbation`: its noise over its
    sensitivity depends on ``(epsilon, delta, calibration)`` only (module docstring there)."""
    from ..accounting import calibrate_gaussian_sigma, gaussian_event, pure_dp_event

    epsilon, delta = float(est.epsilon), float(est.delta)
    if delta == 0.0:
        return pure_dp_event(epsilon)
    if est.calibration == "paper":
        return gaussian_event(math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon, 1.0)
    return gaussian_event(calibrate_gaussian_sigma(epsilon, delta, 1.0), 1.0)


def _plan_dpsgd(est, n_samples):
    """Event of :func:`~skdp._solvers.solve_dpsgd`: T Poisson-sampled Gaussian steps."""
    from .._solvers import _dpsgd
    from ..accounting import poisson_gaussian_event

    m = _dpsgd.DEFAULT_BATCH_SIZE if est.batch_size is None else int(est.batch_size)
    T = math.ceil(n_samples * n_samples / (m * m)) if est.n_steps is None else int(est.n_steps)
    q = m / n_samples
    z = _dpsgd._noise_multiplier(
        float(est.epsilon), float(est.delta), q, T, n_samples, est.calibration
    )
    return poisson_gaussian_event(q, z, T)


#: solver name -> f(estimator, n_samples) returning the event the fit will release,
#: computed from public quantities only.
PLANNERS = {"output_perturbation": _plan_output_perturbation, "dpsgd": _plan_dpsgd,
            "phased": plan_phased_event, "resque": plan_resque_event}


def planned_dp_event(estimator, n_samples):
    """The event a fit of ``estimator`` on ``n_samples`` rows will release, or None.

    ``NonPrivateDpEvent`` when a bound is read from the data (``data_norm=None``); None
    when the solver has no planner or its parameters are invalid (the solver then raises
    its own error, and a ledger checks the budget at commit time).
    """
    import dp_accounting

    if getattr(estimator, "data_norm", 0.0) is None:
        return dp_accounting.NonPrivateDpEvent()
    planner = PLANNERS.get(getattr(estimator, "solver", None))
    if planner is None:
        return None
    try:
        return planner(estimator, int(n_samples))
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None


class DPLinearRegressorMixin(RegressorMixin):
    """``predict`` of the DP linear regressors (post-processing: costs no privacy)."""

    def predict(self, X):
        """Predicted targets ``X @ coef_ + intercept_``.

        Post-processing of the private coefficients: costs no privacy.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted targets.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_


#: parameter constraints shared by the convex models (DPLogisticRegression, DPHuberRegressor):
#: their solver set and the hyperparameters of ``phased`` and ``resque``
CONVEX_MODEL_CONSTRAINTS = {
    "solver": [StrOptions(set(CONVEX_SOLVERS))],
    "smoothing": [Interval(numbers.Real, 0, None, closed="left"), None],
    "step_scale": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "block_size": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "n_phases": [Interval(numbers.Integral, 1, None, closed="left")],
    "phase_shrink": [Interval(numbers.Real, 0, 1, closed="right")],
    "n_epochs": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_jobs": [Options(numbers.Integral, {-1}), Interval(numbers.Integral, 1, None,
                                                         closed="left"), None],
}


class BaseDPLinear(BaseEstimator):
    """Shared machinery of the DP linear models (not public)."""

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither")],
        "solver": [StrOptions(set(SOLVERS))],  # narrowed by each estimator
        "calibration": [StrOptions({"tight", "paper"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_coef_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_steps": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "privacy_ledger": [PrivacyLedger, None],
    }

    def _check_privacy_params(self, n_samples):
        """Checks that ``_parameter_constraints`` cannot express; run before any noise."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}")
        if self.data_norm is not None and not math.isfinite(self.data_norm):
            raise ValueError(f"data_norm must be finite, got {self.data_norm!r}")
        if n_samples < 2:
            raise ValueError(
                f"a DP fit needs at least 2 samples; got n_samples = {n_samples} (1 sample)"
            )
        if self.delta > 0 and self.delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={self.delta:g} >= 1/n_samples={1.0 / n_samples:g}: such a delta allows "
                "releasing a whole row with probability delta; use delta << 1/n",
                UserWarning,
                stacklevel=3,
            )

    def _resolve_data_norm(self, X):
        """The public row bound, or (with a warning) one read from the data."""
        if self.data_norm is not None:
            if self.fit_intercept and not self.intercept_scaling < self.data_norm:
                raise ValueError(
                    f"data_norm={self.data_norm} must exceed intercept_scaling="
                    f"{self.intercept_scaling}: the intercept column counts towards the "
                    "row-norm bound"
                )
            return float(self.data_norm), True
        warnings.warn(
            "data_norm is None: the row-norm bound is read from the private data, which "
            "breaks the differential-privacy guarantee (privacy_guaranteed_ = False). "
            "Pass a public data_norm.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        norm = max_row_norm(X, self.fit_intercept, self.intercept_scaling)
        if self.fit_intercept:
            norm = max(norm, self.intercept_scaling * (1.0 + 1e-6))
        return max(norm, np.finfo(float).tiny), False

    def _run_solver(self, X, y, loss, *, n_outputs, y_bound=None):
        """Run the solver and return a dict of the fitted attributes (not yet set).

        Under a ``privacy_ledger`` the planned event is reserved before anything reads the
        data and the actual one committed before returning (module docstring).
        """
        import dp_accounting

        with ledger_reservation(
            getattr(self, "privacy_ledger", None),
            planned_dp_event(self, X.shape[0]),
            type(self).__name__,
        ) as reservation:
            attrs, result = self._run_solver_unrecorded(X, y, loss, n_outputs, y_bound)
            reservation.commit(
                attrs["dp_event_"]
                if attrs["privacy_guaranteed_"]
                else dp_accounting.NonPrivateDpEvent()
            )
        return attrs, result

    def _run_solver_unrecorded(self, X, y, loss, n_outputs, y_bound):
        data_norm, guaranteed = self._resolve_data_norm(X)
        rng = _check_random_state(self.random_state)
        result = SOLVERS[self.solver](
            X,
            y,
            loss,
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            alpha=float(self.alpha),
            data_norm=data_norm,
            n_outputs=n_outputs,
            fit_intercept=self.fit_intercept,
            intercept_scaling=float(self.intercept_scaling),
            y_bound=y_bound,
            calibration=self.calibration,
            max_iter=self.max_iter,
            max_coef_norm=self.max_coef_norm,
            rng=rng,
            **{name: getattr(self, name) for name in SOLVER_OPTIONS[self.solver]},
        )
        if self.verbose:
            print(f"[{type(self).__name__}] {result.details}")
        epsilon_spent = get_epsilon(result.dp_event, float(self.delta))
        if epsilon_spent > self.epsilon and get_delta(result.dp_event, self.epsilon) <= self.delta:
            # Both values are valid guarantees; the accountant's bisection may land a hair
            # above the target the noise was calibrated for.
            epsilon_spent = float(self.epsilon)
        return {
            "epsilon_": float(epsilon_spent),
            "delta_": float(self.delta),
            "dp_event_": result.dp_event,
            "noise_scale_": result.noise_scale,
            "sensitivity_": result.sensitivity,
            "data_norm_": result.data_norm,
            "privacy_guaranteed_": guaranteed,
            "n_gradient_evals_": result.n_gradient_evals,
            "n_iter_": result.n_iter,
        }, result

    def _set_fitted(self, attrs):
        for name, value in attrs.items():
            setattr(self, name, value)

    def _linear_predict(self, X):
        check_is_fitted(self)
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_.T + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.non_deterministic = False
        return tags
