r"""Data-free steps: a user function applied one row at a time, and a frame converter.

Why a row-wise map is data-free
-------------------------------
Let :math:`f` map one feature row to one output row, with parameters fixed before any row
is read (public).  Applying it row by row to a dataset :math:`D = (x_1, \dots, x_n)` gives
:math:`(f(x_1), \dots, f(x_n))`.  If the neighbour :math:`D'` replaces row :math:`j`, the
outputs differ in row :math:`j` only: the transformed datasets are again replace-one
neighbours.  A DP step fitted after it therefore keeps its guarantee unchanged -- it is
(epsilon, delta)-DP for *any* pair of neighbouring inputs, and its sensitivity bound holds
whatever values row :math:`j` takes, because that step clips every row to its own public
bound (``data_norm``, ``feature_bounds``) before anything depends on it.  The map itself
releases nothing and learns nothing, so it adds no event to the accounting.

A function of the whole batch has no such property.  ``A / abs(A).max()`` rescales *every*
row by a statistic of all rows: one row of :math:`10^4` among values in :math:`[-1, 1]`
shrinks all the others by :math:`10^4`, and the neighbouring inputs the next step sees
differ in all :math:`n` rows.  Its sensitivity, derived for one row, no longer applies, so
a scikit-learn ``FunctionTransformer`` (whose ``func`` receives the batch) is not
data-free, and :func:`skdp.accounting.fitted_dp_event` refuses it.

:class:`RowwiseFunctionTransformer` makes the row-wise property hold by construction:
``func`` is called once per row, on a fresh one-dimensional copy of that row (a copy, not
a view, so ``row.base`` does not reach the batch either).  What skdp cannot verify is that
``func`` is *pure*: a function that keeps state between calls (a closure that collects the
rows it has seen) is not row-wise, and neither are ``kw_args`` computed from the private
rows.  Both are outside the guarantee.

:class:`FrameToPandas` converts a polars DataFrame into a pandas one, column by column (the
schema is kept): a row-wise identity on the values.  That needs one care.  polars'
``to_pandas`` gives an integer column numpy's ``int64`` while it has no null, and
``float64`` (nulls as NaN) as soon as *one* row is null; every integer above
:math:`2^{53}` in the *other* rows is then rounded (:math:`2^{53} + 1` becomes
:math:`2^{53}`).  Replacing one row by a null would change the value of many rows, and a
step that counts exact values (:class:`DPOneHotEncoder`) would release a different category
with certainty.  So integer columns (of every width, signed or not) become pandas' nullable
integer dtype of the same width, and boolean columns pandas' nullable ``boolean``,
*whatever the rows hold*: each value is kept exactly, a null becomes ``pd.NA`` in its own
row, and the output dtypes are a function of the input schema alone.  Every other column
is converted by polars (floats stay numpy floats, a null becoming NaN in its row; strings,
dates, decimals cell by cell).  Output row :math:`i` is then a function of input row
:math:`i` and of the public schema only.
"""


import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from .._raw_input import validate_numeric_data

__all__ = ["FrameToPandas", "RowwiseFunctionTransformer"]


def _identity(row):
    return row


