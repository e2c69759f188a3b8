"""Budget splits beside the ``auto`` rules: how a fit that releases more than one thing
(a private bound, then the model; a pipeline's transformers, then its estimator) divides
one ``(epsilon, delta)`` budget.

The earlier releases are Gaussian and get a public share of the Gaussian-DP budget
``mu^2`` (:mod:`skdp.linear_model._auto`); the model then gets the largest ``epsilon`` for
which the composition of the earlier releases' *recorded* events with the model's
*planned* event (:func:`skdp.linear_model._base.planned_dp_event`, public quantities only)
is ``(epsilon, delta)``-DP under the exact accountant.  The planned event is the fitted one,
so the reported total is the target, up to the bisection's relative tolerance (below).

Inside a composite's fit (:func:`skdp.accounting._sampled.joint_calibrations`) a DP-SGD
model's share comes from one search over its noise multiplier of the composed event
(:func:`_joint_share`) instead of a search over its epsilon that calibrated DP-SGD at every
point; the answer is checked by the same exact accountant and the model, fitted inside the
same context, uses the noise that was checked.  On 3,000 Adult rows this took a pipeline
fit's accounting at a new epsilon from about 16 PLD builds to 8-12.  An estimator that
releases its own statistics first (``y_bound="auto"``, a ``target_range``'s mean) gets
from the composite, as parameters, its epsilon from the Gaussian-DP arithmetic and its
model's share from one search against both budgets (:mod:`skdp.linear_model._nested_share`)
instead of its own search at every point of the composite's.
"""

import math

__all__ = ["largest_model_epsilon", "width_rule_pins",
           "largest_dominated_epsilon", "event_reads_bound", "refuse_released_bound",
           "model_planned_event", "search_share"]

#: relative width of the final bracket of the bisection on the model's epsilon
EPSILON_RTOL = 2e-3


def model_planned_event(model, n_samples, n_features, epsilon, delta, data_norm=None):
    """The planned event of ``model`` fitted at ``(epsilon, delta)`` on ``n_samples`` rows
    of ``n_features`` (a clone is probed; ``data_norm``: a public bound that stands for
    its ``data_norm="auto"``, as a composite hands it over)."""
    from sklearn.base import clone

    from ._base import planned_dp_event

    probe = clone(model).set_params(epsilon=epsilon, delta=delta)
    if data_norm is not None:
        probe.set_params(data_norm=float(data_norm))
    return planned_dp_event(probe, n_samples, n_features)


def width_rule_pins(model, width):
    r"""``{"auto_n_features": width}`` for a model whose ``auto`` rules would read the
    width of its design (``{}`` when the user fixed ``auto_n_features``): what a composite
    whose transformers release that width hands its model, so that the model's privacy
    event is a function of public quantities -- ``n``, the budget, the planning
    ``width`` -- fixed before any row.  (The released bound a ``data_norm="auto"`` model
    takes does not enter its event: the rules scale with it.)

    **Why the event must not follow a released width.**  A composite releases ``A`` (the
    knots and categories, whose number sets the model's width ``w``) and then the model
    ``M_w``.  For a pair of neighbours with ``A``'s privacy loss ``L_A`` at its output
    ``a``, the composition's privacy profile is exactly

    .. math:: \delta(\varepsilon) = \mathbb{E}_{a \sim A(D)}
       \big[\delta_{M_{w(a)}}(\varepsilon - L_A(a))\big]

    (the hockey-stick divergence of a product, conditioned on ``a``).  If every ``M_w``
    has one privacy profile ``delta_M``, this is the composition of ``A`` with that one
    mechanism, which the plan accounts.  Calibrating each ``M_w`` *separately* so that
    ``A`` composed with it meets ``(epsilon, delta)`` -- what private pipelines did before
    -- does not suffice when their profiles differ in shape (DP-SGD's steps at another
    noise, objective perturbation's ``eps_J = log(1 + beta/(n alpha))`` with an ``alpha``
    of another width): the profiles then cross, and a rule ``w(a)`` that picks the larger
    one where ``L_A(a)`` is large and the other where it is small exceeds ``delta`` (the
    fully adaptive composition of Rogers, Roth, Ullman & Vadhan 2016, which needs privacy
    filters; tight ones exist for Gaussian DP, Smith & Thakurta 2022, not for these
    events).  Numerically, with ``A`` a Gaussian release: a Gaussian and a
    randomized-response branch each composing to ``(1, 1e-6)`` give ``1.98e-6`` under a
    threshold rule; two DP-SGD branches of 866 and 100 steps (``n = 30,000``, ``epsilon =
    10``, ``delta = 1e-6``, the transformers at 10 % of ``mu^2``) have the envelope bound
    ``E max_w delta_w = 1.12e-6`` (``benchmarks/bench_adaptive_composition.py``,
    ``results/adaptive_composition.md``).  The fit checks the model's released event
    against the planned one."""
    params = model.get_params(deep=False)
    if "auto_n_features" in params and params["auto_n_features"] is None:
        return {"auto_n_features": int(width)}
    return {}


