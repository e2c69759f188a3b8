"""``ShapeFunctionDisplay``: the shape functions of a private pipeline, drawn in the style
of scikit-learn's displays (``PartialDependenceDisplay``): ``from_estimator`` computes and
plots, ``plot`` draws a computed one again; the matplotlib objects are kept on attributes.
Post-processing of the release: drawing costs no privacy."""

import numpy as np

__all__ = ["ShapeFunctionDisplay"]


class ShapeFunctionDisplay:
    """Shape functions of a private pipeline's additive model.

    Use :meth:`from_estimator` to compute and draw them: a line per numeric column
    (spline or scaled value; the released knots ticked on the axis), bars per categorical
    column (every released category and the ``other`` bucket), and a diamond marker for
    the missing bucket.  A multinomial model draws one line or bar group per class.

    Parameters
    ----------
    shape_functions : DataFrame
        The result of :func:`skdp.inspection.shape_functions`.
    columns : list of str or None, default=None
        Raw columns to draw (None: every column).
    knots : dict or None, default=None
        ``{column: knots}`` to tick on numeric axes (public: the released knots).

    Attributes
    ----------
    figure_ : matplotlib Figure
    axes_ : ndarray of matplotlib Axes, shape (n_rows, n_cols)
        Unused cells are None.
    lines_ : ndarray of object, shape (n_rows, n_cols)
        Per axes the list of Line2D drawn (one per class), or None for a categorical one.
    bars_ : ndarray of object, shape (n_rows, n_cols)
        Per axes the list of BarContainer drawn (one per class), or None.
    missing_markers_ : ndarray of object, shape (n_rows, n_cols)
        Per axes the list of Line2D markers of the missing bucket, or None.

    See Also
    --------
    skdp.inspection.shape_functions : The data drawn.
    sklearn.inspection.PartialDependenceDisplay : The display this one follows.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from skdp import DPLogisticRegression, make_private_pipeline
    >>> from skdp.inspection import ShapeFunctionDisplay
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.uniform(18, 90, 3000),
    ...                    "job": rng.choice(["a", "b"], 3000)})
    >>> y = (df["age"] > 50).astype(int).to_numpy()
    >>> pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]),
    ...                              numeric=["age"], categorical=["job"],
    ...                              random_state=0).fit(df, y)
    >>> disp = ShapeFunctionDisplay.from_estimator(pipe)
    >>> disp.axes_.shape
    (1, 2)
    """

    def __init__(self, shape_functions, *, columns=None, knots=None):
        self.shape_functions = shape_functions
        self.columns = columns
        self.knots = knots

    @classmethod
    def from_estimator(cls, estimator, columns=None, *, grid_resolution=100, ax=None,
                       n_cols=3, line_kw=None, bar_kw=None, missing_kw=None):
        """Compute the shape functions of a fitted pipeline and draw them.

        Parameters
        ----------
        estimator : fitted PrivatePipeline or Pipeline
            As for :func:`skdp.inspection.shape_functions`.
        columns : list of str or None, default=None
            Raw columns to draw (None: all, in the pipeline's order).
        grid_resolution : int, default=100
            Grid points of a numeric column.
        ax : matplotlib Axes or array-like of Axes, default=None
            One Axes (a grid is made inside it) or one Axes per column; None: a new
            figure.
        n_cols : int, default=3
            Columns of the grid of axes when ``ax`` is not a list.
        line_kw, bar_kw, missing_kw : dict or None, default=None
            Keyword arguments of ``Axes.plot`` (numeric columns), ``Axes.bar``
            (categorical ones) and of the missing marker's ``Axes.plot``.

        Returns
        -------
        display : ShapeFunctionDisplay
        """
        _check_matplotlib("from_estimator")
        from ._additive import additive_terms
        from ._shape_functions import shape_functions
        from ..preprocessing import DPSplineTransformer

        sf = shape_functions(estimator, grid_resolution=grid_resolution)
        model = additive_terms(estimator)
        knots = {}
        for j, name in enumerate(model.columns):
            idx = model.design_columns(j)
            if idx and isinstance(model.origins[idx[0]].leaf, DPSplineTransformer):
                o = model.origins[idx[0]]
                knots[name] = np.asarray(o.leaf.knots_[o.leaf_column])
        return cls(sf, columns=columns, knots=knots).plot(
            ax=ax, n_cols=n_cols, line_kw=line_kw, bar_kw=bar_kw, missing_kw=missing_kw)

    def plot(self, *, ax=None, n_cols=3, line_kw=None, bar_kw=None, missing_kw=None):
        """Draw the shape functions.

        Parameters
        ----------
        ax : matplotlib Axes or array-like of Axes, default=None
            As for :meth:`from_estimator`.
        n_cols : int, default=3
            Columns of the grid of axes.
        line_kw, bar_kw, missing_kw : dict or None, default=None
            As for :meth:`from_estimator`.

        Returns
        -------
        display : ShapeFunctionDisplay
            ``self``, with ``figure_``, ``axes_``, ``lines_``, ``bars_`` and
            ``missing_markers_`` set.
        """
        _check_matplotlib("plot")
        import matplotlib.pyplot as plt

        sf = self.shape_functions
        terms = sf[sf["kind"] != "intercept"]
        present = list(dict.fromkeys(terms["column"]))
        columns = present if self.columns is None else list(self.columns)
        unknown = [c for c in columns if c not in present]
        if unknown:
            raise ValueError(f"no shape function for columns {unknown}; the pipeline has "
                             f"{present}")
        if not columns:
            raise ValueError("no column to draw")
        classes = list(dict.fromkeys(terms["class"])) if "class" in terms.columns \
            else [None]
        axes, figure = _axes_grid(plt, ax, len(columns), n_cols)
        self.figure_, self.axes_ = figure, axes
        self.lines_ = np.full(axes.shape, None, dtype=object)
        self.bars_ = np.full(axes.shape, None, dtype=object)
        self.missing_markers_ = np.full(axes.shape, None, dtype=object)
        score = "score" if sf.attrs.get("response") == "predict" else "log-odds"
        for pos, column in enumerate(columns):
            cell = np.unravel_index(pos, axes.shape)
            a = axes[cell]
            part = terms[terms["column"] == column]
            numeric = (part["kind"] == "numeric").any()
            drawn, markers = [], []
            for k, cls in enumerate(classes):
                rows = part if cls is None else part[part["class"] == cls]
                label = None if cls is None else f"class {cls}"
                color = f"C{k}"
                if numeric:
                    num = rows[rows["kind"] == "numeric"]
                    kw = {"color": color, "label": label, **(line_kw or {})}
                    drawn.append(a.plot(num["value"].astype(float), num["contribution"],
                                        **kw)[0])
                    x_missing = _missing_position(num["value"].astype(float))
                else:
                    cat = rows[rows["kind"].isin(["categorical", "other"])]
                    labels = [str(v) if kd == "categorical" else "(other)"
                              for v, kd in zip(cat["value"], cat["kind"])]
                    width = 0.8 / len(classes)
                    x = np.arange(len(labels)) + (k - (len(classes) - 1) / 2) * width
                    kw = {"color": color, "width": width, "label": label, **(bar_kw or {})}
                    drawn.append(a.bar(x, cat["contribution"], **kw))
                    a.set_xticks(np.arange(len(labels)))
                    a.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
                    x_missing = len(labels) + (k - (len(classes) - 1) / 2) * width
                miss = rows[rows["kind"] == "missing"]
                if len(miss):
                    kw = {"marker": "D", "linestyle": "none", "color": color,
                          **(missing_kw or {})}
                    markers.append(a.plot([x_missing], miss["contribution"].to_numpy(),
                                          **kw)[0])
            if not numeric and markers:
                ticks = list(a.get_xticks()) + [round(x_missing)]
                labels = [t.get_text() for t in a.get_xticklabels()] + ["(missing)"]
                a.set_xticks(ticks)
                a.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
            elif numeric and markers:
                a.annotate("missing", (x_missing, markers[0].get_ydata()[0]),
                           textcoords="offset points", xytext=(4, 4), fontsize=7)
            if numeric and self.knots and column in self.knots:
                ks = self.knots[column]
                a.plot(ks, np.zeros_like(ks), "|", color="gray", ms=8,
                       transform=a.get_xaxis_transform(), clip_on=False)
            a.axhline(0.0, color="gray", lw=0.5)
            a.set_title(column, fontsize=10)
            if cell[-1] == 0:
                a.set_ylabel(f"contribution ({score})")
            if len(classes) > 1 and pos == 0:
                a.legend(fontsize=7)
            (self.lines_ if numeric else self.bars_)[cell] = drawn
            self.missing_markers_[cell] = markers or None
        return self


