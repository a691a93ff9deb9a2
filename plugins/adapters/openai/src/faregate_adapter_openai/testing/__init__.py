"""The OpenAI plugin's test kit: a fake OpenAI server for tests and benchmarks.

* :class:`FakeOpenAI` (:mod:`.server`), its :class:`Fault` kinds and what it answers
  (:data:`REPLY_PREFIX`, :data:`TOOL_ARGUMENTS`, see :mod:`.chat`);
* :mod:`.schema`: validators against OpenAI's official OpenAPI spec (needs
  ``faregate[testing]``);
* :mod:`.fixtures`: the ``fake_openai`` pytest fixture (a ``pytest11`` entry point);
* :func:`upstream_channel` (:mod:`.channels`): a fake upstream, a gateway's channel to it and a key;
* ``python -m faregate_adapter_openai.testing.fake``: the fake from the command line.
"""

from __future__ import annotations

from faregate_adapter_openai.testing.channels import upstream_channel
from faregate_adapter_openai.testing.chat import REPLY_PREFIX, TOOL_ARGUMENTS
from faregate_adapter_openai.testing.errors import error_body
from faregate_adapter_openai.testing.server import DEFAULT_MODELS, FAULT_KINDS, FakeOpenAI, Fault

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "REPLY_PREFIX", "TOOL_ARGUMENTS", "FakeOpenAI", "Fault", "error_body",
           "upstream_channel"]
