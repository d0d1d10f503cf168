"""Editors ("brains"): who proposes edits. Nothing outside this package imports an LLM SDK."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from klineage.editors.base import Answer, EditContext, Editor, Proposal, Usage
from klineage.editors.metered import MeteredEditor
from klineage.errors import ConfigError

if TYPE_CHECKING:
    from klineage.config import Config

__all__ = ["Answer", "EditContext", "Editor", "MeteredEditor", "Proposal", "Usage", "get_editor",
           "keep_exchanges"]


def get_editor(name: str, config: Config | None = None, record: Path | None = None,
               replay: Path | None = None) -> Editor:
    """Build a brain: rules | openai | anthropic | agent | replay.

    ``record`` appends every exchange of an API brain to a cassette; ``replay`` serves them from
    one instead of the network (``replay`` as a name: the cassette's own provider and model)."""
    if name == "rules":
        if record or replay:
            raise ConfigError("--record/--replay need an LLM brain; the rules brain asks no one")
        from klineage.editors.rules import RulesEditor

        return RulesEditor()
    from klineage.config import BRAINS, load_config

    if name not in BRAINS:
        raise ConfigError(f"unknown brain {name!r} (available: {', '.join(BRAINS)})")
    config = config or load_config()
    if name == "agent":
        if record or replay:
            raise ConfigError("--record/--replay work with the openai and anthropic brains, not agent")
        from klineage.editors.agent import AgentEditor

        return AgentEditor(config.brains.agent, config)
    return _api_editor(name, config, record, replay)


def _api_editor(name: str, config: Config, record: Path | None, replay: Path | None) -> Editor:
    from klineage.editors._llm import ChatClient, LLMEditor
    from klineage.editors.replay import Cassette, RecordingClient, ReplayClient

    if record and replay:
        raise ConfigError("--record and --replay exclude each other")
    client: ChatClient
    if name == "replay":
        if replay is None:
            raise ConfigError("the replay brain needs --replay CASSETTE")
        player = ReplayClient(Cassette(replay))
        # the request as recorded: its model, temperature and max_tokens are part of its key
        model, temperature, max_tokens = player.recorded_settings()
        return LLMEditor("replay", player, model, temperature, max_tokens, config)
    api = getattr(config.brains, name)
    if replay is not None:
        client = ReplayClient(Cassette(replay), provider=name)
    elif name == "openai":
        from klineage.editors.openai_editor import OpenAIClient

        client = OpenAIClient(api)
    else:
        from klineage.editors.anthropic_editor import AnthropicClient

        client = AnthropicClient(api)
    if record is not None:
        client = RecordingClient(client, Cassette(record))
    return LLMEditor(name, client, api.model, api.temperature, api.max_tokens, config)


def keep_exchanges(editor: Editor, run: Path) -> None:
    """An LLM brain keeps its exchanges in the run folder (``brain.jsonl``), so a resume is
    answered where the run stopped and never pays twice; the rules brain asks no one."""
    keep = getattr(editor, "keep_exchanges", None)
    if keep is not None:
        keep(Path(run) / "brain.jsonl")
