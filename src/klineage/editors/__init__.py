"""Editors ("brains"): who proposes edits. Nothing outside this package imports an LLM SDK."""

from klineage.editors.base import Answer, EditContext, Editor, Proposal, Usage
from klineage.errors import ConfigError

__all__ = ["Answer", "EditContext", "Editor", "Proposal", "Usage", "get_editor"]


def get_editor(name: str) -> Editor:
    if name == "rules":
        from klineage.editors.rules import RulesEditor

        return RulesEditor()
    raise ConfigError(f"unknown brain {name!r} (available now: rules)")
