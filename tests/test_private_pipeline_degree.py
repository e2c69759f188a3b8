"""make_private_pipeline's spline degree: "auto" is the public rule of
skdp.linear_model._auto (piecewise linear), an int is kept, anything else is refused."""

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

# these tests leave the schema to the dtypes on purpose (tests/test_privacy_plan.py checks
# the message that says so)
pytestmark = pytest.mark.filterwarnings(
    "ignore:make_private_pipeline inferred the public schema")

from skdp import DPLogisticRegression, make_private_pipeline  # noqa: E402
from skdp.linear_model._auto import PIPELINE_SPLINE_DEGREE  # noqa: E402


def _spline(pipe):
    return pipe.named_steps["columns"].transformers[0][1]


@pytest.mark.parametrize("degree, expected", [("auto", PIPELINE_SPLINE_DEGREE), (0, 0),
                                              (3, 3)])
def test_degree(degree, expected):
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), degree=degree)
    assert _spline(pipe).degree == expected


def test_auto_degree_is_piecewise_linear_and_fits():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, 3000).astype(float),
                       "job": rng.choice(["a", "b"], 3000)})
    y = (df["age"] > 50).astype(int).to_numpy()
    pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=1.0,
                                 random_state=0).fit(df, y)
    spline = pipe.named_steps["columns"].named_transformers_["numeric"]
    # degree 1: as many basis columns as knots (plus the missing-value column)
    assert _spline(pipe).degree == 1 == PIPELINE_SPLINE_DEGREE
    assert spline.n_features_out_ == len(spline.knots_[0]) + 1
    assert pipe.score(df, y) > 0.9


@pytest.mark.parametrize("bad", ["cubic", "Auto"])
def test_bad_degree_is_refused(bad):
    with pytest.raises(ValueError, match="degree"):
        make_private_pipeline(DPLogisticRegression(classes=[0, 1]), degree=bad)
