"""
A private pipeline on a raw Parquet table with Dask
===================================================

:func:`~skdp.make_private_pipeline` fits a raw ``dask.dataframe.DataFrame`` -- here read
from a Parquet file -- without collecting its rows: every DP transformer counts on each
partition, the counts are merged exactly and the noise is drawn once on the client; the
spline and one-hot basis is built partition by partition and the model fits it where it
is.  With the same ``random_state`` the released knots and categories are those of the
pandas fit of the same rows, bit for bit.

Below, a small table with numeric columns (one skewed, with missing values) and string
columns is written to Parquet in a temporary directory, fitted with Dask and in memory,
and predicted lazily.  On a cluster, start a ``distributed.Client`` first: nothing else
changes.
"""

import tempfile
from pathlib import Path

import dask
import dask.dataframe as dd
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skdp import DPLogisticRegression, make_private_pipeline

rng = np.random.default_rng(0)
n = 40_000
df = pd.DataFrame({
    "age": rng.integers(18, 90, n).astype(float),
    "income": rng.lognormal(10, 1, n),
    "hours": rng.normal(40, 10, n).round(),
    "job": rng.choice(["clerk", "driver", "nurse", "teacher", "other"], n),
    "region": rng.choice(["north", "south", "east", "west"], n),
})
df.loc[rng.random(n) < 0.05, "income"] = np.nan
df["y"] = ((df["age"] - 45) / 10 + (df["job"] == "nurse") + rng.logistic(size=n) > 0
           ).astype(int)

path = Path(tempfile.mkdtemp()) / "table.parquet"
df.to_parquet(path, row_group_size=10_000)
ddf = dd.read_parquet(path, split_row_groups=True)        # 4 partitions, lazy


def pipeline():
    # the schema is public: state it.  The solver that reduces over partitions in a few
    # passes: solver="auto" picks it itself from n * epsilon = 3e5 (large tables); on
    # these 40,000 rows it would pick DP-SGD, which works too (one round trip per step)
    return make_private_pipeline(
        DPLogisticRegression(classes=[0, 1], solver="objective_perturbation"),
        epsilon=1.0, numeric=["age", "income", "hours"], categorical=["job", "region"],
        random_state=0)


with dask.config.set(scheduler="threads"):
    lazy = pipeline().fit(ddf.drop(columns="y"), ddf["y"])
    proba = lazy.predict_proba(ddf.drop(columns="y"))        # a lazy dask array
    print("lazy predictions:", type(proba).__name__, "; accuracy:",
          round(lazy.score(ddf.drop(columns="y"), ddf["y"]), 4))
    proba = proba.compute()[:, 1]

memory = pipeline().fit(df.drop(columns="y"), df["y"].to_numpy())
released = [p.named_steps["columns"].named_transformers_ for p in (lazy, memory)]
for j, name in enumerate(["age", "income", "hours"]):
    same = np.array_equal(released[0]["numeric"].knots_[j], released[1]["numeric"].knots_[j])
    print(f"knots of {name!r} equal to the in-memory fit's: {same}")
print("categories equal:",
      released[0]["categorical"].categories_ == released[1]["categorical"].categories_)
print("epsilon spent:", round(lazy.epsilon_, 4), "(in memory:", round(memory.epsilon_, 4), ")")
print("largest coefficient difference:",
      float(np.abs(lazy[-1].coef_ - memory[-1].coef_).max()))

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.scatter(memory.predict_proba(df.drop(columns="y"))[:, 1][::40], proba[::40], s=4)
ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
ax.set_xlabel("P(y=1), pipeline fitted in memory")
ax.set_ylabel("P(y=1), fitted on Dask (lazy predict)")
ax.set_title("The same private model from Parquet partitions")
fig.tight_layout()
plt.show()
