"""The container files (Dockerfile, compose.yaml, .dockerignore) checked the way hadolint and a
careful reviewer would: pinned images, a non-root final stage, a health check on /healthz,
dependencies cached in their own layer, and compose environments naming only real settings.

The checks are plain functions returning a list of problems, so the last tests can feed them
a bad Dockerfile and a bad compose file and see them fail."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
yaml = pytest.importorskip("yaml")

#: images whose tags carry three-part versions (3.12.13, 11.4.10, 7.4.11): fewer parts is a moving tag
THREE_PART_VERSIONS = {"python", "mariadb", "redis"}


# --- Dockerfile parsing ---------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    line: int  # 1-based line of the instruction's first line
    keyword: str  # upper case
    args: str  # the rest, continuation lines joined

    def __str__(self) -> str:
        return f"line {self.line}: {self.keyword} {self.args}"


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with their continuation lines joined (comment lines inside a continued
    instruction are dropped, as Docker does). Parser directives count as comments."""
    found: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(part for part in pending if part)
        pending = []
        keyword, _, args = joined.partition(" ")
        found.append(Instruction(start, keyword.upper(), args.strip()))
    if pending:
        joined = " ".join(pending)
        keyword, _, args = joined.partition(" ")
        found.append(Instruction(start, keyword.upper(), args.strip()))
    return found


def global_args(instructions: list[Instruction]) -> dict[str, str]:
    """``ARG NAME=default`` lines before the first FROM: what FROM lines may use."""
    values: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "FROM":
            break
        if ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            values[name.strip()] = default.strip().strip('"')
    return values


def expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


@dataclass
class Stage:
    image: str  # as written after ARG expansion
    name: str | None
    instructions: list[Instruction]


def stages(instructions: list[Instruction]) -> list[Stage]:
    values = global_args(instructions)
    found: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]
            image = expand(words[0], values) if words else ""
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            found.append(Stage(image, name, []))
        elif found:
            found[-1].instructions.append(ins)
    return found


def flag_value(args: str, flag: str) -> str | None:
    for word in args.split():
        if word.startswith(f"--{flag}="):
            return word.split("=", 1)[1]
    return None


def copy_sources(ins: Instruction) -> list[str]:
    """The sources of a COPY/ADD (every word but the flags and the destination)."""
    args = ins.args.strip()
    if args.startswith("["):  # JSON form
        import json

        words = json.loads(args)
    else:
        words = [w for w in shlex.split(args) if not w.startswith("--")]
    return words[:-1]


# --- image references -------------------------------------------------------------------------


def image_pin_problem(reference: str) -> str | None:
    """Why an image reference is not pinned to a specific version, or None. A digest pins
    anything; otherwise the tag must start with a version (three parts where the image uses
    three), never ``latest`` nor a bare major (``python:3``, ``redis:7``) or a variant alone."""
    if "${" in reference or reference.startswith("$"):
        return f"{reference}: an unresolved variable"
    if "@sha256:" in reference:
        return None
    last = reference.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"{reference}: no tag (means latest)"
    repository, tag = reference.rsplit(":", 1)
    name = repository.rsplit("/", 1)[-1]
    if tag == "latest" or tag.startswith("latest-"):
        return f"{reference}: the latest tag moves"
    version = re.match(r"\d+(?:\.\d+)*", tag)
    if version is None:
        return f"{reference}: the tag {tag!r} names no version"
    parts = version.group(0).count(".") + 1
    needed = 3 if name in THREE_PART_VERSIONS else 2
    if parts < needed:
        return f"{reference}: {version.group(0)} is a moving tag (pin the full version)"
    return None


# --- Dockerfile checks (each returns its problems) ----------------------------------------------


def from_problems(instructions: list[Instruction]) -> list[str]:
    all_stages = stages(instructions)
    if not all_stages:
        return ["no FROM"]
    earlier: set[str] = set()
    problems = []
    for stage in all_stages:
        if stage.image not in earlier and stage.image != "scratch":
            problem = image_pin_problem(stage.image)
            if problem:
                problems.append(f"FROM {problem}")
        if stage.name:
            earlier.add(stage.name)
    return problems