class RowwiseFunctionTransformer(TransformerMixin, BaseEstimator):
    """Apply a function to one row at a time: data-free in a private pipeline.

    Unlike scikit-learn's ``FunctionTransformer``, whose ``func`` receives the whole batch
    (and may rescale every row by a statistic of all rows), ``func`` here receives one
    row, so a row's output is a function of that row and of public parameters only.
    Replacing one input row changes one output row: the transformer releases nothing,
    and :func:`skdp.accounting.fitted_dp_event` accepts it without an event (module
    docstring of ``skdp/preprocessing/_rowwise.py`` for the argument).

    Parameters
    ----------
    func : callable or None, default=None
        ``func(row, **kw_args)``: ``row`` is a one-dimensional float64 array of length
        ``n_features_in_`` (a copy of one input row); it returns a one-dimensional
        array-like of numbers (a scalar counts as length 1) whose length must not depend
        on the row.  It must be pure: no state kept between calls.  None is the
        identity.
    kw_args : dict or None, default=None
        Keyword arguments of ``func``.  They must be public (never computed from the
        private rows).
    feature_names_out : callable, "one-to-one" or None, default=None
        Names of the output columns, as for ``FunctionTransformer``: ``"one-to-one"``
        returns the input names (the output width must then equal the input width), a
        callable is called as ``feature_names_out(self, input_features)``.  None: the
        input names when ``func`` is None (the identity), else
        ``rowwisefunctiontransformer0, 1, ...`` (scikit-learn's class-name prefix), as
        many as ``func`` returns on a public probe row of zeros (its width does not
        depend on the row).

    Attributes
    ----------
    n_features_in_ : int
        Number of input columns (public schema).
    feature_names_in_ : ndarray of shape (n_features,)
        Input column names, when ``X`` has string column names.

    See Also
    --------
    skdp.accounting.fitted_dp_event : Accepts this transformer without an event.

    Notes
    -----
    Input contract: ``X`` is converted to a two-dimensional float64 array (a DataFrame by
    its columns, in order; non-numeric columns are an error: encode them with
    :class:`DPOneHotEncoder` instead; sparse input is refused).  Missing values and
    infinities are passed to ``func`` as they are.  The output is a float64 array of
    shape ``(n_samples, k)``, with ``k`` the common length of ``func``'s results.

    ``fit`` reads only the schema (the number and names of the columns) and never calls
    ``func``.  ``transform`` calls ``func`` once per row, in order; if two rows give
    results of different lengths it raises ``ValueError`` (without printing any value or
    row index).  Such an error depends on the rows, so a ``func`` whose width varies is
    a bug to fix, not a supported use.  There is no inverse function and no data-
    dependent check such as ``FunctionTransformer``'s ``check_inverse``.

    There is one Python call per row: correct rather than fast.  For millions of rows, a
    vectorised function that is row-wise by construction belongs in a transformer of its
    own, on the verified list of :func:`skdp.accounting.fitted_dp_event`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import RowwiseFunctionTransformer
    >>> X = np.array([[3.0, 4.0], [1.0, 0.0]])
    >>> RowwiseFunctionTransformer(lambda r: r / max(1.0, np.linalg.norm(r))).fit_transform(X)
    array([[0.6, 0.8],
           [1. , 0. ]])
    >>> RowwiseFunctionTransformer(np.sum).fit_transform(X)
    array([[7.],
           [1.]])
    """

    _parameter_constraints: dict = {
        "func": [callable, None],
        "kw_args": [dict, None],
        "feature_names_out": [callable, StrOptions({"one-to-one"}), None],
    }

    def __init__(self, func=None, *, kw_args=None, feature_names_out=None):
        self.func = func
        self.kw_args = kw_args
        self.feature_names_out = feature_names_out

    def _validate(self, X, reset):
        # a raw table's error names its columns, never quotes a value
        return validate_numeric_data(self, X, reset=reset, dtype=np.float64,
                                     ensure_all_finite=False, accept_sparse=False)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the public schema of ``X`` (``func`` is not called).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric input (class Notes).
        y : None
            Ignored.

        Returns
        -------
        self : RowwiseFunctionTransformer
            The fitted transformer.
        """
        self._validate(X, reset=True)
        return self

    def transform(self, X):
        """Apply ``func`` to every row separately.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric input with the columns seen in ``fit``.

        Returns
        -------
        X_out : ndarray of shape (n_samples, k), float64
            Row ``i`` is ``func(X[i], **kw_args)``.
        """
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        func = _identity if self.func is None else self.func
        kw_args = self.kw_args or {}
        rows = []
        for i in range(X.shape[0]):
            # a fresh copy: func sees one row, not a view whose .base is the batch
            out = np.asarray(func(X[i].copy(), **kw_args), dtype=np.float64)
            if out.ndim > 1:
                raise ValueError(
                    "func must return a one-dimensional array (or a scalar) for one row; "
                    f"it returned an array with {out.ndim} dimensions")
            rows.append(out.reshape(-1))
        widths = {row.shape[0] for row in rows}
        if len(widths) > 1:
            raise ValueError(
                "func returned results of different lengths on different rows: the output "
                "width of a row-wise function must not depend on the row (values and row "
                "indices are not shown)")
        width = widths.pop() if widths else 0
        if self.feature_names_out == "one-to-one" and rows and width != self.n_features_in_:
            raise ValueError(
                "feature_names_out='one-to-one' needs func to return as many values as the "
                f"row has ({self.n_features_in_}); it returned a different number")
        result = np.empty((len(rows), width), dtype=np.float64)
        for i, row in enumerate(rows):
            result[i] = row
        return result

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; None: ``feature_names_in_``, or ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The input names (``"one-to-one"``, or the identity ``func=None``), what the
            ``feature_names_out`` callable returns, or -- ``feature_names_out=None`` with
            a ``func`` -- ``rowwisefunctiontransformer0, 1, ...``, one per value ``func``
            returns on a row of zeros (a public probe: no private row is read).
        """
        check_is_fitted(self, "n_features_in_")
        input_features = _check_feature_names_in(self, input_features)
        if self.feature_names_out == "one-to-one" or (
                self.feature_names_out is None and self.func is None):
            names = input_features
        elif self.feature_names_out is None:
            try:
                with np.errstate(all="ignore"):
                    probe = np.asarray(self.func(np.zeros(self.n_features_in_),
                                                 **(self.kw_args or {})), dtype=np.float64)
            except Exception as exc:
                raise ValueError(
                    "get_feature_names_out calls func on a public row of zeros to learn its "
                    f"output width, and func raised {type(exc).__name__}; give "
                    "feature_names_out (a callable or 'one-to-one') to name the outputs"
                ) from exc
            prefix = type(self).__name__.lower()
            names = [f"{prefix}{i}" for i in range(probe.size)]
        else:
            names = self.feature_names_out(self, input_features)
        return np.asarray(names, dtype=object)

    def set_output(self, *, transform=None):
        """Set the output container (as ``FunctionTransformer``: always available).

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None
            Output of ``transform``/``fit_transform`` (columns named by
            :meth:`get_feature_names_out`).

        Returns
        -------
        self : RowwiseFunctionTransformer
            The same object.
        """
        if not hasattr(self, "_sklearn_output_config"):
            self._sklearn_output_config = {}
        self._sklearn_output_config["transform"] = transform
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True       # func receives NaN/inf as they are
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.non_deterministic = False
        return tags


