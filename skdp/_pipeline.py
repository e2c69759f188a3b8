r"""One privacy budget for a whole pipeline, from a raw table (``make_private_pipeline``).

A :class:`PrivatePipeline` is a scikit-learn ``Pipeline`` with a total budget
``(epsilon, delta)``.  Every entry point that fits it (``fit``, ``fit_transform``,
``fit_predict``, and so a parent ``Pipeline``, ``ColumnTransformer`` or search calling them)

1. makes one :class:`skdp._plan.PrivacyPlan` from public information only, before any row
   is read: which steps release, each one's share of ``epsilon`` and ``delta`` (thresholds
   included) and noise key, and the refusal of any step that would learn without DP
   (:mod:`skdp._plan`); a :class:`~skdp.accounting.PrivacyLedger` (the pipeline's
   ``privacy_ledger`` or a step's) is charged the plan's event here, or refuses;
2. hands every step its share and key as parameters, fits the transformers -- every one
   of them reads the same rows, so their events compose *sequentially*, including the
   blocks of a ``ColumnTransformer``/``FeatureUnion`` -- and checks that each released
   the event it was planned with;
3. fits the final estimator with the largest ``epsilon`` (at the pipeline's ``delta``) for
   which the composition of the transformers' events and the estimator's planned event
   (:func:`skdp.linear_model._base.planned_dp_event`, public quantities only) is
   ``(epsilon, delta)``-DP under the exact accountant; a final estimator with
   ``data_norm="auto"`` is handed the transformers' public output bound
   (``output_norm_bound_``) as its ``data_norm``, at no privacy cost;
4. reports ``epsilon_``, ``delta_``, ``dp_event_`` (the composition of every step's event),
   ``privacy_guaranteed_`` (False if a step read a bound or labels from the data),
   ``budget_split_`` and ``privacy_plan_``.

The steps keep the parameters the user gave them: what the plan handed each step for the
fit is in ``privacy_plan_``, what it spent in the step's ``epsilon_``.  A fit that fails
at any point leaves every step as it was (nothing it released is kept); under a
``privacy_ledger`` one that fails after its first release is still charged its planned
event, since the failure depends on what was released.  A total over the budget --
impossible by construction -- raises instead of warning.
"""

import contextlib
import math

import numpy as np

from sklearn.pipeline import Pipeline, _final_estimator_has
from sklearn.utils.metaestimators import available_if

from ._dask_pipeline import is_dask_frame
from ._mechanisms._quiet import silent_floating_point
from .preprocessing._rowwise import as_pandas   # the converter owns it; re-exported

__all__ = ["PrivatePipeline", "make_private_pipeline", "output_norm_bound"]



def _dask_fit_graphs(rows):
    """How the fit of a Dask DataFrame (``rows`` its :class:`~skdp._dask_pipeline.
    FrameRows`, else None: in memory, nothing to do) computes its graphs: without dask's
    low-level fusion (:func:`skdp._dask.without_low_level_fusion`)."""
    if rows is None:
        return contextlib.nullcontext()
    from ._dask import without_low_level_fusion

    return without_low_level_fusion()


