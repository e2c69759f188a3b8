"""Every public class and function of skdp has a complete numpydoc docstring.

Walks the public names (``__all__``) of ``skdp`` and of its public subpackages and checks,
with :func:`numpydoc.validate.validate`:

* functions: a docstring, every parameter documented (PR01/PR02), a ``Returns`` section
  when the function returns something (RT01), an ``Examples`` section (EX01) with at least
  one doctest line;
* classes: a docstring, every constructor parameter documented (PR01/PR02; a dataclass's
  constructor parameters *are* its fields, so an ``Attributes`` section covering all of them
  counts), an ``Examples`` section with a doctest, and, for estimators (classes with ``fit``)
  and result dataclasses, a non-empty ``Attributes`` section; exception and warning classes
  need a docstring and an example only;
* public methods that skdp defines on those classes (``fit``, ``predict_proba``, ...): a
  docstring, parameters documented and a ``Returns`` section when they return something.

The examples themselves run as doctests (``pytest --doctest-modules`` over ``skdp/``).
"""

import dataclasses
import importlib
import inspect

import pytest

numpydoc_validate = pytest.importorskip(
    "numpydoc.validate", reason="numpydoc is not installed (pip install -e '.[docs]')"
)
from numpydoc.docscrape import NumpyDocString  # noqa: E402

# every docstring section is one numpydoc knows: an unknown one is a warning, made an error
# here (the estimators' guarantee is a "Privacy" rubric under Notes)
pytestmark = pytest.mark.filterwarnings("error:Unknown section:UserWarning")

PUBLIC_MODULES = [
    "skdp",
    "skdp.accounting",
    "skdp.audit",
    "skdp.datasets",
    "skdp.exceptions",
    "skdp.inspection",
    "skdp.linear_model",
    "skdp.model_selection",
    "skdp.preprocessing",
]

FUNCTION_CODES = {"GL08", "PR01", "PR02", "RT01", "EX01"}
CLASS_CODES = {"GL08", "PR01", "PR02", "EX01"}
METHOD_CODES = {"GL08", "PR01", "PR02", "RT01"}


def _public_modules():
    mods = []
    for name in PUBLIC_MODULES:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists but is broken: fail loudly
                raise
    return mods


def _public_objects():
    seen = {}
    for mod in _public_modules():
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants (__version__, NEIGHBORING_RELATION, ...)
            if not getattr(obj, "__module__", "").startswith("skdp"):
                continue
            seen.setdefault(id(obj), (f"{mod.__name__}.{name}", obj))
    return sorted(seen.values())


PUBLIC = _public_objects()


def _import_path(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def _is_exception(cls):
    return issubclass(cls, BaseException)


def _codes(path):
    return {code: msg for code, msg in numpydoc_validate.validate(path)["errors"]}


def _doc(obj):
    return NumpyDocString(inspect.getdoc(obj) or "")


def test_public_api_is_not_empty():
    names = {name for name, _ in PUBLIC}
    assert "skdp.DPLogisticRegression" in names
    assert "skdp.accounting.get_epsilon" in names
    assert len(PUBLIC) >= 30


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_docstring_sections(name, obj):
    codes = _codes(_import_path(obj))
    doc = _doc(obj)
    if inspect.isclass(obj):
        wanted = CLASS_CODES
        if dataclasses.is_dataclass(obj):
            # the constructor parameters are the fields, documented under Attributes
            documented = {n.strip() for p in doc["Attributes"] for n in p.name.split(",")}
            missing = {f.name for f in dataclasses.fields(obj)} - documented
            assert not missing, f"{name}: fields not documented under Attributes: {missing}"
            wanted = wanted - {"PR01"}
        problems = {c: m for c, m in codes.items() if c in wanted}
        assert not problems, f"{name}: {problems}"
        if not _is_exception(obj) and (hasattr(obj, "fit") or dataclasses.is_dataclass(obj)):
            assert doc["Attributes"], f"{name}: no Attributes section"
    else:
        problems = {c: m for c, m in codes.items() if c in FUNCTION_CODES}
        assert not problems, f"{name}: {problems}"
        if inspect.signature(obj).parameters:
            assert doc["Parameters"], f"{name}: no Parameters section"
    assert any(">>>" in line for line in doc["Examples"]), f"{name}: Examples has no doctest"


def _public_methods():
    out = []
    for name, cls in PUBLIC:
        if not inspect.isclass(cls) or _is_exception(cls) or dataclasses.is_dataclass(cls):
            continue
        for attr in sorted(dir(cls)):
            if attr.startswith("_"):
                continue
            member = inspect.getattr_static(cls, attr)
            func = getattr(member, "__func__", member)
            if not inspect.isfunction(func) or not func.__module__.startswith("skdp"):
                continue  # inherited from scikit-learn, or a property/attribute
            owner = next(k for k in cls.__mro__ if attr in vars(k))
            out.append((f"{name}.{attr}", f"{owner.__module__}.{owner.__qualname__}.{attr}"))
    return out


METHODS = _public_methods()


@pytest.mark.parametrize("name, path", METHODS, ids=[n for n, _ in METHODS])
def test_method_docstrings(name, path):
    problems = {c: m for c, m in _codes(path).items() if c in METHOD_CODES}
    assert not problems, f"{name}: {problems}"


def test_checker_catches_a_bad_docstring():
    """The checks above can fail: a function without Parameters/Returns/Examples is caught."""
    codes = _codes("tests.test_docstrings._undocumented")
    assert {"PR01", "RT01", "EX01"} <= set(codes)


def _undocumented(x):
    """Return twice x."""
    return 2 * x
