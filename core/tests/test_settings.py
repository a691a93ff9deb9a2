"""Settings: one typed object from flags, FAREGATE_* variables, new-api's names, the
config file and defaults, in that precedence; a bad value is one line naming its source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from faregate.db.dsn import database_url, from_newapi_env
from faregate.settings import CORE_SETTINGS, MASK, Setting, SettingError, Settings


def resolve(environ: dict[str, str] | None = None, overrides: dict[str, object] | None = None,
            extra: tuple[Setting, ...] = ()) -> Settings:
    return Settings([*CORE_SETTINGS, *extra], overrides, environ=environ or {})


def test_defaults() -> None:
    settings = resolve()
    assert settings.port == 3000 and settings.workers == 1 and settings.log_format == "text"
    assert settings.trusted_proxies == () and settings.migrate is True
    assert settings.origin("port") == "default"


def test_precedence_flag_env_newapi_file_default(tmp_path: Path) -> None:
    config = tmp_path / "faregate.toml"
    config.write_text('port = 4000\nworkers = 3\nlog_level = "debug"\nsync_interval = 7\n')
    env = {"FAREGATE_CONFIG": str(config), "PORT": "5000", "FAREGATE_WORKERS": "2", "SYNC_FREQUENCY": "9"}
    settings = resolve(env, {"workers": 4})
    assert settings.port == 5000 and settings.origin("port") == "env PORT"  # new-api name over the file
    assert settings.workers == 4 and settings.origin("workers") == "command line"
    assert settings.log_level == "debug" and settings.origin("log_level") == f"config file {config}"
    assert settings.sync_interval == 9.0
    env["FAREGATE_PORT"] = "6000"  # ours over new-api's
    assert resolve(env).port == 6000


def test_newapi_names() -> None:
    settings = resolve({"SQL_DSN": "root:p@ss@tcp(db:3306)/oneapi?parseTime=true", "REDIS_CONN_STRING": "redis://r:6379",
                        "SESSION_SECRET": "s3cret-value", "CRYPTO_SECRET": "c", "NODE_TYPE": "slave",
                        "STREAMING_TIMEOUT": "120", "MAX_REQUEST_BODY_MB": "16"})
    assert settings.db_url == "mysql://root:p%40ss@db:3306/oneapi"
    assert settings.redis_url == "redis://r:6379" and settings.session_secret == "s3cret-value"
    assert settings.node_type == "slave" and settings.stream_idle_timeout == 120.0 and settings.max_body_mb == 16.0


@pytest.mark.parametrize("sql_dsn,sqlite_path,expected", [
    ("postgres://u:p@h:5432/db", None, "postgres://u:p@h:5432/db"),
    ("", "one-api.db?_busy_timeout=30000", "sqlite://one-api.db"),
    ("local", "/data/x.db", "sqlite:///data/x.db"),
    (None, None, None),
])
def test_newapi_database_variables(sql_dsn: str | None, sqlite_path: str | None, expected: str | None) -> None:
    assert from_newapi_env(sql_dsn, sqlite_path) == expected


def test_go_dsn_forms() -> None:
    assert database_url("u@tcp(h:1)/d") == "mysql://u@h:1/d"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"
    with pytest.raises(ValueError):
        database_url("not a dsn")


@pytest.mark.parametrize("environ,where", [
    ({"FAREGATE_PORT": "0"}, "FAREGATE_PORT='0'"),
    ({"PORT": "http"}, "PORT='http'"),
    ({"FAREGATE_TRUSTED_PROXIES": "10.0.0.0/8,nonsense"}, "FAREGATE_TRUSTED_PROXIES="),
    ({"FAREGATE_LOG_FORMAT": "xml"}, "FAREGATE_LOG_FORMAT="),
    ({"FAREGATE_WORKERS": "-1"}, "FAREGATE_WORKERS="),
    ({"SQL_DSN": "garbage"}, "SQL_DSN='garbage'"),
])
def test_bad_values_name_their_source(environ: dict[str, str], where: str) -> None:
    with pytest.raises(SettingError) as caught:
        resolve(environ)
    message = str(caught.value)
    assert message.startswith(where) and "\n" not in message


def test_bad_file_value_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "f.toml"
    config.write_text('max_body_mb = "lots"\n')
    with pytest.raises(SettingError, match=r"^max_body_mb in config file .*f\.toml='lots' is not valid"):
        resolve({"FAREGATE_CONFIG": str(config)})


@pytest.mark.parametrize("text,match", [("prot = 1\n", "unknown setting 'prot'"), ("port = \n", "not valid TOML")])
def test_bad_config_files(tmp_path: Path, text: str, match: str) -> None:
    config = tmp_path / "f.toml"
    config.write_text(text)
    with pytest.raises(SettingError, match=match):
        resolve({"FAREGATE_CONFIG": str(config)})
    with pytest.raises(SettingError, match="No such file"):
        resolve({"FAREGATE_CONFIG": str(tmp_path / "missing.toml")})


def test_lists_from_env_and_file(tmp_path: Path) -> None:
    assert resolve({"FAREGATE_TRUSTED_PROXIES": " 10.0.0.0/8 , ::1"}).trusted_proxies == ("10.0.0.0/8", "::1")
    config = tmp_path / "f.toml"
    config.write_text('trusted_proxies = ["127.0.0.1"]\nplugins = ["faregate-adapter-openai"]\n')
    settings = resolve({"FAREGATE_CONFIG": str(config)})
    assert settings.trusted_proxies == ("127.0.0.1",) and settings.plugins == ("faregate-adapter-openai",)


def test_secrets_are_masked_everywhere_but_the_value() -> None:
    settings = resolve({"FAREGATE_SESSION_SECRET": "very-secret-1", "FAREGATE_METRICS_TOKEN": "tok-secret-2"})
    assert settings.session_secret == "very-secret-1"
    shown = settings.masked()
    assert shown["session_secret"] == MASK and shown["metrics_token"] == MASK and shown["crypto_secret"] == ""
    assert "very-secret-1" not in repr(settings) and "tok-secret-2" not in repr(settings)
    with pytest.raises(SettingError) as caught:
        resolve({"FAREGATE_SESSION_SECRET": "x" * 5000})
    assert "xxxxx" not in str(caught.value) and MASK in str(caught.value)


def test_plugin_settings_resolve_with_the_core() -> None:
    ratio = Setting("demo_ratio", 0.5, "A plugin's ratio.", Annotated[float, Field(ge=0, le=1)])
    assert resolve({"FAREGATE_DEMO_RATIO": "0.25"}, extra=(ratio,)).demo_ratio == 0.25
    with pytest.raises(SettingError, match="FAREGATE_DEMO_RATIO='2'"):
        resolve({"FAREGATE_DEMO_RATIO": "2"}, extra=(ratio,))
    # a plugin cannot redefine a core setting
    clash = Setting("port", "x", "A plugin's port.")
    assert resolve({}, extra=(clash,)).port == 3000


def test_every_setting_has_a_description_and_a_valid_default() -> None:
    settings = resolve()
    for setting in CORE_SETTINGS:
        assert setting.description.strip()
        assert settings.get(setting.name) == setting.default or setting.name in ("plugins", "disabled_plugins",
                                                                                  "trusted_proxies")


def test_one_model_per_declared_set_each_resolution_with_its_own_sources(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Any) -> None:
    """The pydantic model of a set of declared settings is made once a process (about 10 ms of
    CPU, paid by every gateway built); each resolution still reads its own environment, file
    and overrides."""
    from faregate.settings import resolve

    made: list[str] = []
    real = resolve.create_model

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(resolve, "create_model", counting)
    declared = [*CORE_SETTINGS, Setting("resolution_test_knob", 5, "A plugin's setting.")]
    config = tmp_path / "faregate.toml"
    config.write_text('resolution_test_knob = 7\n')
    first = Settings(declared, environ={"FAREGATE_PORT": "4000"})
    second = Settings(declared, environ={"FAREGATE_CONFIG": str(config)})
    third = Settings(declared, {"resolution_test_knob": 9}, environ={})
    assert (first.port, first.resolution_test_knob) == (4000, 5)
    assert (second.port, second.resolution_test_knob) == (3000, 7)
    assert (third.port, third.resolution_test_knob) == (3000, 9)
    assert len(made) == 1
    with pytest.raises(SettingError, match="FAREGATE_PORT"):
        Settings(declared, environ={"FAREGATE_PORT": "not a port"})
    assert Settings(declared, environ={}).port == 3000  # a failed resolution leaves nothing behind
    assert len(made) == 1


def test_every_installed_plugin_declares_the_same_settings_each_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin whose setting is made anew at each registration (a new pydantic ``Field`` in its
    type) made every gateway build its settings model again."""
    from faregate.hooks import GatewayHooks, resolve_settings
    from faregate.plugins import load_plugins
    from faregate.settings import resolve

    made: list[str] = []
    real = resolve.create_model
    monkeypatch.setattr(resolve, "create_model", lambda *args, **kwargs: made.append(args[0]) or real(*args, **kwargs))
    for _ in range(3):
        resolve_settings(GatewayHooks(load_plugins().pm).settings())
    assert len(made) <= 1