def user_problems(instructions: list[Instruction]) -> list[str]:
    all_stages = stages(instructions)
    if not all_stages:
        return ["no FROM"]
    users = [ins for ins in all_stages[-1].instructions if ins.keyword == "USER"]
    if not users:
        return ["the final stage has no USER: the container runs as root"]
    user = users[-1].args.split(":")[0].strip()
    if user in {"root", "0"}:
        return [f"{users[-1]}: the final stage runs as root"]
    return []


def healthcheck_problems(instructions: list[Instruction]) -> list[str]:
    all_stages = stages(instructions)
    checks = [ins for ins in (all_stages[-1].instructions if all_stages else []) if ins.keyword == "HEALTHCHECK"]
    if not checks:
        return ["the final stage has no HEALTHCHECK"]
    check = checks[-1]
    if check.args.upper().startswith("NONE"):
        return [f"{check}: health checking disabled"]
    if "/healthz" not in check.args:
        return [f"{check}: does not call /healthz"]
    if re.search(r"\b(curl|wget)\b", check.args):
        return [f"{check}: curl and wget are not in the slim image"]
    return []


def add_problems(instructions: list[Instruction]) -> list[str]:
    problems = []
    for ins in instructions:
        if ins.keyword == "ADD":
            for source in copy_sources(ins):
                if re.match(r"(https?|ftp)://|git@", source):
                    problems.append(f"{ins}: ADD of a URL (fetch it in a RUN with a checksum, or COPY)")
    return problems


def apt_problems(instructions: list[Instruction]) -> list[str]:
    problems = []
    for ins in instructions:
        if ins.keyword != "RUN" or not re.search(r"\bapt(-get)?\s+install\b", ins.args):
            continue
        if "rm -rf /var/lib/apt/lists" not in ins.args:
            problems.append(f"{ins}: apt lists not removed in the same layer")
        if "--no-install-recommends" not in ins.args:
            problems.append(f"{ins}: apt install without --no-install-recommends")
    return problems


MANIFEST = re.compile(r"(^|/)(pyproject\.toml|requirements[^/]*\.txt|[^/]*\.lock|README[^/]*)$")
INSTALL = re.compile(r"\b(pip|uv pip)\s+install\b")


def is_dependency_install(ins: Instruction) -> bool:
    """A RUN installing third-party dependencies: pip install -r / of the dependency list,
    not of the project's own (already copied) sources."""
    return ins.keyword == "RUN" and bool(INSTALL.search(ins.args)) and "--no-deps" not in ins.args


def is_source_copy(ins: Instruction) -> bool:
    if ins.keyword not in {"COPY", "ADD"} or flag_value(ins.args, "from") is not None:
        return False
    return not all(MANIFEST.search(source.rstrip("/")) for source in copy_sources(ins))


def layer_order_problems(instructions: list[Instruction]) -> list[str]:
    """The stage that installs Python packages installs the dependencies in a RUN before the
    first COPY of sources: a source edit must not re-download every dependency."""
    problems = []
    installing = [s for s in stages(instructions) if any(INSTALL.search(i.args) for i in s.instructions
                                                          if i.keyword == "RUN")]
    if not installing:
        return ["no stage installs the dependencies"]
    for stage in installing:
        first_source = next((i for i in stage.instructions if is_source_copy(i)), None)
        first_deps = next((i for i in stage.instructions if is_dependency_install(i)), None)
        label = stage.name or stage.image
        if first_deps is None:
            problems.append(f"stage {label}: no dependency install before the sources")
        elif first_source is not None and first_source.line < first_deps.line:
            problems.append(f"stage {label}: {first_source} comes before the dependency install "
                            f"({first_deps.line}): every source edit reinstalls the dependencies")
    return problems


CHECKS = (from_problems, user_problems, healthcheck_problems, add_problems, apt_problems, layer_order_problems)


def dockerfile_problems(text: str) -> dict[str, list[str]]:
    instructions = parse_dockerfile(text)
    return {check.__name__: check(instructions) for check in CHECKS}


# --- compose checks -------------------------------------------------------------------------------


