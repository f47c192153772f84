"""The architecture, checked: the core never imports Streamlit, the log spine imports no metric
package, pages import only the core and their helper module, and units stay short."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

CORE = ROOT / "ragaudit_core"
METRIC_PACKAGES = (
    "ragaudit_core.stability",
    "ragaudit_core.fidelity",
    "ragaudit_core.attribution",
    "ragaudit_core.review",
    "ragaudit_core.harness",
)


def _modules(folder):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_importing_every_core_module_imports_neither_streamlit_nor_torch():
    names = [
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in _modules(CORE)
        if p.name != "__main__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print(sorted(m for m in ('streamlit', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_the_log_spine_imports_no_metric_package():
    for path in _modules(CORE / "logs"):
        bad = {m for m in _imports(path) if m.startswith(METRIC_PACKAGES)}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("page", [*sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"], ids=lambda p: p.name)
def test_pages_import_only_the_core_and_their_helpers(page):
    third_party = {m.split(".")[0] for m in _imports(page)} - set(sys.stdlib_module_names)
    assert third_party <= {"streamlit", "ragaudit_core", "pages"}, third_party
    assert {m for m in _imports(page) if m.startswith("pages")} <= {"pages", "pages.ui"}


def test_no_function_over_120_lines_no_module_over_600():
    files = _modules(CORE) + _modules(ROOT / "pages") + [ROOT / "app.py"]
    for path in files:
        src = path.read_text(encoding="utf-8")
        assert len(src.splitlines()) <= 600, f"{path.relative_to(ROOT)}: {len(src.splitlines())} lines"
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                assert n <= 120, f"{path.relative_to(ROOT)}:{node.lineno} {node.name} has {n} lines"


# ---------------------------------------------------------------- import graph: no cycles, layers


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (annotations only: such an
    import never runs)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return [n for n in ast.walk(tree) if id(n) not in skip]


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module → the modules of ``package`` it imports, imports inside functions included (those
    under ``if TYPE_CHECKING:`` never run and are left out). ``from pkg import name`` points at
    ``pkg.name`` when that is a module, else at ``pkg``."""
    mods = {}
    for p in _modules(root):
        mods[".".join((package, *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        here = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[mod] |= {t for t in targets if t in mods and t != mod}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, …, a]``, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def unit_of(module: str) -> str:
    """The unit of the architecture a core module belongs to: its sub-package, or the top-level
    module itself (``ragaudit_core`` itself is ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        out.setdefault(unit_of(m), set()).update(unit_of(t) for t in targets if unit_of(t) != unit_of(m))
    return out


def documented_layers() -> dict[str, int]:
    """The layer of each unit, read from the table in docs/architecture.md ("| layer | units |")."""
    layers = {}
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for u in cells[1].replace("`", "").split(","):
                layers[u.strip().removesuffix("/").removesuffix(".py")] = int(cells[0])
    return layers


def test_the_core_has_no_import_cycle():
    graph = import_graph(CORE, "ragaudit_core")
    assert find_cycle(graph) is None, f"import cycle: {' → '.join(find_cycle(graph) or [])}"
    units = unit_graph(graph)
    assert find_cycle(units) is None, f"cycle between packages: {' → '.join(find_cycle(units) or [])}"


def test_the_cycle_check_finds_a_cycle_made_of_an_import_inside_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from pkg import a\n    return a\n")
    graph = import_graph(pkg, "pkg")
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]
    assert find_cycle(unit_graph(graph)) == ["a", "sub", "a"]
    (pkg / "sub" / "b.py").write_text("def f():\n    return 1\n")
    assert find_cycle(import_graph(pkg, "pkg")) is None


def test_imports_point_down_the_layers_the_architecture_document_draws():
    layers = documented_layers()
    units = unit_graph(import_graph(CORE, "ragaudit_core"))
    missing = sorted(set(units) - set(layers))
    assert not missing, f"docs/architecture.md places no layer for: {missing}"
    against = [
        f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})"
        for a, targets in units.items()
        for b in targets
        if layers[b] >= layers[a]
    ]
    assert not against, "imports against the documented direction: " + "; ".join(sorted(against))


def test_job_kinds_are_plugged_in_from_below():
    """The runners (jobs) name their kinds by module path, never import them; each kind lives in
    a lower layer than the runners."""
    from ragaudit_core.jobs.kinds import BUILTIN_KINDS

    layers = documented_layers()
    for target in BUILTIN_KINDS.values():
        module = target.split(":")[0]
        assert layers[unit_of(module)] < layers["jobs"], target
