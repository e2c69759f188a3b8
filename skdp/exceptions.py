"""Warnings and errors raised by skdp."""


class PrivacyLeakWarning(UserWarning):
    """A fit used information from the private data outside a DP mechanism.

    Raised, for example, when ``data_norm`` is ``None`` and the row-norm bound is read from
    the data.  The fitted estimator then has ``privacy_guaranteed_ = False``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression, PrivacyLeakWarning
    >>> X = np.random.default_rng(0).normal(size=(100, 2)); y = (X[:, 0] > 0).astype(int)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = DPLogisticRegression(random_state=0).fit(X, y)  # no data_norm
    >>> any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    True
    >>> clf.privacy_guaranteed_
    False
    """


class BudgetExceededError(RuntimeError):
    """A release would exceed the privacy budget that was set for it.

    Examples
    --------
    >>> from skdp.exceptions import BudgetExceededError
    >>> try:
    ...     raise BudgetExceededError("epsilon 1.2 > budget 1.0")
    ... except RuntimeError as exc:
    ...     print(type(exc).__name__, exc)
    BudgetExceededError epsilon 1.2 > budget 1.0
    """


class UnsupportedDpEventError(ValueError):
    """An event that skdp cannot account exactly under replace-one neighbours.

    Raised by :func:`skdp.accounting.get_epsilon` and :func:`skdp.accounting.get_delta`
    instead of falling back to an accountant whose neighbouring convention differs.

    Examples
    --------
    >>> import dp_accounting
    >>> from skdp.accounting import get_epsilon
    >>> from skdp.exceptions import UnsupportedDpEventError
    >>> event = dp_accounting.SampledWithoutReplacementDpEvent(
    ...     100, 10, dp_accounting.GaussianDpEvent(1.0))
    >>> try:
    ...     get_epsilon(event, 1e-5)
    ... except UnsupportedDpEventError:
    ...     print("refused")
    refused
    """
