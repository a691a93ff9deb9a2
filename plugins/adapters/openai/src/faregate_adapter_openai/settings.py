"""The plugin's settings (``FAREGATE_OPENAI_…``), apart from the code that reads them:
``faregate config show`` declares them without importing the relay."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from faregate.api import Setting

#: the realtime sessions' (:mod:`.realtime`)
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
REALTIME_SETTINGS = (
    Setting("openai_realtime_idle_seconds", 300.0, "A realtime session with no event either way for this many "
            "seconds is closed (plugin faregate-adapter-openai).", Seconds),
    Setting("openai_realtime_max_session_seconds", 3600.0, "The longest a realtime session may last, in seconds "
            "(OpenAI's own limit is 60 minutes).", Seconds),
    Setting("openai_realtime_max_message_kb", 16384.0, "The largest client event of a realtime session, in KiB "
            "(OpenAI takes up to 15 MiB of audio per event); a larger one ends the session.",
            Annotated[float, Field(gt=0, le=16384, allow_inf_nan=False)]),
    Setting("openai_realtime_max_events_per_second", 200.0, "Client events a realtime session may send a second "
            "(0: no limit); more end the session.", NonNegative),
    Setting("openai_realtime_reserve_output_tokens", 4096, "The output bound of a realtime response when neither it "
            "nor its session sets max_output_tokens and ModelMaxOutputTokens does not name its model: reserved, and "
            "set on the response (gpt-realtime's own cap is 4096).",
            Annotated[int, Field(ge=1, le=1_000_000)]),
)

#: whether generated images may be fetched from loopback and private addresses (tests, a self-hosted
#: image server on the gateway's network); link-local and cloud metadata addresses never are
PRIVATE_OUTPUTS = "openai_image_output_private_addresses"
IMAGE_JOB_SETTINGS = (
    Setting(PRIVATE_OUTPUTS, "deny", "Whether an image a job-style vendor (Replicate) generated may be fetched "
            "from a loopback or private address to answer b64_json: allow or deny (plugin "
            "faregate-adapter-openai). Link-local and cloud metadata addresses are refused either way.",
            Literal["allow", "deny"]),
)
