"""Print the declared minimum versions of pyproject.toml's dependencies as exact pins
(``pkg>=X`` -> ``pkg==X``), one per line, for the CI step that tests the floors."""

import pathlib
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

project = tomllib.loads(
    (pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
for requirement in project["dependencies"]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][0-9.]*)\s*", requirement)
    if match is None:
        sys.exit(f"dependency {requirement!r} has no '>=' floor to test")
    print(f"{match.group(1)}=={match.group(2)}")
