"""Model selection whose total privacy cost is accounted.

* :class:`DPGridSearchCV`, :class:`DPRandomizedSearchCV`: private hyperparameter selection
  (Papernot & Steinke 2022 repeat-and-select in Rényi DP; Liu & Talwar 2019 random
  stopping for pure epsilon-DP); the whole procedure's guarantee is in ``epsilon_``,
  ``delta_``, ``dp_event_`` and its split in ``budget_split_``.
* :func:`dp_cross_validate`: k-fold scores released with DP, the cost of training k
  models on overlapping data accounted per row.
* :class:`PrivateScorer`, :func:`make_private_scorer`: bounded validation scores with a
  public sensitivity.

>>> from skdp.model_selection import DPGridSearchCV, dp_cross_validate
"""

from ._scorer import PrivateScorer, make_private_scorer
from ._search import DPGridSearchCV, DPRandomizedSearchCV
from ._validation import dp_cross_validate

__all__ = [
    "DPGridSearchCV",
    "DPRandomizedSearchCV",
    "PrivateScorer",
    "dp_cross_validate",
    "make_private_scorer",
]
