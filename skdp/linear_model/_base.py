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

A fit that releases its own bounds first (``data_norm="auto"`` standalone,
``y_bound="auto"``, a ``target_range``) runs its model at a released bound, whose event
equals the planned one in exact arithmetic only: it reserves a public upper bound of its
whole event and commits exactly that
(:meth:`BaseDPLinear._run_solver_released_bounds`), so that admission and charge never
depend on the data.

A solver without an entry in ``PLANNERS`` (a new solver added by subclassing) still works
under a ledger: step 1 only checks that the store is reachable and the budget check
happens at step 3 -- after the computation, still before the release (see
:mod:`skdp.accounting._ledger`).  Register a planner to get the early check.  A fit with
``data_norm=None`` reads its bound from the data: it is planned and recorded as
``NonPrivateDpEvent`` (infinite epsilon), i.e. refused under any finite budget.

``solver="auto"``, ``alpha="auto"`` and the schedules are resolved by
:func:`skdp.linear_model._auto.resolve_fit_plan`, called by the fit *and* by the planner.

Bounds
------
``data_norm`` bounds the feature rows (as users and diffprivlib mean it); the intercept
column ``intercept_scaling`` is appended after clipping, so the solvers receive the row
bound ``R = sqrt(data_norm^2 + intercept_scaling^2)`` (:func:`skdp._mechanisms.row_bound`),
reported as ``row_bound_``.
"""

import abc
import functools
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from .._dask import (DASK_SOLVERS, MULTINOMIAL_DASK, dask_design,
                     is_dask_collection)
from .._mechanisms import max_row_norm, new_word_source, row_bound
from .._mechanisms._clipping import feature_row_norms
from .._raw_input import validate_numeric_data
from .._solvers import (CONVEX_SOLVERS, SECURE_NOISE_SOLVERS, SOLVER_OPTIONS, SOLVERS,
                        SPARSE_SOLVERS)
from .._solvers._dask_objective import DaskDesign
from .._solvers._threads import single_threaded_blas
from ._auto import resolve_fit_plan
from ._target_range import centre_targets, check_target_range
from ..accounting import get_delta, get_epsilon
from ..accounting._ledger import PrivacyLedger, ledger_reservation
from .._stacklevel import user_stacklevel
from ..exceptions import PrivacyLeakWarning

#: docstring entries of the solver hyperparameters shared by the convex models
_CONVEX_SOLVER_PARAMS_DOC = r"""    batch_size : int or None, default=None
        Expected mini-batch size of ``solver="dpsgd"`` (None: ``min(n, max(64, 4
        sqrt(n)))``) and ``"resque"`` (None: ``min(n/10, max(256, 4 sqrt(n)))``); functions
        of the public ``n``.  Ignored otherwise.
    n_steps : int, "bst14" or None, default=None
        Steps of ``solver="dpsgd"``.  None: a fixed compute budget of
        ``clip(5e8/(n p), 2, 20)`` epochs; ``"bst14"``: Bassily, Smith & Thakurta's
        ``ceil(n^2/batch_size^2)``.  Ignored otherwise.
    smoothing : float or None, default=None
        Gaussian smoothing radius ``rho`` (the objective becomes
        ``E f(w + N(0, rho^2 I))``, within ``sqrt(2/pi) L rho`` of ``f``): 0 or in
        ``[1e-100, 1e100]``.
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

#: ``auto_n_features`` of the three estimators (the width their ``auto`` rules read)
_AUTO_N_FEATURES_DOC = r"""    auto_n_features : int or None, default=None
        The number of features the ``"auto"`` rules (``alpha``, DP-SGD's batch size and
        steps, the warm start of ``warm_gd``) are evaluated at; None: the design's.  The
        privacy event reads those choices, so a private pipeline whose transformers
        release the design's width (knots, discovered categories) sets it to its public
        planning width: the model's event is then fixed before any row (a model whose
        event followed a released width would not compose to the budget;
        :func:`skdp.linear_model._budget.width_rule_pins`).  Restored after the fit.
"""

#: the fitted attributes that say what a fit's ``auto`` rules read
_RULE_WIDTH_ATTRS_DOC = r"""    n_samples_seen_ : int
        Number of rows of the fit (public: neighbouring datasets have the same ``n``).
    auto_n_features_ : int or None
        The ``auto_n_features`` the fit's rules read; None: they read the design's width.
        A pipeline composes the event of a model whose rules read a width an earlier step
        released as the pair dominating its ``(epsilon, delta)``, unless the event is the
        same at every width (:mod:`skdp.accounting._released_width`).
"""


def _rule_width(estimator):
    """``auto_n_features`` as the fit's rules read it (None: the design's width)."""
    width = getattr(estimator, "auto_n_features", None)
    return None if width is None else int(width)


#: the guarantee, under numpydoc's standard "Notes" heading (an own "Privacy" section made
#: numpydoc -- and scikit-learn's HTML repr, which parses the docstring with it -- warn
#: "Unknown section Privacy" on every estimator shown in a notebook)
_PRIVACY_DOC = """\
    Notes
    -----
    .. rubric:: Privacy

    Neighbouring datasets differ by **replacing one row** of ``(X, y)``; ``n`` is public.
    The released model (``coef_``, ``intercept_``) is ``(epsilon_, delta_)``-DP provided
    ``data_norm`` is given: every feature row is clipped to that norm before any
    computation and the intercept column appended afterwards, so the row bound
    ``row_bound_ = sqrt(data_norm^2 + intercept_scaling^2)`` holds for any input.  With
    ``data_norm=None`` the bound is read from the data (rounded up to a power of two), a
    :class:`~skdp.exceptions.PrivacyLeakWarning` is issued, ``privacy_guaranteed_`` is
    False and ``epsilon_`` is infinite; the same holds for a classifier whose label set is
    read from ``y`` (``classes=None``).  Every other fitted attribute is a function of the
    public parameters, ``n`` and ``d``, except the unprotected diagnostics ``n_iter_`` and
    ``n_gradient_evals_`` (they may depend on the data; the private searches remove them).
    Not protected: fit time and those diagnostics.  The released bits are protected when
    ``secure_noise_`` is True (exact noise on a public grid; the default of every solver);
    ``secure_noise=False`` brings back float noise, which is open to precision attacks
    (``doc/floating_point.rst``).  A fixed ``random_state`` reuses the same noise: two fits
    on different data with the same seed reveal the difference of their noise-free models
    -- use it for tests only.
"""


#: the input the fits take without a copy: scipy.sparse rows (CSC and COO are converted
#: to CSR once, :class:`skdp._mechanisms._clipped_rows.ClippedRows`), float64 or float32
#: (read as the float64 numbers it holds), C or Fortran order
FIT_SPARSE_FORMATS = ("csr", "csc", "coo")
FIT_DTYPES = (np.float64, np.float32)


#: solver options that no estimator parameter sets, only the fit plan of ``_auto``: the
#: base-rate check's budget, dpsgd's per-example clip and the coefficients ``warm_gd``'s
#: rules are evaluated at (reported in ``solver_params_``)
PLAN_ONLY_OPTIONS = ("follow_up_ratio", "clip_fraction", "rule_features")


def _validate_fit_data(estimator, X, y, **kwargs):
    """``validate_data(estimator, X, y, **kwargs)`` of a fit, with the raw-table error of
    :func:`skdp._raw_input.validate_numeric_data`."""
    return validate_numeric_data(estimator, X, y, **kwargs)


