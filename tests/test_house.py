"""The house's shape: no import circles among kjoin's and kjoin_viz's modules, and no
function over 100 lines in the library and the benchmarks.

Both read the source (``ast``), never import it. The two allow-lists below name what is still
known to break a rule; each entry must still break it (so a fix shows here and the entry goes),
and the lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kjoin", "kjoin_viz")
MAX_FUNCTION_LINES = 100

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Import cycles still known (each a strongly connected set of modules). Only shrinks."""

KNOWN_LONG_FUNCTIONS: set[str] = set()
"""Functions of kjoin/spark still over :data:`MAX_FUNCTION_LINES` lines (``path:name``). Only shrinks."""


# -- the import graph ---------------------------------------------------------------------------
def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the packages: dotted name -> (file, is a package)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (inside functions too), except under ``if TYPE_CHECKING:``
    (those never run, so they make no circle at run time)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        visit(node)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the packages it imports. Importing ``a.b.c`` also runs the packages
    ``a.b`` and ``a`` (unless the importer is inside them), so they count as imported too."""
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, is_package) in known.items():
        package = name if is_package else name.rpartition(".")[0]
        own = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 2)}
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if not target or target == name:
                    continue
                edges[name].add(target)
                parent = target.rpartition(".")[0]
                while parent and parent not in own:
                    edges[name].add(parent)
                    parent = parent.rpartition(".")[0]
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(frozenset(members))
    return found


def test_the_graph_sees_imports_inside_functions_and_relative_imports():
    """The graph itself: a known edge made by an import inside a function, and one by a relative import."""
    edges = import_graph()
    assert "kjoin.documents" in edges["kjoin.cli"]  # from .documents import load_scenario, run (top level)
    assert "kjoin.export" in edges["kjoin.cli"]  # from .export import ... (inside a function)
    assert "kjoin.engine.loop" in edges["kjoin.engine.aggregates"]  # from .loop import run_steps
    assert "kjoin.scenario" in edges["kjoin.engine.loop"]  # from ..scenario.fields: runs kjoin/scenario/__init__
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]


def test_no_import_cycles_in_kjoin_and_kjoin_viz():
    found = set(cycles(import_graph()))
    new = [sorted(cycle) for cycle in found - KNOWN_CYCLES]
    assert not new, f"import cycles (break them; see docs/architecture.md for the layers): {new}"
    gone = [sorted(cycle) for cycle in KNOWN_CYCLES - found]
    assert not gone, f"these known cycles are gone or changed: update KNOWN_CYCLES in this file: {gone}"


def test_no_cycle_is_allowed_in_kjoin_outside_the_spark_package():
    assert all(name.startswith("kjoin_viz.") or name.startswith("kjoin.spark") for c in KNOWN_CYCLES for name in c)


LAYERS = (
    (
        "kjoin.records",
        "kjoin.join_model",
        "kjoin.fates",
        "kjoin.semantics",
        "kjoin.partitioner",
        "kjoin.serde",
        "kjoin.state",
        "kjoin.times",
    ),
    ("kjoin.notation", "kjoin.ordering"),
    ("kjoin.stores",),
    ("kjoin.joins",),
    ("kjoin.scenario",),
    ("kjoin.trace", "kjoin.consistency"),
    ("kjoin.engine",),
    ("kjoin.render", "kjoin.diff"),
    ("kjoin", "kjoin.cli", "kjoin.export", "kjoin.spark", "kjoin_viz"),
)
"""docs/architecture.md's layers, lowest first: a module imports only its own layer and those below. A module a
layer does not name (by its longest prefix) is not checked."""


def _layer(module: str) -> int | None:
    found = [
        (len(prefix), index)
        for index, names in enumerate(LAYERS)
        for prefix in names
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(found)[1] if found else None


def test_imports_point_down_the_layers():
    upward = []
    for module, targets in sorted(import_graph().items()):
        here = _layer(module)
        for target in sorted(targets):
            there = _layer(target)
            if here is not None and there is not None and there > here:
                upward.append(f"{module} -> {target}")
    assert not upward, f"imports up the layers of docs/architecture.md: {upward}"


# -- function length ----------------------------------------------------------------------------
def long_functions() -> dict[str, int]:
    """``path:name`` -> lines of every function (methods and nested functions too) over the limit."""
    found = {}
    for package in (*PACKAGES, "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        found[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_over_100_lines_in_the_library():
    found = long_functions()
    new = {name: lines for name, lines in found.items() if name not in KNOWN_LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (cut them into named stages): {new}"
    gone = sorted(KNOWN_LONG_FUNCTIONS - set(found))
    assert not gone, f"no longer over the limit (or renamed): remove them from KNOWN_LONG_FUNCTIONS: {gone}"
    assert all(name.startswith("kjoin/spark/") for name in KNOWN_LONG_FUNCTIONS)


# -- module size --------------------------------------------------------------------------------
MAX_MODULE_LINES = 800
SIZE_REASON = "Why one module of this size"


def large_modules_without_a_reason() -> dict[str, int]:
    """``path`` -> lines of every library module over :data:`MAX_MODULE_LINES` whose docstring does not say, in a
    paragraph starting with :data:`SIZE_REASON`, why it is one module."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            lines = len(text.splitlines())
            if lines <= MAX_MODULE_LINES:
                continue
            doc = ast.get_docstring(ast.parse(text, str(path))) or ""
            paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
            if not any(SIZE_REASON in p and len(p.split(SIZE_REASON, 1)[1]) > 40 for p in paragraphs):
                found[path.relative_to(ROOT).as_posix()] = lines
    return found


def test_the_size_check_reads_the_docstring_not_the_code(tmp_path, monkeypatch):
    package = tmp_path / "kjoin"
    package.mkdir()
    body = "\n".join(f"x{i} = {i}" for i in range(MAX_MODULE_LINES))
    (package / "large.py").write_text(f'"""A module.\n\nWhy one module of this size: one job, {"x" * 40}."""\n{body}\n')
    (package / "silent.py").write_text(f'"""A module."""\n# {SIZE_REASON}: in a comment, not its docstring\n{body}\n')
    (package / "small.py").write_text('"""A module."""\nx = 1\n')
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "PACKAGES", ("kjoin",))
    assert large_modules_without_a_reason() == {"kjoin/silent.py": MAX_MODULE_LINES + 2}


def test_every_module_over_800_lines_says_why_it_is_one_module():
    found = large_modules_without_a_reason()
    assert not found, (
        f"modules over {MAX_MODULE_LINES} lines without a {SIZE_REASON!r} paragraph in their docstring (split them "
        f"by job, or say why they are one): {found}"
    )
