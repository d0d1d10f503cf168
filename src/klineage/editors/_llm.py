"""What every LLM brain shares: build the prompt, call, extract, and make a Proposal or a failure.

A provider adapter (``openai_editor``, ``anthropic_editor``, the cassette in ``replay``) is only a
``ChatClient``: one ``complete(request) -> reply``. It raises ``CallFailed`` for a call the run
survives (timeout, retries used up on 429/5xx), recorded as a failed proposal, and
``klineage.errors.BrainError`` for a brain that cannot be used at all (unreachable, key refused).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from klineage import settings
from klineage.config import ApiConfig, Config
from klineage.editors._extract import Extracted, extract_answer, extract_json
from klineage.editors._prices import call_cost, price_for
from klineage.editors._prompts import PROMPT_VERSION, kernel_fields, render, safe_detect
from klineage.editors.base import Answer, EditContext, Proposal, Usage
from klineage.errors import BrainError, ConfigError
from klineage.source import CATALOGUE, Edit, Site
from klineage.workload import KernelState

__all__ = ["CallFailed", "ChatClient", "ChatReply", "ChatRequest", "LLMEditor", "map_sdk_error",
           "proposal_from", "redact", "sdk_and_key"]


class CallFailed(Exception):
    """One call failed in a way the run survives; the message is the recorded failure.
    Control flow inside ``editors/``: it never leaves the package."""


@dataclass(frozen=True)
class ChatRequest:
    provider: str
    model: str
    system: str
    user: str
    temperature: float
    max_tokens: int
    prompt: str
    """Template and version, e.g. ``simplify@v1`` (recorded, not part of the key)."""
    feedback: str = ""
    """The gate-feedback part of ``user`` (left out of the loose key)."""
    machine: str = ""
    """The machine-and-toolchain part of ``user`` (left out of the loose key: a cassette recorded
    on one machine replays on another)."""

    def key(self) -> str:
        """sha256 of the normalised request: what a cassette is keyed by."""
        return self._digest(self.user)

    def loose_key(self) -> str:
        """The key with the gate feedback, measured numbers and timestamps masked out: a replay
        falls back to it when timing noise changed a prompt but not what was asked."""
        user = self.user
        for volatile in (self.feedback, self.machine):
            user = user.replace(volatile, "") if volatile.strip() else user
        user = _TIMESTAMP.sub("<time>", user)
        return self._digest(_DECIMAL.sub("<num>", user))

    def _digest(self, user: str) -> str:
        body = {"provider": self.provider, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "messages": [{"role": "system", "content": self.system},
                             {"role": "user", "content": user}]}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?")
_NOTHING_LEFT = re.compile(r"^[\s*_]*FEATURE[\s*_]*:[\s*_`]*none\b", re.IGNORECASE | re.MULTILINE)
_DECIMAL = re.compile(r"\d+\.\d+(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class ChatReply:
    text: str
    input_tokens: int = 0
    """All input tokens, cached ones included."""
    output_tokens: int = 0
    cached_tokens: int = 0
    truncated: bool = False
    """The reply stopped at max_tokens."""


class ChatClient(Protocol):
    provider: str

    def complete(self, request: ChatRequest) -> ChatReply: ...


class LLMEditor:
    """An Editor whose proposals come from a chat model behind ``client``."""

    def __init__(self, name: str, client: ChatClient, model: str, temperature: float,
                 max_tokens: int, config: Config, version: str = PROMPT_VERSION):
        self.name, self.client, self.model = name, client, model
        self.temperature, self.max_tokens = temperature, max_tokens
        self.prompt_version = version
        self._price = price_for(model, config)
        self.kept: Any = None
        """The run's own record of answers (``replay.KeptExchanges``), once ``keep_exchanges``."""

    def keep_exchanges(self, path: Path) -> None:
        """Keep every exchange in the run's ``path``; a resumed run is answered from it."""
        from klineage.editors.replay import Cassette, KeptExchanges

        self.kept = KeptExchanges(Cassette(path))

    def simplify(self, state: KernelState, ctx: EditContext) -> Answer:
        reply, usage, failure = self._ask("simplify", kernel_fields(state, ctx.workload, ctx.feedback),
                                            state, ctx)
        if reply is None:
            return Answer([], usage, [failure])
        if _NOTHING_LEFT.search(reply.text) and "```" not in reply.text:
            return Answer([], usage)  # the model sees nothing left to remove: the walk stops
        allowed = set(ctx.features) or {h.feature for h in safe_detect(state)}
        return self._answer(reply, usage, state, "remove", None, allowed, "simplify")

    def rederive(self, simpler: KernelState, feature: str, ctx: EditContext,
                 tunables: dict[str, Any]) -> Answer:
        info = CATALOGUE.get(feature)
        fields = {**kernel_fields(simpler, ctx.workload, ctx.feedback), "feature": feature,
                  "feature_description": info.description if info else feature,
                  "tunables": json.dumps(tunables, default=str) if tunables else "(none recorded)"}
        reply, usage, failure = self._ask("rederive", fields, simpler, ctx)
        if reply is None:
            return Answer([], usage, [failure])
        return self._answer(reply, usage, simpler, "insert", feature, None, "rederive")

    def materialize(self, state: KernelState, card: Any, ctx: EditContext) -> Answer:
        """One card, or a list of cards to apply together (the ``materialize_joint`` prompt)."""
        fields = kernel_fields(state, ctx.workload, ctx.feedback)
        if isinstance(card, list):
            fields["cards"] = "\n\n".join(f"```json\n{_card_json(c)}\n```" for c in card)
            reply, usage, failure = self._ask("materialize_joint", fields, state, ctx)
            if reply is None:
                return Answer([], usage, [failure])
            return self._answer(reply, usage, state, "improve", None, None, "materialize_joint")
        feature = getattr(card, "feature", None) or "none"
        fields.update(card=_card_json(card), feature=feature)
        reply, usage, failure = self._ask("materialize", fields, state, ctx)
        if reply is None:
            return Answer([], usage, [failure])
        return self._answer(reply, usage, state, "insert", feature, None, "materialize")

    def improve(self, state: KernelState, ctx: EditContext) -> Answer:
        """``ctx.extra["knowledge"]``: what the method gives (memory, a decision table, expert
        sources, skill cards), the same heading for every method."""
        fields = {**kernel_fields(state, ctx.workload, ctx.feedback),
                  "memory": ctx.extra.get("knowledge") or "(nothing)"}
        reply, usage, failure = self._ask("improve", fields, state, ctx)
        if reply is None:
            return Answer([], usage, [failure])
        return self._answer(reply, usage, state, "improve", None, None, "improve")

    def lift(self, facts: dict[str, Any]) -> tuple[dict[str, str], Usage]:
        from klineage.editors.rules import RulesEditor

        fallback, _ = RulesEditor().lift(facts)
        reply, usage, _failure = self._ask("lift", {"facts": json.dumps(facts, indent=1, default=str)})
        if reply is None:
            return fallback, usage
        found = extract_json(reply.text)
        if isinstance(found, str):
            return fallback, usage
        text = {k: str(found[k]).strip() for k in fallback if isinstance(found.get(k), str) and found[k]}
        return {**fallback, **text}, usage

    # -- shared -------------------------------------------------------------------------------

    answer_format = "answer_format"
    """The answer-format part of every prompt (agent brains use ``agent_format``)."""

    def _ask(self, template: str, fields: dict[str, Any],
             state: KernelState | None = None, ctx: EditContext | None = None,
             ) -> tuple[ChatReply | None, Usage, str]:
        system, user = render(template, fields, self.prompt_version, self.answer_format)
        request = ChatRequest(self.client.provider, self.model, system, user, self.temperature,
                              self.max_tokens, f"{template}@{self.prompt_version}",
                              str(fields.get("feedback", "")), str(fields.get("machine", "")))
        reply = self.kept.answered(request) if self.kept is not None else None
        if reply is not None:  # paid for before the run stopped
            return reply, Usage(), ""
        try:
            reply = self._call(request, state, ctx)
        except CallFailed as exc:
            if self.kept is not None:
                self.kept.append(request, None, str(exc))
            return None, Usage(calls=1), f"{self.name} {template}: {exc}"
        if self.kept is not None:
            self.kept.append(request, reply, None)
        usd = call_cost(self._price, reply.input_tokens, reply.output_tokens, reply.cached_tokens)
        return reply, Usage(calls=1, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                            cached_tokens=reply.cached_tokens, usd=usd), ""

    def _call(self, request: ChatRequest, state: KernelState | None,
              ctx: EditContext | None) -> ChatReply:
        return self.client.complete(request)

    def _answer(self, reply: ChatReply, usage: Usage, state: KernelState, direction: str,
                expected: str | None, allowed: set[str] | None, template: str) -> Answer:
        found = extract_answer(reply.text, state.source, reply.truncated)
        if isinstance(found, str):
            return Answer([], usage, [f"{self.name} {template}: unusable answer: {found}"])
        problem = check_feature(found.feature, direction, expected, allowed)
        if problem:
            return Answer([], usage, [f"{self.name} {template}: {problem}"])
        pass_name = f"{self.name}:{template}@{self.prompt_version}"
        return Answer([proposal_from(state, found, direction, pass_name)], usage)