def output_norm_bound(step):
    """Public bound on the L2 norm of the rows ``step`` outputs, or None if it has none.

    A DP transformer's ``output_norm_bound_``; for a ``ColumnTransformer``/``FeatureUnion``
    the root of the sum of its blocks' squared bounds (every block must have one: a
    ``"passthrough"`` block has none); for a ``Pipeline`` its last step's."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    if isinstance(step, Pipeline):
        return output_norm_bound(step.steps[-1][1]) if step.steps else None
    if isinstance(step, (ColumnTransformer, FeatureUnion)):
        from .accounting._fitted import _parts

        parts = _parts(step)
        if parts is None:
            return None
        bounds = [output_norm_bound(p) for p in parts]
        if not bounds or any(b is None for b in bounds):
            return None
        return math.sqrt(sum(b * b for b in bounds))
    bound = getattr(step, "output_norm_bound_", None)
    return None if bound is None else float(bound)


def _is_real_number(value):
    """A real number that is not a bool (``True`` is no budget) nor a string."""
    return isinstance(value, (int, float, np.integer, np.floating)) and \
        not isinstance(value, (bool, np.bool_))


def check_total_epsilon(epsilon):
    """``float(epsilon)`` of a pipeline's total budget; ``ValueError`` unless it is a
    positive finite number (a string, a bool, NaN, 0 or inf is refused)."""
    if not (_is_real_number(epsilon) and 0 < epsilon < math.inf):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return float(epsilon)


def check_total_delta(delta):
    """``float(delta)`` of a pipeline's total budget; ``ValueError`` unless it is a number
    in (0, 1) (a string, a bool or NaN is refused)."""
    if not (_is_real_number(delta) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    return float(delta)


class PrivatePipeline(Pipeline):
    """A ``Pipeline`` with one ``(epsilon, delta)`` budget for all its steps, spent by one
    public plan made before any row is read (module docstring, :mod:`skdp._plan`).

    Parameters
    ----------
    steps : list of (str, estimator)
        As for ``Pipeline``.  Every step must be a DP transformer of
        :mod:`skdp.preprocessing`, a verifiably data-free step (``"passthrough"``, a
        stateless row-wise transformer, public category lists), a ``Pipeline``,
        ``ColumnTransformer`` or ``FeatureUnion`` of those (these classes themselves: a
        subclass can read the whole table between its steps), or -- last -- an skdp
        estimator.  Anything else is refused before anything is fitted.
    epsilon : float, default=1.0
        Total budget of a fit.
    delta : float or None, default=None
        Total delta; None means ``min(1e-6, 1/(10 n))`` for ``n`` rows (public).
    random_state : int or None, default=None
        Seeds every step's noise: each step's key is derived from this seed, the step's own
        ``random_state`` and its path (:func:`skdp._plan.derive_key`), so that no two steps
        draw the same noise.  None, with no step seeded: keys from the OS.
    privacy_ledger : PrivacyLedger or None, default=None
        Charged the plan's whole event before the first release, or refusing there; that
        public event stays charged when it provably covers the event released
        (``dp_event_``), else the event released is.  A ledger set on a step is used the
        same way.
    model_plan : {"adaptive", "fixed"}, default="adaptive"
        When the transformers release the width of the model's design (knots, discovered
        categories), the model's event is fixed before any row either way: its ``auto``
        rules (``alpha``, DP-SGD's batch size and steps, ``warm_gd``'s warm start) read the
        plan's public planning width (the estimator's ``auto_n_features``, set for the fit
        and given back), and the model gets the largest epsilon that composes with the
        transformers' planned events (a model whose privacy profile followed the released
        width would not compose to the budget:
        :func:`skdp.linear_model._budget.width_rule_pins`).  The two differ only for a
        model whose event follows the width even so (``DPNonconvexRegressor``'s
        ``zeroth_order`` and ``spider`` at ``calibration="paper"``): ``"fixed"`` (what a
        private search or cross-validation sets) refuses it; ``"adaptive"`` fits it at
        the released width to a share fixed before any row and composes the pair that
        dominates every release of that ``(epsilon, delta)`` (the plan notes it).
    memory, verbose, transform_input
        As for ``Pipeline``.

    Attributes
    ----------
    epsilon_, delta_ : float
        Guarantee of the whole fit (exact accountant of ``dp_event_``).
    dp_event_ : dp_accounting.DpEvent
        Sequential composition of every step's event.
    privacy_guaranteed_ : bool
    budget_split_ : dict
        ``{step: (epsilon, delta)}`` given to every releasing step, and ``"mu_shares"``.
    privacy_plan_ : skdp._plan.PrivacyPlan
        The plan the fit executed (printable).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression, PrivatePipeline
    >>> from skdp.preprocessing import DPRobustScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.lognormal(size=(5000, 3)); y = (X[:, 0] > 1).astype(int)
    >>> pipe = PrivatePipeline([("scale", DPRobustScaler()),
    ...                         ("model", DPLogisticRegression(classes=[0, 1],
    ...                                                        data_norm="auto"))],
    ...                        epsilon=1.0, delta=1e-6).fit(X, y)
    >>> pipe.epsilon_ <= 1.0, pipe[-1].data_norm_ == pipe[0].output_norm_bound_
    (True, True)
    >>> [s.role for s in pipe.privacy_plan_.steps]
    ['release', 'model']
    """

    def __init__(self, steps, *, epsilon=1.0, delta=None, random_state=None,
                 privacy_ledger=None, model_plan="adaptive", transform_input=None,
                 memory=None, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.privacy_ledger = privacy_ledger
        self.model_plan = model_plan
        super().__init__(steps, transform_input=transform_input, memory=memory,
                         verbose=verbose)

    def _total_delta(self, n_samples):
        if self.delta is None:
            return min(1e-6, 1.0 / (10.0 * n_samples))
        return check_total_delta(self.delta)

    # ------------------------------------------------------------------ the plan
    def _check_budget_and_rows(self, X, y, params):
        """Public checks, before the plan: ``(n, delta, rows)``.  For a Dask DataFrame, one
        pass counts the rows of its partitions and checks their dtypes: ``rows`` is its
        :class:`skdp._dask_pipeline.FrameRows` (schema and partition lengths), else None."""
        from sklearn.utils.validation import _num_samples

        from ._dask_pipeline import inspect_frame, is_dask_frame

        if params:
            raise TypeError(f"PrivatePipeline.fit takes no fit parameters; got {sorted(params)}"
                            " (per-sample weights and the like change the sensitivity)")
        if self.model_plan not in ("adaptive", "fixed"):
            raise ValueError(f"model_plan must be 'adaptive' or 'fixed', got "
                             f"{self.model_plan!r}")
        check_total_epsilon(self.epsilon)
        if hasattr(X, "columns") and len(X.columns) == 0:
            raise ValueError("X has no columns: a private pipeline needs at least one")
        rows = None
        if is_dask_frame(X):
            rows = inspect_frame(X, y)
            n = rows.n
        else:
            n = _num_samples(X)
        if n < 2:
            raise ValueError(f"a private pipeline needs at least 2 rows; got {n}")
        if y is not None and rows is None and _num_samples(y) != n:
            raise ValueError(f"X has {n} rows and y has {_num_samples(y)}: they must match")
        return n, self._total_delta(n), rows

    def plan(self, X, y=None):
        """The :class:`skdp._plan.PrivacyPlan` a fit on ``X`` would execute.

        Reads the public schema of ``X`` only (its width, column names and dtypes, its
        number of rows): no value.  Raises ``TypeError`` for a step that would learn
        without DP and :class:`~skdp.exceptions.BudgetExceededError` for a budget that
        cannot cover the plan.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        plan : PrivacyPlan
        """
        return self._planner(X, y)(float(self.epsilon))

    def _planner(self, X, y=None):
        """``plan_at(epsilon)``: the plan of a fit on ``X`` with that total ``epsilon``,
        ``X``'s schema and row count read once (a Dask frame's partitions are counted in
        one pass) -- for :meth:`plan` and for callers that plan at several budgets
        (:meth:`skdp.accounting.PrivacyLedger.largest_epsilon`)."""
        from ._plan import make_plan

        from .accounting._sampled import joint_calibrations

        n, delta, rows = self._check_budget_and_rows(X, y, {})
        schema = rows.schema if rows is not None else as_pandas(X)

        def plan_at(epsilon):
            with joint_calibrations():      # the model's share as the fit computes it
                return make_plan(self, schema, n, float(epsilon), delta,
                                 lazy=rows is not None)

        return plan_at

    def __getitem__(self, ind):
        """``Pipeline.__getitem__``; a slice is a *view* of this pipeline's steps.

        scikit-learn builds a slice as a new pipeline holding the same step objects, with
        every other parameter at its default: a ``pipe[:-1]`` used to be a
        ``PrivatePipeline(epsilon=1.0, privacy_ledger=None)`` whose ``fit`` refitted the
        parent's steps at that default budget, charged no ledger, and left the parent
        reporting the ``epsilon_`` of its own earlier fit (audit).  The slice now carries
        this pipeline's ``epsilon``, ``delta``, ``privacy_ledger`` and ``model_plan`` (so a
        clone of it is planned and charged like the parent; ``random_state`` is left None:
        a clone must not redraw the parent's noise), and its own ``fit`` is refused --
        ``transform``, ``predict``, ``get_feature_names_out`` and the rest work as in
        scikit-learn.  An integer or a name gives the step itself, as there."""
        sub = super().__getitem__(ind)
        if isinstance(ind, slice):
            sub.set_params(epsilon=self.epsilon, delta=self.delta,
                           privacy_ledger=self.privacy_ledger, model_plan=self.model_plan)
            sub._view_of_a_fitted_pipeline = True
        return sub

    def _refuse_fitting_a_view(self):
        if getattr(self, "_view_of_a_fitted_pipeline", False):
            raise TypeError(
                "this PrivatePipeline is a slice of another one and holds its step objects: "
                "fitting it would refit the parent's steps outside the parent's plan.  Fit "
                "the parent, or build a new pipeline (clone(pipe[:k]) is planned, charged "
                "and keyed on its own)")

    def _ledger(self):
        """The one ledger of this fit: the pipeline's or its steps' (all the same)."""
        ledgers = {id(v): v for k, v in self.get_params(deep=True).items()
                   if (k == "privacy_ledger" or k.endswith("__privacy_ledger"))
                   and v is not None}
        if len(ledgers) > 1:
            raise ValueError("the pipeline and its steps name different privacy ledgers: "
                             "one fit is charged to one ledger; set it on the pipeline")
        return next(iter(ledgers.values()), None)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, **params):
        """Plan, then fit the transformers and the final estimator on their shares (module
        docstring).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        **params : dict
            Not supported (fit parameters such as ``sample_weight`` change sensitivities):
            anything given raises ``TypeError``.

        Returns
        -------
        self : PrivatePipeline
        """
        self._refuse_fitting_a_view()
        n, delta, rows = self._check_budget_and_rows(X, y, params)
        from ._plan import make_plan
        from .accounting._sampled import joint_calibrations

        # the model's noise is calibrated with the releases before it (one search; the
        # model, fitted inside, uses the noise the plan verified: linear_model/_budget.py)
        with joint_calibrations():
            if rows is not None:      # a Dask DataFrame: the schema is its _meta
                plan = make_plan(self, rows.schema, n, float(self.epsilon), delta,
                                 lazy=True)
            else:
                plan = make_plan(self, as_pandas(X), n, float(self.epsilon), delta)
        objects = _tree_objects(self)
        saved_state = [(obj, dict(vars(obj))) for obj in objects]
        saved_params = self.get_params(deep=True)
        try:
            # numpy reports no floating-point error of any step (a data-free step's
            # overflow on one row would tell its dataset apart: _mechanisms._quiet);
            # a Dask frame's graphs are computed without dask's low-level fusion, which
            # fails on a dd.from_delayed frame after the reservation (_dask)
            with joint_calibrations(), silent_floating_point(), _dask_fit_graphs(rows):
                self._execute(plan, X, y, rows)
        except BaseException:
            for obj, state in saved_state:
                vars(obj).clear()
                vars(obj).update(state)
            raise
        finally:
            _restore_params(self, saved_params)
        return self

    def _final_has(name):
        def check(self):
            final = self.steps[-1][1]
            return final in (None, "passthrough") if name == "transform" and \
                isinstance(final, (str, type(None))) else hasattr(final, name)
        return check

    @available_if(_final_has("transform"))
    def fit_transform(self, X, y=None, **params):
        """:meth:`fit`, then :meth:`transform` of ``X`` (the same plan: a parent
        ``Pipeline`` or ``ColumnTransformer`` calling this spends what ``fit`` spends).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        **params : dict
            Not supported.

        Returns
        -------
        Xt : ndarray or sparse matrix
        """
        return self.fit(X, y, **params).transform(X)

    @available_if(_final_has("predict"))
    def fit_predict(self, X, y=None, **params):
        """:meth:`fit`, then :meth:`predict` of ``X``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
        **params : dict
            Not supported.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self.fit(X, y, **params).predict(X)

    # ------------------------------------------------------------------ Dask frames
    # A Dask DataFrame is predicted/transformed lazily: every partition by the in-memory
    # method on its worker (:func:`skdp._dask_pipeline.lazy_method`); the rest is
    # scikit-learn's Pipeline.

    @available_if(_final_estimator_has("predict"))
    def predict(self, X, **params):
        """Pipeline.predict; a Dask DataFrame gives a lazy ``dask.array`` (per partition)."""
        if is_dask_frame(X) and not params:
            from ._dask_pipeline import lazy_method

            return lazy_method(self, "predict", X)
        return super().predict(X, **params)

    @available_if(_final_estimator_has("predict_proba"))
    def predict_proba(self, X, **params):
        """Pipeline.predict_proba; a Dask DataFrame gives a lazy ``dask.array``."""
        if is_dask_frame(X) and not params:
            from ._dask_pipeline import lazy_method

            return lazy_method(self, "predict_proba", X)
        return super().predict_proba(X, **params)

    @available_if(_final_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X, **params):
        """Pipeline.predict_log_proba; a Dask DataFrame gives a lazy ``dask.array``."""
        if is_dask_frame(X) and not params:
            from ._dask_pipeline import lazy_method

            return lazy_method(self, "predict_log_proba", X)
        return super().predict_log_proba(X, **params)

    @available_if(_final_estimator_has("decision_function"))
    def decision_function(self, X, **params):
        """Pipeline.decision_function; a Dask DataFrame gives a lazy ``dask.array``."""
        if is_dask_frame(X) and not params:
            from ._dask_pipeline import lazy_method

            return lazy_method(self, "decision_function", X)
        return super().decision_function(X, **params)

    @available_if(Pipeline._can_transform)
    def transform(self, X, **params):
        """Pipeline.transform; a Dask DataFrame gives a lazy ``dask.array`` of dense
        blocks (a CSR design is densified per partition)."""
        if is_dask_frame(X) and not params:
            from ._dask_pipeline import lazy_method

            return lazy_method(self, "transform", X)
        return super().transform(X, **params)

    @available_if(_final_estimator_has("score"))
    def score(self, X, y=None, sample_weight=None, **params):
        """Pipeline.score; for a Dask DataFrame and a Dask Series ``y`` partitioned like
        it, the final estimator's default score (accuracy or R^2) from per-partition sums
        (a float: the one number computed)."""
        if is_dask_frame(X) and sample_weight is None and not params:
            from ._dask_pipeline import lazy_score

            return lazy_score(self, X, y)
        return super().score(X, y, sample_weight=sample_weight, **params)

    def _execute(self, plan, X, y, rows=None):
        from .accounting import fitted_dp_event, fitted_privacy_guaranteed, get_epsilon
        from .accounting._events import (dominated_by, privacy_profile_at_most,
                                         same_privacy_profile)
        from .accounting._fitted import released_steps
        from .accounting._ledger import ledger_reservation
        from .exceptions import BudgetExceededError
        from ._plan import check_configured_keys, configured, fitted_leaf

        epsilon, delta = float(self.epsilon), plan.delta
        reserved = plan.ledger_event
        with ledger_reservation(self._ledger(), reserved,
                                type(self).__name__) as reservation:
            self.set_params(**configured(self, plan))
            # before any fit: the steps hold this plan's keys, and the accounting
            # (fitted_dp_event) reads this plan, never the previous fit's (a failed fit
            # restores the previous one)
            check_configured_keys(self, plan)
            self.privacy_plan_ = plan
            # from the first release on, a failure depends on what was released: charged
            if reserved is not None:
                reservation.charge_on_error()
            has_model = any(s.role == "model" for s in plan.steps)
            if rows is not None:
                y = rows.y          # a Dask Series pinned to the partitions counted
            transformers = self.steps[:-1] if has_model else self.steps
            Xt = X
            if transformers and rows is not None:
                # a Dask DataFrame: counts per partition, the basis built on the workers
                from ._dask_pipeline import fit_tree, lazy_transform, rebuilt_basis

                from .linear_model._auto import dask_basis_compact, dask_design_sparse

                X = rows.pinned()
                fit_tree(Pipeline(transformers), X, rows)
                sparse = has_model and dask_design_sparse(self.steps[-1][1])
                # a CSR basis is kept on the workers for every pass of the model (its
                # checks, the solver, the base-rate counts): as compact rows, each pass
                # expanding one partition at a time (rebuilt_basis), for the solvers that
                # pass over all rows (dask_basis_compact), else as built (a dense design is
                # kept by the solver itself, clipped).  y is not: the model keeps its
                # encoded targets (a second copy of n numbers on the workers otherwise),
                # read from the source twice
                model_name, model = self.steps[-1]
                pins = plan.step(model_name).params if has_model else {}
                solver = pins.get("solver", getattr(model, "solver", None))
                compact = sparse and dask_basis_compact(solver)
                Xt = rebuilt_basis(Pipeline(transformers), X, rows) if compact else None
                if Xt is None:
                    Xt = lazy_transform(Pipeline(transformers), X, rows, sparse=sparse)
                    if sparse:
                        Xt = Xt.persist()
            elif transformers:
                Xt = Pipeline(transformers).fit_transform(X, y)
            fitted = Pipeline(transformers) if transformers else None
            split = {}
            for s in plan.steps:
                if s.role != "release":
                    continue
                released = getattr(fitted_leaf(fitted, s.path), "dp_event_", None)
                # equal, or (behind a release that sets this step's input width, e.g.
                # released knots) dominated by the planned event, its calibration target:
                # the rounding term of the grid moves the recorded event with the width
                # by ~1e-9, never above the target (skdp.accounting._released_width;
                # privacy_profile_at_most compares the Gaussian mu and the thresholds'
                # delta, not one epsilon)
                if released != s.event and not (
                        released is not None
                        and privacy_profile_at_most(released, s.event)):
                    raise _unplanned_release(s)
                split[s.path] = (s.epsilon, s.delta)
            if has_model:
                name, final = self.steps[-1]
                step = plan.step(name)
                if isinstance(getattr(final, "data_norm", None), str):
                    bound = output_norm_bound(fitted) if fitted is not None else None
                    if bound is None:
                        raise ValueError(
                            f"{type(final).__name__}(data_norm='auto') in a private pipeline "
                            "takes the previous steps' public output bound, and they have "
                            "none (a 'passthrough' block or a transformer without "
                            "output_norm_bound_): give the estimator a public data_norm, or "
                            "use DP transformers only")
                    final.set_params(data_norm=bound)
                eps_model = step.epsilon
                user_solver = getattr(final, "solver", None)
                user_alpha = getattr(final, "alpha", None)
                user_width = getattr(final, "auto_n_features", None)
                # the plan fixed the model's share and event before any row
                # (_plan._plan_model), whatever width the transformers released; a
                # dominated model (its event follows that width) is fitted to its own
                # planned (epsilon, delta)
                model_delta = step.delta if step.dominated else delta
                final.set_params(epsilon=eps_model, delta=model_delta, **step.params)
                split[name] = (eps_model, model_delta)
                try:
                    final.fit(Xt, y)
                finally:
                    if "solver" in step.params:
                        # the rule's pick is the fit's (solver_); the parameter stays
                        # the user's "auto", so a refit on another n picks again
                        final.set_params(solver=user_solver)
                    if "alpha" in step.params:
                        # the spline-basis alpha rule (or a pinned value) is the fit's
                        # (alpha_); the parameter stays the user's
                        final.set_params(alpha=user_alpha)
                    if "auto_n_features" in step.params:
                        # the planning width the rules read; the parameter stays the
                        # user's, so a refit plans again
                        final.set_params(auto_n_features=user_width)
                released = getattr(final, "dp_event_", None)
                if step.dominated:
                    # composed as the pair dominating every (eps_model, model_delta)-DP
                    # release (below, fitted_dp_event reads it): the model must certify it
                    if not (final.privacy_guaranteed_
                            and final.epsilon_ <= eps_model * (1.0 + 1e-9)
                            and final.delta_ <= model_delta * (1.0 + 1e-12)):
                        raise _unplanned_release(step)
                    # the model object carries it, for this fit's event only (any view of
                    # the pipeline composes it; a refit releases another event object)
                    final._composed_as = (final.dp_event_, step.event)
                elif step.event is not None and not (
                        released is not None
                        and same_privacy_profile(released, step.event)):
                    # the event was fixed before any row (skdp.linear_model._budget.
                    # width_rule_pins): a model whose event followed the released width
                    # would not compose as planned
                    raise _unplanned_release(step)
                bounds = getattr(final, "budget_split_", None)
                if isinstance(bounds, dict) and "bounds" in bounds:
                    split[f"{name} bounds"] = bounds["bounds"]
            split["mu_shares"] = tuple(s.mu_share for s in plan.steps if s.role == "release")
            event = fitted_dp_event(self)
            guaranteed = fitted_privacy_guaranteed(self)
            # a public-category encoder's NoOpDpEvent is not a release
            releasing = released_steps(self)
            if not guaranteed:
                spent = math.inf
            elif len(releasing) == 1:
                # one release: its own certificate (objective perturbation certifies
                # epsilon_ exactly; its composable record is looser)
                spent = float(min(releasing[0].epsilon_, get_epsilon(event, delta)))
            else:
                spent = float(get_epsilon(event, delta))
            if guaranteed and spent > epsilon * (1.0 + 1e-9):
                raise BudgetExceededError(
                    f"the pipeline's releases compose to epsilon={spent:.6g} > epsilon="
                    f"{epsilon!r} at delta={delta:g} (a step did not spend what the plan gave "
                    "it); nothing is kept")
            from .accounting import _lazy_dp_accounting as dp_accounting

            # the ledger is charged the public event reserved before any row whenever it
            # provably covers what ran (dominated_by, exact arithmetic), else what ran
            if not guaranteed:
                charged = dp_accounting.NonPrivateDpEvent()
            elif reserved is not None and dominated_by(event, reserved):
                charged = reserved
            else:
                charged = event
            reservation.commit(charged)
        self.dp_event_ = event
        self.privacy_guaranteed_ = guaranteed
        self.epsilon_ = spent
        self.delta_ = delta
        self.budget_split_ = split
        self.privacy_plan_ = plan