def _called_by_bagging(max_depth=60):
    """Whether the current fit runs inside scikit-learn's Bagging ensembles (its module
    is on the call stack, in the worker too when ``n_jobs > 1``): only the wording of
    :func:`_refuse_sample_weight` depends on it."""
    import sys

    frame = sys._getframe(1)
    for _ in range(max_depth):
        if frame is None:
            return False
        if str(frame.f_globals.get("__name__", "")).startswith("sklearn.ensemble._bagging"):
            return True
        frame = frame.f_back
    return False


def _refuse_sample_weight(sample_weight):
    """Refuse ``sample_weight``.  Whole-number weights are row counts: a row of weight
    ``k`` enters the fit ``k`` times (``k``-fold sensitivity).  That is how scikit-learn's
    ``BaggingClassifier``/``BaggingRegressor`` resample rows (``np.bincount`` of the drawn
    indices, 0/1 even with ``bootstrap=False``): inside Bagging the message says why that
    breaks the per-row guarantee and what to do instead; outside, it says what counts do
    and how to fit on the rows themselves."""
    if sample_weight is None:
        return
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
        counts = bool(w.size) and bool(np.all(np.isfinite(w))) and bool(
            np.all((w >= 0) & (w == np.floor(w))))
    except (TypeError, ValueError):
        counts = False
    if counts and _called_by_bagging():
        raise ValueError(
            "sample_weight is not supported: these whole-number weights are row counts, "
            "which is how BaggingClassifier/BaggingRegressor resample rows. With "
            "bootstrap=True a row drawn k times enters the fit k times: replacing it moves "
            "the fit k times as far (k-fold sensitivity), which voids the per-row guarantee. "
            "bootstrap=False passes 0/1 weights (rows without replacement), refused as "
            "well: each of the ensemble's models spends its own epsilon on overlapping "
            "rows, which no model reports. Instead fit one DP model on all rows, or fit "
            "models on disjoint blocks of rows, fixed without looking at the data (each row "
            "in one block: the ensemble is "
            "(epsilon, delta)-DP by parallel composition) and combine their predictions; "
            "to tune, use skdp.model_selection.DPGridSearchCV, which accounts its total "
            "cost")
    if counts:
        raise ValueError(
            "sample_weight is not supported: whole-number weights are row counts, and a "
            "row of weight k enters the fit k times: replacing it moves the fit k times as "
            "far (k-fold sensitivity), which voids the per-row guarantee. Fit on the rows "
            "themselves instead: omit sample_weight (every weight 1), or pass only the "
            "rows to fit, X[w > 0] and y[w > 0], when which rows those are is public")
    raise ValueError(
        "sample_weight is not supported: per-sample weights change the sensitivity of "
        "the fit and void the privacy guarantee"
    )


#: usable range of the public scale parameters (:func:`check_public_ranges`)
SCALE_RANGE = (2.0 ** -100, 2.0 ** 100)
#: the scale parameters checked against ``SCALE_RANGE``, with what rescaling them means
_SCALE_PARAMETERS = {
    "data_norm": "divide X by a public constant",
    "intercept_scaling": "use an intercept_scaling of the order of data_norm",
    "y_bound": "divide y by a public constant",
    "huber_threshold": "divide y by a public constant",
    "loss_scale": "divide y by a public constant",
    "max_coef_norm": "rescale X (and so the coefficients) by a public constant",
}
#: usable range of ``alpha`` when it is positive (:func:`check_public_ranges`)
ALPHA_RANGE = (2.0 ** -250, 2.0 ** 250)
#: usable range of ``epsilon`` when ``delta = 0`` (:func:`check_public_ranges`): the pure-DP
#: event is a randomized response of probability ``1/(1 + e^epsilon)``, which resolves
#: epsilon to 2^-52 absolute (relative 2^-20 from 2^-32 up) and stays a normal float64 up
#: to ``-ln(2^-1022) = 708.39`` (``e^epsilon`` overflows above 709.78)
PURE_EPSILON_RANGE = (2.0 ** -32, -math.log(2.0 ** -1022))


def _fmt_range(lo, hi):
    return f"[{lo:.4g}, {hi:.4g}]"


def check_public_ranges(est):
    r"""Refuse public parameters outside the float64 range of the calibration.

    Raised by every fit before it reads the data, as a ``ValueError`` naming the parameter
    and its usable range (without it the accounting raised a raw ``ZeroDivisionError`` or
    ``OverflowError``, or a solver failed after reading the data).

    * **Scales** (``data_norm``, ``intercept_scaling`` with an intercept, ``y_bound``,
      ``huber_threshold > 0``, ``loss_scale``, ``max_coef_norm``): within
      ``SCALE_RANGE = [2^-100, 2^100]`` (about ``[7.9e-31, 1.3e30]``).  The calibrations form
      products of up to eight such scales -- output perturbation's ``alpha="auto"`` rule is
      ``(c kappa^2 R^6 (2/(n mu))^2 / m^2)^(1/3)`` for Huber -- times factors of ``n``,
      ``p`` and the GDP ``mu`` (``mu >= e^-30``, :func:`skdp.accounting.gaussian_mu_for`)
      that stay within ``2^+-220`` for any realistic ``n``: ``8 * 100 + 220 < 1022``, so
      every constant stays a finite, normal float64.  Measured at ``n = 400`` with the
      other scales 1, the first solver to fail did so at ``data_norm = 1.7e52`` (output
      perturbation's alpha rule, ``R^6`` overflows), ``8.6e-54`` without intercept (its
      alpha underflows to 0), ``huber_threshold = loss_scale = 2e155`` (objective
      perturbation), ``y_bound = 1.3e154`` (Cauchy loss, zeroth_order).
    * ``alpha > 0``: within ``ALPHA_RANGE = [2^-250, 2^250]``: the solvers' step counts
      and noise scale with ``beta/alpha`` and ``L/(n alpha)`` (``beta = c R^2``), and they
      failed at ``alpha/beta`` of about ``1e161`` (resque, a division by zero) and
      ``1e-160`` (phased, the noise overflows); with ``R`` in its range
      ``alpha/beta`` stays within ``2^+-450``.
    * ``delta = 0`` (pure epsilon-DP): ``epsilon`` within ``PURE_EPSILON_RANGE = [2^-32,
      708.39]``.  The release is recorded as a randomized response of probability
      ``2/(1 + e^epsilon)`` (:func:`skdp.accounting.pure_dp_event`): above
      ``-ln(2^-1022) = 708.39`` that probability is no longer a normal float (``e^epsilon``
      overflows at 709.78); below ``2^-32`` it is within ``2^-53`` of 1, which resolves
      epsilon only to ``2^-52`` absolute, i.e. worse than ``2^-20`` relative (the reported
      ``epsilon_`` exceeded the requested one from about ``1.3e-13``; at ``1e-17`` it reads
      0), and the exact Laplace sampler's integer scale ``~ p/epsilon`` grid steps
      approaches the int64 range.
    * ``delta > 0``: the Gaussian calibration's limits (a noise multiplier up to
      ``e^30``) are checked by :func:`skdp.accounting.gaussian_mu_for`, which names
      epsilon and delta and the values that work; and once the plan is resolved, a dpsgd
      fit with the base-rate check needs ``epsilon <= 1e5`` (:func:`_check_planned_range`).
    """
    lo, hi = SCALE_RANGE
    for name, remedy in _SCALE_PARAMETERS.items():
        value = getattr(est, name, None)
        if value is None or isinstance(value, str) or isinstance(value, bool):
            continue
        if name == "intercept_scaling" and not getattr(est, "fit_intercept", False):
            continue
        if name == "huber_threshold" and value == 0:
            continue                       # the absolute loss
        if not (lo <= float(value) <= hi):
            raise ValueError(
                f"{name}={value!r} is outside its usable range {_fmt_range(lo, hi)} "
                "(2^-100 to 2^100): the noise calibration multiplies up to eight such "
                "public scales and must stay finite and nonzero in float64. Rescale "
                f"publicly ({remedy}) so that {name} lies in that range")
    alpha = getattr(est, "alpha", None)
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and alpha > 0:
        lo, hi = ALPHA_RANGE
        if not (lo <= float(alpha) <= hi):
            raise ValueError(
                f"alpha={alpha!r} is outside its usable range {_fmt_range(lo, hi)} "
                "(2^-250 to 2^250; or alpha=0, or 'auto' where available): the solvers' "
                "step counts and noise scale with alpha relative to the loss's smoothness "
                "and overflow or underflow beyond it")
    if float(est.delta) == 0.0:
        lo, hi = PURE_EPSILON_RANGE
        if not (lo <= float(est.epsilon) <= hi):
            raise ValueError(
                f"epsilon={est.epsilon!r} with delta=0 is outside the usable range of pure "
                f"epsilon-DP {_fmt_range(lo, hi)} (2^-32 to -ln(2^-1022)): the release is "
                "accounted as a randomized response of probability 2/(1 + e^epsilon), "
                "which overflows above 708.39 and cannot resolve epsilon below 2^-32. "
                + ("Use epsilon <= 708.39 (the guarantee is void long before)"
                   if float(est.epsilon) > hi else
                   "Use epsilon >= 2^-32, or delta > 0"))
    else:
        from ..accounting._gaussian import check_gaussian_range

        check_gaussian_range(float(est.epsilon), float(est.delta))   # names both


