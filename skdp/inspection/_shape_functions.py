r"""Shape functions and term importances of a private pipeline's additive model.

The model a private pipeline releases is additive in the raw columns
(:mod:`skdp.inspection._additive`):

.. math:: f(x) = b + \sum_j g_j(x_j), \qquad g_j(v) = w_j^\top B_j(v),

with :math:`B_j` the column's basis (the released spline knots' B-splines and a missing
indicator; the released categories' one-hot block with ``other`` and ``missing``; a
scaled value) and :math:`w_j` the model's coefficients on it.  :func:`shape_functions`
evaluates every :math:`g_j` on *public* points -- a grid over the released knots or
range, the released categories -- and :func:`term_importances` summarises them.

Privacy: the coefficients, the intercept, the knots, ranges and categories are all part
of the release, and the evaluation points are functions of them only.  Shape functions
and public-grid importances are therefore post-processing of the release: they cost no
privacy and keep the pipeline's ``(epsilon_, delta_)`` guarantee.  Importances computed
on rows the caller passes (``term_importances(pipe, X)``) are a function of those rows:
on private rows they are *not* differentially private.
"""

import numpy as np

from ._additive import additive_terms, leaf_widths

__all__ = ["shape_functions", "term_importances"]

#: column names of :func:`shape_functions`' result (``class`` only for multinomial models)
COLUMNS = ["column", "kind", "value", "contribution"]


def _leaf_input(leaf, column, values):
    """Rows for ``leaf.transform``: ``values`` in input column ``column``, the other
    columns at a value every leaf accepts (NaN, or the middle of a standard scaler's
    public bounds); their outputs are not read."""
    from ..preprocessing import DPStandardScaler

    d = leaf.n_features_in_
    if isinstance(leaf, DPStandardScaler):
        fill = np.broadcast_to(leaf.feature_bounds_.mean(axis=0), (len(values), d)).copy()
    else:
        fill = np.full((len(values), d), np.nan)
    fill[:, column] = values
    names = getattr(leaf, "feature_names_in_", None)
    if names is not None:
        import pandas as pd

        return pd.DataFrame(fill, columns=list(names))
    return fill


def _leaf_block(leaf, column, values):
    """``B_j(values)``: the leaf's output block of input column ``column``."""
    import scipy.sparse as sp

    out = leaf.transform(_leaf_input(leaf, column, values))
    out = out.toarray() if sp.issparse(out) else np.asarray(out, dtype=np.float64)
    widths = leaf_widths(leaf)
    start = int(sum(widths[:column]))
    return out[:, start:start + widths[column]]


def _column_terms(model, j, grid_resolution):
    """``[(kind, value, contributions (n_outputs,))]`` of raw column ``j``."""
    from ..preprocessing import (DPOneHotEncoder, DPRobustScaler, DPSplineTransformer,
                                 DPStandardScaler)

    name = model.columns[j]
    idx = model.design_columns(j)
    origins = [model.origins[k] for k in idx]
    leaves = {(id(o.leaf), o.leaf_column) for o in origins}
    if any(o.leaf is None or o.lost for o in origins) or len(leaves) != 1:
        raise ValueError(
            f"column {name!r} does not reach the model through one skdp basis transformer "
            "(DPSplineTransformer, DPOneHotEncoder, DPRobustScaler, DPStandardScaler) alone "
            "-- it is passed through, transformed after its basis, or in several blocks -- "
            "so there is no public grid to evaluate it on; "
            "skdp.inspection.contributions(pipeline, X) still gives its contribution to "
            "rows you pass")
    leaf, c = origins[0].leaf, origins[0].leaf_column
    order = np.argsort([o.local for o in origins])
    w = model.coef[:, np.asarray(idx)[order]]            # (n_outputs, block width)
    if isinstance(leaf, DPOneHotEncoder):
        cats = leaf.categories_[c]
        rows = [("categorical", v, w[:, i]) for i, v in enumerate(cats)]
        rows.append(("other", None, w[:, len(cats)]))
        rows.append(("missing", np.nan, w[:, len(cats) + 1]))
        return rows
    if isinstance(leaf, DPSplineTransformer):
        knots = leaf.knots_[c]
        grid = np.union1d(np.linspace(knots[0], knots[-1], grid_resolution), knots)
    elif isinstance(leaf, DPRobustScaler):
        lo, hi = leaf.clip_bounds_[:, c]
        grid = np.unique(np.linspace(lo, hi, grid_resolution))
    elif isinstance(leaf, DPStandardScaler):
        lo, hi = leaf.feature_bounds_[:, c]
        grid = np.linspace(lo, hi, grid_resolution)
    else:  # pragma: no cover - leaf_widths knows these four only
        raise TypeError(type(leaf).__name__)
    missing = not isinstance(leaf, DPStandardScaler)      # it refuses NaN
    values = np.append(grid, np.nan) if missing else grid
    g = _leaf_block(leaf, c, values) @ w.T                 # (n_values, n_outputs)
    rows = [("numeric", float(v), g[i]) for i, v in enumerate(grid)]
    if missing:
        rows.append(("missing", np.nan, g[-1]))
    return rows


