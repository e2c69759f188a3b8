"""Shared protocol of the "raw table to private classifier" benchmark.

Imports only numpy, pandas and scikit-learn (never skdp), so the peers' own virtual
environments can run it too.  ``load_raw`` returns the raw UCI columns (strings as object
dtype, numbers numeric) and a 0/1 int64 target; ``split`` is the one train/test split every
contender uses.
"""

import os

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

EPSILONS = (0.5, 1.0, 2.0, 10.0)
DATASETS = ("adult", "bank", "credit_card")

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
]
CREDIT_TARGET = "Y"  # "default payment next month" in this copy's header (ID, X1..X23, Y)


def default_data_home():
    return os.environ.get("SKDP_DATA", "../shared/data")


def _strings_as_object(X):
    # pandas >= 3 reads strings as its "str" dtype; the protocol keeps them object.
    for c in X.columns:
        if not pd.api.types.is_numeric_dtype(X[c].dtype):
            X[c] = X[c].astype(object)
    return X


def load_raw(name, data_home=None):
    """Return ``(X, y)``: the raw feature table and the 0/1 target of one UCI data set."""
    home = default_data_home() if data_home is None else data_home
    if name == "adult":
        df = pd.read_csv(os.path.join(home, "adult", "adult.data"), header=None,
                         names=ADULT_COLUMNS + ["income"], skipinitialspace=True,
                         na_values=["?"])
        y = df.pop("income") == ">50K"
    elif name == "bank":
        df = pd.read_csv(os.path.join(home, "bank", "bank-full.csv"), sep=";")
        y = df.pop("y") == "yes"
    elif name == "credit_card":
        df = pd.read_csv(os.path.join(home, "creditcard", "UCI_Credit_Card.csv"))
        if df.columns[-1] != CREDIT_TARGET:
            raise ValueError(f"expected the target {CREDIT_TARGET!r} last, got {df.columns[-1]!r}")
        df = df.drop(columns="ID")
        y = df.pop(CREDIT_TARGET) == 1
    else:
        raise ValueError(f"unknown data set {name!r}; expected one of {DATASETS}")
    return _strings_as_object(df), y.to_numpy().astype(np.int64)


# Regression tables (bench_pipeline_selection.py).  The target is mapped to
# ``(y - center) / half_range`` with a public range taken from the data set's documentation
# or the physical domain, never from the rows, so it lies in [-1, 1] over that range and a
# regressor can be given ``y_bound = 1`` (R^2 is unchanged by the affine map).
REGRESSION_DATASETS = ("airfoil", "concrete", "wine")
REGRESSION_TARGET_RANGE = {
    "airfoil": (100.0, 150.0),  # scaled sound pressure level, dB (a public guess of the domain)
    "concrete": (0.0, 100.0),   # compressive strength, MPa (ordinary concrete)
    "wine": (0.0, 10.0),        # sensory quality score, documented as 0-10
}
AIRFOIL_COLUMNS = ["frequency", "angle", "chord", "velocity", "thickness", "sound_pressure"]


def load_raw_regression(name, data_home=None):
    """Return ``(X, y)``: the raw feature table and the publicly rescaled float target."""
    home = default_data_home() if data_home is None else data_home
    if name == "airfoil":
        df = pd.read_csv(os.path.join(home, "airfoil", "airfoil_self_noise.dat"), sep=r"\s+",
                         header=None, names=AIRFOIL_COLUMNS)
        y = df.pop("sound_pressure")
    elif name == "concrete":
        df = pd.read_csv(os.path.join(home, "concrete", "Concrete_Data.csv"))
        y = df.pop(df.columns[-1])
    elif name == "wine":  # red and white together, the colour as a string column
        parts = []
        for color in ("red", "white"):
            part = pd.read_csv(os.path.join(home, "wine", f"winequality-{color}.csv"), sep=";")
            part["color"] = color
            parts.append(part)
        df = pd.concat(parts, ignore_index=True)
        y = df.pop("quality")
    else:
        raise ValueError(f"unknown data set {name!r}; expected one of {REGRESSION_DATASETS}")
    lo, hi = REGRESSION_TARGET_RANGE[name]
    y = (y.to_numpy(dtype=np.float64) - (lo + hi) / 2) / ((hi - lo) / 2)
    return _strings_as_object(df), y


def split_regression(X, y, seed):
    """70/30 split (not stratified): ``X_train, X_test, y_train, y_test``."""
    return train_test_split(X, y, test_size=0.3, random_state=seed)


def split(X, y, seed):
    """70/30 stratified split: ``X_train, X_test, y_train, y_test``."""
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def CATEGORICAL(X):
    """Object-dtype (string) columns."""
    return [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c].dtype)]


def NUMERIC(X):
    """All other columns."""
    cat = set(CATEGORICAL(X))
    return [c for c in X.columns if c not in cat]


def parse_seeds(text):
    """``"0-9"``, ``"0,3,5"`` or ``"4"`` as a list of ints (the benchmarks' ``--seeds``)."""
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds
