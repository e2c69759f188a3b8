r"""Hyperparameter search whose *whole procedure* is differentially private.

Why plain ``GridSearchCV`` is not private
-----------------------------------------
``GridSearchCV(DPLogisticRegression(epsilon=1), grid, cv=5)`` trains ``5 |grid| + 1``
models, each row in ``4 |grid| + 1`` of them, so the fits alone compose to far more than
``epsilon = 1``; worse, it compares *exact* validation scores, so the selected
hyperparameters (and ``cv_results_``) are not private at all.  No estimator-level budget
can see this: the accountant is lost inside the search.

What the private searches do
----------------------------
One *run* (the base mechanism ``Q``):

1. pick a candidate uniformly at random from the (public) candidate list;
2. fit it with the per-run budget the search set on its DP steps;
3. release its validation score with noise calibrated to the score's sensitivity
   (:mod:`skdp.model_selection._scorer`): ``Delta = (upper - lower)/m`` for the mean of
   ``m`` clipped per-row terms.

The search repeats ``Q`` a random number ``K`` of times and releases **only the best run**
(its candidate, its noisy score and, without refit, its model), then optionally refits the
selected candidate on all rows with a fresh budget:

* ``delta > 0`` (default, ``selection="repeat_and_select"``): ``K`` follows a truncated
  negative binomial distribution with mean ``n_repetitions`` and shape
  ``repetition_shape`` (1 = geometric, 0 = logarithmic), and the selection is accounted by
  Papernot & Steinke (ICLR 2022), Theorem 2, in Rényi DP -- dp-accounting's
  ``RepeatAndSelectDpEvent``, with skdp's events translated for the RDP accountant
  (:mod:`skdp.accounting._rdp`).
* ``delta = 0`` (``selection="random_stopping"``): Liu & Talwar (STOC 2019), Algorithm 2
  without threshold: after each run stop with probability ``gamma = 1/n_repetitions``
  (``K`` geometric), output the best run.  If ``Q`` is epsilon-DP the procedure is
  ``3 epsilon``-DP (Liu & Talwar 2019, Theorem 3.4; it is also the ``eta = 1`` case of the
  pure-DP limit ``(2 + eta) epsilon`` of Papernot & Steinke's Theorem 2, which
  ``tests/model_selection`` checks against dp-accounting's RDP bound at high order).

Privacy of one run, per row (replace-one, public split):

* holdout (``cv`` a float, default 0.2): a row is *either* in the training part -- the
  noisy score is then a post-processing of the released model (the validation rows are
  identical in both datasets, the noise is fresh) -- *or* in the validation part -- the
  model's distribution is then identical and only the score moves, by ``<= Delta``.  So
  the run is as private as the *worse* of the fit and the score, not their composition;
  the search gives both the same budget.
* ``k``-fold (``cv`` an int): a row is in ``k - 1`` training sets and one validation fold;
  the run releases one noisy mean of the ``n`` out-of-fold per-row scores (sensitivity
  ``(upper - lower)/n``), a post-processing of the ``k - 1`` models that saw the row plus
  one Gaussian release of that row's own term.  Its event is the composition of ``k - 1``
  fits and one score release (adaptive composition; an upper bound, with no slack from the
  accountant).
* A candidate chosen with public probabilities: the divergence of a mixture with public
  weights is at most the largest one, so the run's event is the *dominating* event of the
  candidates (:func:`skdp.model_selection._common.dominating`).  The search reads each
  candidate's event from a fit on public placeholder data of the same shape before
  touching the private data, and checks every real fit against it.

The budget split (``budget_split_``): every DP step of every candidate gets the same
per-fit budget -- ``mu``-GDP for ``delta > 0`` (a pipeline with ``m`` DP steps gives each
``mu/sqrt(m)``), ``epsilon_fit`` for ``delta = 0``; the score gets the same ``mu`` (or
epsilon); the refit, if any, the same again, so that the selected candidate is refitted
with the noise it was evaluated with.  ``mu`` is the largest value for which the whole
procedure (selection, then refit) is ``(epsilon, delta)``-DP by the accountant.

The label set of a classifier is public only when a step is given ``classes=``; the
placeholder fits cycle through it.  Without it the search reads ``np.unique(y)``, warns
(:class:`~skdp.exceptions.PrivacyLeakWarning`), passes that set to the candidates and
reports ``privacy_guaranteed_ = False`` and ``epsilon_ = inf``.

Noise keys.  With ``random_state=None`` every fit (each run's folds, the refit) runs its DP
steps with ``random_state=None``: each keys its noise with 256 bits from the OS, as an
estimator does, and the score noise too.  With a seed (reproducibility) every fit's keys
are derived from the seed and the fit's path (run, fold; the refit), and a key that would
occur twice in the procedure -- a pipeline's derived keys included -- is refused
(:func:`skdp.model_selection._common.fit_keys`).  Either way the model the search returns
carries its user's ``random_state`` parameters, not the key its noise was drawn with, and
a returned pipeline's ``privacy_plan_`` withholds its keys: with the key, whoever holds
the model could refit it on each candidate neighbour and recognise the data as the one
that reproduces the release bit for bit (:func:`~._common.restore_user_seeds`).  Its DP
steps carry a public record instead (``keyed_by_``, no key), from which
:func:`skdp.accounting.fitted_dp_event` knows that they drew distinct keys even where
their user gave them one seed, until a step is refitted
(:class:`skdp.accounting._fitted.ProcedureKeys`).

Every model the search returns (``best_estimator_``) is stripped of the unprotected
diagnostics (``n_iter_``, ``n_gradient_evals_``...; :mod:`skdp._fitted_attributes`), so
that everything it carries is covered by ``epsilon_``; the search itself has no
``refit_time_`` (scikit-learn's searches time the refit: a fit on the private data).

A :class:`~skdp.accounting.PrivacyLedger` given as ``privacy_ledger`` is charged the whole
procedure at once.  Its event is fixed by the plan (step 2 of ``fit``: the candidates'
placeholder events, ``E[K]``, the shape, the folds and the refit -- public quantities
only), so the search *reserves* that event after planning and before the first fit reads a
row -- a budget too short for it raises :class:`~skdp.exceptions.BudgetExceededError`
there, having read nothing -- and *commits* the event it released (``dp_event_``, checked
against the plan run by run) before it sets any fitted attribute; a search that fails
publishes nothing, and is charged its planned event once its first fit has started (the
failure is a function of the data and of the fits already made:
``Reservation.charge_on_error``).  The ledger then holds one entry, the selection's
``RepeatAndSelectDpEvent`` (or random stopping's pure event) composed with the refit: the
same account as ``epsilon_``, which a per-fit ledger on the candidates would miss (it
would count every run's fit instead of the selection, and none of the released score), so
the candidates' own ledgers are refused.  Since the event is fixed before any row, it
composes under both ledger modes (exact, or the Rényi filter of ``adaptive=True``).

Not protected: the run time (it reveals ``K`` roughly, which is data-independent but
must not be published together with the selection), and the floating-point bits of the
noise.  Never publish the scores of the runs that were not selected: that would be a
``K``-fold composition, not a selection.
"""

