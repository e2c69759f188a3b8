r"""A regressor's public target range and its private mean: the level the model shrinks to.

Why
---
A private linear model is regularised towards 0 -- the intercept too: it is a regularised
constant feature, as objective perturbation's strong convexity requires, and a Huber
loss caps each row's pull on it at ``huber_threshold``.  Where the data carry little signal
against the noise (small ``n epsilon``) the predictions therefore shrink towards 0, which
for a raw target far from 0 is far from every row: airfoil's sound pressure (100-150 dB)
fitted through ``make_private_pipeline(DPHuberRegressor())`` at epsilon 1 scored a test
R^2 of -52, concrete's strength (0-100 MPa) -1.2 (``benchmarks/bench_target_range.py``,
``results/target_range.md``, 20 seeds).  Shrinking towards the middle of a public range
instead is free but only as good as that middle: hourly bike rentals (0-1,000, mean 190)
on 1,400 rows scored -2.8 at epsilon 0.5 that way, worse than towards 0 (-1.0).

With ``target_range=(low, high)`` (public: a documented range, the physical domain --
never the rows' minimum and maximum) the fit

1. clips the targets to the range and centres them on its middle ``m``:
   ``u_i = clip(y_i, low, high) - m``, ``|u_i| <= h = (high - low)/2``;
2. releases their mean, ``c = mean(u) + N(0, s^2)`` clipped to ``[-h, h]``, with
   ``sqrt(TARGET_CENTRE_SHARE)`` of the fit's Gaussian-DP ``mu``
   (:data:`skdp.linear_model._auto.TARGET_CENTRE_SHARE`), by the mechanism of
   :class:`~skdp.preprocessing.DPStandardScaler` (float-safe sums, exact discrete
   Gaussian noise; a Dask vector is summed on its workers, partition by partition, and
   the noise calibrated for that summation tree);
3. fits the model on ``z_i = (u_i - c)/h`` with ``y_bound = 2`` (``|z_i| <= 2``; the
   absolute loss on ``u_i - c`` with ``y_bound = 2h``) at the
   largest epsilon that composes with the release
   (:func:`skdp.linear_model._budget.largest_model_epsilon`), and reports
   ``target_centre_ = m + c``, ``target_scale_ = h``, ``coef_ = h w`` and
   ``intercept_ = h b + m + c``.

**Unit-free.**  The model sees the targets in half-widths, so the fit does not depend on
the target's units (but for the absolute loss, ``huber_threshold=0``, which has no scale
to free and keeps the target's units: :func:`target_scale`): ``huber_threshold`` is read
in the target's units and divided by ``h`` (``"auto"``: ``TARGET_RANGE_THRESHOLD h``, 5 %
of the range's width), and ``alpha``
belongs to the divided targets (``"auto"``: the rule times ``TARGET_RANGE_ALPHA_FACTOR``;
both in :mod:`skdp.linear_model._auto`, with their evidence).
:class:`~skdp.DPNonconvexRegressor` takes the same range: its ``loss_scale`` is read in
the target's units and divided by ``h`` (``"auto"``: ``TARGET_RANGE_LOSS_SCALE h``, 2.5 %
of the range's width; ``loss="absolute"`` keeps the target's units), measured in
``benchmarks/results/target_range_nonconvex.md``.  A private model's
regulariser and noise are calibrated for a scale: kept in the target's own units (a
threshold of 1 dB, 1 MPa, one rental) they fitted bike rentals at epsilon 1 to a test
R^2 of 0.12 and concrete to 0.02, where the unit-free fit reaches about 0.5 and 0.3.

Measured (``benchmarks/results/target_range.md``, 20 seeds, 40 cells through
``make_private_pipeline``): at or above the raw fit in 38 of 40 cells (the others
0.002 below), airfoil at epsilon 1 -52 -> +0.30, concrete -1.2 -> +0.21, hourly bike
rentals on 1,400 rows -0.70 -> +0.18, and on two tables not used to choose the rules,
daily bike rentals at epsilon 2 -5.3 -> +0.58 and Adult's weekly hours +0.09 -> +0.14.
Against the range's middle it loses where the range happens to be centred on the data
and the mean's noise is large (airfoil on 350 rows at epsilon 0.5: -0.15 against -0.00)
and wins where it is not (concrete on 721 rows at 1: +0.21 against -0.08).

Privacy
-------
*Step 1* is a function of public constants applied to each row on its own: neighbouring
datasets (one row replaced) stay neighbours. *Step 2*: replacing one row moves
``mean(u)`` by at most ``2h/n`` (one term of ``[-h, h]`` replaced), the sensitivity the
scaler's mechanism is calibrated for (its ``with_std=False`` case: ``sigma = 2h
kappa/n``, ``kappa = sqrt(1 + 1e-9)/mu_c`` times the float-summation inflation), so the
release is ``mu_c``-GDP, event ``gaussian_event(1, mu_c)``. *Step 3*: given ``c``
(public after step 2) ``z`` is again a public per-row map (``h`` is public), and the
model is ``(e, delta)``-DP on it; the two compose to the fit's ``(epsilon, delta)`` (PLD
accounting of ``compose(centre, model)``). The rescaling of the coefficients and the
intercept shift are post-processing. Every plan of the fit --
:func:`skdp.linear_model._base.planned_dp_event`, the pipeline's split of the budget,
the spline-basis ``alpha`` rule (``y_bound <= huber_threshold``) -- reads the same
public quantities: ``y_bound = 2`` (:func:`effective_y_bound`), the threshold over ``h``
(:func:`effective_huber_threshold`) and the share.
The centre's noise is drawn from its own stream, derived from ``random_state`` with a
distinct spawn key (:func:`centre_seed`), never the model's.
"""