def largest_dominated_epsilon(events, epsilon, delta, delta_model):
    r"""Largest ``e <= epsilon`` (to ``EPSILON_RTOL``, on the safe side) such that the
    releases ``events`` followed by *any* ``(e, delta_model)``-DP release are ``(epsilon,
    delta)``-DP, under the exact accountant.

    An ``(e, d)``-DP mechanism's privacy profile is at most that of the pair which
    dominates every such mechanism -- randomized response at ``e`` mixed with a revealing
    outcome of probability ``d`` (Kairouz, Oh & Viswanath 2015, Thm 2.4; Dong, Roth & Su
    2019, Prop. 2.12) -- a post-processing of ``pure_dp_event(e)`` composed with
    ``DeltaDpEvent(d)``.  The bound holds for *every* mechanism of the class, so a model
    calibrated after the transformers' release, at the width they released, to ``(e, d)``
    composes within the budget whatever width it was (the adaptive composition of
    :func:`width_rule_pins`, which a calibration of each width's exact event does not
    give).  Public: the events and the parameters.

    Raises
    ------
    BudgetExceededError
        When not even ``epsilon 2^-SMALLEST_SHARE_EXPONENT`` composes.
    """
    from ..accounting import DeltaDpEvent, compose, get_epsilon, pure_dp_event
    from ..exceptions import BudgetExceededError

    def total(e):
        tail = [pure_dp_event(e), DeltaDpEvent(float(delta_model))]
        return get_epsilon(compose(*events, *tail), float(delta))

    # the shares' search of largest_model_epsilon (every point an upper bound)
    share, _ = search_share(total, float(epsilon), float(epsilon), None,
                            float(epsilon) * 2.0 ** -SMALLEST_SHARE_EXPONENT)
    if share is None:
        raise BudgetExceededError(
            f"the earlier releases leave no share of epsilon={epsilon!r} at delta={delta!r} "
            "for a model composed as any (epsilon, delta)-DP release")
    return share


def event_reads_bound(model, n_samples, n_features, epsilon, delta):
    """Whether ``model``'s planned event changes with its ``data_norm`` (compared at two
    public values, by privacy profile).  The ``auto`` rules scale with the bound
    (objective perturbation's ``alpha`` with ``R^2``, so ``eps_J = log(1 + beta(R)/(n
    alpha))`` does not move), but a numeric ``alpha`` makes objective perturbation's event
    follow it.  A bound released from the data (``data_norm="auto"``, a robust scaler's
    output bound) must then not reach the model: its share, calibrated at the released
    bound, is not covered by the composition (:func:`width_rule_pins`).  Public."""
    from sklearn.base import clone

    from ..accounting._events import same_privacy_profile

    events = [model_planned_event(clone(model), n_samples, n_features, epsilon, delta,
                                  data_norm=bound) for bound in (1.0, 3.0)]
    if any(e is None for e in events):
        return False        # no plan: the fit raises its own error before any release
    return not same_privacy_profile(*events)


def refuse_released_bound(model, n_samples, n_features, epsilon, delta, where):
    """Raise before any release when ``model``'s event reads a ``data_norm`` that
    ``where`` releases from the data (:func:`event_reads_bound`)."""
    if event_reads_bound(model, n_samples, n_features, epsilon, delta):
        raise ValueError(
            f"{type(model).__name__}(alpha={model.get_params(deep=False).get('alpha')!r}) "
            f"with solver {getattr(model, 'solver', None)!r}: its privacy event reads its "
            f"data_norm, which {where} releases from the data, so its share could not be "
            "fixed before that release.  Use alpha='auto' (it scales with the bound), a "
            "public data_norm, or solver='dpsgd'; nothing was released")


#: the smallest share of the budget :func:`largest_model_epsilon` tries: ``epsilon 2^-10``
SMALLEST_SHARE_EXPONENT = 10


