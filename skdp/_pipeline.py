r"""One privacy budget for a whole pipeline, from a raw table (``make_private_pipeline``).

A :class:`PrivatePipeline` is a scikit-learn ``Pipeline`` with a total budget
``(epsilon, delta)``.  At every ``fit`` it

1. splits the budget between its DP steps by the public rule of
   :func:`skdp.linear_model._auto.pipeline_budget_split` (a share of the Gaussian-DP budget
   ``mu^2`` for every DP transformer, read from the public schema: which columns are
   numeric and which categorical), setting each DP transformer's ``epsilon``/``delta``;
2. fits the transformers -- every one of them reads the same rows, so their events compose
   *sequentially*, including the blocks of a ``ColumnTransformer``/``FeatureUnion``;
3. gives the final estimator the largest ``epsilon`` (at the pipeline's ``delta``) for which
   the composition of the transformers' *released* events and the estimator's *planned*
   event (:func:`skdp.linear_model._base.planned_dp_event`, public quantities only) is
   ``(epsilon, delta)``-DP under the exact accountant, and fits it; a final estimator with
   ``data_norm="auto"`` takes the transformers' public output bound
   (``output_norm_bound_``) at no privacy cost;
4. reports ``epsilon_``, ``delta_``, ``dp_event_`` (the composition of every step's event)
   and ``privacy_guaranteed_`` (False if any step learned from the data without DP), and
   ``budget_split_``.

The shares are a function of the public schema only, and the estimator's budget a function
of released events and public quantities: replacing one row changes none of them except
through the releases, which are accounted.
"""

import contextvars
import math

import numpy as np

from sklearn.pipeline import Pipeline

__all__ = ["PrivatePipeline", "make_private_pipeline", "output_norm_bound",
           "upstream_norm_bound"]

#: the PrivatePipeline whose final step is being fitted (read by ``data_norm="auto"``)
_UPSTREAM = contextvars.ContextVar("skdp_upstream_pipeline", default=None)
#: what the steps before the final one released, and the pipeline's total budget, for a
#: final estimator that releases bounds of its own (``y_bound="auto"``): it splits what is
#: left itself (:meth:`skdp.linear_model._base.BaseDPLinear._run_solver_released_bounds`)
_PRIOR = contextvars.ContextVar("skdp_prior_releases", default=None)


def prior_releases(estimator):
    """``(events, epsilon, delta)`` of the private pipeline whose final step is
    ``estimator`` and is being fitted in this context, or None (for any other estimator,
    e.g. the candidates of a search placed last, which spend their own budgets)."""
    prior = _PRIOR.get()
    if prior is None or prior[0] is not estimator:
        return None
    return prior[1:]


def as_pandas(X):
    """A polars DataFrame as a pandas one (its schema kept: numbers stay numeric, strings
    become object columns); anything else unchanged.  Data-free: the first step of
    :func:`make_private_pipeline`, so fit and predict take either."""
    if type(X).__module__.split(".")[0] == "polars" and hasattr(X, "to_pandas"):
        return X.to_pandas()
    return X


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


def upstream_norm_bound():
    """The output bound of the steps before the final one of the :class:`PrivatePipeline`
    being fitted in this context, or None."""
    pipe = _UPSTREAM.get()
    if pipe is None or len(pipe.steps) < 2:
        return None
    return output_norm_bound(Pipeline(pipe.steps[:-1]))


