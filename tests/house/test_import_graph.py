"""The import graph of ``ratecons`` (issue 30): no new circle, no new type switch on terms.

Every module under ``ratecons/`` is parsed with :mod:`ast`; its imports become edges,
including the lazy ones (inside functions) and those under ``TYPE_CHECKING``, because a circle
closed by a lazy import is still a circle. The circles that exist today are listed by name in
:data:`KNOWN_CYCLES` (as strongly connected components): a new one, or a module joining one,
fails the test; one that is gone fails it too, until it is removed from the list, so the list
only shrinks. Outside ``ratecons/expr/`` no module switches on term types with ``isinstance``
(a term's class named in the check, or a pattern's ``objective_types``): lowerings read their
tables, patterns their table of objective types (``Pattern.built_for``), and everything else
the facts a term carries (``curvature``, ``scores_model``, ``mergeable``, ...).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "ratecons"

#: today's circles, each a strongly connected component of the import graph, by name
KNOWN_CYCLES: dict[str, frozenset[str]] = {}

#: expression classes that are not ``Term`` subclasses but are switched on as terms
_EXPRESSION_CLASSES = {"Term", "Sum", "Composable", "TermConstraint", "RateExpr", "RatioExpr",
                       "Constraint", "MinimaxRisk"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text(), str(p))
            for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """The ratecons modules ``name`` imports anywhere in its body (lazy and TYPE_CHECKING
    imports included): ``from package import module`` counts as the module itself."""
    is_package = any(n.startswith(name + ".") for n in known) or name == "ratecons"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "ratecons")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "ratecons":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return {m for m in out if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, tree, known) for name, tree in modules.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm (iterative); the components with a circle (two or more modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _term_types(modules: dict[str, ast.Module]) -> set[str]:
    """Names of the ``Term`` subclasses (transitively) and of the other expression classes."""
    bases: dict[str, set[str]] = {}
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases if isinstance(b, (ast.Name, ast.Attribute)))
    terms = {"Term"}
    while True:
        more = {c for c, bs in bases.items() if bs & terms} - terms
        if not more:
            return terms | _EXPRESSION_CLASSES
        terms |= more


def _term_switches(modules: dict[str, ast.Module] | None = None) -> Counter:
    """Per module outside ratecons/expr/, the ``isinstance`` calls whose type argument names a
    term class or a pattern's ``objective_types``."""
    modules = _modules() if modules is None else modules
    terms = _term_types(modules)
    counts: Counter = Counter()
    for name, tree in modules.items():
        if name == "ratecons.expr" or name.startswith("ratecons.expr."):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                continue
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds}
            if names & (terms | {"objective_types"}):
                counts[name] += 1
    return counts


def _describe(component: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(component)) + "}"


def test_the_graph_sees_lazy_and_type_checking_imports():
    graph = _graph()
    # lazy: the subgradient method's active-set bound imports the HiGHS backend in a function
    assert "ratecons.backends.highs" in graph["ratecons.solvers.mrc_dual_bound"]
    # TYPE_CHECKING: the pattern base class names Result for its annotations only
    assert "ratecons.result" in graph["ratecons.patterns.pattern"]
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        frozenset("abc")]


def test_no_new_import_cycle_and_the_known_ones_only_shrink():
    found = set(_strongly_connected(_graph()))
    known = set(KNOWN_CYCLES.values())
    new = [_describe(c) for c in found - known]
    gone = [name for name, c in KNOWN_CYCLES.items() if c not in found]
    assert not new, ("new (or grown) import cycles, lazy imports included: " + "; ".join(new)
                     + ". Break them (move the shared code below both modules).")
    assert not gone, (f"the known cycles {gone} are gone or smaller: remove or shrink them in "
                      "KNOWN_CYCLES, so the list only shrinks.")


def test_no_isinstance_switch_on_term_types_outside_expr():
    switches = dict(_term_switches())
    assert not switches, (
        "isinstance checks on term types outside ratecons/expr/ (module: count): "
        f"{switches}; read a fact the term carries (a property of Term in expr/atom.py), a "
        "lowering table entry, or the pattern's table (Pattern.built_for) instead.")


def test_the_switch_finder_sees_term_classes_and_objective_types():
    tree = ast.parse("def f(x, p):\n"
                     "    a = isinstance(x, (int, RatioExpr))\n"
                     "    return a, isinstance(x, p.objective_types), isinstance(x, int)\n")
    modules = {**_modules(), "ratecons.fake": tree}
    terms = _term_types(modules)
    assert {"RateExpr", "RatioExpr", "TPRAtTop", "MinimaxRisk", "MeanLoss"} <= terms
    assert _term_switches(modules) == {"ratecons.fake": 2}


def test_only_the_highs_backend_imports_highspy():
    importers = sorted(name for name, tree in _modules().items()
                       for node in ast.walk(tree)
                       if (isinstance(node, ast.Import)
                           and any(a.name.split(".")[0] == "highspy" for a in node.names))
                       or (isinstance(node, ast.ImportFrom) and not node.level
                           and (node.module or "").split(".")[0] == "highspy"))
    assert set(importers) == {"ratecons.backends.highs"}
