"""Machinery shared by the private search and the private cross-validation (private).

* which steps of a candidate are DP mechanisms, and how the search sets their budget;
* the event a candidate *will* release, read from a fit on public placeholder data;
* dominating events (what one row can lose to any of several mechanisms);
* the truncated negative binomial number of repetitions (Papernot & Steinke 2022);
* public, data-independent splits; the per-task fit-and-score worker;
* the noise keys of the fits, and the user's seeds given back on the returned models;
* the event a procedure charges to its ``privacy_ledger`` (:func:`procedure_event`).
"""

import dataclasses
import functools
import math
import warnings

import dp_accounting
import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.utils import _safe_indexing

from .._fitted_attributes import strip_unprotected
from .._mechanisms._exact import exact_gaussian_noise, exact_laplace_noise, release_on_grid
from .._mechanisms._quiet import silent_floating_point
from ..accounting import fitted_dp_event, fitted_privacy_guaranteed, gaussian_epsilon
from ..accounting._events import compose, pure_dp_event
from .._stacklevel import user_stacklevel
from ..exceptions import PrivacyLeakWarning

# --------------------------------------------------------------------------------------
# DP steps and their budget
# --------------------------------------------------------------------------------------


def _is_private_pipeline(obj):
    from .._pipeline import PrivatePipeline

    return isinstance(obj, PrivatePipeline)


def private_pipeline_prefixes(estimator):
    """Parameter prefixes ("" or "step__") of every :class:`~skdp.PrivatePipeline` in
    ``estimator`` (itself included)."""
    params = estimator.get_params(deep=True)
    prefixes = [""] if _is_private_pipeline(estimator) else []
    prefixes += [key + "__" for key, value in params.items() if _is_private_pipeline(value)]
    return prefixes


def dp_step_prefixes(estimator):
    """Parameter prefixes ("" or "step__") of every object with ``epsilon`` and ``delta``.

    A :class:`~skdp.PrivatePipeline` is *one* DP step: it splits the budget the search
    hands it between its own steps by its plan, so the steps inside it are not listed."""
    params = estimator.get_params(deep=True)
    owners = private_pipeline_prefixes(estimator)
    prefixes = []
    for key in params:
        if key == "epsilon" or key.endswith("__epsilon"):
            prefix = key[: -len("epsilon")]
            if prefix + "delta" in params and not any(
                    prefix != owner and prefix.startswith(owner) for owner in owners):
                prefixes.append(prefix)
    return sorted(prefixes)


_OWNED = ("epsilon", "delta", "random_state", "privacy_ledger")


def check_grid_keys(candidates, estimator):
    """Refuse candidates that set the privacy parameters the search owns, and DP steps
    that report to a :class:`~skdp.accounting.PrivacyLedger`.

    The search accounts its own total (its ``privacy_ledger``, if any, is charged that
    total once); a step's ledger would be charged for every run -- a different,
    non-selection accounting, on top of the search's charge -- and for the public
    placeholder fits, so it is refused rather than silently bypassed.
    """
    prefixes = dp_step_prefixes(estimator)
    owned = {p + name for p in prefixes for name in _OWNED}
    for params in candidates:
        bad = sorted(set(params) & owned)
        if bad:
            raise ValueError(
                f"the parameter grid sets {bad}: a private search sets every DP step's "
                "epsilon, delta and random_state itself from its total budget (so that the "
                "total is respected); remove them from the grid"
            )
        est = clone(estimator).set_params(**params)
        for key, value in est.get_params(deep=True).items():
            if (key == "privacy_ledger" or key.endswith("__privacy_ledger")) and value is not None:
                raise ValueError(
                    f"{key} is set: a private search accounts the whole procedure itself "
                    "(epsilon_, dp_event_) and does not charge per-fit ledgers; leave "
                    "privacy_ledger=None on the candidates and pass the ledger as the "
                    "search's (or dp_cross_validate's) own privacy_ledger, which is "
                    "charged the whole procedure before any row is read"
                )


def step_layout(base, params):
    """(DP step prefixes, which of them take a random_state) of ``base`` with ``params``."""
    est = clone(base).set_params(**params)
    prefixes = dp_step_prefixes(est)
    all_params = est.get_params(deep=True)
    return tuple(prefixes), tuple(p + "random_state" in all_params for p in prefixes)


