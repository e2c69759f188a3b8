"""The repository is self-contained: nothing outside tests/ cites the design notes or specs
that live outside it (users cannot read them); derivations live in docstrings and doc/."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"spec §|DESIGN\.md|shared/specs|shared/papers")
SUFFIXES = {".py", ".rst", ".md", ".txt", ".toml", ".cfg"}


def test_no_reference_to_documents_outside_the_repository():
    hits = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if (path.suffix not in SUFFIXES or not path.is_file() or rel.parts[0] in {
                "tests", ".git", "build", "dist"} or "_build" in rel.parts
                or rel.parts[:2] in {("doc", "auto_examples"), ("doc", "generated"),
                                     ("doc", "gen_modules")}
                or any(p.endswith(".egg-info") or p.startswith(".") for p in rel.parts)):
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if PATTERN.search(line):
                hits.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits)
