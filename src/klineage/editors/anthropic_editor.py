"""The ``anthropic`` brain: the official anthropic SDK (``POST /v1/messages``).

``base_url`` may point at a proxy or gateway; without it the SDK talks to Anthropic. The SDK
retries 429, 5xx and dropped connections with exponential backoff (``retries``).
"""

from __future__ import annotations

import inspect

from klineage.config import ApiConfig
from klineage.editors._llm import CallFailed, ChatReply, ChatRequest, map_sdk_error, sdk_and_key

__all__ = ["AnthropicClient"]


class AnthropicClient:
    provider = "anthropic"

    def __init__(self, api: ApiConfig):
        anthropic, key = sdk_and_key("anthropic", api, "ANTHROPIC_API_KEY")
        self.api, self._errors = api, anthropic
        self._sdk = anthropic.Anthropic(api_key=key, base_url=api.base_url, timeout=api.timeout_s,
                                        max_retries=api.retries)
        # Newer SDKs (and models) dropped ``temperature``: send it only where it is accepted.
        self._takes_temperature = "temperature" in inspect.signature(self._sdk.messages.create).parameters

    @property
    def where(self) -> str:
        return self.api.base_url or "api.anthropic.com"

    def complete(self, request: ChatRequest) -> ChatReply:
        try:
            extra = {"temperature": request.temperature} if self._takes_temperature else {}
            response = self._sdk.messages.create(
                model=request.model, system=request.system, max_tokens=request.max_tokens,
                messages=[{"role": "user", "content": request.user}], **extra)
        except Exception as exc:
            raise map_sdk_error(exc, self._errors, self.api, self.where) from exc
        text = "".join(getattr(block, "text", "") for block in response.content
                       if getattr(block, "type", "") == "text")
        if not response.content:
            raise CallFailed("the server answered with no content")
        usage = response.usage
        cached = getattr(usage, "cache_read_input_tokens", 0) or 0
        created = getattr(usage, "cache_creation_input_tokens", 0) or 0
        return ChatReply(text=text, input_tokens=usage.input_tokens + cached + created,
                         output_tokens=usage.output_tokens, cached_tokens=cached,
                         truncated=response.stop_reason == "max_tokens")
