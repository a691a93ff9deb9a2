"""Settings: declared by the core (:mod:`.declared`) and by plugins (``register_settings``),
resolved once at start (:mod:`.resolve`)."""

from faregate.settings.declared import CORE_SETTINGS, ENV_PREFIX, Setting
from faregate.settings.resolve import MASK, SettingError, Settings, set_from_command_line

__all__ = ["CORE_SETTINGS", "ENV_PREFIX", "MASK", "Setting", "SettingError", "Settings", "set_from_command_line"]