#: largest ``epsilon`` of a dpsgd fit that ends with the base-rate check
#: (:func:`_check_planned_range`)
CHECKED_DPSGD_MAX_EPSILON = 1e5


def _check_planned_range(est, plan):
    """Ranges that depend on the resolved public plan.  A dpsgd fit with the base-rate
    check (``follow_up_ratio`` in the plan) is calibrated by the PLD accountant on the
    composition of its steps with the check's Gaussian release, of GDP ``mu_f = 0.2
    mu(epsilon, delta) ~ 0.2 sqrt(2 epsilon)``; that release's privacy loss spans about
    ``mu_f^2/2 + 8 mu_f`` on a grid at most 6.4e-3 wide: about 7e5 points at ``epsilon =
    1e5`` (measured: 8 s, 0.5 GB for the whole fit), 7e6 at 1e6 (81 s, several GB), 6e8 at
    1e8 (memory exhausted; at 1e300 numpy refuses the array).  dpsgd's noise multiplier is
    at its floor (0.2) from about epsilon = 3000 on, so nothing is lost below 1e5."""
    if plan.solver == "dpsgd" and plan.options.get("follow_up_ratio") \
            and float(est.epsilon) > CHECKED_DPSGD_MAX_EPSILON:
        raise ValueError(
            f"epsilon={est.epsilon!r} is above {CHECKED_DPSGD_MAX_EPSILON:g}, the usable "
            "range of a dpsgd fit with the base-rate check: the accountant's grid for the "
            "check's Gaussian release grows like epsilon (minutes and gigabytes from 1e6 "
            "on). Use epsilon <= 1e5 (dpsgd's noise is at its floor from about 3000 on), "
            "or base_rate_fallback=False")


def _public_numbers(est, n_samples=None, n_features=None):
    """``name=value`` of the public numeric parameters of ``est`` (for error messages)."""
    names = ["epsilon", "delta", "alpha", *_SCALE_PARAMETERS]
    parts = [f"{k}={getattr(est, k)!r}" for k in names
             if isinstance(getattr(est, k, None), numbers.Real)
             and not isinstance(getattr(est, k), bool)]
    if n_samples is not None:
        parts.append(f"n_samples={n_samples}")
    if n_features is not None:
        parts.append(f"n_features={n_features}")
    return ", ".join(parts)


def _range_error(est, exc, stage, n_samples=None, n_features=None):
    """A ``ValueError`` for an arithmetic error (``ZeroDivisionError``, ``OverflowError``)
    of the public calibration: names every public number, as no single one is to blame."""
    return ValueError(
        f"the public parameters ({_public_numbers(est, n_samples, n_features)}) put the "
        f"{stage} of this fit outside float64 ({type(exc).__name__}: {exc}): move the "
        "scales (data_norm, y_bound, huber_threshold, loss_scale, alpha) toward 1 by "
        "rescaling X and y publicly, or epsilon toward 1")


def clip_targets(y, bound):
    """Regression targets as float64, clipped to ``[-y_bound, y_bound]`` when a public bound
    is given (a Dask fit applies it to each partition on its worker)."""
    y = np.asarray(y, dtype=np.float64)
    return y if bound is None else np.clip(y, -bound, bound)


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
    """Event of :func:`~skdp._solvers.solve_dpsgd`: T Poisson-sampled Gaussian steps
    (``est`` is a resolved plan view: ``batch_size`` and ``n_steps`` are integers)."""
    from .._solvers import _dpsgd
    from ..accounting import compose, gaussian_event, poisson_gaussian_event

    m, T = int(est.batch_size), int(est.n_steps)
    _dpsgd.check_batch_sum(n_samples)        # the fit's refusal, before any release
    q = m / n_samples
    mu_f = _dpsgd.follow_up_mu(est.epsilon, est.delta, getattr(est, "follow_up_ratio", 0.0))
    z = _dpsgd._noise_multiplier(
        float(est.epsilon), float(est.delta), q, T, n_samples, est.calibration, mu_f
    )
    if mu_f > 0.0:
        return compose(poisson_gaussian_event(q, z, T), gaussian_event(1.0 / mu_f, 1.0))
    return poisson_gaussian_event(q, z, T)


def _plan_objective_perturbation(est, n_samples):
    """Event of :func:`~skdp._solvers.solve_objective_perturbation` (its public plan)."""
    from .._solvers._objective_perturbation import objective_perturbation_plan

    p = int(est.n_features_in_) + int(bool(est.fit_intercept))
    return objective_perturbation_plan(
        n_samples, p, est.loss_, epsilon=est.epsilon, delta=est.delta, alpha=est.alpha,
        row_bound=est.row_bound, calibration=est.calibration,
        follow_up_ratio=getattr(est, "follow_up_ratio", 0.0))["dp_event"]


def _plan_phased(est, n_samples):
    """Event of :func:`~skdp._solvers.solve_phased` (its module, with its numba kernels,
    imported when a phased fit is planned)."""
    from .._solvers._phased import plan_phased_event

    return plan_phased_event(est, n_samples)


def _plan_resque(est, n_samples):
    """Event of :func:`~skdp._solvers.solve_resque` (imported as :func:`_plan_phased`)."""
    from .._solvers._resque import plan_resque_event

    return plan_resque_event(est, n_samples)


#: solver name -> f(plan view, n_samples) returning the event the fit will release,
#: computed from public quantities only (the view is :meth:`FitPlan.view`).
PLANNERS = {"output_perturbation": _plan_output_perturbation, "dpsgd": _plan_dpsgd,
            "phased": _plan_phased, "resque": _plan_resque,
            "objective_perturbation": _plan_objective_perturbation}


