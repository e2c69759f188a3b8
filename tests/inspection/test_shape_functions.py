"""skdp.inspection: the shape functions of a private pipeline are its model, exactly.

The check that matters: for a row assembled from shape-function points (grid values,
values beyond the knots, NaN, released categories, an unseen category, None), the sum of
the looked-up contributions and the intercept is the pipeline's own score -- for binary,
multinomial and regression pipelines, made by ``make_private_pipeline`` or by hand.
"""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402

from skdp import (DPHuberRegressor, DPLogisticRegression, DPStandardScaler,  # noqa: E402
                  PrivatePipeline, make_private_pipeline)
from skdp.inspection import (ShapeFunctionDisplay, contributions,  # noqa: E402
                             shape_functions, term_importances)
from skdp.preprocessing import (DPOneHotEncoder, DPRobustScaler,  # noqa: E402
                                DPSplineTransformer, RowwiseFunctionTransformer)

N = 3000


def _table(seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.uniform(18, 90, N),
        "hours": rng.lognormal(3.5, 0.4, N),
        "income": rng.lognormal(10, 1, N),
        "score": rng.uniform(-1, 1, N),
        "job": rng.choice(["clerk", "nurse", "driver", "rare"], N, p=[.4, .3, .298, .002]),
        "city": rng.choice(["north", "south"], N).astype(object),
    })
    df.loc[::13, "age"] = np.nan
    df.loc[::29, "income"] = np.nan
    df.loc[::31, "job"] = None
    logit = (df["age"].fillna(40) - 45) / 10 + (df["job"] == "nurse") - 0.5 * df["score"]
    y2 = (logit + rng.logistic(size=N) > 0).astype(int).to_numpy()
    y3 = np.digitize(logit + rng.logistic(size=N), [-1.0, 1.0])
    yr = (logit + rng.normal(size=N)).to_numpy()
    return df, y2, y3, yr


DF, Y2, Y3, YR = _table()
NUMERIC, CATEGORICAL = ["age", "hours", "income", "score"], ["job", "city"]


def _hand_built(model):
    """ColumnTransformer of the three DP bases, a nested pipeline behind an identity
    row-wise step, and a DPStandardScaler with public bounds."""
    columns = ColumnTransformer([
        ("spline", DPSplineTransformer(n_knots=6, degree=3), ["age"]),
        ("nested", Pipeline([("identity", RowwiseFunctionTransformer()),
                             ("bins", DPSplineTransformer(n_knots=5, degree=0))]),
         ["hours"]),
        ("robust", DPRobustScaler(), ["income"]),
        ("standard", DPStandardScaler(feature_bounds=(-1.0, 1.0)), ["score"]),
        ("onehot", DPOneHotEncoder(), ["job", "city"]),
    ])
    return PrivatePipeline([("columns", columns), ("model", model)], epsilon=2.0,
                           random_state=0)


CASES = {
    "binary": lambda: make_private_pipeline(
        DPLogisticRegression(classes=[0, 1]), epsilon=2.0, numeric=NUMERIC,
        categorical=CATEGORICAL, random_state=0).fit(DF, Y2),
    "multinomial": lambda: make_private_pipeline(
        DPLogisticRegression(classes=[0, 1, 2]), epsilon=2.0, numeric=NUMERIC,
        categorical=CATEGORICAL, random_state=1).fit(DF, Y3),
    "huber": lambda: make_private_pipeline(
        DPHuberRegressor(y_bound=5.0), epsilon=2.0, numeric=NUMERIC,
        categorical=CATEGORICAL, random_state=2).fit(DF, YR),
    "hand-built binary": lambda: _hand_built(
        DPLogisticRegression(classes=[0, 1], data_norm="auto")).fit(DF, Y2),
    "hand-built multinomial": lambda: _hand_built(
        DPLogisticRegression(classes=[0, 1, 2], data_norm="auto")).fit(DF, Y3),
}
_FITTED = {}


def _fitted(case):
    if case not in _FITTED:
        _FITTED[case] = CASES[case]()
    return _FITTED[case]


def _score(pipe, X):
    return pipe.decision_function(X) if hasattr(pipe[-1], "decision_function") \
        else pipe.predict(X)