def _dp_transformers(step, prefix=""):
    """``(param_prefix, transformer)`` of the DP transformers of skdp inside ``step``
    (walking Pipeline, ColumnTransformer and FeatureUnion), in fit order."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    if isinstance(step, Pipeline):
        for name, sub in step.steps:
            yield from _dp_transformers(sub, f"{prefix}{name}__")
    elif isinstance(step, ColumnTransformer):
        for name, sub, _ in step.transformers:
            yield from _dp_transformers(sub, f"{prefix}{name}__")
    elif isinstance(step, FeatureUnion):
        for name, sub in step.transformer_list:
            yield from _dp_transformers(sub, f"{prefix}{name}__")
    elif type(step).__module__.startswith("skdp.preprocessing") and hasattr(step, "epsilon"):
        yield prefix, step


def _costs_budget(transformer):
    """Whether a DP transformer spends budget (public category lists do not)."""
    categories = getattr(transformer, "categories", "auto")
    return not (type(transformer).__name__ == "DPOneHotEncoder"
                and not isinstance(categories, str))


class PrivatePipeline(Pipeline):
    """A ``Pipeline`` with one ``(epsilon, delta)`` budget for all its DP steps.

    Parameters
    ----------
    steps : list of (str, estimator)
        As for ``Pipeline``; the DP steps' ``epsilon``/``delta`` are set from the budget at
        every fit (module docstring).
    epsilon : float, default=1.0
        Total budget of a fit.
    delta : float or None, default=None
        Total delta; None means ``min(1e-6, 1/(10 n))`` for ``n`` rows (public).
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
        ``{step: (epsilon, delta)}`` given to every DP step, and ``"mu_shares"``.

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
    """

    def __init__(self, steps, *, epsilon=1.0, delta=None, transform_input=None,
                 memory=None, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        super().__init__(steps, transform_input=transform_input, memory=memory,
                         verbose=verbose)

    def _total_delta(self, n_samples):
        if self.delta is None:
            return min(1e-6, 1.0 / (10.0 * n_samples))
        return float(self.delta)

    def fit(self, X, y=None, **params):
        """Split the budget, fit the transformers, then the final estimator on what is
        left (module docstring).

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
        from .accounting import fitted_dp_event, fitted_privacy_guaranteed, get_epsilon
        from .accounting._fitted import _steps
        from .linear_model._auto import pipeline_budget_split
        from .linear_model._budget import largest_model_epsilon
        from .preprocessing._common import gdp_mu

        if params:
            raise TypeError(f"PrivatePipeline.fit takes no fit parameters; got {sorted(params)}"
                            " (per-sample weights and the like change the sensitivity)")
        if not (isinstance(self.epsilon, (int, float)) and 0 < self.epsilon < math.inf):
            raise ValueError(f"epsilon must be a positive finite number, got "
                             f"{self.epsilon!r}")
        n = len(X)
        if n < 2:
            raise ValueError(f"a private pipeline needs at least 2 rows; got {n}")
        if y is not None and len(y) != n:
            raise ValueError(f"X has {n} rows and y has {len(y)}: they must match")
        delta = self._total_delta(n)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}")
        mu = gdp_mu(self.epsilon, delta)
        spending = [(prefix, t) for prefix, t in _dp_transformers(Pipeline(self.steps[:-1]))
                    if _costs_budget(t)]
        shares = pipeline_budget_split([type(t).__name__ for _, t in spending])
        split = {}
        for (prefix, transformer), share in zip(spending, shares):
            eps_i, delta_i = _gaussian_budget(math.sqrt(share) * mu, delta)
            self.set_params(**{f"{prefix}epsilon": eps_i, f"{prefix}delta": delta_i})
            split[prefix.rstrip("_")] = (eps_i, delta_i)
        events, Xt = [], X
        if len(self.steps) > 1:
            pre = Pipeline(self.steps[:-1])
            Xt = pre.fit_transform(X, y)
            if not fitted_privacy_guaranteed(pre):
                fitted_dp_event(pre)        # raises, naming the step that learned without DP
            events = [step.dp_event_ for step in _steps(pre)
                      if getattr(step, "dp_event_", None) is not None]
        name, final = self.steps[-1]
        token = _UPSTREAM.set(self)
        prior = _PRIOR.set((final, events, float(self.epsilon), delta))
        try:
            if isinstance(getattr(final, "data_norm", None), str) and \
                    upstream_norm_bound() is None:
                raise ValueError(
                    f"{type(final).__name__}(data_norm='auto') in a private pipeline takes "
                    "the previous steps' public output bound, and they have none (a "
                    "'passthrough' block or a transformer without output_norm_bound_): "
                    "give the estimator a public data_norm, or use DP transformers only")
            if hasattr(final, "_released_bounds") and final._released_bounds():
                # it releases its own bounds first and gives its model what is left of the
                # pipeline's budget after everything released before (prior_releases)
                final.set_params(epsilon=float(self.epsilon), delta=delta)
                final.fit(Xt, y)
                split[name] = final.budget_split_["model"]
                split[f"{name} bounds"] = final.budget_split_["bounds"]
            else:
                if hasattr(final, "epsilon") and hasattr(final, "_planning_loss"):
                    eps_final = largest_model_epsilon(final, events, Xt.shape[0],
                                                      Xt.shape[1], self.epsilon, delta)
                    final.set_params(epsilon=eps_final, delta=delta)
                    split[name] = (eps_final, delta)
                final.fit(Xt, y)
        finally:
            _PRIOR.reset(prior)
            _UPSTREAM.reset(token)
        split["mu_shares"] = tuple(shares)
        self.dp_event_ = fitted_dp_event(self)
        self.privacy_guaranteed_ = fitted_privacy_guaranteed(self)
        self.delta_ = delta
        releasing = [step for step in _steps(self)
                     if getattr(step, "dp_event_", None) is not None]
        if not self.privacy_guaranteed_:
            self.epsilon_ = math.inf
        elif len(releasing) == 1:
            # one release: its own certificate (objective perturbation certifies epsilon_
            # exactly; its composable record is looser)
            self.epsilon_ = float(min(releasing[0].epsilon_,
                                      get_epsilon(self.dp_event_, delta)))
        else:
            self.epsilon_ = float(get_epsilon(self.dp_event_, delta))
        if self.epsilon_ > float(self.epsilon) * (1.0 + 1e-9):
            import warnings

            warnings.warn(
                f"the pipeline's steps spent epsilon_ = {self.epsilon_:.4g} > epsilon = "
                f"{self.epsilon!r}: its final step {type(final).__name__} sets its own budget "
                "(the pipeline splits its epsilon between skdp transformers and a final skdp "
                "estimator); give that step a smaller epsilon", UserWarning, stacklevel=2)
        self.budget_split_ = split
        return self


