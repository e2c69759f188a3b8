"""Two real datasets shipped inside the package, with *public* preprocessing.

``python -m skdp demo``, the examples and the tests use them without any data home.  Unlike
the reproduction loaders of :mod:`skdp.datasets._uci` (min–max over the file), nothing here
is computed from the data: every scale and category list comes from the datasets'
documentation, so the row-norm bound ``data_norm`` that follows is public and a DP fit on
these features keeps its guarantee end to end.

* Adult (Census Income, UCI, CC BY 4.0; Becker & Kohavi 1996): ``adult.data``, 32,561 rows.
* Bike Sharing hourly (UCI, CC BY 4.0; Fanaee-T & Gama 2013): ``hour.csv``, 17,379 rows.
"""

import csv
import gzip
import io
import math
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_demo_adult", "load_demo_bike"]

# Category levels as listed in adult.names (public); '?' (missing) encodes as all zeros.
_ADULT_CATEGORIES = {
    1: "Private, Self-emp-not-inc, Self-emp-inc, Federal-gov, Local-gov, State-gov, "
    "Without-pay, Never-worked",
    3: "Bachelors, Some-college, 11th, HS-grad, Prof-school, Assoc-acdm, Assoc-voc, 9th, "
    "7th-8th, 12th, Masters, 1st-4th, 10th, Doctorate, 5th-6th, Preschool",
    5: "Married-civ-spouse, Divorced, Never-married, Separated, Widowed, "
    "Married-spouse-absent, Married-AF-spouse",
    6: "Tech-support, Craft-repair, Other-service, Sales, Exec-managerial, Prof-specialty, "
    "Handlers-cleaners, Machine-op-inspct, Adm-clerical, Farming-fishing, Transport-moving, "
    "Priv-house-serv, Protective-serv, Armed-Forces",
    7: "Wife, Own-child, Husband, Not-in-family, Other-relative, Unmarried",
    8: "White, Asian-Pac-Islander, Amer-Indian-Eskimo, Other, Black",
    9: "Female, Male",
    13: "United-States, Cambodia, England, Puerto-Rico, Canada, Germany, "
    "Outlying-US(Guam-USVI-etc), India, Japan, Greece, South, China, Cuba, Iran, Honduras, "
    "Philippines, Italy, Poland, Jamaica, Vietnam, Mexico, Portugal, Ireland, France, "
    "Dominican-Republic, Laos, Ecuador, Taiwan, Haiti, Columbia, Hungary, Guatemala, "
    "Nicaragua, Scotland, Thailand, Yugoslavia, El-Salvador, Trinadad&Tobago, Peru, Hong, "
    "Holand-Netherlands",
}
_ADULT_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
]
# Public a-priori scales: value / scale, clipped to [0, 1]; money on a log scale.
_ADULT_NUMERIC = {
    0: ("age", lambda v: v / 100.0),
    4: ("education-num", lambda v: v / 16.0),
    10: ("capital-gain", lambda v: math.log1p(v) / math.log1p(1e5)),
    11: ("capital-loss", lambda v: math.log1p(v) / math.log1p(1e5)),
    12: ("hours-per-week", lambda v: v / 100.0),
}


def _read_gz(name):
    raw = resources.files("skdp.datasets").joinpath("data", name).read_bytes()
    return io.StringIO(gzip.decompress(raw).decode("utf-8"))


def _onehot_block(values, levels):
    """One column per level; a value outside ``levels`` gives a row of zeros."""
    return (np.asarray(values)[:, None] == np.asarray(levels)[None, :]).astype(np.float64)


