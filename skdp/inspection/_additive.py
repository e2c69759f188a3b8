r"""The additive model inside a private pipeline: which design columns belong to which raw
column, and each raw column's contribution to the model's scores.

A pipeline of per-column transformers (a spline basis, a one-hot encoding, a robust or
standard scaling of each column, in a ``ColumnTransformer``) followed by a linear model
computes

.. math:: f(x) = b + w^\top \phi(x) = b + \sum_j w_j^\top B_j(x_j) = b + \sum_j g_j(x_j),

where :math:`B_j(x_j)` are the design columns that depend on raw column :math:`j` only and
:math:`w_j` the model's coefficients on them (one row of ``coef_`` per class for a
multinomial model).  :func:`additive_terms` finds the blocks :math:`B_j` by walking the
fitted transformers (no row is read); :func:`contributions` evaluates every
:math:`g_j(x_{ij})` on rows the caller passes.

Both are post-processing of the released model and of the released transformer
parameters: they cost no privacy.  What :func:`contributions` returns is, however, a
function of the rows passed to it: computed on private rows it is *not* differentially
private (DP covers what ``fit`` releases, not a per-row explanation of private rows).
"""

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["AdditiveModel", "Origin", "additive_terms", "contributions"]


@dataclass(frozen=True)
class Origin:
    """Where one column of an intermediate design comes from.

    ``raw``: index of the raw input column it depends on (None: on several, not additive).
    ``leaf``: the per-column basis transformer (``DPSplineTransformer``, ``DPOneHotEncoder``,
    ``DPRobustScaler``, ``DPStandardScaler``) that made it, ``leaf_column`` its input
    column there and ``local`` its position in that column's output block; None before
    any.  ``direct``: the raw column reached the leaf through identity steps only (its
    public grid is then in raw units).  ``lost``: a non-identity step came after the leaf
    (the column is still additive, but its grid cannot be read from the leaf)."""

    raw: object
    leaf: object = None
    leaf_column: int = -1
    local: int = -1
    direct: bool = True
    lost: bool = False


def leaf_widths(leaf):
    """Output width of each input column of a basis transformer, or None for another
    step.  Layouts: the spline's basis then its missing indicator, the encoder's
    categories then ``other`` then ``missing``, one column per input for the scalers."""
    from ..preprocessing import (DPOneHotEncoder, DPRobustScaler, DPSplineTransformer,
                                 DPStandardScaler)

    if isinstance(leaf, DPSplineTransformer):
        return [leaf._width(k) + 1 for k in leaf.knots_]
    if isinstance(leaf, DPOneHotEncoder):
        return [len(c) + 2 for c in leaf.categories_]
    if isinstance(leaf, (DPRobustScaler, DPStandardScaler)):
        return [1] * leaf.n_features_in_
    return None


def _is_identity(step):
    from ..preprocessing import FrameToPandas, RowwiseFunctionTransformer

    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    if isinstance(step, FrameToPandas):
        return True
    return isinstance(step, RowwiseFunctionTransformer) and step.func is None


def _opaque(origin):
    """``origin`` after a step that changes values (not an identity)."""
    if origin.leaf is not None:
        return replace(origin, lost=True)
    return replace(origin, direct=False)


