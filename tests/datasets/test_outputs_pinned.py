"""Every loader's output, pinned bitwise by a SHA-256.

The hashes were computed from the shared data files with the loaders as they were
before their download and parsing code moved to ``sklearn.datasets.fetch_file`` and
``numpy.loadtxt`` (issue 36), and checked equal afterwards. They cover every array's
dtype, shape and bytes, the feature names, ``target_names``, the ``preprocessing``
record and ``DESCR``; with ``as_frame=True``, every column's name, dtype and values.
A test skips when its data files are absent (the demo loaders need none).
"""

import hashlib

import numpy as np
import pytest

from skdp import datasets

from ._local_data import DATA_DIR, refuse_network, require

ADULT, BANK = ["adult/adult.data"], ["bank/bank-full.csv"]
CREDIT = ["creditcard/UCI_Credit_Card.csv"]
WINE = ["wine/winequality-red.csv", "wine/winequality-white.csv"]

# id: (loader, kwargs (None: no data_home), files)
CASES = {
    "bank": ("load_bank", {}, BANK),
    "bank_frame": ("load_bank", {"as_frame": True}, BANK),
    "adult": ("load_adult", {}, ADULT),
    "adult_test": ("load_adult", {"subset": "test"}, ADULT + ["adult/adult.test"]),
    "adult_frame": ("load_adult", {"as_frame": True}, ADULT),
    "adult_test_frame": (
        "load_adult", {"subset": "test", "as_frame": True}, ["adult/adult.test"]),
    "credit": ("load_credit_card", {}, CREDIT),
    "credit_frame": ("load_credit_card", {"as_frame": True}, CREDIT),
    "wine": ("load_wine_quality", {}, WINE),
    "wine_red_minmax": (
        "load_wine_quality", {"color": "red", "target_scale": "minmax"}, WINE[:1]),
    "wine_white_10": (
        "load_wine_quality", {"color": "white", "target_scale": 10.0}, WINE[1:]),
    "bike": ("load_bike_sharing", {}, ["bike/hour.csv"]),
    "airfoil": ("load_airfoil", {}, ["airfoil/airfoil_self_noise.dat"]),
    "airfoil_minmax": (
        "load_airfoil", {"target_scale": "minmax"}, ["airfoil/airfoil_self_noise.dat"]),
    "concrete": ("load_concrete", {}, ["concrete/Concrete_Data.csv"]),
    "demo_adult": ("load_demo_adult", None, []),
    "demo_bike": ("load_demo_bike", None, []),
}  # fmt: skip
SHA256 = {
    "bank": "2cf53c897351db39a244b2d7871dc5a15ca493e138201e903e9c6dccbf7fe29a",
    "bank_frame": "f387dcac18c9f8503e6ae542788bbaae7136344ec46ae42fa2999aa6c0d114b2",
    "adult": "b345c0e2748af95349972a5a8fe47f19cef6f98c9870627e4d4f149aaa7a5054",
    "adult_test": "ee3bad3ecd18e0ef3a23ec2bc5bd5303c1077f079e2065f34c6424f93e8a0caa",
    "adult_frame": "95c8f14ee0fa763c89de11621ebaa3b05692da143dbeb4cfb1aa3f31cca8b6d0",
    "adult_test_frame": "57d8322e2c3a6d2df695871a08177c70f3239587449461e3ed78a97b28ebff30",
    "credit": "4f6ba0c14703aee259c7fa523a39b7df41269a7ea18690aecc79c75cc89d65b1",
    "credit_frame": "ca2291d5b3468dc2e43e293ddb31067e1c7a1f5d6d9be20d6307a7712ae186b3",
    "wine": "7402b34092a705e33b860757cd1a31580106124150e9ddf6a109bbc3566b091c",
    "wine_red_minmax": "347784d27a33fa233c8ac1ce4f604b4d218029151cdced9675837a90d860e785",
    "wine_white_10": "182419c54d5c2a37116dd4315d2a62f5f70a97adfa95e56fabbf070101fdd3ca",
    "bike": "5b66290b4610ffdc9facb9afbbf9a92141166a06a06a77cf285c391de1abf31c",
    "airfoil": "9c8fc63a3d5643ca138354a62d93d05b041da646aafb8a2974b3a2da85155ac2",
    "airfoil_minmax": "2e440a3a2117c950f30a2305f94183fc7e3003ef937377e7e8d93b69b18afbb2",
    "concrete": "72e5fced1146892e21d2f2c3a270fc475956650c98821fa6be9536a1428b5dbe",
    "demo_adult": "de511afc49740a5f7e2114df1ec53713f0590df864642ad40079db1b4ff88d75",
    "demo_bike": "9f27e95f563cefe0dbe7bdf3d1f6e832f4ef7721ece9585973e164b82462231a",
}


def _update(h, obj):
    """Feed ``obj`` to the hash ``h``, type by type, without ambiguity."""
    if isinstance(obj, np.ndarray):
        h.update(f"ndarray {obj.dtype.str} {obj.shape} {obj.flags.c_contiguous}".encode())
        h.update(repr(obj.tolist()).encode() if obj.dtype == object else obj.tobytes())
    elif hasattr(obj, "iloc"):  # pandas DataFrame or Series
        if obj.ndim == 1:
            obj = obj.to_frame()
        h.update(f"frame {obj.shape} {list(obj.columns)} {obj.index!r}".encode())
        for name in obj.columns:
            _update(h, f"{name} {obj[name].dtype}")
            _update(h, obj[name].to_numpy())
    elif isinstance(obj, dict):
        for key in sorted(obj):
            _update(h, f"key {key}")
            _update(h, obj[key])
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__} {len(obj)}".encode())
        for item in obj:
            _update(h, item)
    elif isinstance(obj, np.generic):  # its bytes: numpy 2 changed the repr of scalars
        h.update(f"scalar {obj.dtype.str} ".encode() + obj.tobytes())
    else:
        h.update(f"{type(obj).__name__} {obj!r}".encode())


def output_sha256(name, kwargs):
    loader = getattr(datasets, name)
    bunch = loader() if kwargs is None else loader(data_home=DATA_DIR, **kwargs)
    h = hashlib.sha256()
    _update(h, dict(bunch))
    return h.hexdigest()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    refuse_network(monkeypatch)


@pytest.mark.parametrize("key", list(CASES))
def test_output_is_bitwise_pinned(key):
    name, kwargs, files = CASES[key]
    require(*files)
    if kwargs and kwargs.get("as_frame"):
        pytest.importorskip("pandas", reason="as_frame=True needs pandas")
    assert output_sha256(name, kwargs) == SHA256[key]
