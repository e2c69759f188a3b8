"""Validation of the privacy arguments shared by the Gaussian-noise solvers.

Everything checked here is public (the privacy target and the solver's hyperparameters);
it runs before any data is read, so an invalid call never leaves a half-fitted model.
"""

import math
import numbers

import numpy as np

__all__ = ["check_gaussian_solver_args", "check_int", "require_certified"]


def check_gaussian_solver_args(epsilon, delta, alpha, calibration, solver, *,
                               pure_dp_solver=None):
    """Check ``(epsilon, delta, alpha, calibration)`` of a solver that adds Gaussian noise.

    A Gaussian mechanism has no pure ε-DP guarantee, so ``delta`` must lie in ``(0, 1)``;
    ``epsilon`` must be finite and positive, ``alpha >= 0`` finite, ``calibration`` one of
    ``"tight"``, ``"paper"``.

    Parameters
    ----------
    epsilon, delta, alpha : float
        Privacy target and L2 strength.
    calibration : str
        Noise calibration.
    solver : str
        Name used in the error messages.
    pure_dp_solver : str or None, default=None
        A solver of the same estimator that supports ``delta = 0``, suggested in the error.

    Returns
    -------
    epsilon, delta, alpha : float
        The arguments as floats.

    Examples
    --------
    >>> from skdp._solvers._validation import check_gaussian_solver_args
    >>> check_gaussian_solver_args(1, 1e-6, 0, "tight", "dpsgd")
    (1.0, 1e-06, 0.0)
    >>> check_gaussian_solver_args(1, 0, 0, "tight", "dpsgd")
    Traceback (most recent call last):
    ...
    ValueError: solver='dpsgd' adds Gaussian noise and needs 0 < delta < 1 (it has no pure epsilon-DP guarantee), got delta=0.0
    """
    epsilon, delta, alpha = float(epsilon), float(delta), float(alpha)
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not 0.0 < delta < 1.0:
        hint = f"; use solver={pure_dp_solver!r} for delta = 0" if pure_dp_solver else ""
        raise ValueError(
            f"solver={solver!r} adds Gaussian noise and needs 0 < delta < 1 (it has no pure "
            f"epsilon-DP guarantee), got delta={delta!r}{hint}")
    if calibration not in ("tight", "paper"):
        raise ValueError(f"calibration must be 'tight' or 'paper', got {calibration!r}")
    if not (alpha >= 0.0 and math.isfinite(alpha)):
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
    return epsilon, delta, alpha


def check_int(name, value, low, high=None, *, high_name=None):
    """``value`` as an ``int`` in ``[low, high]`` (``high=None``: no upper bound).

    ``high_name`` names what ``high`` is (e.g. ``"n_samples"``): the error then says that
    the data, not the parameter, is too small.

    Booleans and non-integers are refused: a batch size or step count fixes the noise
    calibration, so it must be exactly what the caller meant.

    Examples
    --------
    >>> from skdp._solvers._validation import check_int
    >>> check_int("batch_size", 50, 1, 100)
    50
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if high_name is not None and high is not None and value > high >= low:
        raise ValueError(
            f"{name}={value} is larger than {high_name}={high}: the dataset is too small "
            f"for this {name}. Pass {name} <= {high} (None picks a default that fits), "
            "or fit on more rows.")
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and <= {high}"
        raise ValueError(f"{name} must be >= {low}{upper}, got {value}")
    return value


def require_certified(event, epsilon, delta, what):
    """Refuse a printed (``calibration="paper"``) noise level the accountant does not certify.

    Papers' noise formulas rest on loose composition chains whose constants do not always
    close; the mechanism actually run is checked with :func:`skdp.accounting.get_epsilon`
    before any data is read, and a ``ValueError`` is raised if it is not
    ``(epsilon, delta)``-DP.

    Examples
    --------
    >>> import dp_accounting
    >>> from skdp._solvers._validation import require_certified
    >>> require_certified(dp_accounting.GaussianDpEvent(20.0), 1.0, 1e-6, "z = 20")
    """
    from ..accounting import get_epsilon

    achieved = get_epsilon(event, delta)
    if achieved > epsilon:
        raise ValueError(
            f"{what} is not certified ({epsilon}, {delta})-DP by the accountant "
            f"(epsilon = {achieved:.4g}); use calibration='tight'")