def _card_json(card: Any) -> str:
    return (card.model_dump_json(indent=1, exclude={"created_at"}) if hasattr(card, "model_dump_json")
            else json.dumps(card, default=str))


def check_feature(feature: str | None, direction: str, expected: str | None,
                  allowed: set[str] | None) -> str | None:
    """Why the feature an answer names is unacceptable, or None."""
    if feature is None:
        return "the answer has no FEATURE line naming what it changed"
    if direction == "improve":
        return None
    if feature not in CATALOGUE:
        return f"the answer names {feature!r}, which is not a feature in the catalogue"
    if expected is not None and feature != expected:
        return f"wrong feature: asked for {expected}, the answer names {feature}"
    if allowed is not None and feature not in allowed:
        return f"the answer removes {feature}, which the kernel does not have"
    return None


def proposal_from(state: KernelState, found: Extracted, direction: str, pass_name: str) -> Proposal:
    """A Proposal with a full Edit (sites from the detectors, diff, flags, tunables)."""
    removed = added = ()
    if found.flags is not None:
        removed = tuple(f for f in state.flags if f not in found.flags)
        added = tuple(f for f in found.flags if f not in state.flags)
    new_state = state.with_source(found.source, removed, added)
    feature = found.feature if found.feature in CATALOGUE else None
    where = state if direction == "remove" else new_state
    sites = tuple(h.site for h in safe_detect(where) if h.feature == feature) or _changed(state, new_state)
    edit = Edit(feature=feature or "none", direction="remove" if direction == "remove" else "insert",
                pass_name=pass_name, old_source=state.source, new_source=found.source, sites=sites,
                params=dict(found.tunables), flags_removed=removed, flags_added=added)
    rationale = found.rationale or f"{pass_name}: {direction} {feature or found.feature}"
    return Proposal(state=new_state, feature=feature, direction=direction,  # type: ignore[arg-type]
                    rationale=rationale, edit=edit)


