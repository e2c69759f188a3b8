"""Differentially private linear models."""

from ._huber import DPHuberRegressor
from ._logistic import DPLogisticRegression
from ._nonconvex import DPNonconvexRegressor

__all__ = ["DPHuberRegressor", "DPLogisticRegression", "DPNonconvexRegressor"]
