"""What a fitted skdp object may carry, and a fit that fails without a trace.

The inventory
-------------
Every public fitted attribute (a name ending in ``_``) of every estimator, transformer and
private search is in exactly one of three sets:

* :data:`RELEASED` -- the output of the DP mechanism or post-processing of it
  (coefficients, private moments, the noisy score of a search and what it selects).
  Covered by the guarantee.
* :data:`PUBLIC` -- a function of the public parameters, ``n`` and ``d`` only: equal on
  any two neighbouring datasets (``epsilon_``, ``dp_event_``, ``solver_``, ``alpha_``,
  ``noise_scale_`` ...).  Bounds read from the data (``data_norm=None``,
  ``feature_bounds=None``, ``classes=None``) are the documented exception: the fit then
  reports ``privacy_guaranteed_ = False`` and ``epsilon_ = inf``, and the data-derived
  bounds are rounded outward to powers of two so that no row's value is printed.  With
  ``data_norm="auto"``, ``y_bound="auto"`` or ``feature_bounds="auto"`` the bounds
  (``data_norm_``, ``y_bound_``, ``feature_bounds_``, and the noise scales proportional to
  them, ``row_bound_``, ``mean_noise_std_``, ``moment_noise_std_``) are part of the DP
  release instead: covered by the guarantee, though they may differ between neighbours;
  so is the model's share in ``budget_split_`` (in its last bits: it is computed from
  compositions planned at the released bound).
* :data:`UNPROTECTED_DIAGNOSTICS` -- work counters that may depend on the data (an
  iterative minimiser stops when its gradient is small; an escape test counts events on
  the private iterates; a refit takes as long as it takes).  They are **not** covered by
  the guarantee, like the fit time.  The private searches
  (:class:`~skdp.model_selection.DPGridSearchCV`, :func:`~skdp.model_selection.dp_cross_validate`)
  remove them from every model they return (:func:`strip_unprotected`), and
  ``verbose=1`` prints public values only (``verbose >= 2`` prints the diagnostics,
  labelled as such).

``tests/test_fitted_attributes.py`` enumerates the fitted attributes of every estimator,
solver, search and the scaler, fails on any attribute that is not classified, and checks on
adversarial neighbouring datasets that the :data:`PUBLIC` ones do not move.
"""

import functools

__all__ = ["RELEASED", "PUBLIC", "UNPROTECTED_DIAGNOSTICS", "atomic_fit", "strip_unprotected"]

#: the DP release and its post-processing
RELEASED = frozenset({
    "coef_", "intercept_",                                   # linear models
    "base_rate_fallback_",                                   # the base-rate check's choice
    "mean_", "var_", "scale_",                               # DPStandardScaler
    "knots_", "n_features_out_", "categories_",              # spline basis, one-hot
    "center_", "clip_bounds_", "output_norm_bound_",         # robust scaler; the bound a
    "y_bound_", "target_centre_",                            # next step takes; auto bounds
    "best_index_", "best_params_", "best_score_",            # private searches: the noisy
    "cv_results_", "best_estimator_",                        # selection and its model
})

#: functions of public parameters, n and d (identical on neighbouring datasets)
PUBLIC = frozenset({
    # privacy report
    "epsilon_", "delta_", "dp_event_", "privacy_guaranteed_", "noise_scale_",
    "sensitivity_", "budget_split_", "threshold_", "privacy_plan_",
    "keyed_by_",            # a private search's record on the steps it returns (no key)
    # what the fit resolved from its public parameters
    "solver_", "alpha_", "solver_params_", "secure_noise_", "data_norm_", "row_bound_", "gamma_",
    "target_scale_", "auto_n_features_",
    "classes_", "feature_bounds_", "mean_noise_std_", "moment_noise_std_",
    # schema
    "n_features_in_", "feature_names_in_", "n_samples_seen_", "n_splits_",
    "multimetric_", "scorer_",
})

#: data-dependent work counters, not covered by the guarantee (module docstring)
UNPROTECTED_DIAGNOSTICS = frozenset({
    "n_iter_", "n_gradient_evals_", "n_escapes_", "n_refreshes_", "refit_time_",
})


def fitted_attribute_names(obj):
    """The public fitted attributes of ``obj`` (names ending in ``_``)."""
    return sorted(k for k in vars(obj) if k.endswith("_") and not k.startswith("_"))


def _objects(estimator):
    """``estimator`` and every estimator nested in it (pipeline steps, meta-estimators)."""
    seen, stack = [], [estimator]
    while stack:
        obj = stack.pop()
        if any(obj is s for s in seen) or not hasattr(obj, "get_params"):
            continue
        seen.append(obj)
        for step in getattr(obj, "steps", None) or []:
            stack.append(step[1])
        stack.extend(v for v in vars(obj).values() if hasattr(v, "get_params"))
    return seen


def strip_unprotected(estimator):
    """Remove the :data:`UNPROTECTED_DIAGNOSTICS` from ``estimator`` and every estimator
    nested in it; returns ``estimator``.  Used by the private searches before they return a
    model, so that everything a search returns is covered by its guarantee."""
    for obj in _objects(estimator):
        for name in UNPROTECTED_DIAGNOSTICS & set(vars(obj)):
            delattr(obj, name)
    return estimator


def atomic_fit(fit):
    """Decorate ``fit`` so that a fit that raises leaves the estimator exactly as it was.

    Without it a fit that fails after ``validate_data`` (a refused budget, a too-small
    ``n``, a solver error) would leave ``n_features_in_`` set: ``check_is_fitted`` would
    pass and ``predict`` fail with an ``AttributeError``, or -- after an earlier successful
    fit -- mix the attributes of two fits.
    """
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            state = vars(self)
            state.clear()
            state.update(saved)
            raise

    return wrapper