def _changed(old: KernelState, new: KernelState) -> tuple[Site, ...]:
    """The span of the old source the edit touched, when no detector places the feature."""
    a, b = old.source.splitlines(keepends=True), new.source.splitlines(keepends=True)
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    last = len(a) - next((i for i, (x, y) in enumerate(zip(reversed(a), reversed(b), strict=False))
                          if x != y or len(a) - i <= first), 0)
    last = max(last, first + 1) if a else 0
    start = sum(len(line) for line in a[:first])
    text = "".join(a[first:last])
    return (Site(start_line=first + 1, end_line=max(last, first + 1), start_byte=start,
                 end_byte=start + len(text), text=text),)


MIN_SECRET_CHARS = 12


def redact(text: str) -> str:
    """``text`` with every configured API key replaced: keys never reach a log or a message."""
    for provider in ("openai", "anthropic"):
        key = settings.api_key(provider)
        # A provider's key is long; a short stand-in for a local server ("relay") is no secret,
        # and replacing it everywhere turned the recorded model "relay-model" into "***-model".
        if key and len(key) >= MIN_SECRET_CHARS:
            text = text.replace(key, "***")
    return text


def sdk_and_key(provider: str, api: ApiConfig, key_hint: str) -> tuple[Any, str]:
    """The provider's official SDK module and the API key to call it with (a server at
    ``base_url`` may need none); a clear error for a missing SDK, key or model."""
    try:
        sdk = importlib.import_module(provider)
    except ImportError as exc:
        raise ConfigError(f"the {provider} brain needs the {provider} SDK: "
                          "pip install 'klineage[llm]'") from exc
    key = settings.api_key(provider) or ("not-needed" if api.base_url else None)
    if key is None:
        raise ConfigError(f"the {provider} brain needs {key_hint}")
    if not api.model:
        raise ConfigError(f"the {provider} brain has no model: set brains.{provider}.model or "
                          f"KLINEAGE_{provider.upper()}_MODEL")
    return sdk, key


def map_sdk_error(exc: Exception, sdk: Any, api: ApiConfig, where: str) -> Exception:
    """An SDK exception as a recorded failure (CallFailed) or a run-stopping BrainError."""
    attempts = api.retries + 1
    if isinstance(exc, sdk.APITimeoutError):
        return CallFailed(f"no answer within {api.timeout_s:g}s ({attempts} attempts)")
    if isinstance(exc, sdk.APIConnectionError):
        return BrainError(f"cannot reach the brain at {where} ({attempts} attempts): "
                          f"{redact(str(exc))}")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        message = redact(str(getattr(exc, "message", "") or exc))[:300]
        if status == 429 or status >= 500:
            return CallFailed(f"HTTP {status} after {attempts} attempts: {message}")
        return BrainError(f"the brain at {where} refused the request: HTTP {status}: {message}")
    return BrainError(f"the brain at {where} failed: {type(exc).__name__}: {redact(str(exc))[:300]}")
