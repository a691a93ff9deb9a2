"""Every distribution of the repository (the core, each plugin, the documented example) is
publishable as it is: the licence (SPDX expression and the file itself, in the wheel and the
sdist), classifiers, project URLs, and a ``py.typed`` marker in each package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/faregate/faregate"
DISTRIBUTIONS = sorted(p.parent for p in [ROOT / "core" / "pyproject.toml",
                                           *ROOT.glob("plugins/*/*/pyproject.toml"),
                                           *ROOT.glob("docs/examples/*/pyproject.toml")] if p.exists())
CLASSIFIERS = {
    "Development Status :: 3 - Alpha",
    "Framework :: AsyncIO",
    "Intended Audience :: Developers",
    "Intended Audience :: System Administrators",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Internet :: WWW/HTTP :: HTTP Servers",
    "Typing :: Typed",
}


def project(directory: Path) -> dict[str, Any]:
    with open(directory / "pyproject.toml", "rb") as file:
        loaded: dict[str, Any] = tomllib.load(file)
    return loaded


def ids(directory: Path) -> str:
    return str(directory.relative_to(ROOT))


def test_every_distribution_is_found() -> None:
    names = {ids(d) for d in DISTRIBUTIONS}
    assert {"core", "plugins/adapters/openai", "plugins/storage/mysql", "docs/examples/faregate-adapter-echo"} <= names


def test_the_licence_is_apache_2() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    reference = Path("/usr/share/common-licenses/Apache-2.0")
    if reference.exists():
        assert text == reference.read_text()


@pytest.mark.parametrize("directory", DISTRIBUTIONS, ids=ids)
def test_metadata(directory: Path) -> None:
    meta = project(directory)["project"]
    assert meta.get("license") == "Apache-2.0"  # PEP 639: an SPDX expression, not a table
    classifiers = set(meta.get("classifiers", []))
    assert CLASSIFIERS <= classifiers, sorted(CLASSIFIERS - classifiers)
    # PyPI refuses "License ::" classifiers next to a licence expression (PEP 639)
    assert not [c for c in classifiers if c.startswith("License ::")]
    urls = meta.get("urls", {})
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    assert all(url.startswith(REPOSITORY) for url in urls.values()), urls
    assert urls["Changelog"].endswith("/CHANGELOG.md") and (ROOT / "CHANGELOG.md").exists()


@pytest.mark.parametrize("directory", DISTRIBUTIONS, ids=ids)
def test_the_licence_ships_in_every_distribution(directory: Path) -> None:
    """hatchling packs files from the distribution's own directory only (never ../..): each one
    carries a copy of the repository's LICENSE, named in license-files."""
    config = project(directory)
    assert config["build-system"]["build-backend"] == "hatchling.build"
    assert "LICENSE" in config["project"].get("license-files", [])
    copy = directory / "LICENSE"
    assert copy.is_file() and not copy.is_symlink()
    assert copy.read_bytes() == (ROOT / "LICENSE").read_bytes(), f"{ids(directory)}/LICENSE differs from LICENSE"


@pytest.mark.parametrize("directory", DISTRIBUTIONS, ids=ids)
def test_every_package_is_typed(directory: Path) -> None:
    packages = [p.parent for p in (directory / "src").glob("*/__init__.py")]
    assert packages
    assert [str(p.relative_to(ROOT)) for p in packages if not (p / "py.typed").is_file()] == []
    shipped = project(directory).get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {}) \
        .get("wheel", {}).get("packages", [])
    assert sorted(f"src/{p.name}" for p in packages) == sorted(shipped)


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not os.path.exists(found):
        pytest.skip("uv is not installed")
    return found


def test_the_core_wheel_and_sdist_carry_the_licence_and_py_typed(tmp_path: Path) -> None:
    uv = _uv()
    subprocess.run([uv, "build", "-q", "--wheel", "--sdist", "-o", str(tmp_path), str(ROOT / "core")],
                   check=True, timeout=180, capture_output=True)
    wheel = next(tmp_path.glob("faregate-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        licence = archive.read(next(n for n in names if n.endswith(".dist-info/licenses/LICENSE")))
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert "faregate/py.typed" in names
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    assert "Classifier: Typing :: Typed" in metadata and f"Project-URL: Changelog, {REPOSITORY}" in metadata
    sdist = next(tmp_path.glob("faregate-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    top = members[0].split("/")[0]
    assert f"{top}/LICENSE" in members and f"{top}/src/faregate/py.typed" in members