def _unplanned_release(step):
    """The error of a step that released another event than its plan's.  It names the
    planned event only: the released one would then be a function of the data (the bug
    this reports), and a message must not print what the data decided."""
    return RuntimeError(
        f"step '{step.path}' did not release the event it was planned with "
        f"({step.event!r}): its noise depends on the data (a privacy bug); nothing is kept")


def _tree_objects(estimator):
    """Every estimator object in the tree of ``estimator`` (itself included), whose
    state a failed fit restores."""
    out, seen = [], set()

    def visit(obj):
        if id(obj) in seen or not hasattr(obj, "get_params") or isinstance(obj, type):
            return
        seen.add(id(obj))
        out.append(obj)
        for value in obj.get_params(deep=False).values():
            if hasattr(value, "get_params"):
                visit(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, tuple):
                        for part in item:
                            if hasattr(part, "get_params"):
                                visit(part)

    visit(estimator)
    return out


def _restore_params(estimator, saved):
    """Put back the parameters the user gave (the plan's were for the fit only)."""
    current = estimator.get_params(deep=True)
    changed = {k: v for k, v in saved.items()
               if k in current and "__" in k and current[k] is not v}
    if changed:
        estimator.set_params(**changed)


def make_private_pipeline(estimator, *, epsilon=1.0, delta=None, numeric=None,
                          categorical=None, feature_bounds=None, n_knots="auto",
                          degree="auto", categories="auto", sparse_design="auto",
                          random_state=None):
    """A :class:`PrivatePipeline` from a raw table to ``estimator``, with one budget.

    The table is a pandas or polars DataFrame.  Numeric columns get a private spline basis
    (:class:`skdp.preprocessing.DPSplineTransformer`; ``degree=0``: one-hot bins), the
    other columns a one-hot encoding with privately discovered categories
    (:class:`skdp.preprocessing.DPOneHotEncoder`), or public ones. The estimator's
    ``data_norm`` is set to ``"auto"``: it takes the basis' public bound ``sqrt(d)``; the
    plan makes a ``solver="auto"`` classifier ``"dpsgd"`` below epsilon 5 or on small
    tables, whose event composes with the transformers' almost without loss, and leaves
    it objective perturbation from ``n epsilon = 3 x 10^5`` (:func:`skdp.linear_model.
    _auto.pipeline_model_solver`); before a DP-SGD classifier the basis adds public tail
    knots where the knots' noise is large (``tail_knots="auto"``:
    :func:`skdp.linear_model._auto.pipeline_tail_knots`).

    **The schema is public.**  Which columns are numeric and which categorical decides
    what the pipeline releases, so it must not depend on the rows.  State it with
    ``numeric`` and ``categorical`` (column names); left to the dtypes, a dtype read from
    a CSV can depend on one row (one stray string makes a numeric column an object
    column), and the pipeline says once that it inferred the schema from the dtypes.

    Parameters
    ----------
    estimator : skdp estimator
        ``DPLogisticRegression`` (give its public ``classes``), ``DPHuberRegressor``...
        Its ``epsilon``/``delta``/``data_norm`` are handed over by the pipeline's plan.
    epsilon : float, default=1.0
        Total budget of a fit of the whole pipeline.
    delta : float or None, default=None
        Total delta (None: ``min(1e-6, 1/(10 n))``).
    numeric, categorical : list of str or None, default=None
        The public schema: names of the numeric and of the categorical columns (the
        others are dropped).  Give both, or neither (the dtypes decide: numeric dtypes
        are numeric, the others categorical).
    feature_bounds : dict or None, default=None
        ``{numeric column: (low, high)}`` public ranges where you know them (the knots are
        then released within them; other numeric columns get released ranges).
    n_knots : int or "auto"
        Knots per numeric column (``"auto"``: :func:`skdp.linear_model._auto.spline_knots`).
    degree : int or "auto"
        Of the spline basis (0: one-hot bins; ``"auto"``:
        :data:`skdp.linear_model._auto.PIPELINE_SPLINE_DEGREE`, 1, piecewise linear).
    categories : "auto", dict or list of lists
        Public category lists of the categorical columns (``{column: [...]}``, or lists in
        the columns' order), or ``"auto"`` (discovered privately).
    sparse_design : bool or "auto", default="auto"
        Hand the model a CSR design (the spline basis built sparse, the one-hot block
        stacked onto it) instead of a dense array.  ``"auto"``: when the model's solvers
        all fit CSR without a copy (:func:`skdp.linear_model._auto.pipeline_sparse_design`:
        ``DPLogisticRegression``, ``DPHuberRegressor``).  The fitted model is the same bit
        for bit; the sparse design takes a fraction of the memory and time.  ``pipe[:-1].
        transform`` then returns a CSR matrix.
    random_state : int or None
        Seeds every step's noise (each step's key derived from it and the step's path;
        None: keys from the OS).

    Returns
    -------
    pipeline : PrivatePipeline

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdp import DPLogisticRegression, make_private_pipeline
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.integers(18, 90, 4000),
    ...                    "job": rng.choice(["a", "b", "c"], 4000)})
    >>> y = (df["age"] > 50).astype(int).to_numpy()
    >>> pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
    ...                              numeric=["age"], categorical=["job"],
    ...                              random_state=0).fit(df, y)
    >>> pipe.epsilon_ <= 1.0, pipe.privacy_guaranteed_
    (True, True)
    """
    from sklearn.base import clone

    from .preprocessing import DPOneHotEncoder, DPSplineTransformer, FrameToPandas
    from .preprocessing._csr_assembly import SparseColumnTransformer
    from .linear_model._auto import (PIPELINE_SPLINE_DEGREE, pipeline_sparse_design,
                                     pipeline_tail_knots)

    # the budget first: the tail-knot rule below reads epsilon
    check_total_epsilon(epsilon)
    if delta is not None:
        check_total_delta(delta)
    if isinstance(sparse_design, str):
        if sparse_design != "auto":
            raise ValueError(f"sparse_design must be True, False or 'auto', got "
                             f"{sparse_design!r}")
        sparse_design = pipeline_sparse_design(estimator)
    if isinstance(degree, str):
        if degree != "auto":
            raise ValueError(f"degree must be an int >= 0 or 'auto', got {degree!r}")
        degree = PIPELINE_SPLINE_DEGREE
    if (numeric is None) != (categorical is None):
        raise ValueError("give both numeric and categorical (the public schema: lists of "
                         "column names, possibly empty), or neither (the dtypes decide)")
    if numeric is not None:
        numeric, categorical = _column_list(numeric, "numeric"), \
            _column_list(categorical, "categorical")
        both = sorted(set(numeric) & set(categorical), key=str)
        if both:
            raise ValueError(f"columns {both} are both numeric and categorical")
        numeric_cols, categorical_cols = numeric, categorical
    else:
        numeric_cols = _SchemaFromDtypes(numeric=True)
        categorical_cols = _SchemaFromDtypes(numeric=False)
    if isinstance(categories, dict):
        if numeric is None:
            raise ValueError("categories as a dict needs the schema (numeric= and "
                             "categorical=): the order of its lists follows categorical")
        missing = [c for c in categorical if c not in categories]
        if missing and len(missing) < len(categorical):
            raise ValueError(f"categories gives lists for some categorical columns but not "
                             f"{missing}: give every list, or 'auto'")
        categories = "auto" if missing else [list(categories[c]) for c in categorical]
    bounds = None
    if feature_bounds is not None:
        if numeric is None:
            raise ValueError("feature_bounds needs the schema (numeric= and categorical=)")
        unknown = sorted(set(feature_bounds) - set(numeric), key=str)
        if unknown:
            raise ValueError(f"feature_bounds names {unknown}, which are not numeric columns")
        bounds = [tuple(feature_bounds[c]) if c in feature_bounds else None
                  for c in numeric]
    spline = DPSplineTransformer(n_knots=n_knots, degree=degree,
                                 sparse_output=bool(sparse_design))
    if bounds is not None:
        spline.set_params(feature_bounds=bounds)
    # scikit-learn's ColumnTransformer, its all-CSR output stacked in one numba copy
    columns = SparseColumnTransformer([
        ("numeric", spline, numeric_cols),
        ("categorical", DPOneHotEncoder(categories=categories,
                                        sparse_output=bool(sparse_design)),
         categorical_cols),
    ], sparse_threshold=1.0 if sparse_design else 0.0)
    # a solver="auto" model keeps "auto": the plan picks its solver from n and epsilon
    # (skdp._plan._pipeline_solver), before any row is read
    model = clone(estimator).set_params(data_norm="auto")
    spline.set_params(tail_knots=pipeline_tail_knots(model, epsilon))
    return PrivatePipeline([("frame", FrameToPandas()), ("columns", columns),
                            ("model", model)], epsilon=epsilon, delta=delta,
                           random_state=random_state)


