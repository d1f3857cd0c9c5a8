"""The importers of logs written with the model vendors' SDKs and OpenTelemetry, in detection order."""

from __future__ import annotations

from .anthropic import AnthropicImporter
from .base import Importer
from .openai_chat import ChatImporter
from .openai_responses import ResponsesImporter
from .otel import OtelImporter

__all__ = ["sdk_importers"]


def sdk_importers() -> list[Importer]:
    """OTel first (its `resourceSpans` key is unmistakable), then Responses and Anthropic (marked items and
    blocks), then Chat Completions, which also takes plain role/content lists."""
    return [OtelImporter(), ResponsesImporter(), AnthropicImporter(), ChatImporter()]