def configure(base, params, budget, seeds, layout=None):
    """A clone of ``base`` with ``params`` and every DP step's budget and noise key set.

    ``budget`` is ``("gdp", mu, delta)`` or ``("gdp", mu, delta, pipeline_delta)`` --
    each of the ``m`` DP steps gets the (epsilon, delta) of a ``mu / sqrt(m)``-GDP Gaussian
    mechanism, so that the Gaussian steps compose to exactly ``mu``-GDP; a
    :class:`~skdp.PrivatePipeline` step gets it at ``pipeline_delta`` (the part of delta
    its thresholds may spend in every fit, :func:`pipeline_fit_delta`), and a final
    ``solver="auto"`` estimator inside it the Gaussian solver -- or ``("pure", epsilon)``
    -- each step gets ``epsilon / m`` and ``delta = 0`` (basic composition, exact for pure
    DP).  ``seeds``: the fit's keys (:func:`fit_keys`), one per DP step, or None: every
    DP step -- and every step inside a private pipeline -- gets ``random_state=None``
    (its noise keyed from the OS, :func:`fit_key_root`).  ``layout`` is
    :func:`step_layout` of (base, params), computed once per candidate.
    """
    prefixes, has_seed = layout if layout is not None else step_layout(base, params)
    if not prefixes:
        raise TypeError(
            f"{type(base).__name__} has no DP step (no object with epsilon and delta "
            "parameters): a private search can only run candidates it can account"
        )
    m = len(prefixes)
    update = dict(params)
    current = clone(base).set_params(**params).get_params(deep=True) if budget[0] == "gdp" \
        else {}
    for i, prefix in enumerate(prefixes):
        if budget[0] == "gdp":
            mu, delta = budget[1], budget[2]
            step = current.get(prefix[:-2]) if prefix else base
            if _is_private_pipeline(step) and len(budget) > 3:
                delta = budget[3]
                # its whole event fixed before any row: the selection accounts it
                update[prefix + "model_plan"] = "fixed"
            step_epsilon = _gdp_step_epsilon(delta, mu, m)
            if not step_epsilon > 0.0:
                # only reached when no larger per-fit budget fits (calibrate_per_fit
                # lowers it while the total is over): the fits' (0, delta) parts alone
                # exceed the budget's delta
                from ..exceptions import BudgetExceededError

                raise BudgetExceededError(
                    "no per-fit budget fits the total: the candidates' (0, delta) parts "
                    "(a category discovery's threshold, given the whole per-fit delta in "
                    "a scikit-learn Pipeline and added up over every fit of a row) "
                    "exceed the budget's delta; raise delta, lower n_repetitions, or put "
                    "the steps in a PrivatePipeline (make_private_pipeline), whose "
                    "thresholds the search gives a share of delta; nothing was fitted")
            update[prefix + "epsilon"] = step_epsilon
            update[prefix + "delta"] = delta
            gdp_solver = getattr(step, "_GAUSSIAN_AUTO_SOLVER", None)
            if gdp_solver is not None and current.get(prefix + "solver") == "auto":
                # The search composes its candidates in Gaussian DP: solver="auto" resolves
                # among the solvers that release a Gaussian mechanism.
                update[prefix + "solver"] = gdp_solver
        else:
            update[prefix + "epsilon"] = budget[1] / m
            update[prefix + "delta"] = 0.0
        if has_seed[i] and seeds is not None:
            update[prefix + "random_state"] = int(seeds[i])
    from .._plan import serial_containers

    est = clone(base).set_params(**update)
    # a container's blocks on the calling thread, under its silenced numpy state
    est.set_params(**serial_containers(est))
    if seeds is None:
        est.set_params(**dict.fromkeys(seed_parameters(est, prefixes)))
    return est


def seed_parameters(est, prefixes):
    """The ``random_state`` parameters a private search or cross-validation owns in
    ``est``: those of its DP steps (``prefixes``, :func:`dp_step_prefixes`) and of every
    step inside a DP step that is a :class:`~skdp.PrivatePipeline` (its plan derives their
    keys from them)."""
    names = est.get_params(deep=True)
    pipelines = [p for p in prefixes if _is_private_pipeline(names.get(p[:-2]) if p else est)]
    return [key for key in names
            if (key == "random_state" or key.endswith("__random_state"))
            and (key[:-len("random_state")] in prefixes
                 or any(key.startswith(p) for p in pipelines))]


@functools.lru_cache(maxsize=256)
def _gdp_step_epsilon(delta, mu, m):
    return gaussian_epsilon(delta, mu / math.sqrt(m))


def n_dp_steps(base, params):
    return len(step_layout(base, params)[0])


# --------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------


def placeholder_data(X, y, n_rows, classes):
    """Public data of the right shape: zeros, labels cycling through the public classes."""
    n_features = X.shape[1] if hasattr(X, "shape") and len(X.shape) > 1 else 1
    Xd = np.zeros((n_rows, n_features))
    if hasattr(X, "columns") and hasattr(X, "dtypes"):
        # the schema is kept: categorical columns stay categorical (a pipeline routes them
        # by dtype)
        from .._plan import placeholder_frame
        from ..preprocessing._rowwise import as_pandas

        Xd = placeholder_frame(as_pandas(X), n_rows)
    if classes is not None:
        yd = classes[np.arange(n_rows) % classes.shape[0]]
    else:
        yd = np.zeros(n_rows)
    return Xd, yd


