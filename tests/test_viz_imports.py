"""kjoin_viz's modules import each other without a circle, counting the imports inside functions (a
circle held open by a late import breaks the day someone moves that import to the top)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kjoin_viz"


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The kjoin_viz modules ``path`` imports, wherever the import stands (module level or in a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1 or node.module == "kjoin_viz":
                found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("kjoin_viz."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("kjoin_viz."))
    return found & modules - {path.stem}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for other in sorted(graph[module]):
            circle = visit(other, [*path, module])
            if circle:
                return circle
        done.add(module)
        return None

    for module in sorted(graph):
        circle = visit(module, [])
        if circle:
            return circle
    return None


def test_kjoin_viz_modules_import_each_other_without_a_circle():
    paths = [p for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    modules = {p.stem for p in paths}
    graph = {p.stem: _imports(p, modules) for p in paths}
    assert graph["predict"] >= {"stepper", "step_view"}  # the reader sees the imports: the test is not empty
    assert _circle(graph) is None, " -> ".join(_circle(graph) or [])


def test_the_circle_finder_finds_the_circle_there_was():
    # show -> variants -> stepper -> show, as it was before view_of moved to step_view
    graph = {"show": {"variants", "step_view"}, "variants": {"stepper"}, "stepper": {"show"}, "step_view": set()}
    assert _circle(graph) == ["show", "variants", "stepper", "show"]
