r"""Private k-fold cross-validation with the total cost accounted.

``dp_cross_validate`` fits ``k`` models on public random folds and releases each fold's
validation score with noise.  Per-row accounting (replace-one, folds public): a row of
fold ``j`` is in the training set of the ``k - 1`` other folds and in the validation set
of fold ``j`` only.  The released outputs are

* the ``k - 1`` models that saw the row (each released by its fit mechanism);
* the model of fold ``j``, whose distribution does not depend on the row;
* fold ``j``'s noisy score, whose only dependence on the row beyond the (already released)
  model is that row's own clipped term: sensitivity ``(upper - lower)/|fold j|``;
* the other folds' noisy scores: post-processing of released models with fresh noise on
  validation rows that are identical in both datasets.

So the procedure is, for every row, the adaptive composition of ``k - 1`` fits and one
score release; the reported event is
``ComposedDpEvent([SelfComposedDpEvent(fit, k - 1), score])`` with ``fit`` the event
dominating the ``k`` fits (identical for skdp's estimators) and ``score`` the release of
the smallest fold (largest sensitivity).  This is what adaptive composition gives; it is
exact for the accountant (Gaussian-DP composition is exact) and an upper bound on the
mechanism (the worst case for every fold need not be attained by one row at once).  The
naive count -- ``k`` fits plus ``k`` score releases -- is ``sqrt((2k)/k)`` times larger in
``mu``: every release counted for every row, which is never the case.

Budget split: ``mu_total`` is the largest GDP parameter that is ``(epsilon, delta)``-DP
(Balle–Wang), and the ``k - 1`` fits and the score get the same ``mu = mu_total/sqrt(k)``;
for ``delta = 0`` each gets ``epsilon / k`` (basic composition, exact for pure DP).  The
fits' events are read from placeholder fits before the first fit on a private fold, and
the total above accounted exactly: for events that are not Gaussian (DP-SGD, objective
perturbation, a private pipeline) ``mu`` is lowered until it fits, as in the private
search; at ``delta = 0`` a total over ``epsilon`` is refused (:func:`_plan_folds`).

Ledger: the whole event above is fixed by the fold plan (:func:`_plan_folds`: the folds'
sizes, placeholder fits, the score's sensitivity -- public quantities only), so a
``privacy_ledger`` is charged it before the first fold's fit reads a row (a budget too
short raises :class:`~skdp.exceptions.BudgetExceededError` there, having read nothing),
and the released event (``dp_event``, checked against the plan) is committed before the
results are returned; a failure once the folds are being fitted is charged the planned
event (``Reservation.charge_on_error``).  The folds' estimators carry no
ledger of their own (refused): the ledger gets one entry, the procedure's.

Noise keys: with ``random_state=None`` every fold's DP steps key their noise from the OS
and the returned models carry the user's ``random_state``; with a seed, each fold's keys
are derived from it and the fold (:func:`skdp.model_selection._common.fit_key_root`).
Either way each returned model's DP steps carry a public ``keyed_by_`` record (no key),
from which :func:`skdp.accounting.fitted_dp_event` knows that they drew distinct keys
even where their user gave them one seed
(:func:`skdp.model_selection._common.restore_user_seeds`).
"""

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils._param_validation import validate_parameter_constraints

from ..accounting import gaussian_mu_for, get_epsilon
from ..accounting._events import compose, pure_dp_event
from ..accounting._ledger import PrivacyLedger, ledger_reservation
from ..exceptions import BudgetExceededError
from .._mechanisms import new_word_source
from ._dask_folds import split_rows
from ._common import (
    calibrate_per_fit,
    check_budget_range,
    pipeline_fit_delta,
    probe,
    ScoreNoise,
    check_grid_keys,
    configure,
    dominating,
    fit_and_score,
    fit_key_root,
    fit_keys,
    FOLD_PATH,
    gaussian_mu_event,
    n_dp_steps,
    procedure_event,
    public_label_set,
    public_splits,
    refuse_label_read,
    refuse_shared_keys,
    restore_user_seeds,
    self_compose,
    split_data,
    user_seeds,
)
from ._scorer import check_private_scoring
from ._search import PLAN_MARGIN, _score_noise_scale
from ._width_pins import restore_rule_widths, rule_width_pins
from .._stacklevel import user_stacklevel

__all__ = ["dp_cross_validate"]


