"""The API reference (docs/api.md) documents every public name: each name in
``ratecons.__all__`` appears as a ``::: module.name`` entry, in the ``members`` list of a
module entry, or is itself a documented module (whose ``__all__`` it then covers)."""

import importlib
import re
from pathlib import Path

import ratecons as rc

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ENTRY = re.compile(r"^::: (?P<path>[\w.]+)\n(?P<options>(?:[ \t]+.*\n)*)", re.M)


def documented() -> set[str]:
    names: set[str] = set()
    for m in ENTRY.finditer(API.read_text()):
        path, options = m["path"], m["options"]
        members = re.search(r"members:\s*\[(?P<list>[^\]]*)\]", options)
        if members:
            names |= {n.strip() for n in members["list"].split(",") if n.strip()}
            continue
        names.add(path.rsplit(".", 1)[-1])
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue  # a class or function entry
        names |= set(getattr(module, "__all__", ()))
    return names


def test_every_public_name_is_in_the_api_reference():
    missing = sorted(set(rc.__all__) - documented())
    assert not missing, f"docs/api.md does not document {missing}"


def test_every_entry_resolves():
    for m in ENTRY.finditer(API.read_text()):
        module, _, attr = m["path"].rpartition(".")
        try:
            importlib.import_module(m["path"])
        except ImportError:
            assert hasattr(importlib.import_module(module), attr), m["path"]