def _gaussian_guess(events, epsilon, delta):
    """The share a Gaussian model would get next to ``events`` when they are Gaussian
    releases and ``(0, delta_T)`` thresholds: ``mu_m^2 = mu^2 - sum mu_i^2`` with ``mu``
    the budget's at ``delta - sum delta_T`` (None otherwise, or when nothing is left)."""
    from ..accounting import _lazy_dp_accounting as dp_accounting
    from ..accounting import gaussian_epsilon, gaussian_mu_for
    from ..accounting._events import DeltaDpEvent

    mu2, delta_t = 0.0, 0.0
    stack = list(events)
    while stack:
        event = stack.pop()
        if isinstance(event, dp_accounting.ComposedDpEvent):
            stack.extend(event.events)
        elif isinstance(event, dp_accounting.GaussianDpEvent):
            mu2 += (2.0 / event.noise_multiplier) ** 2
        elif isinstance(event, DeltaDpEvent):
            delta_t += event.delta
        elif not isinstance(event, dp_accounting.NoOpDpEvent):
            return None
    rest = float(delta) - delta_t
    if not 0.0 < rest < 1.0:
        return None
    try:
        left = gaussian_mu_for(float(epsilon), rest) ** 2 - mu2
        if left <= 0.0:
            return None
        return float(gaussian_epsilon(rest, math.sqrt(left)))
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def largest_model_epsilon(model, events, n_samples, n_features, epsilon, delta,
                          data_norm=None):
    """Largest ``e <= epsilon`` such that ``compose(*events, planned(model at epsilon=e))``
    is ``(epsilon, delta)``-DP, to ``EPSILON_RTOL`` (a Gaussian-DP first guess, then a
    safeguarded secant in ``log e``, :func:`_refine`; every evaluation is an exact
    accountant's upper bound and only a feasible share is returned, so the result is on
    the safe side).

    Parameters
    ----------
    model : skdp estimator
        Not modified (a clone is probed).
    events : list of dp_accounting.DpEvent
        What was released before the model.
    n_samples, n_features : int
        Public shape of the model's design.
    epsilon, delta : float
        The total budget.
    data_norm : float or None
        A public bound that stands for the model's ``data_norm="auto"`` (a composite's
        upstream bound); None: the model's own.

    Returns
    -------
    epsilon_model : float

    Raises
    ------
    BudgetExceededError
        If the earlier releases leave less than ``epsilon/1024`` for the model (or no
        share ``epsilon 2^-k``, ``k = 1..10``, that the model can be planned at fits).
    ValueError
        If the model has no planned event at any of those shares.
    """
    from sklearn.base import clone

    from ..accounting import compose, get_epsilon
    from ..exceptions import BudgetExceededError
    from ._base import planned_dp_event

    probe = clone(model)
    if data_norm is not None:
        probe.set_params(data_norm=float(data_norm))
    planned_somewhere = False

    def total(e):
        # inf where the model has no plan at ``e`` (e.g. dpsgd with a user-set number of
        # steps cannot be calibrated to a tiny epsilon): that ``e`` does not fit
        nonlocal planned_somewhere
        probe.set_params(epsilon=e, delta=delta)
        planned = planned_dp_event(probe, n_samples, n_features)
        if planned is None:
            return math.inf
        planned_somewhere = True
        return get_epsilon(compose(*events, planned) if events else planned, delta)

    hi = float(epsilon)
    if not events:
        return hi
    joint = _joint_share(probe, events, n_samples, n_features, epsilon, delta)
    if joint is not None:
        return joint
    lo, hi = search_share(total, hi, epsilon, _gaussian_guess(events, epsilon, delta),
                          float(epsilon) * 2.0 ** -SMALLEST_SHARE_EXPONENT)
    if lo is None:
        if not planned_somewhere:
            try:    # the estimator's own reason (too few rows, an unsupported loss...)
                planned_dp_event(probe.set_params(epsilon=hi, delta=delta), n_samples,
                                 n_features, raise_errors=True)
                reason = ""
            except (ValueError, TypeError, ZeroDivisionError, OverflowError,
                    AttributeError) as exc:
                reason = f": {exc}"
            raise ValueError(
                f"{type(model).__name__}(solver={getattr(model, 'solver', None)!r}) has no "
                f"planned event for these parameters; a budget split needs one{reason}")
        raise BudgetExceededError(
            f"the releases before the model spent the budget epsilon={epsilon!r}: nothing "
            "is left for the model")
    return lo