def shape_functions(pipeline, *, grid_resolution=100):
    r"""The learnt shape function of every raw column, on public points.

    The model of a fitted private pipeline is additive:

    .. math:: f(x) = b + \sum_j g_j(x_j), \qquad g_j(v) = w_j^\top B_j(v),

    with :math:`B_j` the basis the pipeline builds for column :math:`j` and :math:`w_j`
    the model's coefficients on it (:func:`skdp.inspection.contributions`).  For every
    column this evaluates :math:`g_j`

    * **spline** (``DPSplineTransformer``): on ``grid_resolution`` points from the first
      to the last released knot, and on the knots themselves (values beyond are clamped
      to the boundary knots: the shape is flat there); plus the missing bucket;
    * **one-hot** (``DPOneHotEncoder``): the weight of every released category, of the
      ``other`` bucket (rare, unseen or unreleased values) and of ``missing``;
    * **robust scaling** (``DPRobustScaler``): a line, ``w (clip(v) - m)/s``, on a grid
      over the released clipping range; a missing value scales to 0;
    * **standard scaling** (``DPStandardScaler``): a line over its public bounds.

    For a multinomial model, one set per class (column ``class``).  The intercept is the
    row whose ``column`` is ``"(intercept)"`` (kind ``"intercept"``).  For any row,
    ``b + sum_j g_j(x_j)`` is the pipeline's ``decision_function`` (classifiers) or
    ``predict`` (regressors).

    **Privacy.** The coefficients, knots, ranges and categories are the release, and
    the grid is a function of them only: this is post-processing, at no privacy cost.

    Parameters
    ----------
    pipeline : fitted PrivatePipeline or Pipeline
        ``make_private_pipeline(...)``, or a pipeline of ``DPSplineTransformer``,
        ``DPOneHotEncoder``, ``DPRobustScaler``, ``DPStandardScaler`` (in
        ``ColumnTransformer``\ s, nested pipelines, after data-free steps) and a linear
        skdp model.
    grid_resolution : int, default=100
        Number of grid points of a numeric column (the knots are added).

    Returns
    -------
    shape_functions : DataFrame
        Tidy: ``column`` (raw column name), ``kind`` (``"numeric"``, ``"categorical"``,
        ``"other"``, ``"missing"`` or ``"intercept"``), ``value`` (the grid value or
        category; None for ``other``, NaN for ``missing``), ``contribution``
        (:math:`g_j(value)` on the model's score scale: log-odds for a logistic model),
        and ``class`` for a multinomial model.  ``attrs["intercept"]`` holds the
        intercept(s).  A numeric column behind a row-wise function has its grid on the
        function's output scale: such columns are listed in ``attrs["transformed"]``.

    See Also
    --------
    ShapeFunctionDisplay : Plots them.
    term_importances : One number per column.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdp import DPLogisticRegression, make_private_pipeline
    >>> from skdp.inspection import shape_functions
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.uniform(18, 90, 3000),
    ...                    "job": rng.choice(["a", "b"], 3000)})
    >>> y = (df["age"] > 50).astype(int).to_numpy()
    >>> pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
    ...                              numeric=["age"], categorical=["job"],
    ...                              random_state=0).fit(df, y)
    >>> sf = shape_functions(pipe)
    >>> print(sf.drop_duplicates(["column", "kind"])[["column", "kind"]].to_string(index=False))
         column        kind
            age     numeric
            age     missing
            job categorical
            job       other
            job     missing
    (intercept)   intercept
    """
    import numbers

    import pandas as pd

    if (isinstance(grid_resolution, bool) or not isinstance(grid_resolution, numbers.Integral)
            or grid_resolution < 2):
        raise ValueError(f"grid_resolution must be an integer >= 2, got {grid_resolution!r}")
    model = additive_terms(pipeline)
    records, transformed = [], []
    for j, name in enumerate(model.columns):
        if not model.design_columns(j):
            continue                      # dropped: contributes nothing
        terms = _column_terms(model, j, int(grid_resolution))
        if not model.origins[model.design_columns(j)[0]].direct:
            transformed.append(name)
        for kind, value, g in terms:
            records.extend((name, kind, value, float(g[k]), k) for k in range(len(g)))
    records.extend(("(intercept)", "intercept", np.nan, float(b), k)
                   for k, b in enumerate(model.intercept))
    frame = pd.DataFrame.from_records(records, columns=COLUMNS + ["output"])
    if model.classes is None:
        frame = frame.drop(columns="output")
    else:
        frame.insert(len(COLUMNS), "class",
                     np.asarray(model.classes, dtype=object)[frame.pop("output")])
        frame = frame.sort_values(["class", "column"], kind="stable",
                                  key=_original_order(model)).reset_index(drop=True)
    frame.attrs["intercept"] = model.intercept.copy() if model.classes is not None \
        else float(model.intercept[0])
    frame.attrs["transformed"] = transformed
    frame.attrs["response"] = model.response
    return frame


