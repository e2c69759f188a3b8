"""Differentially private linear models."""

from ._huber import DPHuberRegressor
from ._logistic import DPLogisticRegression

__all__ = ["DPHuberRegressor", "DPLogisticRegression"]
