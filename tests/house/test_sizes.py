"""Sizes in ``ratecons/`` (issue 30): no function over 100 lines, no module over 700.

A function's length runs from its first decorator (or its ``def``) to its last line, nested
functions included; a module's is its number of lines. There is no offender left, so any
function or module over its limit fails, named with its size.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "ratecons"

MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 700


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


def _check(kind: str, sizes: dict[str, int], limit: int) -> None:
    over = [f"{name} ({n} lines)" for name, n in sorted(sizes.items()) if n > limit]
    assert not over, (f"{kind} over {limit} lines: " + "; ".join(over)
                      + ". Split them into named steps (docs/architecture.md).")


def test_no_function_over_100_lines():
    functions, _ = _sizes()
    _check("functions", functions, MAX_FUNCTION_LINES)


def test_no_module_over_700_lines():
    _, modules = _sizes()
    _check("modules", modules, MAX_MODULE_LINES)


def test_lengths_count_decorators_and_nested_functions():
    tree = ast.parse("@decorate\n@twice\ndef f():\n    def g():\n        return 1\n"
                     "    return g\n\nclass C:\n    def m(self):\n        pass\n")
    assert function_lengths(tree, "mod") == {"mod.f": 6, "mod.f.g": 2, "mod.C.m": 2}
    sizes = {"mod.long": 101, "mod.fine": 100}
    with pytest.raises(AssertionError, match=r"mod\.long \(101 lines\)") as err:
        _check("functions", sizes, 100)
    assert "mod.fine" not in str(err.value)
    _check("functions", {"mod.fine": 100}, 100)
