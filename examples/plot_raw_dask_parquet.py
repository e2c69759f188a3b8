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
# a three-class label for the last part: which of three scores is largest
scores = np.column_stack([(df["hours"] - 40) / 10, (df["region"] == "north") * 1.0,
                          np.log(df["income"].fillna(22_000) / 22_000)])
df["segment"] = np.array(["hours", "north", "income"])[
    np.argmax(scores + 0.5 * rng.standard_normal((n, 3)), axis=1)]

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
    features = ddf.drop(columns=["y", "segment"])
    lazy = pipeline().fit(features, ddf["y"])
    proba = lazy.predict_proba(features)                     # a lazy dask array
    print("lazy predictions:", type(proba).__name__, "; accuracy:",
          round(lazy.score(features, ddf["y"]), 4))
    proba = proba.compute()[:, 1]

memory = pipeline().fit(df.drop(columns=["y", "segment"]), df["y"].to_numpy())
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
ax.scatter(memory.predict_proba(df.drop(columns=["y", "segment"]))[:, 1][::40],
           proba[::40], s=4)
ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
ax.set_xlabel("P(y=1), pipeline fitted in memory")
ax.set_ylabel("P(y=1), fitted on Dask (lazy predict)")
ax.set_title("The same private model from Parquet partitions")
fig.tight_layout()
plt.show()

# %%
# A multiclass label works the same way.  The multinomial model's default solver, DP-SGD,
# draws each step's Poisson batch on the client, exactly as the in-memory loop does, sends
# every partition the positions of its sampled rows and brings back one clipped gradient
# sum per partition; the noise and the step are the in-memory ones, so the transformers'
# release, the plan, the events and the model are again those of the in-memory fit (up to
# the rounding of the partition sums).
segments = ["hours", "income", "north"]
with dask.config.set(scheduler="threads"):
    multi = make_private_pipeline(DPLogisticRegression(classes=segments), epsilon=1.0,
                                  numeric=["age", "income", "hours"],
                                  categorical=["job", "region"], random_state=0)
    multi.fit(features, ddf["segment"])
    print("three classes on Dask:", multi[-1].solver_, "; accuracy:",
          round(multi.score(features, ddf["segment"]), 4), "; epsilon spent:",
          round(multi.epsilon_, 4))
in_memory = make_private_pipeline(DPLogisticRegression(classes=segments), epsilon=1.0,
                                  numeric=["age", "income", "hours"],
                                  categorical=["job", "region"], random_state=0)
in_memory.fit(df.drop(columns=["y", "segment"]), df["segment"])
print("in memory:", round(in_memory.score(df.drop(columns=["y", "segment"]), df["segment"]), 4),
      "; same events:", in_memory[-1].dp_event_ == multi[-1].dp_event_,
      "; largest coefficient difference:",
      float(np.abs(in_memory[-1].coef_ - multi[-1].coef_).max()))

# %%
# Private model selection runs on the partitions as well.  ``DPGridSearchCV`` (and
# ``dp_cross_validate``) split the rows by position into public folds -- a permutation
# drawn from ``n`` and the seed alone, the folds an in-memory search would use -- fit every
# candidate on its training part where the partitions are, and sum each validation fold's
# clipped scores per partition on the workers: one number per partition reaches the
# client, where the noise is added.  The whole procedure, refit included, is accounted
# in ``epsilon_``; with a solver whose Dask fit is the in-memory model (objective
# perturbation) the selection is the in-memory search's.
from skdp.model_selection import DPGridSearchCV  # noqa: E402

grid = {"columns__numeric__n_knots": [4, 8]}
with dask.config.set(scheduler="threads"):
    search = DPGridSearchCV(pipeline(), grid, epsilon=1.0, cv=3, random_state=0)
    search.fit(features, ddf["y"])
same = DPGridSearchCV(pipeline(), grid, epsilon=1.0, cv=3, random_state=0).fit(
    df.drop(columns=["y", "segment"]), df["y"].to_numpy())
print("search on Dask:", search.best_params_, "; released score:",
      round(search.best_score_, 4), "; epsilon spent:", round(search.epsilon_, 4))
print("in memory:", same.best_params_, "; released score:", round(same.best_score_, 4))