def _nullable_pandas_dtype(arrow_type):
    """The pandas dtype of a polars column of Arrow type ``arrow_type``: the nullable
    integer dtype of the same width for an integer type, the nullable ``boolean`` for a
    boolean, None (polars' own conversion) for any other type.  A function of the type
    only, never of the values (module docstring)."""
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        sign = "Int" if pa.types.is_signed_integer(arrow_type) else "UInt"
        return pd.api.types.pandas_dtype(f"{sign}{arrow_type.bit_width}")
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def as_pandas(X):
    """A polars DataFrame as a pandas one (its schema kept: numbers stay numeric, strings
    become object columns); anything else unchanged.  Data-free: what
    :class:`FrameToPandas` does, and how a composite reads a frame's schema.

    Row-wise: integer and boolean columns become pandas' nullable dtypes whatever the
    rows hold, so a null in one row never turns the column into float64 and rounds the
    other rows' integers above ``2**53`` (module docstring)."""
    if type(X).__module__.split(".")[0] == "polars" and hasattr(X, "to_pandas"):
        # polars passes types_mapper to pyarrow.Table.to_pandas
        return X.to_pandas(types_mapper=_nullable_pandas_dtype)
    return X


class FrameToPandas(TransformerMixin, BaseEstimator):
    """Turn a polars DataFrame into a pandas one; leave anything else unchanged.

    The first step of :func:`skdp.make_private_pipeline`, so that its ``fit`` and
    ``predict`` take either kind of frame.  Data-free: the conversion maps every row to
    the same row (numbers stay numeric, strings become object columns, the column names
    and order are kept), and ``fit`` reads only the schema.  Integer and boolean columns
    become pandas' nullable dtypes (``Int64``, ``UInt64``..., ``boolean``; a null is
    ``pd.NA``) whether or not a row is null: every integer is kept exactly, above ``2**53``
    too, and no row's value or dtype depends on another row (module docstring of
    ``skdp/preprocessing/_rowwise.py``).

    Attributes
    ----------
    n_features_in_ : int
        Number of input columns (public schema).
    feature_names_in_ : ndarray of shape (n_features,)
        Input column names, when ``X`` has string column names.

    See Also
    --------
    RowwiseFunctionTransformer : A user function applied one row at a time.

    Examples
    --------
    >>> import pandas as pd
    >>> from skdp.preprocessing import FrameToPandas
    >>> df = pd.DataFrame({"age": [30, 41], "job": ["a", "b"]})
    >>> FrameToPandas().fit(df).transform(df) is df
    True
    >>> FrameToPandas().fit(df).get_feature_names_out()
    array(['age', 'job'], dtype=object)
    """

    _parameter_constraints: dict = {}

    def __init__(self):
        pass

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the public schema of ``X`` (number and names of its columns).

        Parameters
        ----------
        X : DataFrame (polars or pandas) or array-like of shape (n_samples, n_features)
            Input.
        y : None
            Ignored.

        Returns
        -------
        self : FrameToPandas
            The fitted transformer.
        """
        validate_data(self, X, reset=True, skip_check_array=True)
        return self

    def transform(self, X):
        """A polars DataFrame as pandas (schema kept); anything else unchanged.

        Parameters
        ----------
        X : DataFrame (polars or pandas) or array-like of shape (n_samples, n_features)
            Input with the columns seen in ``fit``.

        Returns
        -------
        X_out : pandas DataFrame or the input
            The converted frame, or ``X`` itself.
        """
        check_is_fitted(self)
        validate_data(self, X, reset=False, skip_check_array=True)
        return as_pandas(X)

    def get_feature_names_out(self, input_features=None):
        """The input column names (the conversion keeps them).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input names; None: ``feature_names_in_``, or ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The input names.
        """
        check_is_fitted(self, "n_features_in_")
        return _check_feature_names_in(self, input_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.no_validation = True
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.input_tags.string = True
        tags.non_deterministic = False
        return tags
