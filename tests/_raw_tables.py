"""A raw table of mixed types with missing values (numeric and string columns), shared by
the tests of the private pipeline on Dask and of its compact basis."""

import numpy as np

NUMERIC, CATEGORICAL = ["age", "income", "hours"], ["job", "edu"]


def raw_table(n=6000, seed=0):
    """``(df, y)``: a pandas DataFrame of ``NUMERIC`` and ``CATEGORICAL`` columns (NaN in
    ``income``, None in ``job``) and a binary Series ``y`` (age above 45, 10 % flipped)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "income": rng.lognormal(10, 1, n),
        "hours": rng.normal(40, 10, n),
        "job": rng.choice(list("abcdefg"), n, p=[.3, .2, .2, .1, .1, .07, .03]).astype(object),
        "edu": rng.choice(["hs", "ba", "ms", "phd"], n).astype(object),
    })
    df.loc[::13, "income"] = np.nan
    df.loc[::17, "job"] = None
    y = pd.Series(((df["age"] > 45) ^ (rng.random(n) < 0.1)).astype(int), name="y")
    return df, y