def _trace(step, inputs):
    """Origins of the output columns of the fitted ``step`` whose input columns have
    origins ``inputs`` (structure and fitted public attributes only)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if _is_identity(step):
        return list(inputs)
    if isinstance(step, Pipeline):
        for _, sub in step.steps:
            inputs = _trace(sub, inputs)
        return inputs
    if isinstance(step, ColumnTransformer):
        blocks = sorted(((sl.start, sl.stop, name) for name, sl in step.output_indices_.items()
                         if sl.stop > sl.start), key=lambda b: b[0])
        fitted = {name: trans for name, trans, _ in step.transformers_}
        out = []
        for start, stop, name in blocks:
            sub_inputs = [inputs[i] for i in step._transformer_to_input_indices[name]]
            block = _trace(fitted[name], sub_inputs)
            if len(block) != stop - start:
                raise ValueError(f"block '{name}' of the ColumnTransformer outputs "
                                 f"{stop - start} columns, {len(block)} expected")
            out.extend(block)
        return out
    if isinstance(step, FeatureUnion):
        out = []
        for _, sub in step.transformer_list:
            if isinstance(sub, str) and sub == "drop":
                continue
            out.extend(_trace(sub, inputs))
        return out
    widths = leaf_widths(step)
    if widths is not None:
        out = []
        for j, (origin, width) in enumerate(zip(inputs, widths)):
            if origin.leaf is not None:      # a basis of a basis: values are transformed
                out.extend([_opaque(origin)] * width)
                continue
            out.extend(Origin(origin.raw, step, j, k, origin.direct) for k in range(width))
        return out
    # any other transformer (an imputer, a selector, a row-wise function): column-wise
    # when it is one-to-one or names every output after one input (scikit-learn's
    # SimpleImputer); else each output depends on the one raw column all its inputs come
    # from, or on several (not additive)
    from sklearn.base import OneToOneFeatureMixin

    names_out = [str(n) for n in step.get_feature_names_out()]
    names_in = getattr(step, "feature_names_in_", None)
    names_in = [str(n) for n in names_in] if names_in is not None else \
        [f"x{i}" for i in range(len(inputs))]
    if isinstance(step, OneToOneFeatureMixin) and len(names_out) == len(inputs):
        return [_opaque(o) for o in inputs]
    position = {name: i for i, name in enumerate(names_in)}
    if len(names_in) == len(inputs) and all(n in position for n in names_out):
        return [_opaque(inputs[position[n]]) for n in names_out]
    raws = {o.raw for o in inputs}
    if len(raws) == 1 and None not in raws:
        return [_opaque(inputs[0])] * len(names_out)
    return [Origin(None, lost=True)] * len(names_out)


@dataclass
class AdditiveModel:
    """A fitted pipeline seen as ``f(x) = b + sum_j g_j(x_j)`` (module docstring).

    ``columns``: raw column names; ``origins``: one :class:`Origin` per design column;
    ``coef``: ``(n_outputs, n_design)``; ``intercept``: ``(n_outputs,)``; ``classes``:
    the class of every output for a multinomial model, else None; ``response``: the
    pipeline method whose values are ``b + sum_j g_j`` (``decision_function`` or
    ``predict``)."""

    columns: list
    origins: list
    coef: np.ndarray
    intercept: np.ndarray
    classes: object
    response: str

    def design_columns(self, j):
        """Indices of the design columns of raw column ``j`` (by its position)."""
        return [k for k, o in enumerate(self.origins) if o.raw == j]


def additive_terms(pipeline):
    """The :class:`AdditiveModel` of a fitted pipeline (public attributes only).

    Parameters
    ----------
    pipeline : fitted Pipeline or PrivatePipeline
        Transformers, then a linear skdp model (``coef_``, ``intercept_``).

    Returns
    -------
    model : AdditiveModel

    Raises
    ------
    ValueError
        When a design column depends on several raw columns (the model is then not
        additive in the raw columns: e.g. a row-wise function of two columns).
    """
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(pipeline, Pipeline) or len(pipeline.steps) < 2:
        raise TypeError("shape functions need a fitted pipeline of transformers and a "
                        f"linear model; got {type(pipeline).__name__}")
    model = pipeline.steps[-1][1]
    check_is_fitted(model)
    if not hasattr(model, "coef_") or not hasattr(model, "intercept_"):
        raise TypeError(f"the final step ({type(model).__name__}) is not a linear model "
                        "(no coef_/intercept_): its scores are not additive")
    first = pipeline.steps[0][1]
    n_raw = getattr(first, "n_features_in_", None)
    if n_raw is None:
        raise ValueError("the pipeline's first step records no n_features_in_: fit it first")
    names = getattr(first, "feature_names_in_", None)
    columns = [str(c) for c in names] if names is not None else \
        [f"x{j}" for j in range(n_raw)]
    origins = _trace(Pipeline(pipeline.steps[:-1]), [Origin(j) for j in range(n_raw)])
    coef = np.atleast_2d(np.asarray(model.coef_, dtype=np.float64))
    if coef.shape[1] != len(origins):
        raise ValueError(f"the model has {coef.shape[1]} coefficients and the transformers "
                         f"output {len(origins)} columns")
    mixed = [k for k, o in enumerate(origins) if o.raw is None]
    if mixed:
        raise ValueError(
            f"{len(mixed)} design column(s) (first: number {mixed[0]}) depend on several raw "
            "columns: the model is not additive in the raw columns (a step mixes columns, "
            "e.g. a row-wise function of several columns), so it has no shape functions")
    intercept = np.atleast_1d(np.asarray(model.intercept_, dtype=np.float64))
    classes = getattr(model, "classes_", None)
    multi = coef.shape[0] > 1
    response = "decision_function" if hasattr(model, "decision_function") else "predict"
    return AdditiveModel(columns, origins, coef, intercept,
                         list(classes) if multi else None, response)


def _dense(Z):
    import scipy.sparse as sp

    if sp.issparse(Z):
        return Z.tocsc()
    return np.asarray(Z, dtype=np.float64)


def contributions(pipeline, X):
    r"""Every raw column's contribution :math:`g_j(x_{ij})` to the model's score of every
    row of ``X``, and the intercept.

    For a fitted pipeline whose model is additive in the raw columns,

    .. math:: f(x_i) = b + \sum_j g_j(x_{ij}), \qquad g_j(x_{ij}) = w_j^\top B_j(x_{ij}),

    where :math:`B_j` are the design columns of raw column :math:`j` (its spline basis and
    missing indicator, its one-hot block, its scaled value) and :math:`w_j` the model's
    coefficients on them; the row sums of the result equal ``decision_function(X)`` (a
    classifier) or ``predict(X)`` (a regressor) up to floating-point rounding.

    **Privacy.** The model and the transformers' parameters are the release; reading them
    costs nothing.  The result is a function of the rows of ``X``: computed on private
    rows it is not differentially private (each row's own explanation).

    Parameters
    ----------
    pipeline : fitted PrivatePipeline or Pipeline
        Per-column transformers, then a linear skdp model.
    X : DataFrame or array-like of shape (n_samples, n_features)
        Rows in the pipeline's input format.

    Returns
    -------
    contributions : DataFrame
        One column per raw column, then ``"(intercept)"``; for a multinomial model the
        columns are a MultiIndex ``(class, column)``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdp import DPLogisticRegression, make_private_pipeline
    >>> from skdp.inspection import contributions
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.uniform(18, 90, 3000),
    ...                    "job": rng.choice(["a", "b"], 3000)})
    >>> y = (df["age"] > 50).astype(int).to_numpy()
    >>> pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
    ...                              numeric=["age"], categorical=["job"],
    ...                              random_state=0).fit(df, y)
    >>> c = contributions(pipe, df.head())
    >>> list(c.columns)
    ['age', 'job', '(intercept)']
    >>> bool(np.allclose(c.sum(axis=1), pipe.decision_function(df.head())))
    True
    """
    import pandas as pd

    model = additive_terms(pipeline)
    from sklearn.pipeline import Pipeline

    Z = _dense(Pipeline(pipeline.steps[:-1]).transform(X))
    n_out = model.coef.shape[0]
    parts = []
    for j, _ in enumerate(model.columns):
        idx = model.design_columns(j)
        if idx:
            parts.append(np.asarray(Z[:, idx] @ model.coef[:, idx].T).reshape(-1, n_out))
        else:
            parts.append(np.zeros((Z.shape[0], n_out)))
    parts.append(np.broadcast_to(model.intercept, (Z.shape[0], n_out)))
    names = model.columns + ["(intercept)"]
    index = X.index if hasattr(X, "index") else None
    if model.classes is None:
        return pd.DataFrame(np.column_stack([p[:, 0] for p in parts]), columns=names,
                            index=index)
    data = np.column_stack([p[:, k] for k in range(n_out) for p in parts])
    cols = pd.MultiIndex.from_tuples([(c, name) for c in model.classes for name in names],
                                     names=["class", "column"])
    return pd.DataFrame(data, columns=cols, index=index)
