"""The core's runtime modules import only the packages the core declares (core/pyproject.toml):
an undeclared one is missing from a plain ``pip install faregate`` (the AWS event-stream
splitter imported botocore, which only the Bedrock plugin brings); and every core module,
the splitter working, loads with botocore and boto3 absent."""

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
