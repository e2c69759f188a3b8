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