def probe(est, X, y, n_rows, classes, lazy=False):
    """(event, privacy_guaranteed) that ``est`` releases when fitted on ``n_rows`` rows.

    By the replace-one convention nothing that shapes the noise depends on the private data, so the
    event read from a fit on public placeholder data of the same shape is the event the
    real fit will release; the search checks every real fit against it and stops (before
    releasing anything) if they differ.  A :class:`~skdp.PrivatePipeline` is not fitted: its
    plan (:mod:`skdp._plan`, public schema and ``n`` only) gives the event; a plan whose
    model waits for a released width cannot be bounded in advance and is refused.
    ``lazy``: ``X`` is a Dask DataFrame's schema, planned as the pipeline plans a Dask fit.
    On a Dask collection no placeholder of ``n_rows`` rows is built on the client: an
    skdp estimator states its public plan, and a scikit-learn ``Pipeline`` fits its
    transformers on a lazy placeholder on the workers and reads its model's plan
    (:mod:`._lazy_probe`, which refuses what it cannot plan so).
    """
    from ._lazy_probe import is_sklearn_pipeline, lazy_pipeline_probe

    if _is_private_pipeline(est):
        return _pipeline_probe(est, X, n_rows, lazy)
    on_dask = lazy or _is_dask_array(X)    # a DataFrame's schema when lazy
    if on_dask and hasattr(est, "_planning_loss"):
        planned = _planned_probe(est, X, n_rows)
        if planned is not None:
            return planned
    if on_dask and is_sklearn_pipeline(est):
        return lazy_pipeline_probe(est, X, n_rows)
    Xd, yd = placeholder_data(X, y, n_rows, classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = clone(est).fit(Xd, yd)
    return fitted_dp_event(fitted), fitted_privacy_guaranteed(fitted)


def _is_dask_array(X):
    from .._dask import is_dask_collection

    return is_dask_collection(X) and not hasattr(X, "columns")


def _planned_probe(est, X, n_rows):
    """``(event, privacy_guaranteed)`` of a skdp estimator's fit on ``n_rows`` rows of the
    Dask array ``X`` (or of a Dask DataFrame with the schema ``X``), from its public plan
    (:func:`skdp.linear_model._base.planned_dp_event`: parameters, ``n`` and the width
    only), so that the client never holds ``n_rows`` placeholder rows; None when the
    estimator cannot plan it (the caller then fits a placeholder).  The search checks
    every real fit against it, as against a placeholder fit's event."""
    from ..linear_model._base import planned_dp_event

    planned = planned_dp_event(clone(est), n_rows, int(X.shape[1]))
    if planned is None:
        return None
    return planned, not isinstance(planned, dp_accounting.NonPrivateDpEvent)


def _pipeline_probe(pipe, X, n_rows, lazy=False):
    from ..preprocessing._rowwise import as_pandas
    from .._plan import make_plan
    from ..accounting import _lazy_dp_accounting as dp_accounting
    from ..accounting._sampled import joint_calibrations
    from .._pipeline import check_total_epsilon

    epsilon, delta = check_total_epsilon(pipe.epsilon), pipe._total_delta(n_rows)
    with joint_calibrations():      # as the pipeline's own fit plans
        plan = make_plan(pipe, as_pandas(X), n_rows, epsilon, delta, lazy=lazy)
    event = plan.planned_event
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return event, False
    if event is None:    # pragma: no cover - model_plan="fixed" plans it or raises
        raise ValueError("this private pipeline's event is not fixed before the fit "
                         "(model_plan='adaptive'); a private search needs model_plan='fixed'")
    return event, True


def pipeline_fit_delta(delta, fits_per_row):
    """The delta handed to a :class:`~skdp.PrivatePipeline` that is fitted
    ``fits_per_row`` times on a row by a search or cross-validation: its thresholds spend a
    public share of it in every fit, and those parts add up (each a ``(0, delta_T)``
    release), so the pipelines together spend at most half of ``delta`` there."""
    return float(delta) / (2.0 * max(float(fits_per_row), 1.0))


def calibrate_per_fit(total_at, target, start, rtol=0.01):
    """The largest per-fit ``mu <= start`` (to ``rtol`` in ``mu``) with ``total_at(mu) <=
    target``, where ``total_at`` is increasing: the budget of candidates whose events are
    not Gaussian (DP-SGD's subsampled steps, a pipeline's thresholds...), for which the
    Gaussian plan ``start`` overspends.  Returns ``(mu, state)`` with ``state`` what
    ``total_at`` returned there (``(total, ...)``).

    Every evaluation plans every candidate, so the search is a safeguarded secant on
    ``log total`` against ``log mu`` (the totals are close to power laws in ``mu``): the
    next point interpolates the bracket in log space, kept within its inner 80 %; three to
    five evaluations usually reach ``rtol``.  Only points whose total was computed to be
    within the target are ever returned."""
    from ..exceptions import BudgetExceededError

    state = total_at(start)
    if state[0] <= target:
        return start, state
    hi, hi_total = start, state[0]
    lo, lo_state = None, None
    mu = start
    for _ in range(20):      # a feasible point: jump by the local power law, at least 2x
        guess = mu * (target / hi_total) ** 1.0 if math.isfinite(hi_total) else mu / 16.0
        mu = min(guess * 0.98, mu / 2.0) if not math.isfinite(hi_total) else min(
            guess * 0.98, mu * 0.9)
        st = total_at(mu)
        if st[0] <= target:
            lo, lo_state = mu, st
            break
        hi, hi_total = mu, st[0]
    if lo is None:
        raise BudgetExceededError(
            f"no per-fit budget down to mu={mu:.3g} fits the total epsilon (the "
            "selection's fixed cost, or the candidates' delta parts, exceed it); raise "
            "epsilon or delta, or lower n_repetitions")
    while hi / lo > 1.0 + rtol:
        lo_total = lo_state[0]
        a, b = math.log(lo), math.log(hi)
        if math.isfinite(hi_total) and lo_total > 0 and hi_total > lo_total:
            slope = (math.log(hi_total) - math.log(lo_total)) / (b - a)
            x = a + (math.log(target) - math.log(lo_total)) / slope
        else:
            x = 0.5 * (a + b)
        x = min(max(x, a + 0.1 * (b - a)), b - 0.1 * (b - a))
        mid = math.exp(x)
        st = total_at(mid)
        if st[0] <= target:
            lo, lo_state = mid, st
            if st[0] >= target * (1.0 - rtol):
                break
        else:
            hi, hi_total = mid, st[0]
    return lo, lo_state


def gdp_mu(event):
    """``mu`` if ``event`` is a composition of Gaussian releases only, else None."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.GaussianDpEvent):
        z = event.noise_multiplier
        return math.inf if z == 0 else 2.0 / z
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [gdp_mu(e) for e in event.events]
        return None if any(p is None for p in parts) else math.sqrt(sum(p * p for p in parts))
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = gdp_mu(event.event)
        return None if inner is None else math.sqrt(event.count) * inner
    return None


def pure_epsilon(event):
    """Basic-composition epsilon if ``event`` is made of pure (binary RR) releases only."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent) and event.num_buckets == 2:
        p = event.noise_parameter
        return math.inf if p <= 0 else math.log((1.0 - p / 2.0) / (p / 2.0))
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        return None if any(p is None for p in parts) else sum(parts)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else event.count * inner
    return None


def gaussian_mu_event(mu):
    """skdp's event of a ``mu``-GDP Gaussian release (``GaussianDpEvent(2/mu)``)."""
    if mu == 0.0:
        return dp_accounting.NoOpDpEvent()
    return dp_accounting.GaussianDpEvent(2.0 / mu)


def dominating(events):
    """An event whose privacy loss bounds that of *each* event (not their composition).

    Used when one row is exposed to exactly one of several mechanisms (a candidate chosen
    at random with public probabilities, or a row that is either in the training or in the
    validation part of a public split): the Rényi / hockey-stick divergence of a mixture
    with public weights is at most the largest one (quasi-convexity).

    * identical events: that event;
    * all Gaussian compositions: the Gaussian with the largest ``mu`` (the ``mu``-GDP pair is
      a post-processing of the ``mu'``-GDP pair for ``mu <= mu'``);
    * all pure: the binary randomized response with the largest epsilon (it dominates every
      epsilon-DP pair);
    * otherwise: their composition (always an upper bound, never tight).
    """
    unique = []
    for ev in events:
        if not any(ev == u for u in unique):
            unique.append(ev)
    if len(unique) == 1:
        return unique[0]
    mus = [gdp_mu(e) for e in unique]
    if all(m is not None for m in mus):
        return gaussian_mu_event(max(mus))
    epss = [pure_epsilon(e) for e in unique]
    if all(e is not None for e in epss):
        top = max(epss)
        return dp_accounting.NoOpDpEvent() if top == 0 else pure_dp_event(top)
    return compose(*unique)


def self_compose(event, count):
    if count == 1:
        return event
    return dp_accounting.SelfComposedDpEvent(event, int(count))


# --------------------------------------------------------------------------------------
# Truncated negative binomial number of repetitions
# --------------------------------------------------------------------------------------


def tnb_mean(gamma, shape):
    """E[K] of the truncated negative binomial TNB(shape, gamma) on {1, 2, ...}."""
    if gamma >= 1.0:
        return 1.0
    if shape == 0.0:  # logarithmic
        return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
    return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


def tnb_gamma(mean, shape):
    """gamma with ``tnb_mean(gamma, shape) <= mean`` (upper end of a tight bracket).

    Returning the upper end makes the real E[K] at most the ``mean`` written in the event
    and gamma at least the one dp-accounting reconstructs from that mean (it keeps the
    lower end), so both terms of Papernot & Steinke's bound are read conservatively.
    """
    if mean <= 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / mean
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= 0.0 or tnb_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15:
            break
    return hi


def draw_repetitions(rng, mean, shape):
    """K ~ TNB(shape, gamma(mean)) on {1, 2, ...} (0: logarithmic, 1: geometric)."""
    gamma = tnb_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 1.0:
        return int(rng.geometric(gamma))
    if shape == 0.0:
        return int(rng.logseries(1.0 - gamma))
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


# --------------------------------------------------------------------------------------
# Splits and the worker
# --------------------------------------------------------------------------------------


class PublicSplits:
    """Train/validation splits of ``n`` rows that depend only on ``n`` and a public seed,
    kept as one fold label per row: ``labels[j]`` is the split whose validation part holds
    row ``j`` (a holdout: 0 for the validation rows, 1 for the others), in the smallest
    unsigned integer type that holds them -- one byte a row below 256 splits, which is what
    a search over a Dask collection keeps on its client (:mod:`._dask_folds`).

    Iterating gives the ``(train, validation)`` sorted index arrays of every split (the
    in-memory parts, :func:`split_data`); ``train_sizes`` and ``validation_sizes`` are
    public counts."""

    def __init__(self, labels, n_splits):
        self.labels = labels
        counts = np.bincount(labels, minlength=max(n_splits, 2))
        self.validation_sizes = [int(counts[s]) for s in range(n_splits)]
        self.train_sizes = [int(labels.shape[0] - v) for v in self.validation_sizes]

    def __len__(self):
        return len(self.validation_sizes)

    def __getitem__(self, s):
        if not 0 <= s < len(self):
            raise IndexError(s)
        inside = self.labels == s
        return np.flatnonzero(~inside), np.flatnonzero(inside)

    def __iter__(self):
        return (self[s] for s in range(len(self)))


def public_splits(n, cv, rng):
    """The :class:`PublicSplits` of ``n`` rows, from the public ``rng`` alone.

    ``cv`` float in (0, 1): one holdout split with ``round(cv n)`` validation rows;
    ``cv`` int >= 2: k folds of a random permutation.  Stratification is refused elsewhere:
    it would make the split of every row depend on the other rows' labels.
    """
    perm = rng.permutation(n)
    if isinstance(cv, float):
        n_val = int(round(cv * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(
                f"cv={cv} leaves {n_val} validation and {n - n_val} training rows out of "
                f"{n}; need at least 1 and 2"
            )
        labels = np.ones(n, dtype=np.uint8)
        labels[perm[:n_val]] = 0
        return PublicSplits(labels, 1)
    if cv > n // 2:
        raise ValueError(f"cv={cv} folds need at least {2 * cv} rows, got {n}")
    labels = np.empty(n, dtype=np.min_scalar_type(cv - 1))
    for i, fold in enumerate(np.array_split(perm, cv)):
        labels[fold] = i
    return PublicSplits(labels, cv)


def split_data(X, y, splits):
    """The (X_train, y_train, X_val, y_val) of each split, indexed once."""
    return [
        (_safe_indexing(X, tr), _safe_indexing(y, tr), _safe_indexing(X, va),
         _safe_indexing(y, va))
        for tr, va in splits
    ]


def fit_and_score(est, parts, scorer, keep_model):
    """Fit on the training part and return (model or None, sum of clipped scores on the
    validation part, event, privacy_guaranteed, noise keys).  The raw sum never leaves
    the caller unnoised; the keys (:func:`release_keys`) are the integer keys the fit's
    releases drew their noise with, for :func:`refuse_shared_keys`, and the model still
    carries them (:func:`restore_user_seeds` before returning it)."""
    from ._dask_folds import fit_fold, fold_score_sum

    X_train, y_train, X_val, y_val = parts
    on_partitions = y_val is None       # a fold of a Dask collection (DaskFolds)
    with warnings.catch_warnings(), silent_floating_point():
        warnings.filterwarnings("ignore", message=r"delta=.* >= 1/n_samples")
        (fit_fold if on_partitions else type(est).fit)(est, X_train, y_train)
    if on_partitions:
        total = fold_score_sum(scorer, est, X_val)
    else:
        total = float(np.sum(scorer.row_values(est, X_val, y_val)))
    return (
        strip_unprotected(est) if keep_model else None,
        total,
        fitted_dp_event(est),
        fitted_privacy_guaranteed(est),
        release_keys(est),
    )


def public_label_set(estimator, y, observed=None):
    """``(estimator, classes, public)``: the label set the candidates fit with.

    A classifier's label set is public only when given as a parameter (``classes=`` of
    a step, e.g. ``DPLogisticRegression(classes=[0, 1])``): it is then returned with
    ``public = True``.  Otherwise it is read from ``y`` -- one row with a new label would
    change the shape of every model -- with a :class:`~skdp.exceptions.PrivacyLeakWarning`;
    the label set is written into every step's ``classes`` (so that the candidates agree
    with the placeholder fits) and ``public = False``: the procedure then reports
    ``privacy_guaranteed_ = False`` and ``epsilon_ = inf``.  A classifier without a
    ``classes`` parameter answers for its own label set (its ``privacy_guaranteed_``);
    ``np.unique(y)`` then only shapes the placeholder fits.  ``observed``: a callable
    returning ``np.unique(y)`` (the partitions' distinct values of a Dask ``y``,
    :meth:`skdp.model_selection._dask_folds.DaskFolds.labels`).  Non-classifiers:
    ``(estimator, None, True)``.
    """
    if not is_classifier(estimator):
        return estimator, None, True
    keys, given = _label_set_parameters(estimator)
    if given:
        return estimator, np.unique(np.asarray(given[-1])), True
    labels = observed() if observed is not None else np.unique(np.asarray(y))
    if not keys:
        # no ``classes`` parameter: the classifier fixes its own label set, and its
        # ``privacy_guaranteed_`` says whether it read it from the data; the label set is
        # used for the placeholder fits only
        return estimator, labels, True
    warnings.warn(
        f"{type(estimator).__name__} has classes=None: the label set is read from the private "
        "data (one row with a new label changes the shape of every model), so the "
        "procedure is not private (privacy_guaranteed_ = False, epsilon_ = inf). Pass the "
        "public label set as classes=[...] (the labels read from y are private and not "
        "shown).",
        PrivacyLeakWarning,
        stacklevel=user_stacklevel(),
    )
    if keys:
        estimator = clone(estimator).set_params(**{k: labels for k in keys})
    return estimator, labels, False


def _label_set_parameters(estimator):
    """``(keys, given)``: the ``classes`` parameters of ``estimator``'s steps and the
    values set on them (not None); parameters only, no data."""
    params = estimator.get_params(deep=True)
    keys = [k for k in params if k == "classes" or k.endswith("__classes")]
    return keys, [params[k] for k in keys if params[k] is not None]


def reads_private_labels(estimator):
    """Whether :func:`public_label_set` will read the label set from the private ``y``
    and void the guarantee: a classifier with ``classes`` parameters, none of them set.
    Decided from the parameters alone, before any row is read."""
    if not is_classifier(estimator):
        return False
    keys, given = _label_set_parameters(estimator)
    return bool(keys) and not given


# --------------------------------------------------------------------------------------
# The procedure's privacy ledger
# --------------------------------------------------------------------------------------


def procedure_event(total_event, guaranteed):
    """The event a search or cross-validation reports (``dp_event_``) and charges to its
    ``privacy_ledger``: ``total_event``, or a ``NonPrivateDpEvent`` (infinite epsilon)
    when a bound or the label set is read from the data."""
    return total_event if guaranteed else dp_accounting.NonPrivateDpEvent()


def refuse_label_read(ledger, estimator, source):
    """Refuse, before the label set is read from ``y``, a procedure whose ledger cannot
    hold a non-private release.

    When :func:`reads_private_labels` holds, the procedure's event is a
    ``NonPrivateDpEvent`` whatever the rows are; a ledger with a finite budget (exact or
    adaptive) refuses it in any state, so it is refused here -- through
    :meth:`~skdp.accounting.PrivacyLedger.reserve`, which writes nothing when it refuses
    -- before ``np.unique(y)`` is computed, rather than at the procedure's reservation,
    after it.  A ledger without a budget (``epsilon=None``) records the procedure there.
    """
    if ledger is None or not reads_private_labels(estimator):
        return
    nonprivate = dp_accounting.NonPrivateDpEvent()
    if ledger.would_exceed(nonprivate):
        # raises BudgetExceededError; the cancel is reached only if the ledger admitted it
        ledger.reserve(nonprivate, source=source).cancel()


class ScoreNoise:
    """The noise of ``size`` score releases, drawn before any fit.

    ``source=None``: float unit noise from ``rng`` (standard normal for a Gaussian ``gdp``
    release, standard Laplace otherwise), scaled by ``scale``.  A ChaCha20 ``source``
    (``secure_noise=True``): exact integer noise on the grid of ``scale``
    (:mod:`skdp._mechanisms._exact`) -- a discrete Gaussian at least as private as
    ``N(0, scale^2)`` on the score's sensitivity, or a discrete Laplace that is exactly
    ``sensitivity/scale``-DP with the rounding included -- so the recorded events hold for
    the released bits.  ``bound``: public bound on the scores' magnitude (the scorer's
    range), which sets how coarse the grid must be.
    """

    def __init__(self, rng, source, size, scale, sensitivity, gdp, bound=None):
        self.scale, self.source = float(scale), source
        if self.scale == 0.0:   # only the deliberately broken variants of the audits
            self.source = source = None
        if source is None:
            self.unit = rng.standard_normal(size) if gdp else rng.laplace(size=size)
        elif gdp:   # ``size`` independent releases of one score each (p = 1)
            self.gamma, self.z, _ = exact_gaussian_noise(source, self.scale, sensitivity, 1,
                                                         bound, size)
        else:
            self.gamma, self.z, _ = exact_laplace_noise(source, sensitivity / self.scale,
                                                        sensitivity, 1, bound, size)

    def release(self, values):
        """``values`` (one per pre-drawn noise) plus their noise."""
        if self.source is None:
            return values + self.scale * self.unit
        return release_on_grid(values, self.gamma, self.z)


# --------------------------------------------------------------------------------------
# Noise keys of the fits
# --------------------------------------------------------------------------------------

#: first word of a fit's path (:func:`fit_keys`): a search's runs, its refit, a
#: cross-validation's folds
RUN_PATH, REFIT_PATH, FOLD_PATH = 0, 1, 2

#: what a returned pipeline's ``privacy_plan_`` shows in place of a key derived from the
#: search's seed (:func:`restore_user_seeds`); its ``str`` still says ``key=derived``
WITHHELD_KEY = "withheld"


def fit_key_root(rng, random_state):
    """The owner's seed of the keys of a composition's fits, or None.

    ``random_state=None`` (the default, for releases): None.  Every fit then runs its DP
    steps with ``random_state=None`` (:func:`configure`), so each keys its noise with 256
    bits from ``os.urandom`` (ChaCha20, :func:`skdp._mechanisms.new_word_source`): the
    fits' noises are independent of each other and of anything the procedure returns --
    no returned object carries a seed that would reproduce them, and none can be guessed
    (a drawn 31-bit seed could: ``2^31`` trial fits).  So a model the procedure returns
    has the distribution the accounting assumes given everything else released, and
    refitting it, on ``D`` or on a neighbour, draws fresh noise.

    Otherwise (an int, Generator or RandomState: reproducibility): 128 bits drawn from
    the procedure's generator ``rng`` (a function of the user's seed), from which every
    fit's keys are derived with its path (:func:`fit_keys`).
    """
    if random_state is None:
        return None
    return tuple(int(w) for w in rng.integers(0, 2**32, size=4, dtype=np.uint64))


def fit_keys(root, path, m):
    """The noise keys (``random_state``) of the ``m`` DP steps of the fit at ``path``, or
    None for ``root=None`` (keys from the OS).

    ``path`` names the fit in its composition: ``(RUN_PATH, run, split)``,
    ``(REFIT_PATH,)``, ``(FOLD_PATH, fold)``.  The keys are the first ``m`` words of
    ``SeedSequence(root, spawn_key=path)``: a function of the owner's seed and the path
    alone (DESIGN: "every step's key is derived from its owner's seed and its path"), so
    the same seed gives the same fits bit for bit whatever ``n_jobs``.  Two fits' keys
    are equal only by a hash collision (32-bit keys: about ``N^2 2^-33`` for ``N`` keys),
    which :func:`refuse_shared_keys` refuses before the first fit."""
    if root is None:
        return None
    sequence = np.random.SeedSequence(list(root), spawn_key=tuple(int(p) for p in path))
    return [int(w) for w in sequence.generate_state(m, dtype=np.uint32)]


def refuse_shared_keys(keys_per_fit):
    """Raise ``ValueError`` if one noise key occurs twice among the fits' keys.

    Two releases of one composition keyed alike draw the same noise: it cancels in their
    difference, and the fits are not the independent mechanisms the composition
    accounts (DESIGN: equal keys in one composition are refused).  ``keys_per_fit``: one
    iterable of keys per fit (None entries -- keys from the OS -- are independent and
    skipped).  The message names no key."""
    seen = set()
    for keys in keys_per_fit:
        for key in keys or ():
            if key is None:
                continue
            if key in seen:
                raise ValueError(
                    "two releases of this procedure would draw their noise with the same "
                    "noise key (the keys derived from random_state collide, probability "
                    "about 2^-32 per pair): nothing is released; choose another "
                    "random_state, or random_state=None")
            seen.add(key)


def release_keys(fitted):
    """The integer noise keys of the releases of a fitted model, as
    :func:`skdp.accounting.fitted_dp_event` reads them (a pipeline's plan keys, each DP
    step's ``random_state``)."""
    from ..accounting._fitted import _release_seeds

    return tuple(key for _, _, key in _release_seeds(fitted))


def user_seeds(base, params, layout=None):
    """``{parameter: value}`` of the ``random_state`` parameters :func:`configure` sets,
    as the user gave them on ``base`` (the grid cannot set them: :func:`check_grid_keys`).
    """
    est = clone(base).set_params(**params)
    prefixes = layout[0] if layout is not None else dp_step_prefixes(est)
    names = est.get_params(deep=True)
    return {key: names[key] for key in seed_parameters(est, prefixes)}


def restore_user_seeds(model, seeds, procedure):
    """Give a model the procedure returns back its user's ``random_state`` parameters
    (``seeds``, :func:`user_seeds`), in place, and record on each of its DP steps that
    the procedure keyed it (``procedure``: its name); returns ``model``.

    The fit ran with the keys the procedure set (:func:`configure`), and they stay in the
    fitted objects: the parameters of the steps fitted in place, the clones a
    ``ColumnTransformer`` or ``FeatureUnion`` fitted, a pipeline's ``privacy_plan_``.  With
    an integer key there, whoever holds the model refits it on each candidate neighbour
    and the one that reproduces the release bit for bit is the data (a perfect
    distinguisher); so every fitted object gets the user's value back and a plan's keys
    are withheld (:data:`WITHHELD_KEY`).  With ``random_state=None`` the keys are None
    (from the OS) and nothing seed-like is left; with a seed, the model carries no key
    derived from it -- reproducing the noise needs the procedure's own ``random_state``,
    as for any seeded release.  The user's values are parameters, not keys: refitting with
    them draws other noise.

    The user's values then no longer say which keys the releases used: two steps given
    one seed drew distinct keys (:func:`refuse_shared_keys`).  Each releasing step keyed
    here gets a public :class:`~skdp.accounting._fitted.ProcedureKeys` record
    (``keyed_by_``), from which :func:`skdp.accounting.fitted_dp_event` judges the keys
    that were used instead of the seeds, for as long as the step is the fit the procedure
    made."""
    from ..accounting._fitted import record_procedure_keys

    model.set_params(**seeds)
    keyed = []
    for path, obj in _fitted_objects(model):
        name = f"{path}__random_state" if path else "random_state"
        if name in seeds and "random_state" in obj.get_params(deep=False):
            obj.set_params(random_state=seeds[name])
            keyed.append((path, obj))
        plan = vars(obj).get("privacy_plan_")
        if plan is not None:
            obj.privacy_plan_ = _withheld(plan)
    record_procedure_keys(keyed, procedure)
    return model


def _withheld(plan):
    steps = tuple(dataclasses.replace(s, key=WITHHELD_KEY) if s.key is not None else s
                  for s in plan.steps)
    return dataclasses.replace(plan, steps=steps)


def _fitted_objects(estimator, path=""):
    """``(parameter path, object)`` of ``estimator`` and every estimator fitted inside it:
    a pipeline's steps, the fitted blocks of a ``ColumnTransformer`` or ``FeatureUnion``
    (named by the block, as in ``set_params``)."""
    from sklearn.pipeline import Pipeline
    from ..accounting._fitted import _named_parts

    if not hasattr(estimator, "get_params"):
        return
    yield path, estimator
    prefix = f"{path}__" if path else ""
    named = estimator.steps if isinstance(estimator, Pipeline) else \
        _named_parts(estimator) or []
    for name, step in named:
        yield from _fitted_objects(step, prefix + name)


def check_budget_range(epsilon, delta):
    """Refuse a search's or cross-validation's ``(epsilon, delta)`` outside the
    accounting's float64 range, before any work (the ranges of
    :func:`skdp.linear_model._base.check_public_ranges`): ``delta = 0`` records pure events
    ``2/(1 + e^epsilon)``, ``delta > 0`` Gaussian ones."""
    from ..linear_model._base import PURE_EPSILON_RANGE

    if delta == 0.0:
        lo, hi = PURE_EPSILON_RANGE
        if not lo <= epsilon <= hi:
            raise ValueError(
                f"epsilon={epsilon!r} with delta=0 is outside the usable range of pure "
                f"epsilon-DP [{lo:.4g}, {hi:.4g}] (2^-32 to -ln(2^-1022)): the search and its "
                "candidates are accounted as randomized responses of probability "
                "2/(1 + e^epsilon), which overflows above 708.39 and cannot resolve epsilon "
                "below 2^-32")
    else:
        from ..accounting._gaussian import check_gaussian_range

        check_gaussian_range(epsilon, delta)      # names both when out of the Gaussian range