def planned_dp_event(estimator, n_samples, n_features=None, *, loss=None, n_outputs=1,
                     raise_errors=False):
    """The event a fit of ``estimator`` on ``n_samples`` rows will release, or None.

    ``NonPrivateDpEvent`` when a bound is read from the data (``data_norm=None``); None
    when the solver has no planner or its parameters are invalid (the solver then raises
    its own error, and a ledger checks the budget at commit time; ``raise_errors=True``
    raises that error instead).  ``n_features`` defaults to the fitted ``n_features_in_``,
    ``loss`` to the estimator's public one.
    Everything goes through :func:`skdp.linear_model._auto.resolve_fit_plan`, as the fit.
    A fit that releases its own bounds reserves and commits this event loosened
    (:func:`released_bounds_reservation`): its ``dp_event_`` runs at the released bound.
    """
    from ..accounting import _lazy_dp_accounting as dp_accounting

    if estimator._data_derived_inputs():
        return dp_accounting.NonPrivateDpEvent()
    try:
        check_target_range(estimator)
    except ValueError:
        if raise_errors:
            raise
        return None
    if estimator._released_bounds():
        return _planned_released_bounds_event(estimator, n_samples, n_features)
    try:
        if n_features is None:
            n_features = estimator.n_features_in_
        if loss is None:
            loss, n_outputs = estimator._planning_loss()
        plan = estimator._fit_plan(int(n_samples), int(n_features), loss, n_outputs,
                                   estimator._public_row_bound())
        return _event_of_plan(estimator, plan, int(n_samples), int(n_features), loss)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AttributeError):
        if raise_errors:    # the estimator's own reason, for a composite's error message
            raise
        return None


def _planned_released_bounds_event(estimator, n_samples, n_features):
    """The event of a fit that releases its own bounds first (``data_norm="auto"``
    standalone, ``y_bound="auto"``; the targets' mean of a ``target_range``): the bounds'
    count trees under ``sqrt(AUTO_BOUND_SHARE)`` of the fit's ``mu`` and the mean under
    ``sqrt(TARGET_CENTRE_SHARE)`` (:func:`_released_events`), then the model at the largest
    epsilon that composes with them, at the placeholder bounds -- what
    :meth:`BaseDPLinear._run_solver_released_bounds` does, from public quantities (the
    released values do not enter the events, which are in noise units; the model's event
    at the released bound differs from this one by rounding, and the fit reserves and
    commits it loosened, :func:`released_bounds_reservation`).  The model is planned as
    it runs, without a ledger of its own."""
    from ..accounting import compose
    from ._nested_share import released_bounds_model_epsilon

    if n_features is None or float(estimator.delta) == 0.0:
        return None
    names = estimator._released_bounds()
    eps, delta = float(estimator.epsilon), float(estimator.delta)
    try:
        if "data_norm" in names:
            # the fit refuses a model whose event reads the bound it releases
            from ._budget import refuse_released_bound

            refuse_released_bound(estimator, n_samples, n_features, eps, delta,
                                  "data_norm='auto'")
        events, inner = _released_events(estimator, names, int(n_samples), eps, delta)
        inner.set_params(privacy_ledger=None)
        inner.set_params(epsilon=released_bounds_model_epsilon(
            estimator, inner, events, n_samples, n_features, eps, delta))
        model_event = planned_dp_event(inner, n_samples, n_features)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    except Exception as exc:    # BudgetExceededError: no plan at this budget
        if type(exc).__name__ == "BudgetExceededError":
            return None
        raise
    return None if model_event is None else compose(*events, model_event)


def released_bounds_reservation(planned_event):
    r"""The event a released-bounds fit reserves before it reads a row and commits: its
    planned event (:func:`_planned_released_bounds_event`: the releases before the model,
    then the model at the placeholder bounds) loosened by the public
    ``RELEASED_BOUNDS_EVENT_RTOL`` (:func:`skdp.accounting._events.loosened`).

    **Why it bounds the fit.**  The model runs at the released bound ``R``; its event is
    a function of public quantities and ``R`` (never of the rows), and the rules scale with
    ``R`` so that this function is constant in exact arithmetic (a model whose event reads
    ``R`` is refused before any release).  In floating point it moves by rounding: at most
    ``1e-15`` relative, measured over every solver of the three estimators and data scales
    ``1e-6`` to ``1e6``; a zeroth-order fit may change its number of steps with a released
    ``y_bound`` at one total Gaussian ``mu``.  The loosened event dominates every such
    event (:func:`~skdp.accounting._events.dominated_by`), which the fit checks before it
    commits (:meth:`BaseDPLinear._commit_reservation`)."""
    from ..accounting._events import loosened
    from ._auto import RELEASED_BOUNDS_EVENT_RTOL

    return loosened(planned_event, RELEASED_BOUNDS_EVENT_RTOL)


def _released_events(estimator, names, n_samples, epsilon, delta, inner=None):
    """``(events, inner)``: the events of the releases before the model, in the order the
    fit makes them -- the count trees of the bounds under ``sqrt(AUTO_BOUND_SHARE) mu``,
    then the targets' mean under ``sqrt(TARGET_CENTRE_SHARE) mu`` -- and a clone of the
    estimator configured as its model runs after them (bounds released, targets centred
    with ``y_bound = high - low``).  Public quantities only: what the plan and the fit
    (:meth:`BaseDPLinear._run_solver_released_bounds`) both compose.  ``inner``: the
    object to configure (default: a clone; the fit passes a shallow copy, whose
    ``random_state`` generator, if one was given, is the estimator's and moves on)."""
    from sklearn.base import clone

    from ..accounting import gaussian_event
    from .._mechanisms._quantiles import tree_histogram_event
    from ..preprocessing._common import gdp_mu
    from ._auto import TARGET_CENTRE_SHARE, TARGET_RANGE_ALPHA, auto_bounds_mu
    from ._target_range import range_model_params

    mu = gdp_mu(epsilon, delta)
    quantiles = [name for name in names if name != "target_centre"]
    events = []
    inner = clone(estimator) if inner is None else inner
    if quantiles:
        events.append(tree_histogram_event(n_samples, len(quantiles),
                                           auto_bounds_mu(epsilon, delta)))
        inner.set_params(**{name: 1.0 for name in quantiles})
    if "target_centre" in names:
        events.append(gaussian_event(1.0, math.sqrt(TARGET_CENTRE_SHARE) * mu))
        params = estimator.get_params(deep=False)
        # the model's targets are the centred ones over the range's half-width: their
        # bound, the loss's scale in those units, and the target_range alpha rule
        inner.set_params(**range_model_params(params))
        if params.get("alpha") == "auto" and getattr(inner, "huber_threshold", 0) > 0:
            inner.set_params(alpha=TARGET_RANGE_ALPHA)
    return events, inner


def _event_of_plan(estimator, plan, n_samples, n_features, loss):
    """The planner's event for a resolved ``plan`` (None without a planner)."""
    planner = PLANNERS.get(plan.solver)
    if planner is None:
        return None
    return planner(estimator._plan_view(plan, n_features, loss), n_samples)


def linear_scores(X, coef_T, intercept):
    """``X @ coef_T + intercept`` (dense output) for the fitted models' ``predict`` and
    ``decision_function`` and for the base-rate check's scores, the product on one BLAS
    thread (:func:`single_threaded_blas`): a threaded product leaves an OpenBLAS worker
    spinning for about 0.1 s, on the cores of the next fit's numba threads.  Five-fold
    cross-validation of ``solver="dpsgd"`` on adult (fit, score, fit, ...; 2 threads) spent
    722-783 ms in its fits after threaded scores, 486-496 ms with these; a 10^6 x 20
    product takes 7 ms instead of 4."""
    with single_threaded_blas():
        return np.asarray(safe_sparse_dot(X, coef_T, dense_output=True)) + intercept