import functools
import math
from abc import ABCMeta, abstractmethod
import numbers
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..accounting import fitted_dp_event, gaussian_epsilon, get_epsilon
from ..accounting._events import compose, pure_dp_event, same_privacy_profile
from ..accounting._ledger import PrivacyLedger, ledger_reservation
from ..accounting._rdp import rdp_epsilon, repeat_and_select_event
from .._fitted_attributes import atomic_fit, strip_unprotected
from .._mechanisms import new_word_source
from .._mechanisms._quiet import silent_floating_point
from ..exceptions import BudgetExceededError
from ._dask_folds import split_rows
from ._common import (
    calibrate_per_fit,
    check_budget_range,
    pipeline_fit_delta,
    check_grid_keys,
    configure,
    dominating,
    draw_repetitions,
    ScoreNoise,
    fit_and_score,
    fit_key_root,
    fit_keys,
    gaussian_mu_event,
    probe,
    procedure_event,
    public_label_set,
    public_splits,
    refuse_label_read,
    refuse_shared_keys,
    release_keys,
    restore_user_seeds,
    REFIT_PATH,
    RUN_PATH,
    self_compose,
    split_data,
    step_layout,
    user_seeds,
)
from ._scorer import PrivateScorer, check_private_scoring
from ._width_pins import restore_rule_widths, rule_width_pins
from .._stacklevel import user_stacklevel

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV"]

#: Relative margin under the target epsilon used when planning, so that rounding in the
#: estimators' own calibration can never push the reported total over the budget.
PLAN_MARGIN = 1e-6


def _score_noise_scale(sensitivity, per_fit):
    """Noise scale of a score release: Gaussian ``sigma = Delta / mu`` (``mu``-GDP) or
    Laplace ``b = Delta / epsilon`` (epsilon-DP).  Kept separate from the event so that
    tests can break it (under-noised variant of the audit)."""
    return sensitivity / per_fit


def _planned_total(mu, delta, mean, shape, k, refit):
    run = gaussian_mu_event(math.sqrt(k) * mu)  # k = 1: holdout; k-1 fits + 1 score else
    event = repeat_and_select_event(run, mean, shape)
    if refit:
        event = compose(event, gaussian_mu_event(mu))
    return rdp_epsilon(event, delta)