def _lookup(sf, column, value):
    """``g_column(value)`` from the shape-function table: the grid point itself, the
    boundary point for a value beyond the grid (the bases clamp), the missing bucket for
    NaN/None, the ``other`` bucket for an unseen category."""
    part = sf[sf["column"] == column]
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return part[part["kind"] == "missing"]
    if (part["kind"] == "numeric").any():
        num = part[part["kind"] == "numeric"]
        grid = num["value"].astype(float)
        target = min(max(value, grid.min()), grid.max())
        hit = num[grid == target]
        assert len(hit), f"{value} is not a grid point of {column}"
        return hit
    hit = part[(part["kind"] == "categorical") & (part["value"] == value)]
    return hit if len(hit) else part[part["kind"] == "other"]


def _rows_from_points(sf, n_rows, seed):
    """Rows whose every value is a shape-function point, or beyond the grid, or missing
    or unseen."""
    rng = np.random.default_rng(seed)
    rows = {}
    for column in NUMERIC:
        num = sf[(sf["column"] == column) & (sf["kind"] == "numeric")]
        grid = np.unique(num["value"].astype(float))
        span = grid[-1] - grid[0]
        # a DPStandardScaler refuses NaN: its column has no missing bucket
        nan = [np.nan] if (sf[sf["column"] == column]["kind"] == "missing").any() else []
        beyond = [grid[0] - 10 * span, grid[-1] + 1e6 * span]
        choices = list(grid) + nan + beyond
        rows[column] = np.array([choices[i] for i in rng.integers(0, len(choices), n_rows)])
        rows[column][:3] = (nan + beyond + [grid[1]])[:3]    # always covered
    for column in CATEGORICAL:
        cats = list(sf[(sf["column"] == column) & (sf["kind"] == "categorical")]["value"])
        choices = cats + ["never-seen-category", None]
        values = [choices[i] for i in rng.integers(0, len(choices), n_rows)]
        values[:2] = ["never-seen-category", None]
        rows[column] = np.array(values, dtype=object)
    return pd.DataFrame(rows)[DF.columns]


