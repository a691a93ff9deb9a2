"""Resolving the declared settings with pydantic-settings, from (first wins) explicit
values (command-line flags, tests), ``FAREGATE_<NAME>`` environment variables, new-api's
variable names, the TOML config file, and the defaults. A value that does not validate
stops the start with :class:`SettingError`: one line naming where the value came from."""

from __future__ import annotations

import os
import threading
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from pydantic import Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from faregate.db.dsn import from_newapi_env
from faregate.settings.command_line import ENV_PREFIX, SettingError, env_origin, set_from_command_line
from faregate.settings.declared import Setting

MASK = "********"

__all__ = ["MASK", "SettingError", "Settings", "read_config_file", "set_from_command_line"]


class _Environment(EnvSettingsSource):
    """``FAREGATE_<NAME>`` variables, read from the mapping given (the process's environment
    unless a test passes its own)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls, env_prefix=ENV_PREFIX, env_ignore_empty=True)
        self.env_vars = parse_env_vars(environ, False, True, None)


class _NewApiEnvironment(PydanticBaseSettingsSource):
    """new-api's variable names (``SQL_DSN``, ``PORT``, …), for the settings that declare them."""

    def __init__(self, settings_cls: type[BaseSettings], declared: Iterable[Setting],
                 environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.values: dict[str, Any] = {}
        for setting in declared:
            if setting.name == "db_url":
                url = from_newapi_env(environ.get("SQL_DSN"), environ.get("SQLITE_PATH"))
                if url is not None:
                    self.values["db_url"] = url
                continue
            for alias in setting.aliases:
                if environ.get(alias):
                    self.values[setting.name] = environ[alias]
                    break

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class _File(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = values

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


class _SettingsBase(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", frozen=True)
    faregate_sources: ClassVar[tuple[PydanticBaseSettingsSource, ...]] = ()

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, *cls.faregate_sources)


def read_config_file(path: str, declared: Mapping[str, Setting]) -> dict[str, Any]:
    """The TOML file's values; a syntax error or a key no setting has is a :class:`SettingError`."""
    try:
        with open(path, "rb") as file:
            values = tomllib.load(file)
    except OSError as exc:
        raise SettingError(f"config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingError(f"config file {path} is not valid TOML: {exc}") from None
    unknown = sorted(key for key in values if key not in declared)
    if unknown:
        raise SettingError(f"config file {path}: unknown setting {unknown[0]!r} (settings are lower-case names such "
                           f"as db_url; see `faregate config show`)")
    return values


#: the pydantic model of each set of declared settings: making one (its schema) costs about
#: 10 ms of CPU, paid by every gateway a process builds (a test process builds hundreds)
_MODELS: dict[tuple[Any, ...], type[_SettingsBase]] = {}
_MAX_MODELS = 32
_SOURCES_LOCK = threading.Lock()


def _model_of(declared: Iterable[Setting]) -> type[_SettingsBase]:
    settings = list(declared)
    key: tuple[Any, ...] | None = tuple((s.name, s.annotation, type(s.default), s.default, s.description)
                                        for s in settings)
    try:
        model = _MODELS.get(key)  # type: ignore[arg-type]
    except TypeError:  # a default that is not hashable (a list): made afresh
        key, model = None, None
    if model is None:
        fields: dict[str, Any] = {s.name: (s.annotation, Field(s.default, description=s.description))
                                  for s in settings}
        model = create_model("FaregateSettings", __base__=_SettingsBase, **fields)
        if key is not None and len(_MODELS) < _MAX_MODELS:
            _MODELS[key] = model
    return model


class Settings:
    """Resolved values; attribute access by setting name."""

    def __init__(self, declared: Iterable[Setting], overrides: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        env: Mapping[str, str] = os.environ if environ is None else environ
        self._declared: dict[str, Setting] = {}
        for setting in declared:  # first wins: a plugin cannot redefine the core's settings
            self._declared.setdefault(setting.name, setting)
        overrides = dict(overrides or {})
        config = str(overrides.get("config") or env.get(ENV_PREFIX + "CONFIG") or "")
        file_values = read_config_file(config, self._declared) if config else {}
        model = _model_of(self._declared.values())
        legacy = _NewApiEnvironment(model, self._declared.values(), env)
        sources = (_Environment(model, env), legacy, _File(model, file_values))
        self._origins = {name: "default" for name in self._declared}
        for name in file_values:
            self._origins[name] = f"config file {config}"
        for name in legacy.values:
            self._origins[name] = next((f"env {a}" for a in self._declared[name].aliases if env.get(a)), "env")
        for setting in self._declared.values():
            if env.get(setting.env):
                self._origins[setting.name] = env_origin(setting.env, env)
        for name in overrides:
            self._origins[name] = "command line"
        try:
            with _SOURCES_LOCK:  # the sources are the (shared) model's class attribute while it resolves
                model.faregate_sources = sources
                try:
                    resolved = model(**overrides)
                finally:
                    model.faregate_sources = ()
        except ValidationError as exc:
            raise SettingError(self._explain(exc, env, file_values, overrides)) from None
        self._values: dict[str, Any] = resolved.model_dump()

    def _explain(self, exc: ValidationError, env: Mapping[str, str], file_values: Mapping[str, Any],
                 overrides: Mapping[str, Any]) -> str:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        setting = self._declared.get(name)
        if setting is None:
            return f"invalid settings: {error['msg']}"
        origin = self._origins.get(name, "")
        if origin == "command line":
            raw: Any = overrides.get(name)
            where = f"--{name.replace('_', '-')}"
        elif origin.startswith("command line "):  # a flag the CLI passed on as FAREGATE_<NAME>
            where, raw = origin.removeprefix("command line "), env.get(setting.env)
        elif origin.startswith("env "):
            where = origin.removeprefix("env ")
            raw = env.get(where)
        elif origin.startswith("config file"):
            where, raw = f"{name} in {origin}", file_values.get(name)
        else:
            where, raw = name, setting.default
        shown = MASK if setting.secret else repr(raw)
        message = str(error["msg"]).removeprefix("Value error, ")
        return f"{where}={shown} is not valid: {message[:1].lower()}{message[1:]} ({setting.description})"

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"Settings({self.masked()!r})"

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def declared(self) -> list[Setting]:
        return list(self._declared.values())

    def origin(self, name: str) -> str:
        """Where the value came from: default, config file …, env NAME, command line [--flag]."""
        return self._origins.get(name, "default")

    def named(self, name: str) -> str:
        """How an operator set ``name``, for a message: its variable (``FAREGATE_PORT``,
        ``SQL_DSN``), its flag, ``name in config file …``, or its variable marked
        ``(default)`` when nobody set it."""
        origin = self.origin(name)
        setting = self._declared.get(name)
        env = setting.env if setting is not None else ENV_PREFIX + name.upper()
        if origin.startswith("env "):
            return origin.removeprefix("env ")
        if origin.startswith("command line "):
            return origin.removeprefix("command line ")
        if origin == "command line":
            return "--" + name.replace("_", "-")
        if origin.startswith("config file"):
            return f"{name} in {origin}"
        return f"{env} (default)"

    def masked(self) -> dict[str, Any]:
        """Every value, secrets masked when set: what ``faregate config show`` prints."""
        return {name: MASK if setting.secret and self._values[name] else self._values[name]
                for name, setting in self._declared.items()}