def load_demo_adult():
    """Adult census income (training file) with public preprocessing.

    Features: ``age/100``, ``education-num/16``, ``log1p(capital-gain)/log1p(1e5)``,
    ``log1p(capital-loss)/log1p(1e5)``, ``hours-per-week/100`` (each clipped to [0, 1]) and
    one-hot columns of the 8 categoricals with the levels listed in ``adult.names``
    (missing ``?`` is all zeros).  ``fnlwgt`` (a census sampling weight) is dropped.
    Every row has at most 5 numeric entries in [0, 1] and one 1 per categorical block, so
    ``||x||_2 <= sqrt(13)`` **by construction** (``bunch.row_norm_bound``).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (32561, 104), ``target`` (1 for income >50K), ``feature_names``,
        ``row_norm_bound``.

    Examples
    --------
    >>> from skdp.datasets import load_demo_adult
    >>> adult = load_demo_adult()
    >>> adult.data.shape, round(adult.row_norm_bound, 3)
    ((32561, 104), 3.606)
    """
    rows = [r for r in csv.reader(_read_gz("adult.data.gz"), skipinitialspace=True) if r]
    columns = np.array(rows).T
    blocks, names = [], []
    for col, (name, scale) in _ADULT_NUMERIC.items():
        vals = np.array([scale(float(v)) for v in columns[col]])
        blocks.append(np.clip(vals, 0.0, 1.0)[:, None])
        names.append(name)
    for col, levels in _ADULT_CATEGORIES.items():
        levels = [lev.strip() for lev in levels.split(",")]
        blocks.append(_onehot_block(columns[col], levels))
        names.extend(f"{_ADULT_NAMES[col]}={lev}" for lev in levels)
    X = np.ascontiguousarray(np.hstack(blocks))
    y = np.char.startswith(columns[14], ">50K").astype(np.int64)
    return Bunch(
        data=X, target=y, feature_names=names, target_names=["<=50K", ">50K"],
        row_norm_bound=math.sqrt(len(_ADULT_NUMERIC) + len(_ADULT_CATEGORIES)),
    )


_BIKE_CATEGORIES = {
    "season": range(1, 5), "yr": range(0, 2), "mnth": range(1, 13), "hr": range(0, 24),
    "holiday": range(0, 2), "weekday": range(0, 7), "workingday": range(0, 2),
    "weathersit": range(1, 5),
}
_BIKE_NUMERIC = ["temp", "atemp", "hum", "windspeed"]  # normalised by UCI (÷41, 50, 100, 67)


def load_demo_bike():
    """Bike-sharing hourly rentals with public preprocessing.

    Features: one-hot of the 8 calendar/weather categoricals (levels from the UCI readme)
    and the 4 weather measurements as published by UCI (already divided by fixed constants,
    clipped to [0, 1]); ``||x||_2 <= sqrt(12)`` by construction.  Target:
    ``cnt / 1000`` (rentals per hour in thousands; the public scale keeps it in [0, 1]).
    ``casual`` and ``registered`` (which sum to ``cnt``) are not features.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (17379, 61), ``target``, ``feature_names``, ``row_norm_bound``.

    Examples
    --------
    >>> from skdp.datasets import load_demo_bike
    >>> bike = load_demo_bike()
    >>> bike.data.shape, bool(bike.target.max() <= 1.0)
    ((17379, 61), True)
    """
    text = _read_gz("bike_hour.csv.gz")
    header = text.readline().strip().split(",")
    keep = [j for j, name in enumerate(header) if name != "dteday"]
    table = np.loadtxt(text, delimiter=",", usecols=keep, ndmin=2)
    col = {header[j]: table[:, k] for k, j in enumerate(keep)}
    blocks, names = [], []
    for name, levels in _BIKE_CATEGORIES.items():
        blocks.append(_onehot_block(col[name], list(levels)))
        names.extend(f"{name}={v}" for v in levels)
    for name in _BIKE_NUMERIC:
        blocks.append(np.clip(col[name], 0.0, 1.0)[:, None])
        names.append(name)
    X = np.ascontiguousarray(np.hstack(blocks))
    y = col["cnt"] / 1000.0
    return Bunch(
        data=X, target=y, feature_names=names,
        row_norm_bound=math.sqrt(len(_BIKE_CATEGORIES) + len(_BIKE_NUMERIC)),
    )
