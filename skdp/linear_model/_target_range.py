r"""A regressor's public target range: fit around its middle, report in the target's units.

Why
---
A private linear model is regularised towards 0 -- the intercept too: it is a regularised
constant feature, as objective perturbation's strong convexity requires, and a Huber
loss caps each row's pull on it at ``huber_threshold``.  Where the data carry little signal
against the noise (small ``n epsilon``) the predictions therefore shrink towards 0, which
for a raw target far from 0 is far from every row: airfoil's sound pressure (100-150 dB)
fitted through ``make_private_pipeline(DPHuberRegressor())`` at epsilon 1 scored a test
R^2 of -54 (its predictions sit far below the targets), concrete's strength (0-100 MPa)
-1.2 (``benchmarks/bench_target_range.py``, ``results/target_range.md``).

``target_range=(low, high)`` moves that point to the middle of a public range (a
documented range, the physical domain -- never the rows' minimum and maximum):

.. math::

    z_i = \mathrm{clip}(y_i, \mathrm{low}, \mathrm{high}) - c, \qquad
    c = \frac{\mathrm{low} + \mathrm{high}}{2}, \qquad |z_i| \le h = \frac{\mathrm{high}
    - \mathrm{low}}{2},

fits the model on ``z`` with ``y_bound = h`` and reports ``intercept_ = b + c`` (``coef_``
unchanged), so ``predict`` returns ``c + x.w + b``.  The target keeps its units:
``huber_threshold`` and ``alpha`` mean what they mean without the range.  (Scaling ``z``
by ``1/h`` as well would make the threshold a fraction of the range instead; measured on
the same tables it helped concrete, whose residuals are a large part of its range, and
cost wine up to 0.2 R^2, whose residuals of about one quality point a threshold of 1 fits:
the threshold is the user's choice of a normal residual, which no range tells.)

Privacy
-------
The map is a function of public constants applied to each row on its own, so two
neighbouring datasets (one row replaced) stay neighbours after it, and the model's
guarantee on ``z`` is the guarantee of the fit; adding ``c`` to the intercept is
post-processing.  Every plan of the fit -- the solver's event, the pipeline's split of the
budget and the spline-basis ``alpha`` rule (``y_bound <= huber_threshold``) -- reads the
bound the model is fitted with, ``h`` (:func:`effective_y_bound`), so the planned and the
fitted events are the same.
"""

import math
import numbers

import numpy as np

__all__ = ["check_target_range", "effective_y_bound", "centre_targets",
           "intercept_in_target_units"]


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
    if getattr(est, "y_bound", None) is not None:
        raise ValueError(
            f"target_range={value!r} sets the targets' bound (its half-width, around its "
            f"middle); leave y_bound=None, got y_bound={est.y_bound!r}")
    return low, high


def effective_y_bound(params):
    """The ``y_bound`` a fit runs with, from a dict of the estimator's parameters: the
    half-width of a ``target_range`` (the centred targets' bound), else the ``y_bound``
    parameter."""
    value = params.get("target_range")
    if value is not None:
        low, high = value
        return 0.5 * (float(high) - float(low))
    return params.get("y_bound")


def centre_targets(y, low, high):
    """``clip(y, low, high) - c`` as float64 (module docstring); ``y`` a validated numpy
    array (a Dask fit maps each block of ``y`` with it on the workers)."""
    centre = 0.5 * (low + high)
    return np.clip(np.asarray(y, dtype=np.float64), low, high) - centre


def intercept_in_target_units(intercept, low, high):
    """``b + c``: the intercept of a model fitted on the centred targets, in the target's
    units (the coefficients are unchanged)."""
    return float(intercept) + 0.5 * (low + high)
