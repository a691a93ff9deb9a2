"""The core's runtime modules import only the packages the core declares (core/pyproject.toml):
an undeclared one is missing from a plain ``pip install faregate`` (the AWS event-stream
splitter imported botocore, which only the Bedrock plugin brings); and every core module,
the splitter working, loads with botocore and boto3 absent. The test kit (``faregate.testing``)
imports only those and what its ``testing`` extra declares, as installed (a third party's
``pip install faregate[testing]`` to run the conformance suites got no wsproto, referencing
or openai)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"


def _declared() -> set[str]:
    project = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-") for req in project["dependencies"]}


def _imports() -> dict[str, set[str]]:
    """Top-level third-party names imported anywhere in the runtime modules (the test kit,
    ``faregate.testing``, has an extra of its own), lazily inside a function too."""
    found: dict[str, set[str]] = {}
    package = CORE / "src" / "faregate"
    for path in package.rglob("*.py"):
        relative = path.relative_to(package)
        if relative.parts[0] == "testing":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("faregate", "__future__"):
                    found.setdefault(top, set()).add(str(relative))
    return found


def test_the_core_imports_only_what_it_declares() -> None:
    declared, owners = _declared(), importlib.metadata.packages_distributions()
    undeclared = {top: sorted(files) for top, files in _imports().items()
                  if not any(d.lower().replace("_", "-") in declared for d in owners.get(top, []))}
    assert undeclared == {}, "imported by the core but not in its dependencies"


_WITHOUT_BOTO = """
import importlib, pkgutil, struct, sys, zlib
for name in ("botocore", "boto3"):
    sys.modules[name] = None  # an import of it raises ImportError
import faregate
failed = []
for module in pkgutil.walk_packages(faregate.__path__, "faregate."):
    if not module.name.startswith("faregate.testing") and not module.name.endswith(".__main__"):
        try:
            importlib.import_module(module.name)
        except Exception as exc:
            failed.append(f"{module.name}: {exc!r}")
assert not failed, failed
from faregate.framing import Framing, splitter_for
head = bytes([11]) + b":event-type" + bytes([7]) + struct.pack(">H", 5) + b"chunk"
prelude = struct.pack(">II", 12 + len(head) + 2 + 4, len(head))
body = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + b"{}"
((raw, name, data),) = splitter_for(Framing.AWS_EVENT_STREAM).feed(body + struct.pack(">I", zlib.crc32(body)))
assert (name, data) == ("chunk", b"{}"), (name, data)
"""


def test_every_core_module_loads_and_splits_aws_frames_without_botocore() -> None:
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_BOTO], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


#: imported by faregate.testing only inside the fixture or helper of one storage engine, after
#: ``pytest.importorskip`` of it or of its storage plugin, which brings the driver
ENGINE_DRIVERS = {"aiomysql", "asyncpg", "pymysql"}


def _testing_imports() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Third-party top-level names the test kit imports: at module level (also under a
    module-level ``if``/``try``, or in a class body), and lazily, inside a function. Imports
    under ``if TYPE_CHECKING`` never run and are left out."""
    package = CORE / "src" / "faregate" / "testing"
    eager: dict[str, set[str]] = {}
    lazy: dict[str, set[str]] = {}

    def note(node: ast.AST, into: dict[str, set[str]], where: str) -> None:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            return
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("faregate", "__future__"):
                into.setdefault(top, set()).add(where)

    def walk(statements: list[ast.stmt], where: str) -> None:
        for statement in statements:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(statement):
                    note(node, lazy, where)
            elif isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
                walk(statement.orelse, where)
            elif isinstance(statement, ast.Import | ast.ImportFrom):
                note(statement, eager, where)
            else:  # a class body, an if, try or with: their statements run at import too
                walk([child for child in ast.iter_child_nodes(statement) if isinstance(child, ast.stmt)], where)
                for handler in getattr(statement, "handlers", []):
                    walk(handler.body, where)

    for path in package.rglob("*.py"):
        walk(ast.parse(path.read_text()).body, str(path.relative_to(package)))
    return eager, lazy


def _testing_extra() -> set[str]:
    """The distributions the installed faregate declares, itself or under its ``testing`` extra
    (its metadata, as a third party's ``pip install faregate[testing]`` reads it)."""
    from packaging.requirements import Requirement

    declared: set[str] = set()
    for line in importlib.metadata.requires("faregate") or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": "testing"}):
            declared.add(re.sub(r"[-_.]+", "-", requirement.name).lower())
    return declared


def test_the_installed_metadata_is_the_pyproject() -> None:
    """The check below reads the installed metadata: it must be this checkout's."""
    from packaging.requirements import Requirement

    def names(lines: list[str]) -> set[tuple[str, bool]]:  # (distribution, only with an extra)
        return {(Requirement(line).name.lower(), "extra" in str(Requirement(line).marker)) for line in lines}

    project = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]
    declared = names(project["dependencies"]) | {(name, True) for name, _ in
                                                  names(project["optional-dependencies"]["testing"])}
    assert names(importlib.metadata.requires("faregate") or []) == declared, (
        "faregate's installed metadata is not core/pyproject.toml's: re-install it (./dev setup)")


def test_the_test_kit_imports_only_what_faregate_testing_declares() -> None:
    """A third party running the conformance suites against its plugin installs
    ``faregate[testing]``: every module of faregate.testing must import with that alone
    (stdlib, the core's dependencies, the extra's), and a package imported lazily beyond
    those must be a storage engine's driver."""
    declared, owners = _testing_extra(), importlib.metadata.packages_distributions()

    def undeclared(found: dict[str, set[str]]) -> dict[str, list[str]]:
        return {top: sorted(files) for top, files in found.items()
                if not any(re.sub(r"[-_.]+", "-", d).lower() in declared for d in owners.get(top, []))}

    eager, lazy = _testing_imports()
    assert {"pytest", "wsproto", "referencing", "tortoise"} <= eager.keys() and "openai" in lazy  # the walk sees them
    assert undeclared(eager) == {}, "imported at module level by faregate.testing, not declared by faregate[testing]"
    beyond = {top: files for top, files in undeclared(lazy).items() if top not in ENGINE_DRIVERS}
    assert beyond == {}, "imported by faregate.testing, not declared by faregate[testing] nor an engine's driver"