def _column_list(columns, what):
    if isinstance(columns, str) or not hasattr(columns, "__iter__"):
        raise ValueError(f"{what} must be a list of column names, got {columns!r}")
    return list(columns)


def _declared_schema(X):
    """The schema a frame declares in ``X.attrs["skdp_schema"]`` (skdp's loaders write the
    dataset documentation's split there), if its ``numeric`` and ``categorical`` lists
    cover the frame's columns exactly and do not overlap; else None.  Metadata, not rows."""
    attrs = getattr(X, "attrs", None)
    declared = attrs.get("skdp_schema") if isinstance(attrs, dict) else None
    if not isinstance(declared, dict):
        return None
    numeric, categorical = declared.get("numeric"), declared.get("categorical")
    if not isinstance(numeric, list) or not isinstance(categorical, list):
        return None
    columns = list(X.columns)
    if set(numeric) & set(categorical) or set(numeric) | set(categorical) != set(columns) \
            or len(numeric) + len(categorical) != len(columns):
        return None
    return {"numeric": numeric, "categorical": categorical}


class _SchemaFromDtypes:
    """Column selector of :func:`make_private_pipeline` when the schema is not stated:
    the schema the frame declares in ``attrs["skdp_schema"]`` (skdp's loaders declare the
    documentation's) when it covers the frame's columns exactly, else the dtypes: numeric
    dtypes (``numeric=True``) or the others.  A function of the column names, attrs and
    dtypes only; the first inference from dtypes in a process says once that the schema
    was inferred (the message names no column: what a warning says is released too)."""

    _told = False

    def __init__(self, numeric):
        self.numeric = numeric

    def __call__(self, X):
        from sklearn.compose import make_column_selector

        if not hasattr(X, "dtypes"):
            raise TypeError(
                "make_private_pipeline takes a pandas or polars DataFrame (its columns are "
                f"routed by name and dtype); got {type(X).__name__}. Wrap an array in "
                "pandas.DataFrame, or build a PrivatePipeline of DP transformers for arrays")
        declared = _declared_schema(X)
        if declared is not None:
            wanted = set(declared["numeric" if self.numeric else "categorical"])
            return [name for name in X.columns if name in wanted]
        if not _SchemaFromDtypes._told:
            import warnings

            from ._stacklevel import user_stacklevel

            _SchemaFromDtypes._told = True
            warnings.warn(
                "make_private_pipeline inferred the public schema (numeric or categorical "
                "columns) from the DataFrame's dtypes; a dtype read from a file can depend "
                "on one row. State it with make_private_pipeline(..., numeric=[...], "
                "categorical=[...])", UserWarning, stacklevel=user_stacklevel())
        selector = make_column_selector(dtype_include="number") if self.numeric else \
            make_column_selector(dtype_exclude="number")
        return selector(X)

    def __eq__(self, other):
        return isinstance(other, _SchemaFromDtypes) and other.numeric == self.numeric

    def __hash__(self):
        return hash(("_SchemaFromDtypes", self.numeric))

    def __repr__(self):
        return f"<{'numeric' if self.numeric else 'non-numeric'} dtypes>"
