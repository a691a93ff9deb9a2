"""The plugin API boundary: plugins import the core only through ``faregate.api``
(their tests, and their own ``testing`` modules, also through ``faregate.testing``).

Everything else in the core may change without notice; a plugin that reaches past
the door would break silently. The check reads every plugin file's imports (no
import is executed), so it also covers code paths no test runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import faregate.api as api

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_ROOTS = [*ROOT.glob("plugins/*/*"), *ROOT.glob("docs/examples/*")]

PUBLIC = ("faregate.api",)
TEST_KIT = ("faregate.api", "faregate.testing")


def imported_core_modules(source: str, filename: str = "<plugin>") -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import of the ``faregate`` core in ``source``
    (``from faregate import x`` counts as ``faregate.x``)."""
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "faregate" or alias.name.startswith("faregate."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == "faregate":
                for alias in node.names:
                    yield node.lineno, f"faregate.{alias.name}"
            elif node.module.startswith("faregate."):
                yield node.lineno, node.module


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def rule_for(path: Path) -> tuple[str, ...]:
    """Tests and a plugin's own test kit may use ``faregate.testing``; the rest only the API."""
    parts = path.parts
    if "tests" in parts or "testing" in parts or path.stem == "testing" or path.name == "conftest.py":
        return TEST_KIT
    return PUBLIC


def violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if ".venv" in path.parts or "__pycache__" in path.parts:
            continue
        prefixes = rule_for(path.relative_to(root))
        for line, module in imported_core_modules(path.read_text(encoding="utf-8"), str(path)):
            if not allowed(module, prefixes):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return found


def test_plugins_import_only_the_api() -> None:
    assert PLUGIN_ROOTS, "no plugins found"
    found = [v for root in PLUGIN_ROOTS for v in violations(root)]
    assert found == [], "plugins may import only faregate.api (tests: also faregate.testing):\n" + "\n".join(found)


def test_the_check_catches_a_private_import(tmp_path: Path) -> None:
    plugin = tmp_path / "faregate-adapter-x"
    (plugin / "src" / "faregate_adapter_x" / "testing").mkdir(parents=True)
    (plugin / "tests").mkdir()
    (plugin / "src" / "faregate_adapter_x" / "__init__.py").write_text(
        "from faregate.api import hookimpl\nfrom faregate import jsonutil\nimport faregate.exchange.chat\n")
    (plugin / "src" / "faregate_adapter_x" / "testing" / "fake.py").write_text(
        "from faregate.testing.harness import GatewayServer\nfrom faregate.db import models\n")
    (plugin / "tests" / "test_x.py").write_text(
        "from faregate.testing import harness\nfrom faregate.api import Usage\nfrom faregate.billing import pricing\n")
    got = [v.split(" imports ")[1] for v in _violations_under(plugin)]
    assert got == ["faregate.jsonutil", "faregate.exchange.chat", "faregate.db", "faregate.billing"]


def _violations_under(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        prefixes = rule_for(path.relative_to(root))
        for line, module in imported_core_modules(path.read_text(encoding="utf-8")):
            if not allowed(module, prefixes):
                found.append(f"{path.name}:{line} imports {module}")
    return found


def test_the_api_exports_what_it_declares() -> None:
    """``__all__`` is the contract: every name in it exists, and nothing public is
    exported by accident (a name in the module but not in ``__all__``)."""
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []
    undeclared = sorted(name for name in vars(api) if name.isidentifier() and not name.startswith("_")
                        and name not in api.__all__ and name != "annotations")
    assert undeclared == []


def test_the_lazy_api_names_what_its_imports_name() -> None:
    """``faregate.api`` imports a name when a plugin first asks for it (its table ``_WHERE``);
    the type checkers read the imports under ``TYPE_CHECKING``: both must say the same."""
    tree = ast.parse(Path(api.__file__).read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
    imported = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            imported[alias.asname or alias.name] = (node.module, alias.name)
    tabled = {name: (module, attribute) if attribute else module.rsplit(".", 1)
              for name, (module, attribute) in api._WHERE.items()}
    assert {name: tuple(where) for name, where in tabled.items()} == imported
    assert sorted(imported) == sorted(api.__all__)


def test_importing_the_api_imports_none_of_its_names_modules() -> None:
    """A plugin loaded to declare its settings pays for the names it uses, not for Quart,
    tortoise and the relay."""
    heavy = ("quart", "tortoise", "httpx", "aiohttp", "faregate.exchange")
    probe = f"import sys, faregate.api as api; assert api.Setting; print(sorted(set({heavy!r}) & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