def search_share(total, hi, epsilon, guess, floor):
    """``(share, hi)``: the largest ``e`` in ``[floor, hi]`` with ``total(e) <= epsilon``
    to ``EPSILON_RTOL`` (``share`` None when no share down to ``floor`` fits; ``hi`` is
    then the last share tried above it), for ``total`` increasing in ``e`` (``inf`` where
    the model has no plan).  A first share from Gaussian-DP arithmetic (``guess``, exact
    when the model is Gaussian too; None: ``hi`` itself), then a step along the
    Gaussian-DP slope, halving, and the secant (:func:`_refine`).  The plans exist from
    some share on and their total grows with it, so the feasible shares form an interval
    below ``hi``.  With a guess the whole of ``hi`` is not tried: next to a Gaussian
    release it cannot fit (unless the model's calibration left more than the release's
    cost unspent: a share is then lost, never the guarantee)."""
    if guess is not None and guess < hi:
        hi_total = math.inf
        guess_total = total(guess)
        if guess_total <= epsilon:
            return _refine(total, guess, hi, epsilon, guess_total, hi_total), hi
        hi, hi_total = guess, guess_total
        # the next try follows the Gaussian-DP slope, d total / d e ~ e / total (mu's
        # add in squares), to just under the budget; then halving
        tries = [_slope_step(guess, guess_total, epsilon)]
    else:
        hi_total = total(hi)
        if hi_total <= epsilon:
            return hi, hi
        tries = []
    lo = lo_total = None
    e = hi
    while tries or e / 2.0 >= floor * (1.0 - 1e-12):
        e = tries.pop() if tries else e / 2.0
        if e < floor:
            break
        t = total(e)
        if t <= epsilon:
            lo, lo_total = e, t
            break
        hi, hi_total = e, t
    if lo is None:
        return lo, hi
    return _refine(total, lo, hi, epsilon, lo_total, hi_total), hi


#: rounds of :func:`_joint_share` (a second one when the model's own follow-up, which
#: grows with its share, moved the composition above the budget)
JOINT_ROUNDS = 2
#: fixed-point steps of the model's share at the jointly calibrated noise
JOINT_SHARE_STEPS = 4


#: solvers that run no Poisson-sampled calibration: :func:`_joint_share` does not apply
WITHOUT_SAMPLED_CALIBRATION = ("objective_perturbation", "output_perturbation")


def _resolved_solver(probe):
    """The solver ``probe``'s fit runs (:func:`skdp.linear_model._auto.resolve_solver`),
    or None when its loss cannot be read."""
    from ._auto import resolve_solver

    try:
        loss, n_outputs = probe._planning_loss()
        return resolve_solver(probe, loss, n_outputs)[0]
    except (ValueError, TypeError, AttributeError):
        return None