def _missing_position(values):
    """x of a numeric axis' missing marker: left of the grid by 8 % of its span."""
    lo, hi = float(np.min(values)), float(np.max(values))
    return lo - 0.08 * ((hi - lo) or 1.0)


def _axes_grid(plt, ax, n, n_cols):
    """``(axes (n_rows, n_cols) object array, figure)`` for ``n`` panels."""
    if ax is not None and not hasattr(ax, "get_subplotspec") and np.iterable(ax):
        flat = np.ravel(np.asarray(ax, dtype=object))
        if flat.size != n:
            raise ValueError(f"ax has {flat.size} axes for {n} columns")
        axes = np.empty((1, n), dtype=object)
        axes[0, :] = list(flat)
        return axes, flat[0].figure
    n_cols = max(1, min(int(n_cols), n))
    n_rows = -(-n // n_cols)
    if ax is None:
        figure = plt.figure(figsize=(4.0 * n_cols, 3.2 * n_rows), layout="constrained")
        spec = figure.add_gridspec(n_rows, n_cols)
    else:
        figure = ax.figure
        ax.set_axis_off()
        spec = ax.get_subplotspec().subgridspec(n_rows, n_cols)
    axes = np.full((n_rows, n_cols), None, dtype=object)
    for pos in range(n):
        r, c = divmod(pos, n_cols)
        axes[r, c] = figure.add_subplot(spec[r, c])
    return axes, figure


def _check_matplotlib(caller):
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"ShapeFunctionDisplay.{caller} needs matplotlib, which is not installed: "
            "pip install matplotlib (skdp.inspection.shape_functions returns the same "
            "values as a DataFrame without it)") from exc