def dp_cross_validate(
    estimator,
    X,
    y,
    *,
    epsilon=1.0,
    delta=1e-6,
    cv=5,
    scoring=None,
    n_jobs=None,
    random_state=None,
    return_estimator=False,
    secure_noise=True,
    privacy_ledger=None,
):
    """Differentially private k-fold cross-validation.

    Parameters
    ----------
    estimator : estimator or Pipeline
        Its DP steps get their budget and seeds from this function (their own ``epsilon``
        and ``delta`` are overwritten).
    X : array-like of shape (n_samples, n_features), or a Dask DataFrame or array
        A Dask collection is split into the same public folds by row position, each fold's
        model fitted where the partitions are and its score summed per partition on the
        workers (:mod:`skdp.model_selection._dask_folds`).
    y : array-like of shape (n_samples,), or a Dask Series or array
        Aligned with ``X`` by position; Dask when ``X`` is.
    epsilon : float, default=1.0
        Total budget of the k fits and k released scores.
    delta : float, default=1e-6
        0 gives pure epsilon-DP (candidates fitted with ``delta = 0``, Laplace score noise).
    cv : int, default=5
        Number of public random folds (depend only on ``n`` and ``random_state``).
    scoring : None, "accuracy" or PrivateScorer, default=None
    n_jobs : int or None, default=None
        Parallel fits; results do not depend on it.  On a Dask collection the fits run
        one after another (each runs on the workers).
    random_state : int, Generator or None, default=None
        Seeds the folds, the fits and the score noise.  None (for releases): every fit
        and the score noise are keyed from the OS.  A seed (reproducibility): each fold's
        noise keys are derived from it and the fold, never two alike; the returned
        models keep their user's ``random_state`` (the keys are not in them).
    secure_noise : bool, default=True
        Release the fold scores on a public power-of-two grid with exact discrete noise
        (``doc/floating_point.rst``); ``False``: float noise, whose low-order bits leak.
    return_estimator : bool, default=False
        Also return the k fitted models (already private: no extra cost; stripped of the
        unprotected diagnostics such as ``n_iter_``).
    privacy_ledger : PrivacyLedger or None, default=None
        A :class:`~skdp.accounting.PrivacyLedger` charged the whole procedure: the planned
        event (``dp_event``, fixed from public quantities by the fold plan) is reserved
        before the first fold's fit reads a row -- a ledger whose remaining budget cannot
        hold it raises :class:`~skdp.exceptions.BudgetExceededError` there, having fitted
        nothing -- and the released event is committed before the scores are returned; a
        failure once the folds are being fitted is charged the planned event.  One entry
        per call, exact or ``adaptive`` ledger alike.  ``estimator`` must not carry a
        ledger of its own (refused: it would be charged each fold's fit instead of the
        procedure).

    Returns
    -------
    result : dict
        ``test_score`` (k noisy fold scores), ``epsilon``, ``delta`` (the guarantee),
        ``dp_event``, ``budget_split``, ``privacy_guaranteed`` and, if asked,
        ``estimator``.  A classifier without a public ``classes=`` reads its label set
        from ``y``: it warns and reports ``privacy_guaranteed = False``, ``epsilon = inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.model_selection import dp_cross_validate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (500, 2)); y = (X[:, 0] > 0).astype(int)
    >>> clf = DPLogisticRegression(data_norm=2.0, classes=[0, 1])
    >>> res = dp_cross_validate(clf, X, y, epsilon=1.0, cv=5, random_state=0)
    >>> res["test_score"].shape, res["epsilon"] <= 1.0
    ((5,), True)
    """
    from ..linear_model._base import _check_random_state

    validate_parameter_constraints({"privacy_ledger": [PrivacyLedger, None]},
                                   {"privacy_ledger": privacy_ledger},
                                   caller_name="dp_cross_validate")
    if isinstance(cv, bool) or not isinstance(cv, numbers.Integral) or cv < 2:
        raise ValueError(f"cv must be an int >= 2, got {cv!r}")
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    check_budget_range(epsilon, delta)
    if y is None:
        raise ValueError("dp_cross_validate needs y")
    X, y, n, X_public, folds = split_rows(X, y, "dp_cross_validate")
    k = int(cv)
    if delta > 0 and delta >= 1.0 / n:
        warnings.warn(
            f"delta={delta:g} >= 1/n_samples={1.0 / n:g}: use delta << 1/n", UserWarning,
            stacklevel=user_stacklevel(),
        )
    scorer = check_private_scoring(scoring, estimator)
    check_grid_keys([{}], estimator)
    # a label set read from y voids the guarantee: a ledger refuses before it is read
    refuse_label_read(privacy_ledger, estimator, "dp_cross_validate")
    estimator, classes, labels_public = public_label_set(
        estimator, y, folds.labels if folds is not None else None)
    rng = _check_random_state(random_state)
    splits = public_splits(n, k, rng)

    # Plan (public): every fit and the score get the same mu (or epsilon), checked (and
    # for delta > 0 lowered) against the fits' placeholder events before the first fit
    plan = _plan_folds(estimator, X_public, y, classes, splits, epsilon, delta,
                       lazy=folds is not None and folds.lazy)
    per_fit, budget, score_event, pins = plan.per_fit, plan.budget, plan.score_event, plan.pins
    # every fold's noise keys: from the OS (random_state=None), else derived from the
    # seed and the fold, none shared (_common.fit_key_root)
    root = fit_key_root(rng, random_state)
    m = n_dp_steps(estimator, {})
    keys = [fit_keys(root, (FOLD_PATH, i), m) for i in range(k)]
    refuse_shared_keys(keys)
    # the fold scores' noise, drawn before any fit (one scale per fold size: public);
    # ChaCha20 keyed from the OS with random_state=None
    source = new_word_source(None if random_state is None else rng) if secure_noise else None
    sizes = np.array(splits.validation_sizes)
    sens = np.array([scorer.released_sensitivity(s) for s in sizes])
    scale = np.array([_score_noise_scale(s, per_fit) for s in sens])
    noises = [ScoreNoise(rng, source, 1, scale[i], sens[i], delta > 0, scorer.bound)
              for i in range(k)]

    # the ledger: the planned event reserved before the first fit reads a row (a short
    # budget raises here, nothing read); the released one committed before the results
    # are returned; an exception once the fits have started commits the planned event
    # (charge_on_error: a later fold's failure depends on the data)
    planned = procedure_event(plan.event, labels_public and plan.guaranteed)
    with ledger_reservation(privacy_ledger, planned, "dp_cross_validate") as reservation:
        reservation.charge_on_error()
        results = _fit_folds(estimator, X, y, folds, splits, scorer, budget, pins, keys,
                             n_jobs)
        total_event, spent = _released_total(results, score_event, epsilon, delta)
        scores = np.array([r[1] for r in results]) / sizes
        noisy = np.array([noises[i].release(scores[i:i + 1])[0] for i in range(k)])
        del scores
        guaranteed = labels_public and all(r[3] for r in results)
        # a label set read from the data voids the guarantee (public_label_set)
        released_event = procedure_event(total_event, guaranteed)
        reservation.commit(released_event)
    out = {
        "test_score": noisy,
        "epsilon": float(spent) if guaranteed else math.inf,
        "delta": delta,
        "dp_event": released_event,
        "privacy_guaranteed": guaranteed,
        "secure_noise": bool(secure_noise),
        "budget_split": {
            "cv_folds": k,
            ("fit_mu" if delta > 0 else "fit_epsilon"): per_fit,
            ("score_mu" if delta > 0 else "score_epsilon"): per_fit,
            ("score_noise_std" if delta > 0 else "score_laplace_scale"): scale.tolist(),
            "score_sensitivity": sens.tolist(),
            "epsilon_total": float(spent),
            "delta_total": delta,
        },
    }
    if return_estimator:
        # each model carries the user's random_state, not its noise key
        seeds = user_seeds(estimator, {})
        out["estimator"] = [restore_rule_widths(
            restore_user_seeds(r[0], seeds, "dp_cross_validate"), pins) for r in results]
    return out


