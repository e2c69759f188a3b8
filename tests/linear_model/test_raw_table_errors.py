"""A raw table (strings, categories) passed to an estimator's fit gets an error that says
the estimators take numeric arrays and points to ``skdp.make_private_pipeline``, without
quoting any value of the data (it used to be a bare "could not convert string to float:
'<a row's value>'")."""

import numpy as np
import pytest

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor

pd = pytest.importorskip("pandas")

SECRET = "Secret-Town"


def _table(n=40):
    return pd.DataFrame({"age": np.arange(n, dtype=float) % 50 + 20,
                         "city": [SECRET, "b", "c", "d"] * (n // 4)})


ESTIMATORS = [
    lambda: DPLogisticRegression(data_norm=1.0, classes=[0, 1]),
    lambda: DPHuberRegressor(data_norm=1.0),
    lambda: DPNonconvexRegressor(data_norm=1.0),
]
TABLES = {
    "strings": lambda: _table(),
    "category": lambda: _table().astype({"city": "category"}),
    "object_array": lambda: _table().to_numpy(),
    "list": lambda: _table().to_numpy().tolist(),
}


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("make", ESTIMATORS, ids=["logistic", "huber", "nonconvex"])
def test_raw_table_points_to_make_private_pipeline(make, table):
    est = make()
    X = TABLES[table]()
    y = np.arange(40) % 2
    with pytest.raises(ValueError) as info:
        est.fit(X, y)
    msg = str(info.value)
    name = type(est).__name__
    assert msg.startswith(f"{name} takes numeric arrays")
    assert f"skdp.make_private_pipeline({name}(...)" in msg
    assert SECRET not in msg and "could not convert" not in msg      # no data value
    if table in ("strings", "category"):
        assert "non-numeric columns ['city']" in msg                  # schema: public
    # the float conversion's error quotes a row's value: it is not chained
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(est))


def test_numeric_dataframe_still_fits():
    X = _table()[["age"]] / 100.0
    reg = DPHuberRegressor(data_norm=1.0, random_state=0).fit(X, np.arange(40) % 2 * 1.0)
    assert reg.privacy_guaranteed_ and reg.coef_.shape == (1,)
