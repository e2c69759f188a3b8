"""dp-accounting's event classes without the cost of importing all of dp-accounting.

``import dp_accounting`` runs the package's ``__init__``, which imports its PLD and RDP
accountants and through them ``scipy.signal`` and ``absl.logging``: about 0.1 s, a tenth of
a first default fit in a fresh interpreter (``benchmarks/results/startup.md``).  A default
fit needs none of that: it builds ``DpEvent`` objects (``dp_accounting/dp_event.py``, which
imports only ``attr`` and the standard library) and reads their epsilon in closed form.

This module stands in for the package where skdp only builds or inspects events::

    from . import _lazy_dp_accounting as dp_accounting

``dp_accounting.GaussianDpEvent`` (or any other name of ``dp_accounting.dp_event``, and
``dp_accounting.dp_event`` itself) comes from the ``dp_event`` submodule, loaded on its own
under its real name ``dp_accounting.dp_event`` when the package is not imported yet.  Every
other name (``NeighboringRelation``, ``UnsupportedEventError``, ``pld``...) imports the real
package and is read from it.

There is one ``dp_event`` module either way, so the classes are the same objects whatever
is imported first: when the package is imported later, its ``__init__`` runs ``from
dp_accounting import dp_event`` and the import system finds the module already in
``sys.modules`` (a ``from`` import falls back to ``sys.modules`` for a submodule that is
not yet an attribute of its package).  ``isinstance`` checks, pickling (``__module__`` is
``dp_accounting.dp_event``) and user code that imports ``dp_accounting`` all see the same
classes; ``tests/accounting/test_lazy_dp_accounting.py`` checks this in fresh interpreters.
"""

import importlib
import importlib.machinery
import importlib.util
import sys
import threading

_PACKAGE = "dp_accounting"
_EVENTS = _PACKAGE + ".dp_event"
_lock = threading.Lock()


def _events_module():
    """``dp_accounting.dp_event``, loaded without the package's ``__init__`` if need be."""
    module = sys.modules.get(_EVENTS)
    if module is not None:
        return module
    with _lock:
        module = sys.modules.get(_EVENTS)
        if module is not None:
            return module
        if _PACKAGE in sys.modules:  # the package is (being) imported: the normal way
            return importlib.import_module(_EVENTS)
        package_spec = importlib.util.find_spec(_PACKAGE)  # locates, does not execute
        if package_spec is None or not package_spec.submodule_search_locations:
            return importlib.import_module(_EVENTS)  # raises the usual ImportError
        spec = importlib.machinery.PathFinder.find_spec(
            _EVENTS, package_spec.submodule_search_locations)
        if spec is None:
            return importlib.import_module(_EVENTS)
        module = importlib.util.module_from_spec(spec)
        # executed before it is published: another thread importing dp_accounting
        # meanwhile never sees a half-initialised module (it loads its own, and that one
        # is kept: one dp_event module in the process either way)
        spec.loader.exec_module(module)
        return sys.modules.setdefault(_EVENTS, module)


def __getattr__(name):
    if name == "dp_event":
        return _events_module()
    value = getattr(_events_module(), name, None)
    if not name.startswith("_") and getattr(value, "__module__", None) == _EVENTS:
        return value  # defined in dp_event (not one of the names it imports)
    return getattr(importlib.import_module(_PACKAGE), name)
