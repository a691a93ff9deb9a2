"""The package every command loads (the entry point names it) imports its classes on first use:
other plugins build on ``OpenAICompatibleProvider`` (docs/writing-a-plugin.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_loading_the_plugin_imports_no_provider_and_the_classes_come_on_first_use() -> None:
    probe = ("import sys, faregate_adapter_openai as plugin; "
             "print('faregate_adapter_openai.provider' in sys.modules, plugin.OpenAICompatibleProvider.__module__)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "faregate_adapter_openai.provider"]


def test_the_public_classes_are_the_modules_own() -> None:
    import faregate_adapter_openai as plugin
    from faregate_adapter_openai.azure import AzureOpenAIProvider
    from faregate_adapter_openai.format import OpenAIChatFormat
    from faregate_adapter_openai.provider import OpenAICompatibleProvider, OpenAIProvider

    assert (plugin.AzureOpenAIProvider, plugin.OpenAIChatFormat, plugin.OpenAICompatibleProvider,
            plugin.OpenAIProvider) == (AzureOpenAIProvider, OpenAIChatFormat, OpenAICompatibleProvider, OpenAIProvider)
    with pytest.raises(AttributeError):
        plugin.NoSuchProvider  # noqa: B018 - the lookup is the test
