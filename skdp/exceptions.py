"""Warnings and errors raised by skdp."""


class PrivacyLeakWarning(UserWarning):
    """A fit used information from the private data outside a DP mechanism.

    Raised, for example, when ``data_norm`` is ``None`` and the row-norm bound is read from
    the data.  The fitted estimator then has ``privacy_guaranteed_ = False``.
    """


class BudgetExceededError(RuntimeError):
    """A release would exceed the privacy budget that was set for it."""


class UnsupportedDpEventError(ValueError):
    """An event that skdp cannot account exactly under replace-one neighbours."""
