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
    "bank": "d6f6c5541d578aa86ad50f66a615b1dc8efdc0435629ae939108ab1cabca45a0",
    "bank_frame": "f387dcac18c9f8503e6ae542788bbaae7136344ec46ae42fa2999aa6c0d114b2",
    "adult": "9b50173265e58c242f460fd1171e549c84114a43d385bc4db23e58f0a6b08d96",
    "adult_test": "77d5d688656f7a822a1ba958fb5e6c6142dc0a9ba5e0dc1fe3197604748266b0",
    "adult_frame": "95c8f14ee0fa763c89de11621ebaa3b05692da143dbeb4cfb1aa3f31cca8b6d0",
    "adult_test_frame": "57d8322e2c3a6d2df695871a08177c70f3239587449461e3ed78a97b28ebff30",
    "credit": "9a02e925dfe1f70574bb419e9c39b9db07cf7e88b2df44056bb8b655008d44f6",
    "credit_frame": "ca2291d5b3468dc2e43e293ddb31067e1c7a1f5d6d9be20d6307a7712ae186b3",
    "wine": "60bb19d65ddd9e3778ee1a3fe2050eef91f27942814df33b0e776ce007265ce7",
    "wine_red_minmax": "934c67e41dcefa6f3bc06d47f130b03be46eb7205a0161e1cdb55ae954c2dfd6",
    "wine_white_10": "448d15e8ebf9d8abe47b5fe3c2dca20e97e950df94b58a32ace19544366dc2e4",
    "bike": "5eb9c9fc099940a27793013e5ecec8a5332f9da0bfd100038cc6c7d969b2a33f",
    "airfoil": "ca2f6a6fe3fcf41e31163ed7eacba6e616648d3d13bcbe3386e76ab3c9131994",
    "airfoil_minmax": "0f494baef30f58502595ffd96f5bea1f7858de5cf1bb0b482bb06cfad46d7bcd",
    "concrete": "b40badbffdb6bd68ea0f64f9142c8091e1242ac7a6b132431493abeeb5d78517",
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