import math
import numbers

import numpy as np

__all__ = ["check_target_range", "effective_huber_threshold", "effective_loss_scale",
           "effective_y_bound", "in_target_units", "range_model_params", "target_scale",
           "centre_targets", "centre_seed", "release_target_centre"]


def check_target_range(est):
    """``(low, high)`` of ``est.target_range`` as floats, or None; raises ``ValueError``
    for a range that is not two finite numbers with ``low < high``, or that comes with a
    ``y_bound`` (the range sets it)."""
    value = getattr(est, "target_range", None)
    if value is None:
        return None
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ValueError(
            f"target_range must be a pair (low, high) of public numbers, got {value!r}"
        ) from None
    for v in (low, high):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(
                f"target_range must be a pair (low, high) of public numbers, got {value!r}")
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(high - low)):
        raise ValueError(f"target_range must be finite, got {value!r}")
    if not low < high:
        raise ValueError(f"target_range needs low < high, got {value!r}")
    if callable(getattr(est, "loss", None)):
        raise ValueError(
            f"target_range={value!r} fits the model on the targets minus their private "
            "mean over the range's half-width, but a callable loss is written in the "
            "target's own units: centre and scale the target publicly yourself, or use a "
            "named loss")
    if getattr(est, "y_bound", None) is not None:
        raise ValueError(
            f"target_range={value!r} sets the targets' bound (its width, around their "
            f"private mean); leave y_bound=None, got y_bound={est.y_bound!r}")
    return low, high


def target_scale(params):
    """The unit the model's targets are divided by with a ``target_range`` (module
    docstring), from a dict of the estimator's parameters: the half-width ``h = (high -
    low)/2``; 1 for the absolute loss (``huber_threshold=0``), whose gradient does not
    grow with the targets, so that dividing them would only scale the noise up against
    them (airfoil-like data, epsilon 1: test R^2 -112 against -3.1 in the target's units);
    None without a range.  The same for ``DPNonconvexRegressor``'s ``loss="absolute"``."""
    value = params.get("target_range")
    if value is None:
        return None
    threshold = params.get("huber_threshold", "auto")
    if not isinstance(threshold, str) and float(threshold) == 0.0:
        return 1.0
    if params.get("loss") == "absolute":
        return 1.0
    low, high = value
    return 0.5 * (float(high) - float(low))


def effective_y_bound(params):
    """The ``y_bound`` the model runs with, from a dict of the estimator's parameters:
    with a ``target_range``, the bound ``(high - low)/scale`` of the targets minus their
    released mean divided by :func:`target_scale` (2 but for the absolute loss: module
    docstring), else the ``y_bound`` parameter."""
    value = params.get("target_range")
    if value is not None:
        low, high = value
        return (float(high) - float(low)) / target_scale(params)
    return params.get("y_bound")


def effective_huber_threshold(params):
    """The Huber threshold of the model, from a dict of the estimator's parameters: with
    a ``target_range``, in units of its half-width ``h`` (the given threshold over ``h``;
    ``"auto"``: :data:`~skdp.linear_model._auto.TARGET_RANGE_THRESHOLD`), else the given
    threshold (``"auto"``: :data:`~skdp.linear_model._auto.DEFAULT_HUBER_THRESHOLD`)."""
    from ._auto import DEFAULT_HUBER_THRESHOLD, TARGET_RANGE_THRESHOLD

    return _in_model_units(params, "huber_threshold", DEFAULT_HUBER_THRESHOLD,
                           TARGET_RANGE_THRESHOLD)


