"""The ``openai`` brain: the official openai SDK against any OpenAI-compatible server.

``base_url`` selects the server: vLLM, SGLang, Ollama and llama.cpp's server all speak
``POST /v1/chat/completions``; without it the SDK talks to OpenAI. The SDK retries 429, 5xx and
dropped connections with exponential backoff (``retries``), honouring ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from klineage.config import ApiConfig
from klineage.editors._llm import CallFailed, ChatReply, ChatRequest, map_sdk_error, sdk_and_key

__all__ = ["OpenAIClient"]


class OpenAIClient:
    provider = "openai"

    def __init__(self, api: ApiConfig):
        openai, key = sdk_and_key("openai", api, "OPENAI_API_KEY, or brains.openai.base_url "
                                                 "(OPENAI_BASE_URL) pointing at a local server")
        self.api, self._errors = api, openai
        self._sdk = openai.OpenAI(api_key=key, base_url=api.base_url, timeout=api.timeout_s,
                                  max_retries=api.retries)

    @property
    def where(self) -> str:
        return self.api.base_url or "api.openai.com"

    def complete(self, request: ChatRequest) -> ChatReply:
        messages: Any = [{"role": "system", "content": request.system},
                         {"role": "user", "content": request.user}]
        try:
            response = self._sdk.chat.completions.create(
                model=request.model, messages=messages, temperature=request.temperature,
                max_tokens=request.max_tokens)
        except Exception as exc:
            raise map_sdk_error(exc, self._errors, self.api, self.where) from exc
        if not response.choices:
            raise CallFailed("the server answered with no choices")
        choice = response.choices[0]
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        return ChatReply(text=choice.message.content or "",
                         input_tokens=usage.prompt_tokens if usage else 0,
                         output_tokens=usage.completion_tokens if usage else 0,
                         cached_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
                         truncated=choice.finish_reason == "length")
