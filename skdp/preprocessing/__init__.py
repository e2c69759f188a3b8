"""Differentially private transformers for pipelines.

A transformer that learns from the data (a mean, a scale...) must itself be DP, or it voids
the guarantee of every step fitted after it.  :class:`DPStandardScaler` releases its means
and variances with the Gaussian mechanism and records a ``dp_event_``, so that
``make_pipeline(DPStandardScaler(...), DPLogisticRegression(...))`` has an end-to-end
guarantee (:func:`skdp.accounting.fitted_dp_event` composes the steps).

A step that learns nothing needs no event, but only when skdp can verify it:
:class:`RowwiseFunctionTransformer` applies a user function to one row at a time (a
scikit-learn ``FunctionTransformer`` gives its function the whole batch and is refused),
and :class:`FrameToPandas` turns a polars frame into a pandas one.

>>> from skdp.preprocessing import DPStandardScaler
>>> DPStandardScaler(epsilon=0.5, feature_bounds=(0.0, 1.0)).epsilon
0.5
"""

from ._categorical import DPOneHotEncoder
from ._robust import DPRobustScaler
from ._rowwise import FrameToPandas, RowwiseFunctionTransformer
from ._scaler import DPStandardScaler
from ._spline import DPSplineTransformer

__all__ = ["DPOneHotEncoder", "DPRobustScaler", "DPSplineTransformer", "DPStandardScaler",
           "FrameToPandas", "RowwiseFunctionTransformer"]