def known_setting_names() -> set[str]:
    """Every environment variable the gateway reads as a setting: FAREGATE_<NAME> and the
    new-api aliases, of the core and of every installed plugin (register_settings)."""
    from faregate.hooks import GatewayHooks
    from faregate.plugins import load_plugins
    from faregate.settings import CORE_SETTINGS, Setting

    declared = [*CORE_SETTINGS,
                *(d for d in GatewayHooks(load_plugins(block=[]).pm).settings() if isinstance(d, Setting))]
    return {name for s in declared for name in (s.env, *s.aliases)}


def gateway_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose.get("services", {}).items() if "build" in svc}


def environment_names(service: dict[str, Any]) -> list[str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return [item.split("=", 1)[0] for item in env]
    return list(env)


def compose_problems(compose: dict[str, Any], known: set[str]) -> list[str]:
    problems = []
    services: dict[str, dict[str, Any]] = compose.get("services") or {}
    if not services:
        return ["no services"]
    gateways = gateway_services(compose)
    if not gateways:
        problems.append("no service builds the gateway image")
    for name, svc in services.items():
        if "healthcheck" not in svc or (svc["healthcheck"] or {}).get("disable"):
            problems.append(f"service {name}: no healthcheck")
        if "build" not in svc:
            image = svc.get("image")
            if not image:
                problems.append(f"service {name}: neither build nor image")
            else:
                problem = image_pin_problem(image)
                if problem:
                    problems.append(f"service {name}: {problem}")
    for name, svc in gateways.items():
        for variable in environment_names(svc):
            if variable not in known:
                problems.append(f"service {name}: {variable} is no setting name nor alias (docs/settings.md)")
        depends = svc.get("depends_on") or {}
        if isinstance(depends, list) or not depends:
            problems.append(f"service {name}: depends_on without conditions")
        else:
            for dep, condition in depends.items():
                if (condition or {}).get("condition") != "service_healthy":
                    problems.append(f"service {name}: starts before {dep} is healthy")
                if dep in services and "healthcheck" not in services[dep]:
                    problems.append(f"service {name}: waits for {dep}, which has no healthcheck")
        if "/data" not in " ".join(str(v) for v in svc.get("volumes") or []):
            problems.append(f"service {name}: no volume on /data")
    in_postgres = {name for name, svc in services.items() if "postgres" in (svc.get("profiles") or [])}
    if not in_postgres:
        problems.append("no postgres profile")
    elif not {"postgres", "gateway-postgres"} <= in_postgres:
        problems.append(f"the postgres profile has {sorted(in_postgres)}, not postgres and gateway-postgres")
    return problems


# --- the repository's files -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_dockerfile(dockerfile: str, check: Any) -> None:
    assert check(parse_dockerfile(dockerfile)) == []


def test_dockerfile_runs_the_cli_with_real_settings(dockerfile: str) -> None:
    instructions = parse_dockerfile(dockerfile)
    final = stages(instructions)[-1].instructions
    known = known_setting_names()
    env_names = [m.group(1) for ins in final if ins.keyword == "ENV"
                 for m in re.finditer(r"\b([A-Z][A-Z0-9_]*)=", ins.args)]
    assert "FAREGATE_DATA_DIR" in env_names
    assert [n for n in env_names if n.startswith("FAREGATE_") and n not in known] == []
    keywords = {ins.keyword: ins.args for ins in final}
    assert keywords["ENTRYPOINT"] == '["faregate"]'
    assert keywords["CMD"].startswith('["serve"')
    assert keywords["WORKDIR"] == "/app"
    assert "3000" in keywords["EXPOSE"].split()  # the port setting's default
    assert "/data" in keywords["VOLUME"]
    user = next(ins.args for ins in final if ins.keyword == "RUN" and "useradd" in ins.args)
    assert "--uid 10001" in user and "faregate" in user


def test_compose(compose: dict[str, Any]) -> None:
    assert compose_problems(compose, known_setting_names()) == []
    assert set(gateway_services(compose)) == {"gateway", "gateway-postgres"}
    assert {"mariadb", "redis"} <= set(compose["services"]["gateway"]["depends_on"])


def test_compose_has_no_secret_but_marked_defaults() -> None:
    """Passwords and secrets come from ${VAR:-…} interpolation; a default is empty or change-me."""
    text = (ROOT / "compose.yaml").read_text()
    for match in re.finditer(r"\$\{(\w*(?:PASSWORD|SECRET|TOKEN)\w*):?-([^}]*)\}", text):
        assert match.group(2) in {"", "change-me"}, match.group(0)
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if re.search(r"PASSWORD|SECRET|TOKEN", key) and not key.startswith("#"):
            assert value.strip().startswith("${") or value.strip().strip('"') == "1", line


def test_dockerignore() -> None:
    entries = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv", ".git", "data"} <= entries
    assert "**/__pycache__" in entries
    # what the image is built from stays in
    assert not {"core", "plugins", "LICENSE", "**/LICENSE", "**/README.md", "**/pyproject.toml"} & entries


# --- the checks can fail ---------------------------------------------------------------------------

BAD_DOCKERFILE = """\
FROM python:latest
RUN apt-get update && apt-get install -y curl
COPY . /app
RUN pip install /app
ADD https://example.com/tool.tar.gz /opt/
HEALTHCHECK CMD curl -f http://localhost:3000/ || exit 1
CMD ["faregate", "serve"]
"""


def test_the_checks_find_a_bad_dockerfile() -> None:
    found = dockerfile_problems(BAD_DOCKERFILE)
    assert all(found.values()), {name: problems for name, problems in found.items() if not problems}
    assert dockerfile_problems(BAD_DOCKERFILE.replace("python:latest", "python:3.12-slim"))["from_problems"]
    assert from_problems(parse_dockerfile("FROM python\n"))
    assert from_problems(parse_dockerfile("ARG IMAGE=redis:7\nFROM ${IMAGE}\n"))
    assert user_problems(parse_dockerfile("FROM python:3.12.13-slim\nUSER nobody\nUSER root\n"))
    assert user_problems(parse_dockerfile("FROM python:3.12.13-slim AS b\nUSER app\nFROM python:3.12.13-slim\n"))
    assert healthcheck_problems(parse_dockerfile("FROM python:3.12.13-slim\nHEALTHCHECK NONE\n"))


def test_the_checks_pass_good_dockerfile_pieces() -> None:
    """The opposite cases, so a check that always complains is caught too."""
    assert not from_problems(parse_dockerfile("FROM python@sha256:" + "a" * 64 + " AS a\nFROM a\n"))
    assert not apt_problems(parse_dockerfile(
        "FROM debian:12.7\nRUN apt-get update \\\n && apt-get install -y --no-install-recommends tini \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"))
    assert not layer_order_problems(parse_dockerfile(
        "FROM python:3.12.13\nCOPY pyproject.toml ./\nRUN pip install -r req.txt\nCOPY src/ src/\n"
        "RUN pip install --no-deps .\n"))


def test_the_checks_find_a_bad_compose() -> None:
    bad = {
        "services": {
            "gateway": {"build": ".", "environment": {"FAREGATE_DATABASE": "x", "SQL_DSN": "y"},
                        "depends_on": ["db"]},
            "db": {"image": "mariadb:latest"},
            "cache": {"image": "redis", "healthcheck": {"test": ["CMD", "redis-cli", "ping"]}},
        },
    }
    problems = compose_problems(bad, known_setting_names())
    text = "\n".join(problems)
    assert "FAREGATE_DATABASE is no setting" in text and "SQL_DSN" not in text  # an alias is fine
    assert "service db: no healthcheck" in text and "service gateway: no healthcheck" in text
    assert "mariadb:latest" in text and "redis: no tag" in text
    assert "depends_on without conditions" in text and "no volume on /data" in text
    assert "no postgres profile" in text


def test_the_container_doc_names_every_plugin_the_image_installs() -> None:
    """The Dockerfile installs every distribution under plugins/<kind>/<name>/: the doc's
    list of what the image holds must not fall behind."""
    import tomllib

    doc = (ROOT / "docs" / "container.md").read_text()
    installed = sorted(tomllib.loads(path.read_text())["project"]["name"]
                       for path in ROOT.glob("plugins/*/*/pyproject.toml"))
    assert installed and [name for name in installed if f"`{name}`" not in doc] == []
