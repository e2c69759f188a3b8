"""Real UCI datasets and synthetic generators with bounded rows.

Loaders read checksummed UCI files from a data home (the ``data_home``
argument, else the ``SKDP_DATA`` environment variable, else
``$XDG_CACHE_HOME/skdp`` or ``~/.cache/skdp``) and return design matrices whose
rows have Euclidean norm at most 1, as assumed by Zhang et al. (2017).
Generators produce synthetic data whose rows satisfy ``||x||_2 <= data_norm``
by construction.
"""

# Authors: skdp developers
# SPDX-License-Identifier: BSD-3-Clause

from ._base import (
    DATA_HOME_ENV_VAR,
    ChecksumError,
    DatasetNotFoundError,
    get_data_home,
)
from ._embedded import load_demo_adult, load_demo_bike
from ._samples_generator import make_private_classification, make_private_regression
from ._uci import (
    load_adult,
    load_airfoil,
    load_bank,
    load_bike_sharing,
    load_concrete,
    load_credit_card,
    load_wine_quality,
)

__all__ = [
    "DATA_HOME_ENV_VAR",
    "ChecksumError",
    "DatasetNotFoundError",
    "get_data_home",
    "load_adult",
    "load_airfoil",
    "load_bank",
    "load_demo_adult",
    "load_demo_bike",
    "load_bike_sharing",
    "load_concrete",
    "load_credit_card",
    "load_wine_quality",
    "make_private_classification",
    "make_private_regression",
]
