"""The fake Azure OpenAI resource answers the official SDK's Azure client (``AsyncAzureOpenAI``,
which builds Azure's URLs and headers itself) as Azure does: chat, embeddings, the Responses
API and a realtime session at a deployment, with ``api-key`` and ``api-version``; a wrong key,
a missing version, an unknown deployment answered with Azure's errors. Realtime as Azure serves
it: the GA protocol at the v1 path (the SDK's ``OpenAI`` client at ``…/openai/v1``), the beta
one at the preview path (the ``AzureOpenAI`` client's ``beta.realtime``), and a GA session on the
preview path refused as Azure refuses it. Also served by
``faregate dev fake-provider azure``."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator

import httpx
import openai
import pytest_asyncio

from faregate_adapter_openai.testing import REPLY_PREFIX
from faregate_adapter_openai.testing.azure import ACCESS_DENIED, FakeAzure
from faregate_adapter_openai.testing.realtime import REPLY_TEXT

KEY = "az-0123456789"
VERSION = "2024-10-21"


@pytest_asyncio.fixture
async def azure() -> AsyncIterator[FakeAzure]:
    async with FakeAzure(api_key=KEY) as fake:
        yield fake
    assert not fake.violations


def client(fake: FakeAzure, key: str = KEY) -> openai.AsyncAzureOpenAI:
    # the SDK would dial wss:// at the endpoint's host; the fake speaks plain ws://
    return openai.AsyncAzureOpenAI(azure_endpoint=fake.base_url, api_key=key, api_version=VERSION, max_retries=0,
                                   websocket_base_url=fake.base_url.replace("http://", "ws://") + "/openai")


async def test_the_sdk_s_azure_client(azure: FakeAzure) -> None:
    sdk = client(azure)
    reply = await sdk.chat.completions.create(model="my-gpt", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == REPLY_PREFIX + "hi"
    sent = azure.requests[-1]
    assert (sent["path"], sent["query"], sent["headers"]["api-key"]) == (
        "/openai/deployments/my-gpt/chat/completions", {"api-version": VERSION}, KEY)
    embedded = await sdk.embeddings.create(model="emb", input="x")
    assert embedded.data and azure.requests[-1]["path"] == "/openai/deployments/emb/embeddings"
    response = await sdk.responses.create(model="my-gpt", input="respond")
    assert response.output_text and azure.requests[-1]["path"] == "/openai/responses"
    await sdk.close()


async def test_realtime_ga_at_the_v1_path_and_beta_at_the_preview_path(azure: FakeAzure) -> None:
    ws_base = azure.base_url.replace("http://", "ws://") + "/openai/v1"
    ga = openai.AsyncOpenAI(base_url=azure.base_url + "/openai/v1", websocket_base_url=ws_base, api_key=KEY,
                            default_headers={"api-key": KEY}, max_retries=0)
    async with ga.realtime.connect(model="my-realtime") as conn:
        await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        await conn.response.create()
        said = ""
        async with asyncio.timeout(10):
            async for event in conn:
                said += getattr(event, "delta", "") if event.type == "response.output_text.delta" else ""
                if event.type == "response.done":
                    break
    assert said == REPLY_TEXT
    assert (azure.realtime.sessions[0].path, azure.realtime.sessions[0].query) == (
        "/openai/v1/realtime", {"model": "my-realtime"})
    await ga.close()
    sdk = client(azure)
    async with sdk.beta.realtime.connect(model="my-realtime") as beta:
        await beta.session.update(session={"modalities": ["text"]})
        await beta.response.create()
        said = ""
        async with asyncio.timeout(10):
            async for event in beta:
                said += getattr(event, "delta", "") if event.type == "response.text.delta" else ""
                if event.type == "response.done":
                    break
    assert said == REPLY_TEXT
    assert azure.realtime.sessions[1].query == {"api-version": VERSION, "deployment": "my-realtime"}
    assert not azure.violations
    # the GA protocol on the preview path: refused as Azure refuses it, and recorded
    async with sdk.realtime.connect(model="my-realtime") as conn:
        await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        async with asyncio.timeout(10):
            async for event in conn:
                if event.type == "error":
                    break
    assert (event.error.code, event.error.param) == ("unknown_parameter", "session.type")  # type: ignore[union-attr]
    assert [v["path"] for v in azure.violations] == ["/openai/realtime"]
    azure.violations.clear()
    await sdk.close()


async def test_azure_s_refusals(azure: FakeAzure) -> None:
    wrong = client(azure, key="not-it")
    try:
        await wrong.chat.completions.create(model="d", messages=[{"role": "user", "content": "x"}])
    except openai.AuthenticationError as refused:
        assert refused.body == {"code": "401", "message": ACCESS_DENIED}
    else:
        raise AssertionError("a wrong key was accepted")
    await wrong.close()
    azure.deployments = {"known"}
    sdk = client(azure)
    try:
        await sdk.chat.completions.create(model="unknown", messages=[{"role": "user", "content": "x"}])
    except openai.NotFoundError as missing:
        assert missing.code == "DeploymentNotFound"
    else:
        raise AssertionError("an unknown deployment answered")
    await sdk.close()
    async with httpx.AsyncClient(base_url=azure.base_url, headers={"api-key": KEY}) as http:
        unversioned = await http.post("/openai/deployments/known/chat/completions", json={"messages": []})
        bearer = await http.post("/openai/deployments/known/chat/completions?api-version=1",
                                 headers={"api-key": "", "Authorization": f"Bearer {KEY}"}, json={})
    assert unversioned.status_code == 404 and unversioned.json()["error"]["message"] == "Resource not found"
    assert bearer.status_code == 401


def test_the_cli_serves_it() -> None:
    listed = subprocess.run([sys.executable, "-m", "faregate.cli", "dev", "fake-provider"], capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 2 and "azure" in listed.stderr
    proc = subprocess.Popen([sys.executable, "-m", "faregate.cli", "dev", "fake-provider", "azure", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        found = re.search(r"listening on (http://\S+) \(key (\S+)\)", proc.stdout.readline())
        assert found, "no address printed"
        assert '"type": 3' in proc.stdout.readline() + proc.stdout.readline()
        answer = httpx.post(f"{found[1]}/openai/deployments/gpt-4o/chat/completions?api-version={VERSION}",
                            headers={"api-key": found[2]}, json={"messages": [{"role": "user", "content": "cli"}]})
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == REPLY_PREFIX + "cli"
    finally:
        proc.terminate()
        proc.wait(10)
