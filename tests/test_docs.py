"""Meta-tests (datasette style): every hook in ``faregate.hookspecs`` is documented in
docs/plugin-hooks.md under a heading with its literal signature, has a
``test_hook_<name>`` test somewhere in the repository, and the docs' examples run.

They read the hook list from the specs, so adding a hook without docs or a test
fails here.
"""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Iterable
from pathlib import Path

import pluggy
import pytest

from faregate import hookspecs
from faregate.gateway import Gateway
from faregate.plugins import load_plugins

ROOT = Path(__file__).resolve().parents[1]
HOOKS_DOC = ROOT / "docs" / "plugin-hooks.md"
TEST_GLOBS = ("tests/**/*.py", "core/tests/**/*.py", "plugins/*/*/tests/**/*.py", "docs/examples/*/tests/**/*.py")
SIGNATURE_HEADING = re.compile(r"^##\s+`?([a-z_][a-z0-9_]*)\((.*)\)`?\s*$")


def hook_signatures() -> dict[str, str]:
    """``name -> "name(arg1, arg2)"`` for every hookspec, from pluggy's own reading."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return {name: f"{name}({', '.join(caller.spec.argnames)})"
            for name, caller in sorted(vars(pm.hook).items())
            if isinstance(caller, pluggy.HookCaller) and caller.spec is not None}


def markdown_blocks(text: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Headings outside code fences, and ``(section heading, language, code)`` per fence."""
    headings: list[str] = []
    blocks: list[tuple[str, str, str]] = []
    section, fence, lang, code = "", None, "", []
    for line in text.splitlines():
        if fence is None:
            if line.startswith("```"):
                fence, lang, code = line[:3], line[3:].strip(), []
            elif line.startswith("#"):
                headings.append(line)
                if line.startswith("## "):
                    section = line
        elif line.startswith(fence):
            blocks.append((section, lang, "\n".join(code) + "\n"))
            fence = None
        else:
            code.append(line)
    return headings, blocks


def missing_docs(signatures: dict[str, str], headings: Iterable[str]) -> list[str]:
    headings = list(headings)
    return [sig for sig in signatures.values() if not any(sig in h for h in headings)]


def stale_docs(signatures: dict[str, str], headings: Iterable[str]) -> list[str]:
    """Signature headings that name no hook, or the wrong arguments."""
    known = set(signatures.values())
    stale = []
    for heading in headings:
        match = SIGNATURE_HEADING.match(heading)
        if match and f"{match[1]}({match[2]})" not in known:
            stale.append(heading)
    return stale


def defined_functions(paths: Iterable[Path]) -> set[str]:
    names: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names.update(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    return names


def missing_tests(hooks: Iterable[str], names: set[str]) -> list[str]:
    return [f"test_hook_{hook}" for hook in hooks if f"test_hook_{hook}" not in names]


def repo_test_files() -> list[Path]:
    return sorted({p for pattern in TEST_GLOBS for p in ROOT.glob(pattern) if ".venv" not in p.parts})


# ---- the checks -----------------------------------------------------------------------------


def test_every_hook_is_documented() -> None:
    headings, _ = markdown_blocks(HOOKS_DOC.read_text(encoding="utf-8"))
    assert missing_docs(hook_signatures(), headings) == [], "add a '## name(args)' section to docs/plugin-hooks.md"
    assert stale_docs(hook_signatures(), headings) == [], "docs/plugin-hooks.md documents hooks that do not exist"


def test_every_hook_has_a_test() -> None:
    names = defined_functions(repo_test_files())
    assert missing_tests(hook_signatures(), names) == [], "add a test_hook_<name> test (see tests/test_hooks.py)"


def test_the_checks_catch_a_new_hook() -> None:
    """A hook added to the specs without docs or tests is reported by both checks."""
    headings, _ = markdown_blocks(HOOKS_DOC.read_text(encoding="utf-8"))
    signatures = {**hook_signatures(), "register_widgets": "register_widgets(register, app)"}
    assert missing_docs(signatures, headings) == ["register_widgets(register, app)"]
    assert missing_tests(signatures, defined_functions(repo_test_files())) == ["test_hook_register_widgets"]
    # a renamed argument counts as undocumented, and its old heading as stale
    renamed = {**hook_signatures(), "startup": "startup(application, services)"}
    assert missing_docs(renamed, headings) == ["startup(application, services)"]
    assert stale_docs(renamed, headings) == ["## startup(app, services)"]


def _hook_examples() -> list[tuple[str, str]]:
    _, blocks = markdown_blocks(HOOKS_DOC.read_text(encoding="utf-8"))
    found = []
    for section, lang, code in blocks:
        match = SIGNATURE_HEADING.match(section)
        if match and lang == "python":
            found.append((match[1], code))
    return found


@pytest.mark.parametrize(("hook", "code"), _hook_examples(), ids=[h for h, _ in _hook_examples()])
def test_docs_examples_register(hook: str, code: str, tmp_path: Path) -> None:
    """Each hook's example imports, registers as a plugin without errors, implements
    its hook, and (for ``register_*`` hooks) builds the objects it registers, with a
    real gateway's ``services`` where the hook offers them."""
    module = types.ModuleType(f"faregate_docs_example_{hook}")
    exec(compile(code, f"docs/plugin-hooks.md#{hook}", "exec"), module.__dict__)  # noqa: S102 - our own docs
    plugins = load_plugins(allow=[], extra=[module])
    (report,) = [r for r in plugins.reports if r.name == module.__name__]
    assert report.error is None
    assert hook in report.hooks
    if hook.startswith("register_"):
        registered: list[object] = []
        caller = getattr(plugins.pm.hook, hook)
        kwargs: dict[str, object] = {}
        if "services" in caller.spec.argnames:
            kwargs["services"] = Gateway(plugins, {"data_dir": str(tmp_path)}).services
        caller(register=lambda obj, *args, **kw: registered.append(obj), **kwargs)
        assert registered, f"the {hook} example registers nothing"


def test_every_hook_has_an_example() -> None:
    assert sorted({hook for hook, _ in _hook_examples()}) == sorted(hook_signatures())


@pytest.mark.parametrize("doc", sorted(p.relative_to(ROOT).as_posix() for p in [
    *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "examples").glob("*/README.md")]))
def test_python_blocks_compile(doc: str) -> None:
    _, blocks = markdown_blocks((ROOT / doc).read_text(encoding="utf-8"))
    for index, (_, lang, code) in enumerate(blocks):
        if lang.split(maxsplit=1)[:1] == ["python"]:
            compile(code, f"{doc} block {index}", "exec")


def test_the_plugin_tutorial_shows_the_real_files() -> None:
    """The tutorial's blocks titled with a path are the example plugin's files, verbatim,
    and the adapter, its fake and its conformance run stay under 150 lines together."""
    example = ROOT / "docs" / "examples" / "faregate-adapter-echo"
    _, blocks = markdown_blocks((ROOT / "docs" / "writing-a-plugin.md").read_text(encoding="utf-8"))
    shown = {lang.split(maxsplit=1)[1]: code for _, lang, code in blocks if lang.startswith("python ")}
    assert {"src/faregate_adapter_echo/provider.py", "src/faregate_adapter_echo/testing.py",
            "tests/test_conformance.py"} <= set(shown)
    for path, code in shown.items():
        assert code == (example / path).read_text(encoding="utf-8"), f"docs/writing-a-plugin.md shows a stale {path}"
    adapter = ("src/faregate_adapter_echo/provider.py", "src/faregate_adapter_echo/testing.py",
               "tests/test_conformance.py")
    assert sum(len(shown[path].splitlines()) for path in adapter) < 150
