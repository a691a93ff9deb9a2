"""The official OpenAI Node SDK (``openai`` on npm, pinned in ``package.json``) as a client
of the gateway on every endpoint of the OpenAI family, in one ``node`` process against one
gateway whose channels point at the fake OpenAI, Jina and Codex upstreams (the cases and
their checks: ``sdk_cases.py``, shared with ``tests/test_install.py``). The Node SDK has no
strict response validation: every raw answer it received is held to OpenAI's schema on
the Python side. Each billed case is logged once, under its model."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from faregate.db import models as m
from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_openai.testing.server import FakeOpenAI


def _load_cases() -> Any:
    # the test directories are no package: the shared module is loaded by path
    spec = importlib.util.spec_from_file_location("faregate_node_sdk_cases", Path(__file__).with_name("sdk_cases.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sdk_cases = _load_cases()


async def test_every_endpoint(gateway: Any, admin: Any, fake_openai: Any, fake_jina: Any, request: Any) -> None:
    if not sdk_cases.node_ready():
        pytest.skip("FAREGATE_SKIP_NODE=1: no Node.js here")
    async with FakeOpenAI(api_key=sdk_cases.CODEX_KEY) as codex:
        key = await sdk_cases.add_channels(admin, openai_base=fake_openai.base_url, jina_base=fake_jina.base_url,
                                           codex_base=codex.base_url)
        results = await sdk_cases.run_cases(gateway.base_url, key, sdk_cases.EVERY_CASE)
    assert_no_violations(codex, request.node, "Codex")
    sdk_cases.check_every_case(results)
    (sent,) = [r["json"] for r in fake_openai.requests
               if r["path"] == "/v1/embeddings" and r["json"]["input"] == ["first", "second"]]
    assert sent["encoding_format"] == "base64"  # what the Node SDK asks for by default

    await gateway.gateway.ledger.flush()
    rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
    assert Counter(r.model_name for r in rows) == Counter(sdk_cases.BILLED.values())
    assert all(r.quota > 0 for r in rows)