class DaskScoreMixin:
    """``score`` for Dask collections; listed before scikit-learn's ``ClassifierMixin`` or
    ``RegressorMixin``, whose ``score`` it defers to otherwise."""

    def score(self, X, y, sample_weight=None):
        """The default score of :meth:`predict` on ``X`` against ``y``: the mean accuracy
        for a classifier, ``R^2`` for a regressor (scikit-learn's).  A Dask ``X`` (with
        ``y`` a Dask array or Series, or an in-memory vector, aligned by position) is
        scored from per-partition sums, without collecting its rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        from .._raw_input import non_numeric_targets_message, quotes_an_entry

        try:
            if is_dask_collection(X) and sample_weight is None:
                from sklearn.base import is_classifier

                from .._dask_predict import dask_score

                check_is_fitted(self)
                return dask_score(self, X, y, classifier=is_classifier(self))
            return super().score(X, y, sample_weight=sample_weight)
        except ValueError as exc:
            # numeric targets' conversion error quotes the entry (a row's private value)
            if quotes_an_entry(exc):
                raise ValueError(non_numeric_targets_message(self)) from None
            raise


class DPLinearRegressorMixin(DaskScoreMixin, RegressorMixin):
    """``predict`` of the DP linear regressors (post-processing: costs no privacy)."""

    def predict(self, X):
        """Predicted targets ``X @ coef_ + intercept_``.

        Post-processing of the private coefficients: costs no privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted targets; a lazy Dask array for a Dask ``X`` (computed per block on
            the workers).
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            from .._dask_predict import lazy_rowwise

            return lazy_rowwise(self.predict, X, (), np.float64)
        X = validate_numeric_data(self, X, accept_sparse=FIT_SPARSE_FORMATS, reset=False,
                                  dtype=np.float64)
        return linear_scores(X, self.coef_, self.intercept_)


#: range of a positive ``smoothing`` radius (0 is also allowed): the smoothed loss's
#: smoothness ``sqrt(2/pi) L/rho``, the step sizes and ReSQue's block lengths computed from it
#: stay finite and positive
SMOOTHING_MIN, SMOOTHING_MAX = 1e-100, 1e100

#: parameter constraints shared by the convex models (DPLogisticRegression, DPHuberRegressor):
#: their solver set and the hyperparameters of ``phased`` and ``resque``
CONVEX_MODEL_CONSTRAINTS = {
    "solver": [StrOptions(set(CONVEX_SOLVERS) | {"auto"})],
    "smoothing": [Interval(numbers.Real, SMOOTHING_MIN, SMOOTHING_MAX, closed="both"),
                  Options(numbers.Real, {0.0}), None],
    "step_scale": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "block_size": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "n_phases": [Interval(numbers.Integral, 1, None, closed="left")],
    "phase_shrink": [Interval(numbers.Real, 0, 1, closed="right")],
    "n_epochs": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_jobs": [Options(numbers.Integral, {-1}), Interval(numbers.Integral, 1, None,
                                                         closed="left"), None],
}


