"""Privacy accounting: events, epsilon/delta computation and noise calibration.

skdp describes every release by a dp-accounting ``DpEvent`` built in one place
(:mod:`skdp.accounting._events`) under **replace-one** neighbours, and computes epsilon with
the tightest exact method for the event (closed-form Gaussian-DP composition, closed-form
pure DP, else dp-accounting's PLD accountant).

>>> from skdp.accounting import calibrate_gaussian_sigma, gaussian_event, get_epsilon
>>> sigma = calibrate_gaussian_sigma(epsilon=1.0, delta=1e-6, sensitivity=0.01)
>>> get_epsilon(gaussian_event(sigma, 0.01), delta=1e-6) <= 1.0
True
"""

from ._accountant import get_delta, get_epsilon
from ._events import DeltaDpEvent, compose, gaussian_event, pure_dp_event
from ._fitted import fitted_dp_event, fitted_privacy_guaranteed
from ._ledger import (
    LedgerCorruptError,
    LedgerEntry,
    LedgerError,
    LedgerPermissionError,
    LedgerUnreachableError,
    PrivacyLedger,
)
from ._gaussian import (
    calibrate_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu_for,
)
from ._sampled import calibrate_poisson_gaussian, poisson_gaussian_event
from ._filter import RenyiFilter
from ._rdp import rdp_delta, rdp_epsilon, repeat_and_select_event, to_rdp_event

__all__ = [
    "DeltaDpEvent",
    "NEIGHBORING_RELATION",
    "LedgerCorruptError",
    "LedgerEntry",
    "LedgerError",
    "LedgerPermissionError",
    "LedgerUnreachableError",
    "PrivacyLedger",
    "RenyiFilter",
    "calibrate_gaussian_sigma",
    "calibrate_poisson_gaussian",
    "compose",
    "fitted_dp_event",
    "fitted_privacy_guaranteed",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_event",
    "gaussian_mu_for",
    "get_delta",
    "get_epsilon",
    "poisson_gaussian_event",
    "pure_dp_event",
    "rdp_delta",
    "rdp_epsilon",
    "repeat_and_select_event",
    "to_rdp_event",
]


def __getattr__(name):
    # dp-accounting's ``NeighboringRelation`` imports the whole package (its accountants,
    # scipy.signal): read when asked for, not on ``import skdp.accounting``.
    if name == "NEIGHBORING_RELATION":
        from . import _events

        return _events.NEIGHBORING_RELATION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
