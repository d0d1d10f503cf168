"""Cassettes: every LLM exchange recorded (``--record PATH``) and served offline (``--replay PATH``).

A cassette is a JSONL file, one exchange per line: the sha256 key of the normalised request
(provider, model, messages, temperature, max tokens), the prompt template and version, the
request, and the reply (text and token counts) or the failure the call ended in. Replaying serves
the recorded replies in order per key. Where timing noise changed a prompt (measured numbers,
timestamps, gate feedback) the request's loose key finds the recording made at the same point;
a request with neither key recorded stops the run with a clear error (the run diverged from
the recorded one, or the cassette is from another configuration).
Nothing secret is written: keys travel only in HTTP headers, never in a request body.

A run keeps its own cassette too (``KeptExchanges``, ``brain.jsonl`` in the run folder): a run
stopped after its brain answered and before the answer's step was logged (Ctrl-C, a kill, gate
jobs left waiting in a spool) is answered from it on resume, by the exact request, and not
charged again.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from klineage.editors._llm import CallFailed, ChatClient, ChatReply, ChatRequest, redact
from klineage.errors import BrainError, ConfigError

__all__ = ["Cassette", "KeptExchanges", "RecordingClient", "ReplayClient"]


class Cassette:
    def __init__(self, path: Path):
        self.path = Path(path)

    def append(self, request: ChatRequest, reply: ChatReply | None, failure: str | None) -> None:
        record = {"key": request.key(), "loose_key": request.loose_key(),
                  "provider": request.provider, "model": request.model, "prompt": request.prompt,
                  "request": {"system": request.system, "user": request.user,
                              "feedback": request.feedback,
                              "temperature": request.temperature, "max_tokens": request.max_tokens},
                  "reply": asdict(reply) if reply else None, "failure": failure}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            handle.write(redact(json.dumps(record)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def records(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            raise ConfigError(f"--replay: {self.path}: no such cassette")
        records = []
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                raise ConfigError(f"--replay: {self.path}: line {number} is not JSON") from None
        return records


class RecordingClient:
    """Passes calls to ``inner`` and appends each exchange (or its failure) to the cassette."""

    def __init__(self, inner: ChatClient, cassette: Cassette):
        self.inner, self.cassette = inner, cassette
        self.provider = inner.provider

    def complete(self, request: ChatRequest) -> ChatReply:
        try:
            reply = self.inner.complete(request)
        except CallFailed as exc:
            self.cassette.append(request, None, str(exc))
            raise
        self.cassette.append(request, reply, None)
        return reply


class ReplayClient:
    """Serves recorded replies by request key, in recorded order; never touches the network."""

    def __init__(self, cassette: Cassette, provider: str | None = None):
        self.cassette = cassette
        records = cassette.records()
        self.provider = provider or (records[0]["provider"] if records else "openai")
        self._queue: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._loose: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in records:
            self._queue[record["key"]].append(record)
            self._loose[record.get("loose_key", "")].append(record)
        self._served: dict[str, int] = defaultdict(int)

    def recorded_settings(self) -> tuple[str, float, int]:
        """(model, temperature, max_tokens) of the first recorded request."""
        records = [r for queue in self._queue.values() for r in queue]
        if not records:
            raise ConfigError(f"--replay: {self.cassette.path}: the cassette is empty")
        request = records[0]["request"]
        return records[0]["model"], request["temperature"], request["max_tokens"]

    def complete(self, request: ChatRequest) -> ChatReply:
        key = request.key()
        queue = self._queue.get(key)
        if not queue:  # the prompt differs only in measured numbers or gate feedback
            key = "~" + request.loose_key()
            queue = self._loose.get(key[1:])
        if not queue:
            raise BrainError(f"cassette {self.cassette.path} has no recorded answer for this "
                             f"{request.prompt} request to {request.provider}/{request.model} "
                             f"(key {key[:12]}): the run diverged from the recorded one")
        record = queue[min(self._served[key], len(queue) - 1)]
        self._served[key] += 1
        if record.get("failure"):
            raise CallFailed(record["failure"])
        return ChatReply(**record["reply"])


class KeptExchanges:
    """A run's own record of its brain's answers: each exchange is appended as it happens; a
    resumed run asking exactly what was answered before gets that answer back, once per answer,
    without a call (the meter charged it before the stop). Only the exact request is served: a
    question that differs in anything, feedback numbers included, is asked again. A failed call
    is asked again too (both calls were made, and both are charged)."""

    def __init__(self, cassette: Cassette):
        self.cassette = cassette
        self._kept: dict[str, list[ChatReply]] = defaultdict(list)
        lines = cassette.path.read_text().splitlines() if cassette.path.is_file() else []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line a kill tore: that exchange is asked again
                continue
            if record.get("reply") is not None:
                self._kept[record["key"]].append(ChatReply(**record["reply"]))

    def answered(self, request: ChatRequest) -> ChatReply | None:
        kept = self._kept.get(request.key())
        return kept.pop(0) if kept else None

    def append(self, request: ChatRequest, reply: ChatReply | None, failure: str | None) -> None:
        self.cassette.append(request, reply, failure)
