"""The architecture, checked: the core never imports Streamlit, the log spine imports no metric
package, pages import only the core and their helper module, and units stay short."""

from __future__ import annotations

import ast
import subprocess
import sys

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