def _joint_share(probe, events, n_samples, n_features, epsilon, delta):
    """The model's share by one search over its noise (issue 48): for a DP-SGD model
    (Poisson-sampled Gaussian steps, optionally a Gaussian follow-up) inside a
    composite's fit (:func:`skdp.accounting._sampled.joint_calibrations` holds), or None
    (then :func:`largest_model_epsilon`'s search runs).

    1. The model's calibration inputs at the Gaussian-DP share ``e_g`` are read without
       searching (:func:`~skdp.accounting._sampled.proposing`): ``q``, ``T``, the
       follow-up's ``mu_f``.
    2. ``z*`` = the smallest noise multiplier for which ``events`` composed with the
       steps (and that follow-up) are ``(epsilon, delta)``-DP under the reporting
       accountant (:func:`~skdp.accounting._sampled.calibrate_poisson_gaussian_after`):
       one search over ``z`` of the composed event, where the share search calibrated
       DP-SGD at every point.
    3. The share ``e`` is the model's own epsilon at ``z*``: ``e = get_epsilon(model
       event at z*)``, where the model's event at ``e`` is read as in 1 (its follow-up
       grows with ``e``); a few fixed-point steps until ``get_epsilon(event) <= e``.
    4. Exact checks, with the model's own event at ``e`` (the one its fit releases, read
       with ``z*``): that event is ``(e, delta)``-DP (so ``z*`` is a valid answer to the
       model's calibration at ``e``), and ``events`` composed with it are
       ``(epsilon, delta)``-DP.  Only then is ``z*`` registered for the model's
       calibration inputs at ``e`` (:func:`~skdp.accounting._sampled.
       register_joint_calibration`) and ``e`` returned; the model, fitted inside the
       composite's ``joint_calibrations``, uses ``z*``.

    Every number the guarantee rests on is the reporting accountant's (PLD, pessimistic),
    as in the share search; the answer differs from that search's by its tolerance only
    (both spend the budget to about 0.4 %).  Public quantities only."""
    from ..accounting import compose, get_epsilon
    from ..accounting._sampled import (calibrate_poisson_gaussian_after,
                                       joint_calibrations_active, proposing,
                                       register_joint_calibration)
    from ._base import planned_dp_event

    if not joint_calibrations_active():
        return None
    if probe._data_derived_inputs() or probe._released_bounds():
        # a model that releases its own bounds first splits its share with its own
        # search (a nested split, whose calibrations a proposal would answer too)
        return None
    if _resolved_solver(probe) in WITHOUT_SAMPLED_CALIBRATION:
        return None     # known without planning the model (which the search does next)
    epsilon, delta = float(epsilon), float(delta)
    floor = epsilon * 2.0 ** -SMALLEST_SHARE_EXPONENT

    def read(e, z):
        """(the model's calibration inputs at share ``e``, its event with noise ``z``),
        or None unless it runs exactly one DP-SGD calibration."""
        probe.set_params(epsilon=e, delta=delta)
        with proposing(z) as calls:
            event = planned_dp_event(probe, n_samples, n_features)
        if event is None or len(calls) != 1:
            return None
        return calls[0], event

    share = _gaussian_guess(events, epsilon, delta)
    if share is None or not floor <= share <= epsilon:
        return None
    seen = read(share, 1.0)
    if seen is None:
        return None
    for _ in range(JOINT_ROUNDS):
        (_, model_delta, q, steps, mu_f) = seen[0]
        if model_delta != delta:
            return None
        z = calibrate_poisson_gaussian_after(events, epsilon, delta, q, steps, mu_f,
                                             guess_epsilon=share)
        if z is None:
            return None
        e = share
        for _ in range(JOINT_SHARE_STEPS):
            seen = read(e, z)
            if seen is None or seen[0][2:4] != (q, steps):
                return None     # the schedule moved with the share: the search decides
            spent = get_epsilon(seen[1], delta)
            if e * (1.0 - EPSILON_RTOL) <= spent <= e:
                break           # z* is a valid, tight calibration of the share e
            e = spent           # the model's own spend at z* (its follow-up moves with e)
        else:
            return None
        if not floor <= e <= epsilon or seen[0][0] != e:
            return None
        if get_epsilon(compose(*events, seen[1]), delta) <= epsilon:
            register_joint_calibration(seen[0], z)
            return e
        share = e       # the follow-up grew with the share: once more from here
    return None


def _slope_step(share, total, epsilon):
    """The share just under the budget along the Gaussian-DP slope from ``share`` (whose
    composition is ``total``): ``d total / d e ~ e / total`` (mu's add in squares)."""
    if not math.isfinite(total):
        return 0.5 * share
    aim = epsilon * (1.0 - EPSILON_RTOL)
    return max(share + (aim - total) * total / share, 0.5 * share)


def _refine(total, lo, hi, epsilon, lo_total=None, hi_total=None):
    """The largest feasible share in ``[lo, hi]`` (``lo`` feasible, ``hi`` not) to
    ``EPSILON_RTOL``: a safeguarded secant on ``log total`` against ``log e`` (the total
    is smooth and increasing in the share), each point kept in the inner 80 % of the
    bracket in log space, stopping as soon as the feasible end spends the budget to
    ``2 EPSILON_RTOL`` (0.4 %).  Every evaluation is a model calibration and a composition, so the
    three to five evaluations this takes, against the twelve of a bisection, are most of
    a pipeline fit's accounting at a new epsilon."""
    lo_total = total(lo) if lo_total is None else lo_total
    hi_total = total(hi) if hi_total is None else hi_total
    while hi - lo > EPSILON_RTOL * lo and lo_total < epsilon * (1.0 - 2.0 * EPSILON_RTOL):
        a, b = math.log(lo), math.log(hi)
        if math.isfinite(hi_total) and 0.0 < lo_total < hi_total:
            slope = (math.log(hi_total) - math.log(lo_total)) / (b - a)
            x = a + (math.log(epsilon * (1.0 - EPSILON_RTOL)) - math.log(lo_total)) / slope
        else:
            x = 0.5 * (a + b)
        mid = math.exp(min(max(x, a + 0.1 * (b - a)), b - 0.1 * (b - a)))
        t = total(mid)
        if t <= epsilon:
            lo, lo_total = mid, t
        else:
            hi, hi_total = mid, t
    return lo