def effective_loss_scale(params):
    """``DPNonconvexRegressor``'s loss scale in the model's units, from a dict of its
    parameters: with a ``target_range``, the given scale over its half-width ``h``
    (``"auto"``: :data:`~skdp.linear_model._auto.TARGET_RANGE_LOSS_SCALE`), else the given
    scale (``"auto"``: :data:`~skdp.linear_model._auto.DEFAULT_LOSS_SCALE`)."""
    from ._auto import DEFAULT_LOSS_SCALE, TARGET_RANGE_LOSS_SCALE

    return _in_model_units(params, "loss_scale", DEFAULT_LOSS_SCALE, TARGET_RANGE_LOSS_SCALE)


def _in_model_units(params, name, plain_auto, range_auto):
    """The scale parameter ``name`` in the model's units: over the half-width of a
    ``target_range`` (:func:`target_scale`), as given without one; ``"auto"``:
    ``range_auto`` half-widths with a range, ``plain_auto`` without."""
    value = params.get(name, "auto")
    h = target_scale(params)
    if isinstance(value, str):          # "auto"
        return plain_auto if h is None else range_auto
    return float(value) if h is None else float(value) / h


def range_model_params(params):
    """The parameters of the model a ``target_range`` fit runs after releasing the
    targets' mean, from a dict of the estimator's parameters: no range, the bound of the
    centred and divided targets (:func:`effective_y_bound`) and the loss's scale in those
    units (:func:`effective_huber_threshold`, :func:`effective_loss_scale`)."""
    model = {"target_range": None, "y_bound": effective_y_bound(params)}
    if "huber_threshold" in params:
        model["huber_threshold"] = effective_huber_threshold(params)
    if "loss_scale" in params:
        model["loss_scale"] = effective_loss_scale(params)
    return model


def in_target_units(attrs, coef, intercept):
    """``(coef, intercept)`` of a fit's model in the target's units: with a released
    ``target_centre_`` (a ``target_range`` fit), the model of ``(y - centre)/h`` times
    ``h = target_scale_``, its intercept shifted by the centre (post-processing); else
    unchanged."""
    if "target_centre_" not in attrs:
        return coef, intercept
    scale = attrs["target_scale_"]
    return scale * coef, scale * intercept + attrs["target_centre_"]


def centre_targets(y, low, high):
    """``u = clip(y, low, high) - m`` as float64, ``m`` the range's middle (step 1 of the
    module docstring); ``y`` a validated numpy array."""
    return np.clip(np.asarray(y, dtype=np.float64), low, high) - 0.5 * (low + high)


def centre_seed(random_state):
    """The seed of the centre release's noise: None (fresh entropy) for
    ``random_state=None``; else an integer of a ``SeedSequence`` keyed by the integer
    ``random_state`` (or one draw of a generator) and spawned with the key of the release
    site ``"target_centre"`` (:func:`skdp._mechanisms._exact.site_seed`) -- a stream of its
    own, not the model's."""
    from .._mechanisms._exact import site_seed

    if random_state is None:
        return None
    if isinstance(random_state, numbers.Integral):
        root = int(random_state)
    elif isinstance(random_state, np.random.Generator):
        root = int(random_state.integers(2**63))
    else:                                           # a RandomState
        root = int(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    sequence = site_seed(root, "target_centre")
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


def release_target_centre(u, half_width, mu, delta, random_state):
    """``(c, event)``: the mean of the centred targets ``u`` (``|u_i| <= half_width``) with
    Gaussian noise at ``mu``-GDP, clipped to ``[-half_width, half_width]`` (step 2 of the
    module docstring; the mechanism of :class:`~skdp.preprocessing.DPStandardScaler` with
    ``with_std=False``, whose event is ``gaussian_event(1, mu)``)."""
    from .._dask import is_dask_collection
    from ..preprocessing._scaler import DPStandardScaler

    # the scaler's _release is calibrated by ``mu`` alone; its epsilon only labels the
    # scaler's own epsilon_, which is not used here
    # the centre's own stream, default_rng(centre_seed), handed over as a generator (the
    # scaler's integer seeds take the scaler's stream, skdp._mechanisms._exact.site_seed)
    seed = centre_seed(random_state)
    scaler = DPStandardScaler(epsilon=1.0, delta=float(delta), with_std=False, clip=False,
                              random_state=None if seed is None else np.random.default_rng(seed),
                              secure_noise=True)
    bound = np.array([float(half_width)])
    # a Dask vector's column stays on the workers (the scaler sums it partition by
    # partition, with its rounding allowance for that summation tree)
    column = u[:, None] if is_dask_collection(u) else np.asarray(u, dtype=np.float64)[:, None]
    attrs = scaler._release(column, -bound, bound, float(mu))
    return float(attrs["mean_"][0]), attrs["dp_event_"]