def _gaussian_budget(mu, delta):
    """``(epsilon, delta)`` that a Gaussian DP transformer turns back into ``mu`` (its
    ``gaussian_mu_for``); ``delta`` is passed unchanged."""
    from .accounting import gaussian_epsilon

    return float(gaussian_epsilon(delta, mu)), float(delta)


def make_private_pipeline(estimator, *, epsilon=1.0, delta=None, n_knots="auto",
                          degree="auto", categories="auto", sparse_design="auto",
                          random_state=None):
    """A :class:`PrivatePipeline` from a raw table to ``estimator``, with one budget.

    The table is a pandas or polars DataFrame.  Numeric columns (the numeric dtypes of the
    DataFrame: public schema) get a private
    spline basis (:class:`skdp.preprocessing.DPSplineTransformer`; ``degree=0``: one-hot
    bins), the other columns a one-hot encoding with privately discovered categories
    (:class:`skdp.preprocessing.DPOneHotEncoder`), or public ones. The estimator's
    ``data_norm`` is set to ``"auto"``: it takes the basis' public bound ``sqrt(d)``; a
    ``solver="auto"`` classifier becomes ``"dpsgd"`` below epsilon 5, whose event composes
    with the transformers' almost without loss (:func:`skdp.linear_model._auto.
    pipeline_model_solver`).

    Parameters
    ----------
    estimator : skdp estimator
        ``DPLogisticRegression`` (give its public ``classes``), ``DPHuberRegressor``...
        Its ``epsilon``/``delta``/``data_norm`` are set by the pipeline.
    epsilon : float, default=1.0
        Total budget of a fit of the whole pipeline.
    delta : float or None, default=None
        Total delta (None: ``min(1e-6, 1/(10 n))``).
    n_knots : int or "auto"
        Knots per numeric column (``"auto"``: :func:`skdp.linear_model._auto.spline_knots`).
    degree : int or "auto"
        Of the spline basis (0: one-hot bins; ``"auto"``:
        :data:`skdp.linear_model._auto.PIPELINE_SPLINE_DEGREE`, 1, piecewise linear).
    categories : "auto" or list of lists
        Public category lists of the non-numeric columns (in their order), or ``"auto"``.
    sparse_design : bool or "auto", default="auto"
        Hand the model a CSR design (the spline basis built sparse, the one-hot block
        stacked onto it) instead of a dense array.  ``"auto"``: when the model's solvers
        all fit CSR without a copy (:func:`skdp.linear_model._auto.pipeline_sparse_design`:
        ``DPLogisticRegression``, ``DPHuberRegressor``).  The fitted model is the same bit
        for bit; the sparse design takes a fraction of the memory and time.  ``pipe[:-1].
        transform`` then returns a CSR matrix.
    random_state : int or None
        Seeds every step's noise (None: keys from the OS).

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
    ...                              random_state=0).fit(df, y)
    >>> pipe.epsilon_ <= 1.0, pipe.privacy_guaranteed_
    (True, True)
    """
    from sklearn.base import clone
    from sklearn.compose import ColumnTransformer, make_column_selector

    from .preprocessing import DPOneHotEncoder, DPSplineTransformer, FrameToPandas

    from .linear_model._auto import PIPELINE_SPLINE_DEGREE, pipeline_sparse_design

    if isinstance(sparse_design, str):
        if sparse_design != "auto":
            raise ValueError(f"sparse_design must be True, False or 'auto', got "
                             f"{sparse_design!r}")
        sparse_design = pipeline_sparse_design(estimator)
    if isinstance(degree, str):
        if degree != "auto":
            raise ValueError(f"degree must be an int >= 0 or 'auto', got {degree!r}")
        degree = PIPELINE_SPLINE_DEGREE
    seeds = [None, None, None] if random_state is None else [
        int(s) for s in np.random.SeedSequence(random_state).generate_state(3)]
    columns = ColumnTransformer([
        ("numeric", DPSplineTransformer(n_knots=n_knots, degree=degree,
                                        random_state=seeds[0],
                                        sparse_output=bool(sparse_design)),
         make_column_selector(dtype_include="number")),
        ("categorical", DPOneHotEncoder(categories=categories, random_state=seeds[1],
                                        sparse_output=bool(sparse_design)),
         make_column_selector(dtype_exclude="number")),
    ], sparse_threshold=1.0 if sparse_design else 0.0)
    from .linear_model._auto import pipeline_model_solver

    model = clone(estimator).set_params(data_norm="auto")
    solver = pipeline_model_solver(type(model).__name__, epsilon)
    if getattr(model, "solver", None) == "auto" and solver is not None:
        model.set_params(solver=solver)
    if random_state is not None and "random_state" in model.get_params():
        model.set_params(random_state=seeds[2])
    return PrivatePipeline([("frame", FrameToPandas()), ("columns", columns),
                            ("model", model)], epsilon=epsilon, delta=delta)
