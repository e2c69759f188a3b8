"""Small and rare-positive raw tables: analogues of the held-out tables of issue 48.

Imports only numpy, pandas and scikit-learn (never skdp), so the peers' own virtual
environments build the very same tables (``peers_small_tables.py``) as skdp's side
(``bench_small_tables.py``).  Every table is fixed: its rows are drawn once with the
table's own seed (``TABLE_SEED``); the benchmark's seeds then vary the 70/30 split of
``_raw_protocol`` (stratified for the classifiers) and the fits' noise.

* ``cc_*``: the UCI credit card table subsampled to 2,000-7,000 rows, its positive rate
  lowered to 3-5 % (positives dropped, seeded), 2-4 raw columns kept;
* ``bank_*``: Bank with 3 or 5 raw columns (the whole table, and a 10,000-row sample);
* ``adult_*``: Adult subsamples of 1,700, 5,000 and 18,000 rows, 8-13 raw columns;
* ``synth_mono``: 7,000 rows, 3 raw columns, one monotone numeric column carrying a
  logistic signal, two noise columns (numeric and integer), 3 % positives;
* ``years_reg``: a regression table (target publicly scaled into [-1, 1]) with a strong
  numeric column, a noise column and a weak integer column of 20 distinct years
  (1978-2016).
"""

import numpy as np
import pandas as pd

from _raw_protocol import load_raw, split, split_regression

TABLE_SEED = 20261129
EPSILONS = (0.5, 1.0, 10.0)
DELTA = 1e-6

CC_NAMES = {"X1": "limit_bal", "X5": "age", "X6": "pay_0", "X12": "bill_amt1",
            "X18": "pay_amt1"}

#: name -> (kind, builder arguments)
TABLES = {
    "cc_2k_3pct_2col": ("binary", dict(source="credit_card", n=2000, rate=0.03,
                                       columns=["X1", "X6"])),
    "cc_4k_4pct_3col": ("binary", dict(source="credit_card", n=4000, rate=0.04,
                                       columns=["X1", "X5", "X6"])),
    "cc_7k_5pct_4col": ("binary", dict(source="credit_card", n=7000, rate=0.05,
                                       columns=["X1", "X5", "X12", "X18"])),
    "bank_3col": ("binary", dict(source="bank", n=None, rate=None,
                                 columns=["age", "balance", "duration"])),
    "bank_10k_5col": ("binary", dict(source="bank", n=10000, rate=None,
                                     columns=["age", "job", "balance", "housing",
                                              "campaign"])),
    "adult_1700_8col": ("binary", dict(source="adult", n=1700, rate=None,
                                       columns=["age", "workclass", "education-num",
                                                "marital-status", "occupation", "sex",
                                                "capital-gain", "hours-per-week"])),
    "adult_5k_13col": ("binary", dict(source="adult", n=5000, rate=None,
                                      columns=["age", "workclass", "education",
                                               "education-num", "marital-status",
                                               "occupation", "relationship", "race", "sex",
                                               "capital-gain", "capital-loss",
                                               "hours-per-week", "native-country"])),
    "adult_18k_10col": ("binary", dict(source="adult", n=18000, rate=None,
                                       columns=["age", "workclass", "education-num",
                                                "marital-status", "occupation",
                                                "relationship", "sex", "capital-gain",
                                                "capital-loss", "hours-per-week"])),
    "synth_mono": ("binary", dict(source="synthetic")),
    "years_reg": ("regression", dict(source="years")),
}
NAMES = tuple(TABLES)


def _subsample(X, y, n, rate, rng):
    """``n`` rows drawn without replacement; with ``rate``, exactly ``round(rate n)``
    positives (the positives dropped beyond them), else the table's own rate."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if n is None:
        return X.reset_index(drop=True), y
    if rate is None:
        keep = np.sort(rng.choice(len(y), size=n, replace=False))
    else:
        n_pos = int(round(rate * n))
        keep = np.sort(np.concatenate([rng.choice(pos, n_pos, replace=False),
                                       rng.choice(neg, n - n_pos, replace=False)]))
    return X.iloc[keep].reset_index(drop=True), y[keep]


def _synthetic_monotone(rng, n=7000, rate=0.03):
    """One monotone (lognormal, skewed) column carrying a logistic signal; a numeric noise
    column and an integer noise column.  The intercept is set so that the expected
    positive rate is ``rate``."""
    signal = rng.lognormal(mean=3.0, sigma=0.8, size=n)
    z = np.log(signal)
    z = (z - 3.0) / 0.8
    logit = 1.4 * z
    # intercept for the positive rate: bisection on the expected rate (public recipe)
    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if np.mean(1 / (1 + np.exp(-(logit + mid)))) > rate:
            hi = mid
        else:
            lo = mid
    y = (rng.random(n) < 1 / (1 + np.exp(-(logit + lo)))).astype(np.int64)
    X = pd.DataFrame({"signal": signal, "noise": rng.normal(50.0, 10.0, n),
                      "count": rng.poisson(4.0, n).astype(np.int64)})
    return X, y


YEARS = np.array([1978, 1980, 1982, 1984, 1986, 1988, 1990, 1992, 1994, 1996, 1998, 2000,
                  2002, 2004, 2006, 2008, 2010, 2012, 2014, 2016])


def _years_regression(rng, n=2000):
    """Target ``0.45 tanh(x) - 0.15 u + 0.05 (year - 1997)/19 + noise``, clipped to the
    public range [-1, 1]; ``year`` takes the 20 values of ``YEARS`` (weak effect)."""
    x = rng.normal(0.0, 1.0, n) * 12.0 + 40.0
    u = rng.uniform(0.0, 100.0, n)
    year = rng.choice(YEARS, size=n)
    y = (0.45 * np.tanh((x - 40.0) / 12.0) - 0.15 * (u - 50.0) / 50.0
         + 0.05 * (year - 1997.0) / 19.0 + rng.normal(0.0, 0.3, n))
    X = pd.DataFrame({"x": x, "u": u, "year": year.astype(np.int64)})
    return X, np.clip(y, -1.0, 1.0)


def load_table(name, data_home=None):
    """``(X, y, kind)``: the fixed table ``name`` (module docstring)."""
    kind, spec = TABLES[name]
    rng = np.random.default_rng([TABLE_SEED, NAMES.index(name)])
    source = spec["source"]
    if source == "synthetic":
        X, y = _synthetic_monotone(rng)
    elif source == "years":
        X, y = _years_regression(rng)
    else:
        X, y = load_raw(source, data_home)
        X, y = _subsample(X[spec["columns"]], y, spec["n"], spec["rate"], rng)
        if source == "credit_card":
            X = X.rename(columns=CC_NAMES)
    return X, y, kind


def split_table(X, y, kind, seed):
    """The protocol's split: 70/30 (stratified for the classifiers)."""
    return split(X, y, seed) if kind == "binary" else split_regression(X, y, seed)


def describe(name, data_home=None):
    X, y, kind = load_table(name, data_home)
    what = f"{y.mean():.3f} positive" if kind == "binary" else f"y in [{y.min():.2f}, {y.max():.2f}]"
    return f"{name}: {len(y)} rows, {X.shape[1]} raw columns ({', '.join(map(str, X.columns))}), {what}"


if __name__ == "__main__":
    for t in NAMES:
        print(describe(t))
