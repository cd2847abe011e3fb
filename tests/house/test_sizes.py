"""Sizes in ``ratecons/`` (issue 30): no function over 100 lines, no module over 700.

A function's length runs from its first decorator (or its ``def``) to its last line, nested
functions included; a module's is its number of lines. Today's offenders are listed by name
with their sizes (:data:`KNOWN_LONG_FUNCTIONS`, :data:`KNOWN_LONG_MODULES`): a new offender
fails, a listed one that grew fails, and a listed one that is back under the limit fails too
until it is removed from the list, so the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "ratecons"

MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 700

#: functions over the limit today (module.qualified name: lines), each being split elsewhere
KNOWN_LONG_FUNCTIONS: dict[str, int] = {}
#: modules over the limit today (name: lines), each being split elsewhere
KNOWN_LONG_MODULES: dict[str, int] = {
    "ratecons.data": 898,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def function_lengths(tree: ast.AST, prefix: str) -> dict[str, int]:
    """``prefix.qualified.name -> lines`` for every function and method in ``tree``."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{scope}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    out[name] = child.end_lineno - first + 1
                visit(child, name)
            else:
                visit(child, scope)

    visit(tree, prefix)
    return out


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        name = _module_name(path)
        modules[name] = len(text.splitlines())
        functions.update(function_lengths(ast.parse(text, str(path)), name))
    return functions, modules


def _check(kind: str, sizes: dict[str, int], limit: int, known: dict[str, int]) -> list[str]:
    over = {name: n for name, n in sizes.items() if n > limit}
    problems = [f"{name} ({n} lines)" for name, n in sorted(over.items()) if name not in known]
    problems += [f"{name} grew to {over[name]} lines (listed at {n})"
                 for name, n in sorted(known.items()) if over.get(name, 0) > n]
    gone = [name for name in sorted(known) if name not in over]
    message = (f"{kind} over {limit} lines: " + "; ".join(problems)
               + ". Split them into named steps (docs/architecture.md).")
    assert not problems, message
    assert not gone, (f"{gone} are no longer over {limit} lines (or are gone): remove them "
                      f"from the known {kind}, so the list only shrinks.")
    return sorted(over)


def test_no_function_over_100_lines():
    functions, _ = _sizes()
    assert _check("functions", functions, MAX_FUNCTION_LINES, KNOWN_LONG_FUNCTIONS) == sorted(
        KNOWN_LONG_FUNCTIONS)


def test_no_module_over_700_lines():
    _, modules = _sizes()
    assert _check("modules", modules, MAX_MODULE_LINES, KNOWN_LONG_MODULES) == sorted(
        KNOWN_LONG_MODULES)


def test_lengths_count_decorators_and_nested_functions():
    tree = ast.parse("@decorate\n@twice\ndef f():\n    def g():\n        return 1\n"
                     "    return g\n\nclass C:\n    def m(self):\n        pass\n")
    assert function_lengths(tree, "mod") == {"mod.f": 6, "mod.f.g": 2, "mod.C.m": 2}
    sizes = {"mod.long": 101, "mod.fine": 100}
    with pytest.raises(AssertionError, match=r"mod\.long \(101 lines\)") as err:
        _check("functions", sizes, 100, {})
    assert "mod.fine" not in str(err.value)
    with pytest.raises(AssertionError, match="grew to 101 lines"):
        _check("functions", sizes, 100, {"mod.long": 100})
    with pytest.raises(AssertionError, match="no longer over"):
        _check("functions", {"mod.fine": 100}, 100, {"mod.fine": 120})