@functools.lru_cache(maxsize=128)
def plan_gdp(epsilon, delta, mean, shape, k, refit):
    """Largest per-fit ``mu`` whose planned procedure is (epsilon, delta)-DP by RDP."""
    target = epsilon * (1.0 - PLAN_MARGIN)
    lo, hi = 1e-8, 1.0
    while _planned_total(hi, delta, mean, shape, k, refit) <= target:
        lo, hi = hi, hi * 4.0
        if hi > 1e4:
            return lo
    if _planned_total(lo, delta, mean, shape, k, refit) > target:
        raise BudgetExceededError(
            f"epsilon={epsilon} at delta={delta} is below the fixed cost of selecting among "
            f"{mean:g} expected runs; raise epsilon or lower n_repetitions"
        )
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if _planned_total(mid, delta, mean, shape, k, refit) <= target:
            lo = mid
        else:
            hi = mid
        if hi / lo - 1.0 < 1e-7:
            break
    return lo


class _BaseDPSearch(MetaEstimatorMixin, BaseEstimator, metaclass=ABCMeta):
    #: where an integer random_state keys the noise (splits, candidates, the fits' key
    #: root and the score noise all come from default_rng(random_state)):
    #: skdp._mechanisms._exact.RELEASE_SITES, read by fitted_dp_event
    _release_sites = ("default_rng",)

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta": [Interval(numbers.Real, 0, 1, closed="left")],
        "scoring": [None, StrOptions({"accuracy"}), PrivateScorer],
        "n_jobs": [numbers.Integral, None],
        "refit": ["boolean"],
        "cv": [
            None,
            Interval(numbers.Integral, 2, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="neither"),
        ],
        "n_repetitions": [Interval(numbers.Real, 1, None, closed="left"), None],
        "repetition_shape": [Interval(numbers.Real, 0, None, closed="left")],
        "selection": [StrOptions({"auto", "repeat_and_select", "random_stopping"})],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "secure_noise": ["boolean"],
        "privacy_ledger": [PrivacyLedger, None],
    }

    # ---------------------------------------------------------------- delegation
    def _check_best(self):
        check_is_fitted(self, "best_params_")
        if not hasattr(self, "best_estimator_"):
            raise AttributeError(
                "no best_estimator_: refit=False with k-fold cv releases the selection only"
            )
        return True

    def _best_has(name):
        def check(self):
            self._check_best()
            return hasattr(self.best_estimator_, name)

        return check

    @available_if(_best_has("predict"))
    def predict(self, X):
        """Predict with the selected model (``best_estimator_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray
        """
        return self.best_estimator_.decision_function(X)

    @available_if(_best_has("transform"))
    def transform(self, X):
        """Transform with the selected model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray
        """
        return self.best_estimator_.transform(X)

    @available_if(_best_has("score"))
    def score(self, X, y=None):
        """``best_estimator_.score(X, y)`` -- a plain (non-private) evaluation on the data
        you pass, e.g. a public test set.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None

        Returns
        -------
        score : float
        """
        return self.best_estimator_.score(X, y)

    @property
    def classes_(self):
        """Labels of the selected classifier."""
        self._check_best()
        return self.best_estimator_.classes_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = sub.classifier_tags
        tags.regressor_tags = sub.regressor_tags
        tags.non_deterministic = True
        return tags

    # ---------------------------------------------------------------- fit
    @abstractmethod
    def _candidates(self, rng):
        """The candidate parameter settings (grid or sample drawn with ``rng``)."""

    def _resolve_selection(self):
        delta = float(self.delta)
        selection = self.selection
        if selection == "auto":
            selection = "repeat_and_select" if delta > 0 else "random_stopping"
        if selection == "repeat_and_select" and delta == 0:
            raise ValueError(
                "selection='repeat_and_select' is accounted in Rényi DP and needs delta > 0; "
                "use delta=0 with selection='random_stopping' (Liu & Talwar) for pure DP"
            )
        if selection == "random_stopping":
            if delta > 0:
                raise ValueError(
                    "selection='random_stopping' (Liu & Talwar, pure epsilon-DP) needs "
                    "delta=0; with delta > 0 use 'repeat_and_select'"
                )
            if float(self.repetition_shape) != 1.0:
                raise ValueError(
                    "random stopping draws a geometric number of runs: repetition_shape "
                    f"must be 1, got {self.repetition_shape}"
                )
        return selection

    @_fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y):
        """Run the private search.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a Dask DataFrame or array
            A Dask collection is split into the same public folds by row position, each
            candidate fitted where its partitions are and each fold scored per partition
            on the workers (:mod:`skdp.model_selection._dask_folds`).
        y : array-like of shape (n_samples,), or a Dask Series or array
            Aligned with ``X`` by position; Dask when ``X`` is.

        Returns
        -------
        self
        """
        from ..linear_model._base import _check_random_state

        if y is None:
            raise ValueError("a private search needs y (supervised estimators only)")
        X, y, n, X_public, folds = split_rows(X, y, type(self).__name__)
        if n < 4:
            raise ValueError(f"a private search needs at least 4 samples, got {n}")
        epsilon, delta = float(self.epsilon), float(self.delta)
        if not math.isfinite(epsilon):
            raise ValueError(f"epsilon must be finite, got {self.epsilon!r}")
        check_budget_range(epsilon, delta)
        if delta > 0 and delta >= 1.0 / n:
            warnings.warn(
                f"delta={delta:g} >= 1/n_samples={1.0 / n:g}: use delta << 1/n",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        selection = self._resolve_selection()
        scorer = check_private_scoring(self.scoring, self.estimator)
        rng = _check_random_state(self.random_state)

        # ---- 1. public plan: candidates, split, budget (nothing private is read) ----
        candidates = [dict(p) for p in self._candidates(rng)]
        if not candidates:
            raise ValueError("the candidate list is empty")
        check_grid_keys(candidates, self.estimator)
        # a label set read from y voids the guarantee: a ledger refuses before it is read
        refuse_label_read(self.privacy_ledger, self.estimator, type(self).__name__)
        base, classes, labels_public = public_label_set(
            self.estimator, y, folds.labels if folds is not None else None)
        cv = 0.2 if self.cv is None else self.cv
        cv = int(cv) if isinstance(cv, numbers.Integral) else float(cv)
        kfold = isinstance(cv, int)
        k = cv if kfold else 1
        splits = public_splits(n, cv, rng)
        n_score_rows = n if kfold else splits.validation_sizes[0]
        score_sensitivity = scorer.released_sensitivity(n_score_rows)
        mean = float(self.n_repetitions) if self.n_repetitions is not None else float(
            len(candidates)
        )
        shape = float(self.repetition_shape)
        refit = bool(self.refit)
        train_sizes = sorted(set(splits.train_sizes))
        sizes = sorted(set(train_sizes) | ({n} if refit else set()))
        layouts = [step_layout(base, params) for params in candidates]
        # a PrivatePipeline's thresholds spend part of its delta in every fit of a row
        pipe_delta = pipeline_fit_delta(delta, mean * (k - 1 if kfold else 1) + refit)
        lazy = folds is not None and folds.lazy

        def account(per_fit):
            """``(epsilon_spent, budget, score_event, probes, selection_event,
            total_event)`` of the procedure with ``per_fit`` (public: placeholder fits and
            plans only)."""
            if selection == "repeat_and_select":
                budget = ("gdp", per_fit, delta, pipe_delta)
                score_event = gaussian_mu_event(per_fit)
            else:
                budget = ("pure", per_fit)
                score_event = pure_dp_event(per_fit)
            probes, pins = {}, {}
            for i, params in enumerate(candidates):
                est = configure(base, params, budget, None, layouts[i])
                # a public width for a model behind a released one (._width_pins)
                pins[i] = rule_width_pins(est, X_public, y, n, classes, lazy=lazy)
                est.set_params(**pins[i])
                for size in sizes:
                    probes[i, size] = probe(est, X_public, y, size, classes, lazy=lazy)
            fit_dom = dominating([probes[i, s][0] for i in range(len(candidates))
                                  for s in train_sizes])
            if kfold:
                run_event = compose(self_compose(fit_dom, k - 1), score_event)
            else:
                run_event = dominating([fit_dom, score_event])
            if selection == "repeat_and_select":
                selection_event = repeat_and_select_event(run_event, mean, shape)
            else:
                eps_run = get_epsilon(run_event, 0.0)
                if not math.isfinite(eps_run):
                    raise ValueError(
                        "random stopping needs pure epsilon-DP candidates; a candidate's "
                        f"event is {run_event!r}"
                    )
                selection_event = pure_dp_event(3.0 * eps_run)
            if refit:
                refit_event = dominating([probes[i, n][0] for i in range(len(candidates))])
                total_event = compose(selection_event, refit_event)
            else:
                total_event = selection_event
            if selection == "repeat_and_select":
                spent = rdp_epsilon(total_event, delta)
            else:
                spent = get_epsilon(total_event, 0.0)
            return spent, budget, score_event, probes, selection_event, total_event, pins

        # ---- 2. the per-fit budget: the Gaussian plan, lowered for candidates whose
        # events are not Gaussian (their placeholder events are accounted exactly) ----
        if selection == "repeat_and_select":
            start = plan_gdp(epsilon, delta, mean, shape, k, refit)
            per_fit, state = calibrate_per_fit(account, epsilon * (1.0 - PLAN_MARGIN),
                                               start)
        else:
            per_fit = epsilon * (1.0 - PLAN_MARGIN) / (3.0 * k + (1.0 if refit else 0.0))
            state = account(per_fit)
        epsilon_spent, budget, score_event, probes, selection_event, total_event, pins = state
        if epsilon_spent > epsilon:
            raise BudgetExceededError(
                f"the candidates' events compose to epsilon={epsilon_spent:.6g} > "
                f"epsilon={epsilon} (a DP step does not release a Gaussian/pure mechanism "
                "at the budget the search set); nothing was fitted on the private data"
            )
        guaranteed = labels_public and all(g for _, g in probes.values())

        # ---- 3. every random draw, serially, before any fit ----
        if selection == "random_stopping":
            n_runs = int(rng.geometric(1.0 / mean)) if mean > 1 else 1
        else:
            n_runs = draw_repetitions(rng, mean, shape)
        chosen = rng.integers(0, len(candidates), size=n_runs)
        # every fit's noise key: from the OS (random_state=None), else derived from the
        # seed and the fit's path, none shared (_common.fit_key_root)
        root = fit_key_root(rng, self.random_state)
        n_steps = [len(layouts[c][0]) for c in chosen]
        keys = {(j, s): fit_keys(root, (RUN_PATH, j, s), n_steps[j])
                for j in range(n_runs) for s in range(len(splits))}
        best_steps = max(len(layout[0]) for layout in layouts)
        refit_keys = fit_keys(root, (REFIT_PATH,), best_steps) if refit else None
        refuse_shared_keys([*keys.values(), refit_keys])
        # the score noise: ChaCha20 keyed from the OS with random_state=None
        noise_scale = _score_noise_scale(score_sensitivity, budget[1])
        source = new_word_source(None if self.random_state is None else rng) \
            if self.secure_noise else None
        score_noise = ScoreNoise(rng, source, n_runs, noise_scale, score_sensitivity,
                                 budget[0] == "gdp", scorer.bound)

        # ---- the ledger: the planned event reserved before the first fit reads a row
        # (a short budget raises here, nothing read), the released one committed before
        # anything is published; an exception before the first fit cancels the
        # reservation, one after it commits the planned event (charge_on_error) ----
        released_event = procedure_event(total_event, guaranteed)
        with ledger_reservation(self.privacy_ledger, released_event,
                                type(self).__name__) as reservation:
            reservation.charge_on_error()
            # ---- 4. the runs (parallel; results independent of n_jobs) ----
            keep_model = not refit and not kfold
            tasks = [
                (j, s, configure(base, {**candidates[chosen[j]], **pins[chosen[j]]}, budget,
                                 keys[j, s], layouts[chosen[j]]))
                for j in range(n_runs)
                for s in range(len(splits))
            ]
            parts = folds.split(splits) if folds is not None else split_data(X, y, splits)
            # a Dask collection's fits run one after another (each runs on the workers
            # already), from this client, inside the reservation
            if self.n_jobs in (None, 1) or folds is not None:
                results = [fit_and_score(est, parts[s], scorer, keep_model)
                           for _, s, est in tasks]
            else:
                results = Parallel(n_jobs=self.n_jobs,
                                   verbose=max(0, int(self.verbose) - 1))(
                    delayed(fit_and_score)(est, parts[s], scorer, keep_model)
                    for _, s, est in tasks
                )
            # the keys the fits drew with, a pipeline's derived ones included: none shared
            used_keys = [r[4] for r in results]
            refuse_shared_keys(used_keys)
            raw = np.zeros(n_runs)
            models = [None] * n_runs
            for (j, s, _), (model, total, event, _g, _k) in zip(tasks, results):
                expected = probes[chosen[j], splits.train_sizes[s]][0]
                # the same privacy profile up to float rounding (a pipeline's model takes
                # its released upstream bound; a zeroth-order model's steps follow the
                # width, their total Gaussian-DP mu does not); PLAN_MARGIN covers what
                # rounding can change
                if not same_privacy_profile(event, expected):
                    raise RuntimeError(
                        f"candidate {candidates[chosen[j]]} released {event!r} on the "
                        f"private data but {expected!r} on public placeholder data: its "
                        "noise depends on the data (a privacy bug in the estimator); "
                        "nothing is released"
                    )
                raw[j] += total
                models[j] = model
            noisy = score_noise.release(raw / n_score_rows)
            del raw
            best_run = int(np.argmax(noisy))
            best_index = int(chosen[best_run])

            # ---- 5. refit the selected candidate on all rows (its own budget) ----
            # (no refit_time_: the wall time of a fit on the private data is an unprotected
            # diagnostic, skdp._fitted_attributes, which the search does not publish)
            if refit:
                est = configure(base, {**candidates[best_index], **pins[best_index]},
                                budget, refit_keys, layouts[best_index])
                with warnings.catch_warnings(), silent_floating_point():
                    warnings.filterwarnings("ignore", message=r"delta=.* >= 1/n_samples")
                    est.fit(X, y)
                if not same_privacy_profile(fitted_dp_event(est),
                                            probes[best_index, n][0]):
                    raise RuntimeError(
                        "the refit released a different event on the private data than "
                        "on placeholder data: its noise depends on the data (privacy bug)"
                    )
                refuse_shared_keys([*used_keys, release_keys(est)])
                best_estimator = strip_unprotected(est)
            elif keep_model:
                best_estimator = models[best_run]
            else:
                best_estimator = None
            if best_estimator is not None:
                # the model carries the user's random_state, not its noise key
                restore_user_seeds(best_estimator, user_seeds(
                    base, candidates[best_index], layouts[best_index]),
                    type(self).__name__)
                restore_rule_widths(best_estimator, pins[best_index])
            # every run matched its planned event, so what the search releases is the
            # plan's event: committed (re-checked atomically) before the release
            reservation.commit(released_event)

        # ---- 6. publish ----
        self.best_index_ = best_index
        self.best_params_ = candidates[best_index]
        self.best_score_ = float(noisy[best_run])
        self.cv_results_ = self._results(candidates, best_index, float(noisy[best_run]))
        if best_estimator is not None:
            self.best_estimator_ = best_estimator
            if hasattr(best_estimator, "n_features_in_"):
                self.n_features_in_ = best_estimator.n_features_in_
            if hasattr(best_estimator, "feature_names_in_"):
                self.feature_names_in_ = best_estimator.feature_names_in_
        elif hasattr(self, "best_estimator_"):
            del self.best_estimator_
        self.scorer_ = scorer
        self.n_splits_ = len(splits)
        self.multimetric_ = False
        # a label set read from the data voids the guarantee (public_label_set)
        self.epsilon_ = float(epsilon_spent) if guaranteed else math.inf
        self.delta_ = delta
        self.dp_event_ = released_event
        self.privacy_guaranteed_ = bool(guaranteed)
        self.secure_noise_ = bool(self.secure_noise)
        self.budget_split_ = self._budget_split(
            selection, budget, mean, shape, k, refit, score_sensitivity, noise_scale,
            selection_event, delta, epsilon_spent,
        )
        if self.verbose:
            print(f"[{type(self).__name__}] {self.budget_split_}")
        return self

    @staticmethod
    def _results(candidates, best_index, best_score):
        n_cand = len(candidates)
        results = {"params": candidates}
        keys = sorted({key for p in candidates for key in p})
        for key in keys:
            col = np.ma.MaskedArray(np.empty(n_cand, dtype=object), mask=True)
            for i, p in enumerate(candidates):
                if key in p:
                    col[i] = p[key]
            results[f"param_{key}"] = col
        mean_score = np.full(n_cand, np.nan)
        mean_score[best_index] = best_score
        rank = np.full(n_cand, 2, dtype=np.int32)
        rank[best_index] = 1
        selected = np.zeros(n_cand, dtype=bool)
        selected[best_index] = True
        results["mean_test_score"] = mean_score
        results["rank_test_score"] = rank
        results["selected"] = selected
        return results

    @staticmethod
    def _budget_split(selection, budget, mean, shape, k, refit, score_sensitivity,
                      noise_scale, selection_event, delta, epsilon_spent):
        split = {
            "selection": selection,
            "n_repetitions_mean": mean,
            "repetition_shape": shape if selection == "repeat_and_select" else 1.0,
            "cv_folds": k if k > 1 else None,
            "score_sensitivity": score_sensitivity,
        }
        if budget[0] == "gdp":
            mu = budget[1]
            split.update(
                fit_mu=mu,
                fit_epsilon_at_delta=float(gaussian_epsilon(delta, mu)),
                score_mu=mu,
                score_noise_std=noise_scale,
                epsilon_selection=rdp_epsilon(selection_event, delta),
                refit_mu=mu if refit else None,
            )
        else:
            split.update(
                fit_epsilon=budget[1],
                score_epsilon=budget[1],
                score_laplace_scale=noise_scale,
                epsilon_selection=get_epsilon(selection_event, 0.0),
                refit_epsilon=budget[1] if refit else None,
            )
        split["epsilon_total"] = float(epsilon_spent)
        split["delta_total"] = float(delta)
        return split


_SEARCH_PARAMS_DOC = """\
    epsilon : float, default=1.0
        Total privacy budget of the whole procedure (selection, released score and refit).
    delta : float, default=1e-6
        Total delta; ``delta > 0`` selects Papernot–Steinke repeat-and-select (Rényi DP),
        ``delta = 0`` Liu–Talwar random stopping (pure DP, candidates fitted at delta=0).
    scoring : None, "accuracy" or PrivateScorer, default=None
        Bounded validation score (None: accuracy, classifiers only).  Released with
        noise calibrated to its replace-one sensitivity ``(upper - lower)/m``.
    n_jobs : int or None, default=None
        Parallel fits (joblib; honours ``joblib.parallel_config``, e.g. the dask backend).
        Results do not depend on it: every random draw is made serially beforehand.  On
        a Dask collection the fits run one after another (each runs on the workers).
    refit : bool, default=True
        Refit the selected candidate on all rows, with the same per-fit budget as the runs
        (included in the total).  False: with a holdout split, ``best_estimator_`` is the
        winning run's model (trained on the training part, no extra cost); with k folds
        only the selection is released.
    cv : None, int or float, default=None
        float in (0, 1): one public random holdout split with that validation fraction;
        int k >= 2: k public random folds; None: holdout 0.2.  Splits depend only on
        ``n`` and ``random_state`` (stratification would leak labels).
    n_repetitions : float or None, default=None
        Expected number of runs ``E[K]`` (None: the number of candidates).
    repetition_shape : float, default=1.0
        Shape ``eta`` of the truncated negative binomial distribution of ``K``
        (1: geometric, 0: logarithmic -- slightly cheaper in privacy, more spread).
    selection : {"auto", "repeat_and_select", "random_stopping"}, default="auto"
    random_state : int, Generator, RandomState or None, default=None
        Seeds the split, ``K``, the candidates of each run, the fits' noise keys and the
        score noise.  Leave None in production: every fit and the score noise are then
        keyed from the OS.  A seed derives each fit's keys from it and the fit's path
        (never two alike) and reproduces the search bit for bit -- for whoever knows it.
        The returned model keeps its user's ``random_state`` either way.
    verbose : int, default=0
    secure_noise : bool, default=True
        Release the selected score on a public power-of-two grid with exact discrete
        noise (``doc/floating_point.rst``); ``False``: float noise, whose low-order bits
        leak.  The candidates' fits follow their own ``secure_noise``.  Reported as
        ``secure_noise_``.
    privacy_ledger : PrivacyLedger or None, default=None
        A :class:`~skdp.accounting.PrivacyLedger` charged the whole procedure: its planned
        event (``dp_event_``, fixed from public quantities) is reserved before the first
        fit reads a row -- a ledger whose remaining budget cannot hold it raises
        :class:`~skdp.exceptions.BudgetExceededError` there, having fitted and published
        nothing -- and the released event is committed before ``best_params_``,
        ``best_score_`` or ``best_estimator_`` is set; a search that fails after its
        first fit has started is charged its planned event.  The ledger gets one entry
        per call of ``fit`` (exact or ``adaptive`` ledger alike).  The candidates must
        not carry ledgers of their own (they would be charged every run instead of the
        selection): they are refused.
        :meth:`PrivacyLedger.attach <skdp.accounting.PrivacyLedger.attach>` sets this
        parameter.

    Attributes
    ----------
    best_index_, best_params_ : int, dict
        The privately selected candidate.
    best_score_ : float
        Its noisy validation score (the only score released).
    best_estimator_ : estimator
        The selected model (see ``refit``), with its user's ``random_state`` values; its
        DP steps carry ``keyed_by_``, the public record that the search keyed them
        (:func:`skdp.accounting.fitted_dp_event` reads it instead of the seeds).
    cv_results_ : dict
        ``params`` and ``param_*`` of every candidate (public), ``mean_test_score`` (NaN
        except for the selected candidate: the other runs' scores are *not* released),
        ``rank_test_score`` (1 for the selected candidate, 2 otherwise), ``selected``.
    epsilon_, delta_ : float
        The guarantee of the whole procedure (``epsilon_ <= epsilon``).
    dp_event_ : dp_accounting.DpEvent
        ``RepeatAndSelectDpEvent`` of the run event (skdp convention; account it with
        :func:`skdp.accounting.rdp_epsilon`), composed with the refit event; for random
        stopping the pure ``3 epsilon_run`` event composed with the refit.
    budget_split_ : dict
        How the total was split: per-fit ``mu`` (or epsilon), score noise, expected runs,
        epsilon of the selection alone, totals.
    privacy_guaranteed_ : bool
        False if a candidate read a bound from the data (e.g. ``data_norm=None``) or the
        label set was read from ``y``.
    secure_noise_ : bool
        Whether the selected score was released with exact grid noise.
"""


class DPGridSearchCV(_BaseDPSearch):
    __doc__ = (
        """Private selection over a parameter grid, with the total privacy accounted.

    A random number of runs (mean ``n_repetitions``, default the grid size) each fits a
    uniformly chosen grid point and releases its noisy validation score; only the best run
    is released, then the selected point is optionally refitted.  The privacy of the
    *whole* procedure is reported in ``epsilon_`` / ``delta_`` / ``dp_event_``; see
    :mod:`skdp.model_selection._search` for the mechanism and its proof, and
    ``budget_split_`` for how the total was divided.

    Parameters
    ----------
    estimator : estimator or Pipeline
        Every DP step (objects with ``epsilon`` and ``delta`` parameters) gets its budget
        and noise key from the search; steps that learn from the data without DP are
        refused.
    param_grid : dict or list of dicts
        As in :class:`sklearn.model_selection.GridSearchCV`; must not set ``epsilon``,
        ``delta`` or ``random_state`` of a DP step.
"""
        + _SEARCH_PARAMS_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.model_selection import DPGridSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (400, 2)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> search = DPGridSearchCV(DPLogisticRegression(data_norm=2.0, classes=[0, 1]),
    ...                         {"alpha": [0.01, 0.1]}, epsilon=1.0, delta=1e-6,
    ...                         random_state=0).fit(X, y)
    >>> search.epsilon_ <= 1.0, search.best_params_["alpha"] in (0.01, 0.1)
    (True, True)
    """
    )

    _parameter_constraints: dict = {
        **_BaseDPSearch._parameter_constraints,
        "param_grid": [dict, list],
    }

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        epsilon=1.0,
        delta=1e-6,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        n_repetitions=None,
        repetition_shape=1.0,
        selection="auto",
        random_state=None,
        verbose=0,
        secure_noise=True,
        privacy_ledger=None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.cv = cv
        self.n_repetitions = n_repetitions
        self.repetition_shape = repetition_shape
        self.selection = selection
        self.random_state = random_state
        self.verbose = verbose
        self.secure_noise = secure_noise
        self.privacy_ledger = privacy_ledger

    def _candidates(self, rng):
        return list(ParameterGrid(self.param_grid))


class DPRandomizedSearchCV(_BaseDPSearch):
    __doc__ = (
        """Private selection over sampled parameter settings, with the total accounted.

    ``n_iter`` settings are drawn from ``param_distributions`` (public randomness, before
    the data is touched) and form the candidate list of a private search identical to
    :class:`DPGridSearchCV`.

    Parameters
    ----------
    estimator : estimator or Pipeline
    param_distributions : dict or list of dicts
        As in :class:`sklearn.model_selection.RandomizedSearchCV`.
    n_iter : int, default=10
        Number of settings sampled (the candidate list; ``n_repetitions`` defaults to it).
"""
        + _SEARCH_PARAMS_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import loguniform
    >>> from skdp import DPLogisticRegression
    >>> from skdp.model_selection import DPRandomizedSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (400, 2)); y = (X[:, 0] > 0).astype(int)
    >>> search = DPRandomizedSearchCV(DPLogisticRegression(data_norm=2.0, classes=[0, 1]),
    ...                               {"alpha": loguniform(1e-3, 1.0)}, n_iter=3,
    ...                               epsilon=1.0, random_state=0).fit(X, y)
    >>> search.epsilon_ <= 1.0, len(search.cv_results_["params"])
    (True, 3)
    """
    )

    _parameter_constraints: dict = {
        **_BaseDPSearch._parameter_constraints,
        "param_distributions": [dict, list],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        epsilon=1.0,
        delta=1e-6,
        scoring=None,
        n_jobs=None,
        refit=True,
        cv=None,
        n_repetitions=None,
        repetition_shape=1.0,
        selection="auto",
        random_state=None,
        verbose=0,
        secure_noise=True,
        privacy_ledger=None,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.refit = refit
        self.cv = cv
        self.n_repetitions = n_repetitions
        self.repetition_shape = repetition_shape
        self.selection = selection
        self.random_state = random_state
        self.verbose = verbose
        self.secure_noise = secure_noise
        self.privacy_ledger = privacy_ledger

    def _candidates(self, rng):
        seed = int(rng.integers(0, 2**31 - 1))
        return list(ParameterSampler(self.param_distributions, self.n_iter, random_state=seed))