def _fit_folds(estimator, X, y, folds, splits, scorer, budget, pins, keys, n_jobs):
    """Fit every fold's model (its budget, width pins and noise keys set) on its training
    rows and sum its clipped validation scores: the :func:`~._common.fit_and_score`
    results, the first reads of the private rows.  No two fits drew the same key."""
    tasks = [configure(estimator, pins, budget, keys[i]) for i in range(len(splits))]
    parts = folds.split(splits) if folds is not None else split_data(X, y, splits)
    # a Dask collection's fits run one after another (each runs on the workers already),
    # from this client, inside the caller's ledger reservation
    if n_jobs in (None, 1) or folds is not None:
        results = [fit_and_score(est, part, scorer, True) for est, part in zip(tasks, parts)]
    else:
        results = Parallel(n_jobs=n_jobs)(
            delayed(fit_and_score)(est, part, scorer, True) for est, part in zip(tasks, parts)
        )
    # the keys the fits drew with, a pipeline's derived ones included: none shared
    refuse_shared_keys([r[4] for r in results])
    return results


def _released_total(results, score_event, epsilon, delta):
    """``(total_event, epsilon)`` of what the folds released: ``k - 1`` fits (the event
    dominating the ``k`` fits) composed with one score release.  Over ``epsilon`` --
    impossible unless a step's noise depended on the data, since the plan bounded the
    placeholder events -- raises before anything is released."""
    k = len(results)
    fit_dom = dominating([r[2] for r in results])
    total_event = compose(self_compose(fit_dom, k - 1), score_event)
    spent = get_epsilon(total_event, delta)
    if spent > epsilon:
        raise BudgetExceededError(
            f"the fits' events compose to epsilon={spent:.6g} > epsilon={epsilon}: a DP "
            "step released more than its placeholder fit (its noise depends on the data)"
        )
    return total_event, spent