@pytest.mark.parametrize("case", list(CASES))
def test_contributions_at_a_rows_values_plus_intercept_are_the_pipelines_score(case):
    pipe = _fitted(case)
    sf = shape_functions(pipe)
    rows = _rows_from_points(sf, 40, seed=3)
    expected = _score(pipe, rows)
    classes = list(dict.fromkeys(sf["class"])) if "class" in sf.columns else [None]
    total = np.zeros((len(rows), len(classes)))
    for k, cls in enumerate(classes):
        part = sf if cls is None else sf[sf["class"] == cls]
        total[:, k] += part[part["kind"] == "intercept"]["contribution"].to_numpy()
        for i, row in rows.iterrows():
            for column in DF.columns:
                hit = _lookup(part, column, row[column])
                assert len(hit) == 1, (column, row[column])
                total[i, k] += hit["contribution"].iloc[0]
    np.testing.assert_allclose(total.reshape(expected.shape), expected,
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", list(CASES))
def test_contributions_of_rows_sum_to_the_score(case):
    pipe = _fitted(case)
    X = pd.concat([DF.head(300), _rows_from_points(shape_functions(pipe), 20, 4)],
                  ignore_index=True)
    c = contributions(pipe, X)
    if isinstance(c.columns, pd.MultiIndex):
        total = c.T.groupby(level="class", sort=False).sum().T.to_numpy()
        assert list(c.columns.get_level_values("class").unique()) == list(pipe.classes_)
    else:
        total = c.sum(axis=1).to_numpy()
        assert list(c.columns) == list(DF.columns) + ["(intercept)"]
    np.testing.assert_allclose(total, _score(pipe, X), rtol=1e-10, atol=1e-10)


def test_table_layout_and_public_points():
    pipe = _fitted("binary")
    sf = shape_functions(pipe, grid_resolution=50)
    assert list(sf.columns) == ["column", "kind", "value", "contribution"]
    spline = pipe.named_steps["columns"].named_transformers_["numeric"]
    for column, knots in zip(spline.feature_names_in_, spline.knots_):
        grid = sf[(sf["column"] == column) & (sf["kind"] == "numeric")]["value"].astype(float)
        assert grid.min() == knots[0] and grid.max() == knots[-1]
        assert set(knots) <= set(grid) and len(grid) == len(np.union1d(
            np.linspace(knots[0], knots[-1], 50), knots))
        assert (sf[sf["column"] == column]["kind"] == "missing").sum() == 1
    enc = pipe.named_steps["columns"].named_transformers_["categorical"]
    for column, cats in zip(enc.feature_names_in_, enc.categories_):
        part = sf[sf["column"] == column]
        assert list(part[part["kind"] == "categorical"]["value"]) == list(cats)
        assert (part["kind"] == "other").sum() == 1 and (part["kind"] == "missing").sum() == 1
    intercept = sf[sf["column"] == "(intercept)"]["contribution"]
    assert intercept.tolist() == [pipe[-1].intercept_[0]] == [sf.attrs["intercept"]]
    multi = shape_functions(_fitted("multinomial"))
    assert list(multi.columns) == ["column", "kind", "value", "contribution", "class"]
    assert sorted(multi["class"].unique()) == [0, 1, 2]
    # robust scaling is a line over the released clipping range (hand-built pipeline)
    hand = shape_functions(_fitted("hand-built binary"))
    robust = _fitted("hand-built binary").named_steps["columns"].named_transformers_["robust"]
    line = hand[(hand["column"] == "income") & (hand["kind"] == "numeric")]
    assert line["value"].min() == robust.clip_bounds_[0, 0]
    assert line["value"].max() == robust.clip_bounds_[1, 0]
    slope = np.diff(line["contribution"]) / np.diff(line["value"].astype(float))
    np.testing.assert_allclose(slope, slope[0], rtol=1e-8)
    with pytest.raises(ValueError, match="grid_resolution"):
        shape_functions(pipe, grid_resolution=1)


def test_reading_the_release_changes_nothing():
    pipe = _fitted("binary")
    before = (pipe.epsilon_, pipe.delta_, pipe[-1].coef_.copy(), pipe.privacy_guaranteed_)
    shape_functions(pipe)
    term_importances(pipe)
    assert (pipe.epsilon_, pipe.delta_, pipe.privacy_guaranteed_) == \
        (before[0], before[1], before[3])
    assert np.array_equal(pipe[-1].coef_, before[2])


@pytest.mark.parametrize("case", ["binary", "multinomial"])
def test_term_importances_public_grid_and_data(case):
    pipe = _fitted(case)
    public = term_importances(pipe)
    assert public.attrs["source"] == "public grid" and set(public["source"]) == {
        "public grid"}
    assert sorted(public["column"]) == sorted(DF.columns)
    assert public["importance"].is_monotonic_decreasing
    sf = shape_functions(pipe)
    terms = sf[sf["kind"] != "intercept"]
    classes = terms["class"].unique() if "class" in terms.columns else [None]
    for column in DF.columns:
        devs = []
        for cls in classes:
            g = terms[(terms["column"] == column)
                      & ((terms["class"] == cls) if cls is not None else True)]
            g = g["contribution"].to_numpy()
            devs.append(np.mean(np.abs(g - g.mean())))
        got = public.set_index("column").loc[column, "importance"]
        assert got == pytest.approx(np.mean(devs), rel=1e-12)
    on_data = term_importances(pipe, DF)
    assert on_data.attrs["source"].startswith("data (not differentially private")
    c = contributions(pipe, DF)
    for column in DF.columns:
        part = c.xs(column, axis=1, level="column") if isinstance(
            c.columns, pd.MultiIndex) else c[[column]]
        expected = np.mean(np.mean(np.abs(part - part.mean()), axis=0))
        got = on_data.set_index("column").loc[column, "importance"]
        assert got == pytest.approx(expected, rel=1e-12)
    # the column the labels depend on most is among the top two on the data
    assert "age" in list(on_data["column"][:2])


def test_non_additive_pipeline_is_refused_with_a_reason():
    mixing = PrivatePipeline([
        ("columns", ColumnTransformer([
            ("both", Pipeline([("sum", RowwiseFunctionTransformer(np.sum)),
                               ("spline", DPSplineTransformer(n_knots=4))]),
             ["age", "hours"]),
            ("onehot", DPOneHotEncoder(), ["job"])])),
        ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto"))],
        random_state=0).fit(DF, Y2)
    with pytest.raises(ValueError, match="not additive"):
        shape_functions(mixing)
    with pytest.raises(ValueError, match="not additive"):
        contributions(mixing, DF.head())


def test_row_wise_function_of_one_column_has_its_grid_on_the_function_scale():
    pipe = PrivatePipeline([
        ("columns", ColumnTransformer([
            ("log", Pipeline([("log", RowwiseFunctionTransformer(np.log1p)),
                              ("spline", DPSplineTransformer(n_knots=5))]), ["income"]),
            ("onehot", DPOneHotEncoder(), ["city"])])),
        ("model", DPLogisticRegression(classes=[0, 1], data_norm="auto"))],
        random_state=0).fit(DF, Y2)
    sf = shape_functions(pipe)
    assert sf.attrs["transformed"] == ["income"]
    knots = pipe.named_steps["columns"].named_transformers_["log"][-1].knots_[0]
    assert sf[(sf["column"] == "income") & (sf["kind"] == "numeric")]["value"].max() == \
        knots[-1]
    c = contributions(pipe, DF.head(50))
    np.testing.assert_allclose(c.sum(axis=1), pipe.decision_function(DF.head(50)),
                               rtol=1e-10, atol=1e-10)


def test_plain_pipeline_with_an_imputer_is_walked_column_by_column():
    """A scikit-learn Pipeline (not a PrivatePipeline, which refuses a data-fitted
    imputer) with a column-wise imputer before the spline: still additive; the imputed
    columns are listed as transformed (NaN never reaches the spline's missing bucket)."""
    from sklearn.impute import SimpleImputer

    pipe = Pipeline([
        ("columns", ColumnTransformer([
            ("num", Pipeline([("impute", SimpleImputer(strategy="constant", fill_value=0.0)),
                              ("spline", DPSplineTransformer(n_knots=5, random_state=0))]),
             ["age", "income"]),
            ("onehot", DPOneHotEncoder(random_state=0), ["job"])])),
        ("model", DPLogisticRegression(classes=[0, 1], data_norm=4.0, random_state=0))])
    pipe.fit(DF, Y2)
    sf = shape_functions(pipe)
    assert sf.attrs["transformed"] == ["age", "income"]
    c = contributions(pipe, DF.head(200))
    np.testing.assert_allclose(c.sum(axis=1), pipe.decision_function(DF.head(200)),
                               rtol=1e-10, atol=1e-10)
    assert c["hours"].eq(0).all()      # a dropped column contributes nothing


def test_display_draws_lines_bars_and_missing_markers():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pipe = _fitted("binary")
    disp = ShapeFunctionDisplay.from_estimator(pipe, n_cols=3)
    assert disp.axes_.shape == (2, 3)
    numeric = [disp.lines_.ravel()[i] for i in range(4)]
    assert all(len(lines) == 1 for lines in numeric)
    assert disp.bars_.ravel()[4] is not None and disp.lines_.ravel()[4] is None
    sf = shape_functions(pipe)
    age = sf[(sf["column"] == "age") & (sf["kind"] == "numeric")]
    np.testing.assert_array_equal(numeric[0][0].get_ydata(), age["contribution"])
    assert all(m is not None for m in disp.missing_markers_.ravel()[:6])
    job = sf[(sf["column"] == "job") & sf["kind"].isin(["categorical", "other"])]
    heights = [p.get_height() for p in disp.bars_.ravel()[4][0]]
    np.testing.assert_array_equal(heights, job["contribution"])
    plt.close("all")

    multi = ShapeFunctionDisplay.from_estimator(_fitted("multinomial"), ["age", "job"])
    assert multi.axes_.shape == (1, 2) and len(multi.lines_[0, 0]) == 3
    assert len(multi.bars_[0, 1]) == 3
    fig, axes = plt.subplots(1, 2)
    given = ShapeFunctionDisplay.from_estimator(pipe, ["age", "city"], ax=axes)
    assert given.figure_ is fig and given.axes_[0, 1] is axes[1]
    again = ShapeFunctionDisplay(given.shape_functions, columns=["city"]).plot()
    assert again.axes_.shape == (1, 1)
    with pytest.raises(ValueError, match="no shape function for columns"):
        ShapeFunctionDisplay.from_estimator(pipe, ["nope"])
    plt.close("all")


def test_display_without_matplotlib_says_so(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="needs matplotlib"):
        ShapeFunctionDisplay.from_estimator(_fitted("binary"))
    assert len(shape_functions(_fitted("binary")))     # the table needs no matplotlib