def _original_order(model):
    """Sort key keeping the classes and the raw columns in the model's order."""
    def key(series):
        if series.name == "class":
            rank = {c: i for i, c in enumerate(model.classes)}
        else:
            rank = {c: i for i, c in enumerate(model.columns + ["(intercept)"])}
        return series.map(rank)
    return key


def term_importances(pipeline, X=None, *, grid_resolution=100):
    r"""Importance of every raw column: the mean absolute deviation of its contribution.

    For column :math:`j` with contribution :math:`g_j` (:func:`shape_functions`) and
    points :math:`v_1, \dots, v_m`,

    .. math:: I_j = \frac1m \sum_i \Big| g_j(v_i) - \frac1m \sum_k g_j(v_k) \Big| ,

    averaged over the classes of a multinomial model.  (Centring makes it independent of
    how the model shares a constant between :math:`g_j` and the intercept, which the data
    do not determine: as for an EBM's importances, whose terms are centred.)

    * ``X=None``: the points are the **public** ones of :func:`shape_functions` with
      uniform weights -- the grid over the released knots or range and the missing
      bucket, or every released category, ``other`` and ``missing``.  Post-processing of
      the release: no privacy cost, and shareable with the model.  Equal weights give a
      rare bucket (``other``, ``missing``, a numeric column's tails) as much say as a
      frequent value, although its weight is mostly regularisation and noise: read it as
      how far a column *can* move the score.
    * ``X`` given: the points are the rows of ``X`` (:func:`contributions`).  This is a
      function of those rows, **not** post-processing: computed on private data it is
      **not differentially private** and must be treated like the data itself.

    Parameters
    ----------
    pipeline : fitted PrivatePipeline or Pipeline
        As for :func:`shape_functions`.
    X : DataFrame, array-like or None, default=None
        Rows to average over (None: the public grid).
    grid_resolution : int, default=100
        Grid points of a numeric column when ``X`` is None.

    Returns
    -------
    importances : DataFrame
        ``column``, ``importance`` and ``source`` (``"public grid"``, or ``"data (not
        differentially private)"`` when ``X`` was given), sorted by decreasing
        importance; ``attrs["source"]`` repeats the source.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdp import DPLogisticRegression, make_private_pipeline
    >>> from skdp.inspection import term_importances
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.uniform(18, 90, 3000),
    ...                    "job": rng.choice(["a", "b"], 3000)})
    >>> y = (df["age"] > 50).astype(int).to_numpy()
    >>> pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=5.0,
    ...                              numeric=["age"], categorical=["job"],
    ...                              random_state=0).fit(df, y)
    >>> imp = term_importances(pipe)
    >>> sorted(imp["column"]), imp.attrs["source"]
    (['age', 'job'], 'public grid')
    >>> term_importances(pipe, df).attrs["source"]     # on the (private) rows: not DP
    'data (not differentially private)'
    """
    import pandas as pd

    if X is None:
        sf = shape_functions(pipeline, grid_resolution=grid_resolution)
        sf = sf[sf["kind"] != "intercept"]
        by = ["column", "class"] if "class" in sf.columns else ["column"]
        dev = sf.groupby(by, sort=False)["contribution"].transform(
            lambda g: (g - g.mean()).abs())
        per = dev.groupby([sf[b] for b in by], sort=False).mean()
        values = per.groupby(level="column", sort=False).mean() if len(by) > 1 else per
        source = "public grid"
    else:
        from ._additive import contributions

        c = contributions(pipeline, X)
        if isinstance(c.columns, pd.MultiIndex):
            c = c.drop(columns="(intercept)", level="column")
            dev = (c - c.mean()).abs().mean()
            values = dev.groupby(level="column", sort=False).mean()
        else:
            c = c.drop(columns="(intercept)")
            values = (c - c.mean()).abs().mean()
        source = "data (not differentially private)"
    out = pd.DataFrame({"column": list(values.index), "importance": values.to_numpy(),
                        "source": source})
    out = out.sort_values("importance", ascending=False, kind="stable").reset_index(drop=True)
    out.attrs["source"] = source
    return out
