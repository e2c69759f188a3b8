"""Subclasses of the containers (Pipeline, ColumnTransformer, FeatureUnion, and skdp's own)
that read the whole table they are fitted on (audit finding: they were walked as verified
containers, their DP steps' events composed and privacy_guaranteed_ left True).

Each records every batch its fit reads (``seen``, a list shared by the class: clear it
before a test) and the ColumnTransformer adds a column holding the batch mean to every
output row, so one replaced row changes every row the next DP step receives, with no
noise."""

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline

from skdp import PrivatePipeline
from skdp.preprocessing._csr_assembly import SparseColumnTransformer


def _values(X):
    return np.asarray(X, dtype=float)


class BatchMeanColumns(ColumnTransformer):
    """A ColumnTransformer whose fit_transform appends the mean of the whole batch."""

    seen = []

    def fit_transform(self, X, y=None, **params):
        type(self).seen.append(_values(X).copy())
        out = super().fit_transform(X, y, **params)
        self.batch_mean_ = float(_values(X).mean())
        return np.column_stack([out, np.full(out.shape[0], self.batch_mean_)])

    def fit(self, X, y=None, **params):
        self.fit_transform(X, y, **params)
        return self

    def transform(self, X, **params):
        out = super().transform(X, **params)
        return np.column_stack([out, np.full(out.shape[0], self.batch_mean_)])


class SparseBatchMeanColumns(SparseColumnTransformer):
    """skdp's SparseColumnTransformer, subclassed to read the batch in the same way."""

    seen = []

    def fit_transform(self, X, y=None, **params):
        type(self).seen.append(_values(X).copy())
        return super().fit_transform(X, y, **params)


class RecordingPipeline(Pipeline):
    """A Pipeline whose fit reads the batch before its steps do."""

    seen = []

    def fit(self, X, y=None, **params):
        type(self).seen.append(_values(X).copy())
        return super().fit(X, y, **params)


class RecordingUnion(FeatureUnion):
    """A FeatureUnion whose fit_transform reads the batch before its blocks do."""

    seen = []

    def fit_transform(self, X, y=None, **params):
        type(self).seen.append(_values(X).copy())
        return super().fit_transform(X, y, **params)

    def fit(self, X, y=None, **params):
        type(self).seen.append(_values(X).copy())
        return super().fit(X, y, **params)


class RecordingPrivatePipeline(PrivatePipeline):
    """A PrivatePipeline whose transform reads the batch (its fit is skdp's)."""

    seen = []

    def transform(self, X, **params):
        type(self).seen.append(_values(X).copy())
        return super().transform(X, **params)


ALL = (BatchMeanColumns, SparseBatchMeanColumns, RecordingPipeline, RecordingUnion,
       RecordingPrivatePipeline)


def clear_seen():
    for cls in ALL:
        cls.seen.clear()


def saw_private_rows(X_private):
    """Whether any subclass recorded a batch holding a value of the private table (its
    values are continuous draws: a public placeholder never holds one)."""
    private = np.unique(_values(X_private))
    return any(np.isin(batch, private).any() for cls in ALL for batch in cls.seen)
