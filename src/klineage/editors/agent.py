"""The ``agent`` brain: an agent CLI (``claude -p``, ``codex exec``, ...) in a scratch folder.

Each request gets a fresh temporary folder holding only the kernel (``kernel/``), the workload's
``workload.toml`` and ``reference.py`` (``workload/``), a ``gate.sh`` the agent may call, and the
prompt (``PROMPT.md``). The configured command runs there with the prompt as its last argument
(or on stdin), in its own process group, killed whole at the time limit. The kernel file and
``result.json`` are read back and turned into the same answer a chat model gives, so extraction,
feature checks and the caller's gate treat it like any other proposal. The user's tree is never
the working directory and is never written.

Card text (``lift``) comes from the rules brain: an agent session per card is not worth its cost.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from klineage.config import AgentConfig, Config
from klineage.editors._llm import CallFailed, ChatReply, ChatRequest, LLMEditor, redact
from klineage.editors._prompts import FENCES, safe_detect
from klineage.editors.base import EditContext, Usage
from klineage.workload import KernelState

__all__ = ["AgentEditor"]


class _NoClient:
    provider = "agent"

    def complete(self, request: ChatRequest) -> ChatReply:
        raise CallFailed("the agent brain needs a kernel to work on")


class AgentEditor(LLMEditor):
    answer_format = "agent_format"

    def __init__(self, agent: AgentConfig, config: Config):
        super().__init__("agent", _NoClient(), " ".join(agent.command), 0.0, 0, config)
        self.agent = agent

    def lift(self, facts: dict[str, Any]) -> tuple[dict[str, str], Usage]:
        from klineage.editors.rules import RulesEditor

        return RulesEditor().lift(facts)

    def _call(self, request: ChatRequest, state: KernelState | None,
              ctx: EditContext | None) -> ChatReply:
        if state is None or ctx is None:
            raise CallFailed("the agent brain is only asked about kernels")
        with tempfile.TemporaryDirectory(prefix="klineage-agent-") as tmp:
            scratch = Path(tmp)
            kernel_file = self._prepare(scratch, state, ctx, request)
            self._run(scratch, request)
            if not kernel_file.is_file():
                raise CallFailed(f"the agent deleted {kernel_file.name}")
            source = kernel_file.read_text()
            result = _result(scratch / "result.json")
        return ChatReply(text=_as_answer(state, source, result, request.prompt))

    def _prepare(self, scratch: Path, state: KernelState, ctx: EditContext,
                 request: ChatRequest) -> Path:
        spec = state.materialize(scratch / "kernel", ctx.workload)
        (scratch / "workload").mkdir()
        for name in ("workload.toml", "reference.py"):
            (scratch / "workload" / name).write_text((ctx.workload.root / name).read_text())
        gate = scratch / "gate.sh"
        gate.write_text("#!/bin/sh\n# Compile, check and time kernel/ against workload/ (klineage gate).\n"
                        f"cd {shlex.quote(str(scratch))} && exec {shlex.quote(sys.executable)} -m "
                        "klineage.cli gate workload kernel \"$@\"\n")
        gate.chmod(0o755)
        (scratch / "PROMPT.md").write_text(f"{request.system}\n\n{request.user}")
        return Path(spec.source)

    def _run(self, scratch: Path, request: ChatRequest) -> None:
        prompt = f"{request.system}\n\n{request.user}"
        argv = [*self.agent.command, *([prompt] if self.agent.prompt_via == "argv" else [])]
        try:
            process = subprocess.Popen(argv, cwd=scratch, start_new_session=True, text=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE)
        except OSError as exc:
            raise CallFailed(f"cannot start {self.agent.command[0]!r}: {exc.strerror}") from exc
        try:
            _, err = process.communicate(prompt if self.agent.prompt_via == "stdin" else None,
                                         timeout=self.agent.time_limit_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise CallFailed(f"the agent ran past its time limit ({self.agent.time_limit_s:g}s) "
                             "and was stopped") from None
        finally:
            _kill_group(process)  # helpers the agent left running go with it
        if process.returncode != 0:
            tail = redact(err or "").strip()[-400:]
            raise CallFailed(f"the agent exited with status {process.returncode}: {tail}")


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        process.communicate()


def _result(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise CallFailed("result.json is not JSON") from None
    if not isinstance(value, dict):
        raise CallFailed("result.json is not a JSON object")
    return value


def _as_answer(state: KernelState, source: str, result: dict[str, Any], prompt: str) -> str:
    """The agent's work written as a chat answer, so one extractor checks every brain."""
    feature = result.get("feature") or _inferred(state, source, prompt)
    lines = [str(result.get("rationale", "")).replace("\n", " ")[:300]]
    if feature:
        lines.append(f"FEATURE: {feature}")
    if isinstance(result.get("flags"), list):
        lines.append("FLAGS: " + " ".join(str(f) for f in result["flags"]))
    if isinstance(result.get("tunables"), dict):
        lines.append("TUNABLES: " + json.dumps(result["tunables"]))
    fence = FENCES.get(state.language, "")
    return "\n".join([*lines, f"```{fence}", source.rstrip("\n"), "```"])


def _inferred(state: KernelState, source: str, prompt: str) -> str | None:
    """Without result.json: the one feature the detectors saw go (simplify) or come (others)."""
    before = {h.feature for h in safe_detect(state)}
    after = {h.feature for h in safe_detect(state.with_source(source))}
    changed = before - after if prompt.startswith("simplify") else after - before
    return next(iter(changed)) if len(changed) == 1 else None