class BaseDPLinear(BaseEstimator, metaclass=abc.ABCMeta):
    """Shared machinery of the DP linear models (not public)."""

    #: what ``solver="auto"`` becomes inside a private search, which composes its
    #: candidates in Gaussian DP (skdp.model_selection): a solver releasing a Gaussian
    _GAUSSIAN_AUTO_SOLVER = "phased"

    _parameter_constraints: dict = {
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"}),
                      None],
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(numbers.Real, 0, None, closed="neither")],
        "solver": [StrOptions(set(SOLVERS))],  # narrowed by each estimator
        "calibration": [StrOptions({"tight", "paper"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_coef_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_steps": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"bst14"}),
                    None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "privacy_ledger": [PrivacyLedger, None],
        "secure_noise": [StrOptions({"auto"}), "boolean"],
    }

    def _check_public_params(self):
        """Checks of the parameters that ``_parameter_constraints`` cannot express and that
        need no data; every fit runs them before it reads ``X``: finiteness and the usable
        float64 ranges of :func:`check_public_ranges`."""
        if not math.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}")
        if self.data_norm is not None and not isinstance(self.data_norm, str) \
                and not math.isfinite(self.data_norm):
            raise ValueError(f"data_norm must be finite, got {self.data_norm!r}")
        check_target_range(self)
        check_public_ranges(self)

    def _data_norm_value(self):
        """The public feature-row bound ``data_norm``; None when it is not known before
        the fit: ``data_norm=None`` (read from the data) or ``"auto"`` (released by the
        fit, :meth:`_run_solver_released_bounds`).  A composite that knows a public bound
        for its step (:class:`skdp.PrivatePipeline`: its transformers' output bound) hands
        it over as the ``data_norm`` parameter before the fit."""
        if isinstance(self.data_norm, str):
            return None
        return self.data_norm

    def _released_bounds(self):
        """The bounds this fit releases privately before the model: ``"data_norm"`` for a
        standalone ``data_norm="auto"``, ``"y_bound"`` for ``y_bound="auto"``,
        ``"target_centre"`` (the targets' mean) for a ``target_range``."""
        names = []
        if isinstance(self.data_norm, str) and self._data_norm_value() is None:
            names.append("data_norm")
        if isinstance(getattr(self, "y_bound", None), str):
            names.append("y_bound")
        if getattr(self, "target_range", None) is not None:
            names.append("target_centre")      # the targets' mean (_target_range)
        return names

    def _regression_inputs(self, X, y):
        """``(X, y)`` of a regressor's fit: a Dask collection becomes a
        :class:`~skdp._solvers._dask_objective.DaskDesign` validated on the workers (its
        targets clipped to ``y_bound`` there), in-memory data goes through
        ``validate_data``; either way the targets are clipped to the public ``y_bound``, or
        clipped to a public ``target_range`` and centred on its middle
        (:mod:`skdp.linear_model._target_range`)."""
        target_range = check_target_range(self)
        if target_range is not None:
            clip = functools.partial(centre_targets, low=target_range[0],
                                     high=target_range[1])
        else:
            # y_bound="auto": clipped once the bound is released
            # (_run_solver_released_bounds)
            bound = None if isinstance(self.y_bound, str) else self.y_bound
            clip = functools.partial(clip_targets, bound=bound)
        if is_dask_collection(X):
            design = dask_design(self, X, y, clip)
            return design, design.y
        X, y = _validate_fit_data(self, X, y, accept_sparse=FIT_SPARSE_FORMATS,
                                  dtype=FIT_DTYPES, y_numeric=True)
        return X, clip(y)

    def _check_n_samples(self, n_samples):
        """Checks that need the (public) number of rows; run before any noise."""
        if n_samples < 2:
            raise ValueError(
                f"a DP fit needs at least 2 samples; got n_samples = {n_samples} (1 sample)"
            )
        if self.delta > 0 and self.delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={self.delta:g} >= 1/n_samples={1.0 / n_samples:g}: such a delta allows "
                "releasing a whole row with probability delta; use delta << 1/n",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    def _data_derived_inputs(self):
        """Names of the parameters left to be read from the private data (None values of
        ``data_norm``, and of ``classes`` for classifiers): a fit with any of them reports
        ``privacy_guaranteed_ = False`` and ``epsilon_ = inf``."""
        return ["data_norm"] if self.data_norm is None else []

    def _public_row_bound(self):
        """``R`` from the public ``data_norm`` (None when it is not given)."""
        data_norm = self._data_norm_value()
        if data_norm is None:
            return None
        return row_bound(data_norm, self.fit_intercept, self.intercept_scaling)

    def _resolve_bounds(self, X):
        """``(data_norm, R, guaranteed)``: the public feature bound and row bound, or (with a
        warning) a feature bound read from the data and rounded up to a power of two, so
        that no row's norm is ever reported."""
        if self.data_norm is not None:
            return float(self._data_norm_value()), self._public_row_bound(), True
        warnings.warn(
            "data_norm is None: the row-norm bound is read from the private data, which "
            "breaks the differential-privacy guarantee (privacy_guaranteed_ = False, "
            "epsilon_ = inf). Pass a public data_norm.",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )
        norm = max_row_norm(X)
        norm = 2.0 ** math.ceil(math.log2(norm)) if 0.0 < norm <= SCALE_RANGE[1] else \
            (1.0 if norm == 0.0 else math.inf)
        if not norm <= SCALE_RANGE[1]:
            # already not private; the accounting's arithmetic needs the bound in range
            raise ValueError(
                "data_norm=None: the row norms read from the data exceed 2^100, beyond "
                "what the accounting computes with (data_norm is checked against the same "
                "range); rescale the features or pass a public data_norm")
        return norm, row_bound(norm, self.fit_intercept, self.intercept_scaling), False

    @abc.abstractmethod
    def _planning_loss(self):
        """``(loss, n_outputs)`` of a fit, from public parameters only."""

    def _fit_plan(self, n_samples, n_features, loss, n_outputs, row_bound_value):
        """The resolved plan (:func:`skdp.linear_model._auto.resolve_fit_plan`)."""
        R = row_bound_value if row_bound_value is not None else 1.0
        return resolve_fit_plan(self, n_samples=n_samples, n_features=n_features, loss=loss,
                                n_outputs=n_outputs, row_bound=R)

    def _plan_view(self, plan, n_features, loss):
        view = plan.view(self, n_features)
        view.loss_ = loss
        view.calibration = self._solver_calibration(plan.solver)
        return view

    def _solver_calibration(self, solver):
        """The calibration ``solver`` runs with: ``calibration`` as given, except for the
        solvers certified by objective perturbation's privacy profile, which calibrate their
        composable record instead under a ledger (so that the ledger, which accounts the
        record, sees at most ``epsilon``) and have no ``"paper"`` mode."""
        if solver not in ("objective_perturbation", "warm_gd"):
            return self.calibration
        if self.calibration == "paper":
            raise ValueError(
                f"solver={solver!r} has no calibration='paper' mode (the printed KST12 noise "
                "of objective perturbation is calibrated for add/remove neighbours); use "
                "calibration='tight'")
        if getattr(self, "privacy_ledger", None) is not None:
            return "composable"
        return "tight"

    def _run_solver(self, X, y, loss, *, n_outputs, y_bound=None):
        """Run the solver and return a dict of the fitted attributes (not yet set).

        Under a ``privacy_ledger`` the planned event is reserved before anything reads the
        data and the actual one committed before returning (module docstring).
        """
        from ..accounting import _lazy_dp_accounting as dp_accounting

        if self._released_bounds():
            return self._run_solver_released_bounds(X, y, loss, n_outputs)
        n, n_features = X.shape
        plan, planned = None, dp_accounting.NonPrivateDpEvent()
        if not self._data_derived_inputs():
            # resolved once: the reserved event and the run come from the same plan
            try:
                plan = self._fit_plan(n, n_features, loss, n_outputs,
                                      self._public_row_bound())
            except (ZeroDivisionError, OverflowError) as exc:
                # public quantities only: refused before the solver reads the data
                raise _range_error(self, exc, "noise calibration", n, n_features) from exc
            _check_planned_range(self, plan)
            try:
                planned = _event_of_plan(self, plan, n, n_features, loss)
            except (ZeroDivisionError, OverflowError) as exc:
                raise _range_error(self, exc, "noise calibration", n, n_features) from exc
            except (ValueError, TypeError):
                planned = None   # the solver raises its own error; commit re-checks
        with ledger_reservation(
            getattr(self, "privacy_ledger", None), planned, type(self).__name__,
        ) as reservation:
            attrs, result = self._run_solver_unrecorded(X, y, loss, n_outputs, y_bound, plan)
            reservation.commit(
                attrs["dp_event_"]
                if attrs["privacy_guaranteed_"]
                else dp_accounting.NonPrivateDpEvent()
            )
        return attrs, result

    def _run_solver_released_bounds(self, X, y, loss, n_outputs):
        r"""Fit with ``data_norm="auto"`` (outside a private pipeline), ``y_bound="auto"``
        and/or a ``target_range``: release the bounds and the targets' mean, then fit the
        model on what is left.

        1. A public share ``AUTO_BOUND_SHARE`` of the Gaussian-DP budget ``mu^2``
           (:mod:`skdp.linear_model._auto`) releases, in one Gaussian release of count
           trees over the public log grid (:mod:`skdp._mechanisms._quantiles`; replace-one
           L2 sensitivity ``sqrt(24 k)`` for ``k`` released columns whatever the values),
           the quantile ``AUTO_NORM_QUANTILE`` of the feature-row norms ``||x_i||`` and/or
           ``AUTO_Y_QUANTILE`` of ``|y_i|``, each kept one noise rank inside the data.
           A Dask design's norms and ``|y_i|`` are histogrammed on its workers and only
           the leaf counts, summed exactly, reach the client: the same release.
        2. With a ``target_range``, ``TARGET_CENTRE_SHARE`` of ``mu^2`` releases the mean
           of the targets (already clipped to the range and centred on its middle by
           :meth:`_regression_inputs`), and the model is fitted on the targets minus that
           mean, with ``y_bound = high - low`` (:mod:`skdp.linear_model._target_range`).
        3. Rows are clipped to the released ``data_norm_`` and targets to ``y_bound_``
           (bounds enforced, as for public ones), and the model gets the largest
           ``epsilon`` that keeps the composition within ``(epsilon, delta)``
           (:func:`skdp.linear_model._budget.largest_model_epsilon`; inside a
           composite's fit, the share of the composite's one search,
           :mod:`skdp.linear_model._nested_share`, once checked).  That share is fixed
           before any row is read, from the model at the placeholder bounds of
           :func:`_released_events` (the ``auto`` rules scale with the bounds, and a
           model whose event reads a released ``data_norm`` is refused,
           :func:`~skdp.linear_model._budget.refuse_released_bound`).
        4. ``dp_event_`` is the composition, in the order of :func:`_released_events`;
           ``budget_split_`` says who got what.

        Under a ``privacy_ledger`` the fit reserves, before it reads a row, the event of
        :meth:`_released_bounds_reservation` -- public, an upper bound of the whole fit's
        event -- and commits exactly that event (:meth:`_commit_reservation`).  The
        model's event at the *released* bound equals the one at the placeholder in exact
        arithmetic only (objective perturbation's ``eps_J = log(1 + beta(R)/(n
        alpha(R)))`` with ``alpha`` proportional to ``R^2``): reserving nothing and
        committing it, as before, left admission at the budget's edge to its last bits,
        which differ between neighbouring datasets, and a refused fit had read the rows
        and released its bound uncharged.  Now admission and charge are functions of
        public quantities; the fit's own ``dp_event_`` is the event it ran with, which
        the committed one dominates.
        """
        import copy

        from ..accounting import _lazy_dp_accounting as dp_accounting
        from ..accounting import compose
        from .._mechanisms._quantiles import release_tree_histogram, warn_if_unresolved
        from ..preprocessing._common import gdp_mu
        from ._auto import (AUTO_BOUND_SHARE, AUTO_NORM_QUANTILE, AUTO_Y_QUANTILE,
                            TARGET_CENTRE_SHARE, auto_bounds_mu)
        from ._budget import refuse_released_bound
        from ._nested_share import released_bounds_model_epsilon
        from ._target_range import release_target_centre, target_scale

        if self.delta == 0:
            raise ValueError("data_norm='auto', y_bound='auto' and target_range release "
                             "Gaussian statistics and need delta > 0")
        names = self._released_bounds()
        quantiles = [name for name in names if name != "target_centre"]
        on_workers = isinstance(X, DaskDesign)
        if on_workers:
            import dask.array as da

            from .._dask import map_rows
        n, n_features = X.shape
        eps, delta = float(self.epsilon), float(self.delta)
        mu = gdp_mu(eps, delta)
        bounds_mu = auto_bounds_mu(eps, delta)
        if "data_norm" in names:    # before any release
            refuse_released_bound(self, n, n_features, eps, delta, "data_norm='auto'")
        if quantiles:      # before any release
            warn_if_unresolved(" and ".join(f"{name}='auto'" for name in quantiles), n,
                               len(quantiles), bounds_mu,
                               "pass a public bound, or spend a larger epsilon")
        planned_events, inner = _released_events(self, names, n, eps, delta,
                                                 inner=copy.copy(self))
        inner.privacy_ledger = None
        # the model's share, at the placeholder bounds: public, before any release
        inner.epsilon = released_bounds_model_epsilon(self, inner, planned_events, n,
                                                      n_features, eps, delta)
        ledger = getattr(self, "privacy_ledger", None)
        reserved = None if ledger is None else self._released_bounds_reservation(
            inner, planned_events, n, n_features)
        with ledger_reservation(ledger, reserved, type(self).__name__) as reservation:
            # the model's fit reads what the bounds' release gave: a failure after it
            # depends on that release and is charged (Reservation.charge_on_error)
            if reserved is not None:
                reservation.charge_on_error()
            bounds, released = {}, []
            if quantiles:
                columns, levels = [], []
                if "data_norm" in names:
                    # huge rows: the top bins; a Dask design's norms on its workers
                    # (the same per-row map, partition by partition)
                    columns.append(map_rows(X.X, feature_row_norms) if on_workers else
                                   feature_row_norms(X))
                    levels.append(AUTO_NORM_QUANTILE)
                if "y_bound" in names:
                    columns.append(abs(y.astype(np.float64)) if on_workers else
                                   np.abs(np.asarray(y, dtype=np.float64)))
                    levels.append(AUTO_Y_QUANTILE)
                from .._mechanisms import new_word_source

                seed = None if self.random_state is None else \
                    _check_random_state(self.random_state).integers(2**63)
                # a Dask design's leaf counts are summed from its partitions' (the counts
                # of the collected columns: the same release, bit for bit)
                stacked = (da.stack(columns, axis=1) if on_workers else
                           np.column_stack(columns))
                hist, bound_event, noise, _ = release_tree_histogram(
                    stacked, bounds_mu, new_word_source(seed))
                # one level per released column: qs of shape (k, 1)
                values = np.maximum(
                    hist.inner_quantiles(np.asarray(levels)[:, None], noise)[:, 0],
                    2.0 ** -60)
                bounds = dict(zip(quantiles, (float(b) for b in values)))
                for name, value in bounds.items():
                    setattr(inner, name, value)
                if "y_bound" in bounds:
                    if on_workers:
                        X = X.with_targets(y.map_blocks(clip_targets, bound=bounds["y_bound"],
                                                        dtype=np.float64))
                        y = X.y
                    else:
                        y = clip_targets(y, bounds["y_bound"])
                released.append(("bounds", bound_event, AUTO_BOUND_SHARE))
            if "target_centre" in names:
                low, high = check_target_range(self)
                centre, centre_event = release_target_centre(
                    y, 0.5 * (high - low), math.sqrt(TARGET_CENTRE_SHARE) * mu, delta,
                    self.random_state)
                # the model's targets: minus the released mean, over the half-width
                # (a public per-row map: |z| <= 2, the model's y_bound); a Dask design's
                # on the workers
                scale = target_scale(self.get_params(deep=False))
                if on_workers:
                    X = X.with_targets((y - centre) / scale)
                    y = X.y
                else:
                    y = (np.asarray(y, dtype=np.float64) - centre) / scale
                released.append(("target centre", centre_event, TARGET_CENTRE_SHARE))
            # the released events are the planned ones (public: tests pin it)
            pre_events = [event for _, event, _ in released]
            attrs, result = inner._run_solver_unrecorded(
                X, y, loss, n_outputs, bounds.get("y_bound", getattr(inner, "y_bound", None)))
            event = compose(*pre_events, attrs["dp_event_"])
            self._commit_reservation(reservation, reserved,
                                     event if attrs["privacy_guaranteed_"]
                                     else dp_accounting.NonPrivateDpEvent())
        attrs["dp_event_"] = event
        attrs["epsilon_"] = float(get_epsilon(event, delta)) \
            if attrs["privacy_guaranteed_"] else math.inf
        attrs["delta_"] = delta
        split = {name: (float(get_epsilon(ev, delta)), delta) for name, ev, _ in released}
        split["model"] = (float(inner.epsilon), delta)
        split.update({f"mu_share_{name.replace(' ', '_')}": share
                      for name, _, share in released})
        attrs["budget_split_"] = split
        if "y_bound" in bounds:
            attrs["y_bound_"] = bounds["y_bound"]
        if "target_centre" in names:
            attrs["target_centre_"] = 0.5 * (low + high) + centre
            attrs["target_scale_"] = scale
        return attrs, result

    def _released_bounds_reservation(self, inner, planned_events, n_samples, n_features):
        """The event a released-bounds fit reserves in its ledger before it reads a row
        (:func:`released_bounds_reservation` of its planned event, which
        :func:`planned_dp_event` gives too): the releases' planned events and the model
        ``inner`` -- configured at the placeholder bounds, its share fixed -- planned from
        public quantities.  ``NonPrivateDpEvent`` when a bound is read from the data
        (refused by any budget).

        Raises
        ------
        ValueError
            When the model has no planned event (its share could not have been found
            either): before any release.
        """
        from ..accounting import _lazy_dp_accounting as dp_accounting
        from ..accounting import compose

        if self._data_derived_inputs():
            return dp_accounting.NonPrivateDpEvent()
        model = planned_dp_event(inner, n_samples, n_features, raise_errors=True)
        if model is None:
            raise ValueError(
                f"{type(self).__name__}(solver={self.solver!r}) has no planned event: a fit "
                "that releases its own bounds under a privacy_ledger reserves one before "
                "it reads a row; nothing was released")
        return released_bounds_reservation(compose(*planned_events, model))

    @staticmethod
    def _commit_reservation(reservation, reserved, event):
        """Commit ``reserved`` -- the event reserved before the fit read a row -- for a
        fit that released ``event`` (nothing to do without a ledger, ``reserved`` None).

        The ledger is charged exactly ``reserved``, a public event, so whether the fit was
        admitted and what it cost do not depend on the data; ``reserved`` dominates
        ``event`` (checked in exact arithmetic, :func:`~skdp.accounting._events.
        dominated_by`), so the charge covers what ran.  Should it not (a rule that moved
        with the released bound beyond rounding: a bug), the reservation is still
        committed -- the bounds were released, and the check reads only them -- and the
        fit raises without keeping the model."""
        from ..accounting._events import dominated_by

        if reserved is None:
            return
        reservation.commit(reserved)
        if not dominated_by(event, reserved):
            raise RuntimeError(
                "the model's privacy event exceeds the event reserved for the fit before it "
                "read the data (a privacy bug: please report it); the reservation is "
                "charged to the ledger and nothing is kept")

    def _secure_noise(self, solver):
        """Whether ``solver`` runs with exact grid noise (``secure_noise``, resolved)."""
        if self.secure_noise == "auto":
            return solver in SECURE_NOISE_SOLVERS
        if self.secure_noise and solver not in SECURE_NOISE_SOLVERS:
            raise ValueError(
                f"secure_noise=True: solver={solver!r} has no floating-point-safe noise yet "
                f"(available for {sorted(SECURE_NOISE_SOLVERS)}); use one of those, or "
                "secure_noise='auto' to accept its float noise (doc/floating_point.rst)")
        return bool(self.secure_noise)

    def _run_solver_unrecorded(self, X, y, loss, n_outputs, y_bound, plan=None):
        from ..accounting import _lazy_dp_accounting as dp_accounting

        data_norm, R, guaranteed = self._resolve_bounds(X)
        guaranteed = guaranteed and not self._data_derived_inputs()
        if plan is None:   # data_norm=None: the plan uses the data-derived bound
            plan = self._fit_plan(X.shape[0], X.shape[1], loss, n_outputs, R)
        solver = plan.solver
        if isinstance(X, DaskDesign) and solver not in DASK_SOLVERS:
            raise ValueError(
                f"solver={solver!r} cannot fit a Dask collection without collecting it on "
                f"the client; Dask fits support solver in {list(DASK_SOLVERS)} (the defaults "
                "of DPLogisticRegression, DPHuberRegressor and DPNonconvexRegressor)")
        if isinstance(X, DaskDesign) and n_outputs > 1 and solver not in MULTINOMIAL_DASK:
            # before any noise is drawn
            raise ValueError(
                f"solver={solver!r} does not fit the multinomial model on a Dask "
                f"collection; a multinomial fit there takes solver in "
                f"{list(MULTINOMIAL_DASK)} (dpsgd is its default with delta > 0; output "
                "perturbation's minimiser of the K-output objective is computed in memory "
                "only)")
        if hasattr(X, "tocsr") and solver not in SPARSE_SOLVERS:
            # before any noise is drawn, suggesting only this estimator's own solvers
            from .._mechanisms._clipping import dense_copy_refusal

            own = self._parameter_constraints["solver"][0].options - {"auto"}
            message = dense_copy_refusal(*X.shape, self.fit_intercept,
                                         [s for s in SPARSE_SOLVERS if s in own],
                                         solver=f"solver={solver!r}")
            if message:
                raise ValueError(message)
        secure = self._secure_noise(solver)
        rng = _check_random_state(self.random_state)
        # the ChaCha20 key: from the OS (random_state=None), else the first draws of the
        # seeded stream (so an int and default_rng(int) give the same model)
        extra = {"noise_source": new_word_source(
            None if self.random_state is None else rng)} if secure else {}
        options = {name: plan.options.get(name, getattr(self, name))
                   for name in SOLVER_OPTIONS[solver]}
        # options only the plan sets: the base-rate check (_base_rate) and dpsgd's clip
        options.update({name: plan.options[name] for name in PLAN_ONLY_OPTIONS
                        if name in plan.options})
        calibration = self._solver_calibration(solver)
        try:
            result = SOLVERS[solver](
                X,
                y,
                loss,
                epsilon=float(self.epsilon),
                delta=float(self.delta),
                alpha=plan.alpha,
                data_norm=R,
                n_outputs=n_outputs,
                fit_intercept=self.fit_intercept,
                intercept_scaling=float(self.intercept_scaling),
                y_bound=y_bound,
                max_iter=self.max_iter,
                max_coef_norm=self.max_coef_norm,
                rng=rng,
                calibration=calibration,
                **options,
                **extra,
            )
        except (ZeroDivisionError, OverflowError) as exc:
            # a range the checks before the fit did not foresee: still a ValueError naming
            # the public numbers (the fit is atomic: nothing is released or kept)
            raise _range_error(self, exc, f"solver {solver!r}", *X.shape) from exc
        if self.verbose:
            # public values only at verbose=1; the solver's details may depend on the data
            print(f"[{type(self).__name__}] solver={solver} ({plan.reason}), "
                  f"alpha={plan.alpha:.3g}, noise_scale={result.noise_scale:.4g}, "
                  f"sensitivity={result.sensitivity:.4g}, schedule={plan.options}")
            if self.verbose >= 2:
                print(f"[{type(self).__name__}] unprotected diagnostics (may depend on the "
                      f"data, not covered by the guarantee): {result.details}")
        delta_ = float(self.delta) if result.delta is None else float(result.delta)
        if not guaranteed:
            epsilon_spent = math.inf
            dp_event = dp_accounting.NonPrivateDpEvent()
        elif result.epsilon is not None:
            epsilon_spent = float(result.epsilon)
            dp_event = result.dp_event
        else:
            dp_event = result.dp_event
            epsilon_spent = get_epsilon(result.dp_event, delta_)
            if (epsilon_spent > self.epsilon
                    and get_delta(result.dp_event, self.epsilon) <= delta_):
                # Both values are valid guarantees; the accountant's bisection may land a
                # hair above the target the noise was calibrated for.
                epsilon_spent = float(self.epsilon)
        alpha_used = float(result.details.get("alpha", plan.alpha))
        if result.details.get("alpha_raised") and not isinstance(self.alpha, str):
            warnings.warn(
                f"alpha={self.alpha:g} is below {solver}'s privacy floor "
                f"beta/(n expm1(epsilon/2)) = {alpha_used:.3g}; alpha_ = {alpha_used:.3g} was "
                "used", UserWarning, stacklevel=user_stacklevel())
        resolved = {name: options[name] for name in ("batch_size", "n_steps", *PLAN_ONLY_OPTIONS)
                    if name in options}
        if solver == "warm_gd":
            # the public plan's refinement: 0 steps means the warm start (a private Huber fit
            # by objective perturbation) is returned unchanged, with all the budget
            resolved["n_steps"] = int(result.details["n_steps"])
            resolved["refinement"] = "skipped" if resolved["n_steps"] == 0 else "ran"
        return {
            "epsilon_": float(epsilon_spent),
            "delta_": delta_,
            "dp_event_": dp_event,
            "noise_scale_": result.noise_scale,
            "sensitivity_": result.sensitivity,
            "data_norm_": data_norm,
            "row_bound_": float(R),
            "solver_": solver,
            "alpha_": alpha_used,
            "solver_params_": resolved,
            "secure_noise_": secure,
            "privacy_guaranteed_": guaranteed,
            "n_gradient_evals_": result.n_gradient_evals,
            "n_iter_": result.n_iter,
            # what the event's plan read: n, and the width the rules read when it was
            # fixed (skdp.accounting._released_width composes the event from them)
            "n_samples_seen_": int(X.shape[0]),
            "auto_n_features_": _rule_width(self),
        }, result

    def _set_fitted(self, attrs):
        for name, value in attrs.items():
            setattr(self, name, value)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        return tags
