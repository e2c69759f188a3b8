"""``skdp.accounting._lazy_dp_accounting``: dp-accounting's event classes without its
``__init__``, and the same classes whichever of the two is imported first.

Each check runs in a fresh interpreter, where the import order is under control.
"""

import json
import subprocess
import sys

import pytest

LAZY_FIRST = """
import json, pickle, sys
from skdp.accounting import _lazy_dp_accounting as lazy
event = lazy.ComposedDpEvent([lazy.GaussianDpEvent(2.0), lazy.GaussianDpEvent(4.0)])
light = sorted(m for m in sys.modules if m.startswith("dp_accounting"))
import dp_accounting
from dp_accounting.pld import PLDAccountant
acc = PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
acc.compose(event)  # dp-accounting's own isinstance dispatch must recognise the event
print(json.dumps({
    "light": light,
    "same_module": dp_accounting.dp_event is sys.modules["dp_accounting.dp_event"],
    "same_class": dp_accounting.GaussianDpEvent is lazy.GaussianDpEvent,
    "package_attr": lazy.dp_event is dp_accounting.dp_event,
    "relation": lazy.NeighboringRelation is dp_accounting.NeighboringRelation,
    "eps": acc.get_epsilon(1e-6),
    "pickled": pickle.loads(pickle.dumps(event)) == event,
}))
"""

PACKAGE_FIRST = """
import json, sys
import dp_accounting
from skdp.accounting import _lazy_dp_accounting as lazy
print(json.dumps({
    "same_class": lazy.GaussianDpEvent is dp_accounting.GaussianDpEvent,
    "same_module": lazy.dp_event is dp_accounting.dp_event,
}))
"""


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_events_load_alone_then_the_package_shares_them():
    seen = _run(LAZY_FIRST)
    assert seen["light"] == ["dp_accounting.dp_event"]
    assert seen["same_module"] and seen["same_class"] and seen["package_attr"]
    assert seen["relation"] and seen["pickled"]
    # mu = sqrt((2/2)^2 + (2/4)^2) = 1.118 GDP: finite, not the 'unsupported' infinity
    assert 0.0 < seen["eps"] < 10.0


def test_package_first_is_reused():
    seen = _run(PACKAGE_FIRST)
    assert seen["same_class"] and seen["same_module"]


def test_unknown_name_raises_attribute_error():
    from skdp.accounting import _lazy_dp_accounting as lazy

    with pytest.raises(AttributeError):
        lazy.NoSuchDpEvent  # noqa: B018
