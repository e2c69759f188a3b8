"""Numeric input checks that turn a raw table's float-conversion error into advice.

The estimators and the numeric DP transformers take numbers.  Given a raw table (a
DataFrame with string or categorical columns, an array of strings or objects),
scikit-learn's conversion raises ``could not convert string to float: '<a value>'``: it
quotes one of the private values and says nothing of what to do.
:func:`validate_numeric_data` replaces it with an error that names the non-numeric columns
(the public schema only, never a value: the conversion error is not chained, since an
exception's text travels in logs and tracebacks like any output) and points to
:func:`skdp.make_private_pipeline`, which encodes a raw table under the same budget.  Numeric
targets with a string that is not a number (``y`` of a regressor) get an error that says
so without quoting it.
"""

import numpy as np
from sklearn.utils.validation import validate_data

__all__ = ["non_numeric_columns", "non_numeric_targets_message", "quotes_an_entry",
           "validate_numeric_data"]


def non_numeric_columns(X):
    """What makes ``X`` a raw table rather than a numeric array, from its public schema
    only (never its values): ``(names or None, what)`` for a DataFrame with non-numeric
    columns (their names) or an array/list of strings or objects (which columns hold
    the strings is not said: that depends on the values), None otherwise."""
    dtypes = getattr(X, "dtypes", None)
    columns = getattr(X, "columns", None)
    if dtypes is not None and columns is not None and not hasattr(X, "dtype"):
        names = []
        for name, dtype in zip(list(columns), list(dtypes)):
            is_numeric = getattr(dtype, "is_numeric", None)
            if callable(is_numeric):                              # polars
                numeric = is_numeric() or str(dtype) == "Boolean"
            else:                                                 # pandas
                numeric = getattr(dtype, "kind", "O") in "biufc"
            if not numeric:
                names.append(str(name))
        return (names, "DataFrame") if names else None
    if isinstance(X, (list, tuple)):
        try:
            X = np.asarray(X)
        except (TypeError, ValueError):
            return None, "a list that is not all numbers"
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if kind in ("O", "U", "S"):
        return None, "an array of strings or objects, not only numbers"
    return None


def raw_table_message(estimator, X):
    """The advice for the raw table ``X`` given to ``estimator``, or None if ``X`` is not
    one (its conversion failed for another reason)."""
    raw = non_numeric_columns(X)
    if raw is None:
        return None
    names, what = raw
    name = type(estimator).__name__
    found = (f"X has non-numeric columns {names} (strings or categories)" if names
             else f"X is {what}")
    if hasattr(estimator, "transform") and not hasattr(estimator, "predict"):
        return (
            f"{name} takes numeric columns, and {found}. Encode strings or categories "
            "with skdp.preprocessing.DPOneHotEncoder (in a ColumnTransformer, next to "
            f"{name} on the numeric columns), or fit the whole raw table through "
            "skdp.make_private_pipeline(estimator, epsilon=...), which picks each "
            "column's private encoding and spends one budget on all of them")
    return (
        f"{name} takes numeric arrays, and {found}. Fit a raw table with strings or "
        f"categories through skdp.make_private_pipeline({name}(...), epsilon=...), "
        "which encodes its columns under the same budget (a private spline basis of "
        "the numeric columns, a one-hot encoding of the others), or encode them "
        "yourself with public categories first; a fitted pipeline's predict takes the "
        "raw table")


def quotes_an_entry(exc):
    """Whether ``exc`` is Python's or numpy's number-conversion error, whose text quotes the
    entry that failed (``could not convert string to float: '<a value>'``, ``invalid
    literal for int() with base 10: '<a value>'``)."""
    return str(exc).startswith(("could not convert", "invalid literal for"))


def non_numeric_targets_message(estimator):
    """The error for targets ``y`` with an entry that is not a number: what is wrong,
    never the entry (one row's value)."""
    return (f"{type(estimator).__name__} takes numeric targets, and y holds an entry that "
            "is not a number (not shown: the rows are private); convert y to numbers "
            "first")


def validate_numeric_data(estimator, X, y="no_validation", **kwargs):
    """``validate_data(estimator, X, y, **kwargs)``; when ``X`` is a raw table (strings
    or categories) the float conversion's error becomes :func:`raw_table_message`'s, and
    when numeric targets ``y`` hold a string that is not a number the conversion's error
    becomes :func:`non_numeric_targets_message`'s: neither quotes any value of the data
    (the conversion error is not chained)."""
    try:
        return validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        message = raw_table_message(estimator, X)
        if message is None and quotes_an_entry(exc):
            message = non_numeric_targets_message(estimator)
        if message is None:
            raise
    raise ValueError(message) from None