class FoldPlan(NamedTuple):
    """What :func:`_plan_folds` fixes before any row: the per-fit ``mu`` (or epsilon),
    the steps' ``budget``, the ``score_event``, the width ``pins``, the procedure's
    planned ``event`` and whether the placeholder fits were ``guaranteed``."""

    per_fit: float
    budget: tuple
    score_event: object
    pins: dict
    event: object
    guaranteed: bool


def _plan_folds(estimator, X_public, y, classes, splits, epsilon, delta, lazy=False):
    """The :class:`FoldPlan` of a ``k``-fold cross-validation, from public quantities
    only (the folds' sizes, the schema, placeholder fits), before any fit; ``pins``: the
    public width handed to a model behind a released one
    (:func:`~._width_pins.rule_width_pins`), to be set on every fit; ``event``: the total
    ``ComposedDpEvent([SelfComposedDpEvent(fit, k - 1), score])`` the procedure will
    release, which its ledger is charged before the first fit.

    The Gaussian plan gives the ``k - 1`` fits a row is in and its fold's score the same
    ``mu = mu_total / sqrt(k)`` (``mu_total``: the largest GDP parameter within
    ``(epsilon, delta)``); for ``delta = 0`` each gets ``epsilon / k``.  A step whose event
    is not Gaussian (DP-SGD's subsampled steps, objective perturbation, a private
    pipeline's thresholds) over-spends that plan, so the events it *will* release are read
    first -- by the replace-one convention nothing that shapes the noise depends on the
    rows, so the event of a fit on placeholder rows of each training size is the real
    fit's (:func:`~._common.probe`; every real fit is checked against the total again)
    -- and the total ``ComposedDpEvent([SelfComposedDpEvent(fit, k - 1), score])`` is
    accounted exactly.  ``delta > 0``: the per-fit ``mu`` is lowered until it fits
    ``epsilon`` (:func:`~._common.calibrate_per_fit`, as the private search);
    ``delta = 0``: a total over ``epsilon`` is refused with
    :class:`~skdp.exceptions.BudgetExceededError`.  Either way before the first fit on
    a private fold (DESIGN: raise before the first release, never after)."""
    k = len(splits)
    target = epsilon * (1.0 - PLAN_MARGIN)
    train_sizes = sorted(set(splits.train_sizes))
    gaussian = delta > 0
    # a private pipeline's thresholds spend a public part of delta in every fold
    pipe_delta = pipeline_fit_delta(delta, k - 1)
    score_at = gaussian_mu_event if gaussian else pure_dp_event

    def account(per_fit):
        budget = ("gdp", per_fit, delta, pipe_delta) if gaussian else ("pure", per_fit)
        est = configure(estimator, {}, budget, None)
        # a public width for a model behind a released one (._width_pins)
        pins = rule_width_pins(est, X_public, y, max(train_sizes), classes, lazy=lazy)
        est.set_params(**pins)
        probes = [probe(est, X_public, y, size, classes, lazy=lazy)
                  for size in train_sizes]
        event = compose(self_compose(dominating([e for e, _ in probes]), k - 1),
                        score_at(per_fit))
        guaranteed = all(g for _, g in probes)
        return get_epsilon(event, delta), (budget, pins, event, guaranteed)

    if gaussian:
        start = gaussian_mu_for(target, delta) / math.sqrt(k)
        spent, planned = account(start)
        per_fit = start
        if spent > epsilon:
            # Gaussian steps meet the plan (up to the accountant's float rounding); others
            # get the largest per-fit mu whose exact total is within the target
            per_fit, (_, planned) = calibrate_per_fit(account, target, start)
    else:
        per_fit = target / k
        spent, planned = account(per_fit)
        if spent > epsilon:
            raise BudgetExceededError(
                f"the fits' events compose to epsilon={spent:.6g} > epsilon={epsilon} with "
                "delta=0: a DP step does not release a pure mechanism at the budget set; "
                "nothing was fitted on the private data")
    budget, pins, event, guaranteed = planned
    return FoldPlan(per_fit, budget, score_at(per_fit), pins, event, guaranteed)
