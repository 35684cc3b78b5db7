"""The package's shape (issue 13): the plugin never imports the lab, modules stay small,
the hook stays thin, the planner does no I/O.

Read from the source with ``ast`` (every ``import``/``from`` anywhere in a module, function
bodies included, relative ones resolved, plus ``importlib.import_module("...")`` /
``__import__("...")`` with a literal name), so a lab import hidden in a function is found
without running it; one subprocess also imports every plugin module and looks at
``sys.modules``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "litellm_kvwarm"
LAB = "litellm_kvwarm.lab"
MAX_LINES = 300
HOOK_MAX_LINES = 199  # "under 200 lines"
# Modules allowed over MAX_LINES because they are data tables (module name -> what the table is).
DATA_TABLE_ALLOWLIST: dict[str, str] = {
    "litellm_kvwarm.context_error_wordings": "the wording table of backend context-length errors (one Row per wording)",
}
IO_MODULES = ("httpx", "redis", "asyncio", "litellm", "fastapi", "socket")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def plugin_modules() -> list[Path]:
    lab_dir = PACKAGE / "lab"
    return [p for p in all_modules() if lab_dir not in p.parents]


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in ``importer``."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]  # a module's own package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imported_names(source: str, importer: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, wherever it is written.

    ``from X import a, b`` yields ``X`` and also ``X.a``, ``X.b`` (``a`` may be a submodule:
    ``from . import lab``). Literal names given to ``importlib.import_module`` or ``__import__``
    count too (a relative one resolved against ``importer``'s package).
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(importer, is_package, node.level, node.module)
            yield node.lineno, base
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{base}.{alias.name}" if base else alias.name
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = node.args[0].value
            if called in ("import_module", "__import__") and isinstance(target, str):
                if target.startswith("."):
                    dots = len(target) - len(target.lstrip("."))
                    target = _resolve(importer, is_package, dots, target.lstrip(".") or None)
                yield node.lineno, target


def _is_lab(name: str) -> bool:
    return name == LAB or name.startswith(LAB + ".")


def lab_imports(path: Path) -> list[str]:
    name = module_name(path)
    found = imported_names(path.read_text("utf-8"), name, is_package=path.name == "__init__.py")
    return [f"{path.relative_to(ROOT)}:{line}: {target}" for line, target in found if _is_lab(target)]


# ------------------------------------------------------------------ the scanner itself


@pytest.mark.parametrize(
    "source",
    [
        "from .lab import emulator",
        "from .lab.emulator import app",
        "from . import lab",
        "from . import tokens, lab as tooling",
        "import litellm_kvwarm.lab.cli",
        "import litellm_kvwarm.lab as lab",
        "from litellm_kvwarm.lab.processes import start_emulator",
        "from litellm_kvwarm import lab",
        "def f():\n    from .lab import demo\n    return demo",
        "class C:\n    def m(self):\n        import litellm_kvwarm.lab.charts\n",
        "import importlib\nimportlib.import_module('litellm_kvwarm.lab.bench')",
        "from importlib import import_module\nimport_module('.lab', __package__)",
        "__import__('litellm_kvwarm.lab')",
    ],
)
def test_scanner_finds_a_lab_import_written_any_way(source):
    found = [t for _, t in imported_names(source, "litellm_kvwarm.hook") if _is_lab(t)]
    assert found, source


@pytest.mark.parametrize(
    "source",
    [
        "from . import tokens, labels",
        "from .laboratory import x",
        "import litellm_kvwarm.labels",
        "from .tokens import lab",  # a name inside tokens, not the lab package
        "x = 'litellm_kvwarm.lab'",
    ],
)
def test_scanner_does_not_flag_look_alikes(source):
    found = [t for _, t in imported_names(source, "litellm_kvwarm.hook") if _is_lab(t)]
    assert not found, (source, found)


def test_scanner_resolves_relative_imports_from_a_subpackage():
    names = [t for _, t in imported_names("from .. import lab\nfrom ..lab.cli import main", "litellm_kvwarm.sub.mod")]
    assert "litellm_kvwarm.lab" in names and "litellm_kvwarm.lab.cli" in names
    names = [t for _, t in imported_names("from . import lab", "litellm_kvwarm", is_package=True)]
    assert "litellm_kvwarm.lab" in names


# ------------------------------------------------------------------ the package


def test_the_package_has_a_plugin_and_a_lab():
    plugin = {module_name(p) for p in plugin_modules()}
    assert {"litellm_kvwarm", "litellm_kvwarm.hook", "litellm_kvwarm.config"} <= plugin
    assert not any(_is_lab(name) for name in plugin)
    assert (PACKAGE / "lab" / "__init__.py").exists()
    assert len(plugin) >= 15, sorted(plugin)  # the scan below really covers the plugin


def test_no_plugin_module_imports_the_lab():
    offenders = [hit for path in plugin_modules() for hit in lab_imports(path)]
    assert offenders == [], "the plugin (litellm_kvwarm/ outside lab/) must never import the lab:\n" + "\n".join(offenders)


def test_importing_every_plugin_module_loads_no_lab_module():
    names = sorted(module_name(p) for p in plugin_modules())
    probe = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m == {LAB!r} or m.startswith({LAB + '.'!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]


def _line_count(path: Path) -> int:
    return len(path.read_text("utf-8").splitlines())


def test_every_module_is_at_most_300_lines():
    too_long = {
        str(p.relative_to(ROOT)): _line_count(p)
        for p in all_modules()
        if _line_count(p) > MAX_LINES and module_name(p) not in DATA_TABLE_ALLOWLIST
    }
    assert too_long == {}, f"modules over {MAX_LINES} lines (split them, or allowlist a data table): {too_long}"


def test_allowlisted_data_tables_exist_and_need_it():
    for name, what in DATA_TABLE_ALLOWLIST.items():
        path = ROOT / (name.replace(".", "/") + ".py")
        assert path.exists(), f"allowlisted {name} ({what}) no longer exists: drop it from the allowlist"
        assert _line_count(path) > MAX_LINES, f"allowlisted {name} is within {MAX_LINES} lines: drop it"


def test_hook_is_under_200_lines():
    lines = _line_count(PACKAGE / "hook.py")
    assert lines <= HOOK_MAX_LINES, f"litellm_kvwarm/hook.py has {lines} lines; issue 13 asks for under 200"


def test_planner_imports_no_io_module():
    planner = PACKAGE / "planner.py"
    names = [(line, t) for line, t in imported_names(planner.read_text("utf-8"), "litellm_kvwarm.planner")]
    io = [f"planner.py:{line}: {t}" for line, t in names if t.split(".")[0] in IO_MODULES]
    assert io == [], "the planner must stay pure (no I/O imports):\n" + "\n".join(io)
