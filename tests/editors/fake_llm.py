"""A real HTTP server on loopback that speaks OpenAI chat-completions and Anthropic messages.

Answers come from a script: a queue of actions consumed one per request (answer this text, fail
with a status, sleep, drop the connection), and after the queue a ``brain`` function that
computes the answer from the prompt. ``rules_brain`` answers like a careful LLM would: it finds
the kernel in the prompt and makes the edit the rules passes would make, written as
``FEATURE:``/``FLAGS:`` header lines and one fenced block with the whole file.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from klineage.editors import EditContext
from klineage.editors.rules import RulesEditor
from klineage.workload import KernelState

BrainFn = Callable[[str], str]


@dataclass
class Action:
    kind: str  # "answer" | "status" | "sleep" | "drop"
    text: str = ""
    status: int = 200
    seconds: float = 0.0
    truncated: bool = False


@dataclass
class FakeLLM:
    brain: BrainFn | None = None
    script: list[Action] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.brain = self.brain or rules_brain
        self._lock = threading.Lock()
        handler = _handler(self)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_action(self, prompt: str) -> Action:
        with self._lock:
            if self.script:
                return self.script.pop(0)
        return Action("answer", self.brain(prompt))

    def prompts(self) -> list[str]:
        return [_prompt(r) for r in self.requests]


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            action = fake.next_action(_prompt(body))
            if action.kind == "drop":
                self.close_connection = True
                self.connection.close()
                return
            if action.kind == "sleep":
                time.sleep(action.seconds)
            if action.kind == "status":
                self._send(action.status, {"error": {"message": f"scripted {action.status}",
                                                     "type": "rate_limit_error"}},
                           {"retry-after-ms": "10"})
                return
            text = action.text or fake.brain(_prompt(body))
            anthropic = self.path.endswith("/messages")
            self._send(200, _anthropic(body, text, action) if anthropic else _openai(body, text, action))

        def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

    return Handler


def _tokens(body: dict[str, Any], text: str) -> tuple[int, int]:
    return len(json.dumps(body.get("messages", []))) // 4, max(len(text) // 4, 1)


def _openai(body: dict[str, Any], text: str, action: Action) -> dict[str, Any]:
    prompt_tokens, completion_tokens = _tokens(body, text)
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length" if action.truncated else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": prompt_tokens // 2}}}


def _anthropic(body: dict[str, Any], text: str, action: Action) -> dict[str, Any]:
    input_tokens, output_tokens = _tokens(body, text)
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if action.truncated else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}


# -- a brain that answers like an LLM, computed from the prompt ---------------------------------

_KERNEL = re.compile(r"## Kernel \((?P<file>[\w.]+), compile flags: (?P<flags>[^\n]*)\)\n```(?P<fence>\w*)\n"
                     r"(?P<source>.*?)\n```", re.S)
_LANGUAGES = {"c": "c", "cpp": "cpp", "cuda": "cuda", "python": "triton"}


def kernel_in(prompt: str) -> KernelState:
    match = _KERNEL.search(prompt)
    assert match, "no kernel in the prompt"
    flags = () if match["flags"] == "(none)" else tuple(match["flags"].split())
    return KernelState(source=match["source"] + "\n", language=_LANGUAGES[match["fence"]], flags=flags)


def answer_text(state: KernelState, edit: Any, intro: str) -> str:
    flags = [f for f in state.flags if f not in edit.flags_removed] + list(edit.flags_added)
    return (f"{intro}\n\nFEATURE: {edit.feature}\nFLAGS: {' '.join(flags)}\n"
            f"TUNABLES: {json.dumps(edit.params, default=str)}\n\n```c\n{edit.new_source.rstrip()}\n```\n")


def rules_brain(prompt: str) -> str:
    rules = RulesEditor()
    if prompt.startswith("# Task: name and describe"):
        facts = json.loads(prompt.split("```json\n", 1)[1].split("\n```", 1)[0])
        return ("```json\n" + json.dumps({"name": f"llm-{facts['feature']}", "intent": "faster",
                                          "anchor": "the hot loop", "summary": "apply it"}) + "\n```")
    state = kernel_in(prompt)
    if prompt.startswith("# Task: remove"):
        refused = prompt.split("(do not propose these again)", 1)[1]
        tried = set(re.findall(r"^- (\w+):", refused, re.M))
        edits = [p.edit for p in rules.simplify(state, None).proposals if p.edit.feature not in tried]
        return answer_text(state, edits[0], "Removing one optimization.") if edits else "FEATURE: none"
    if prompt.startswith("# Task: make this kernel faster"):
        proposals = rules.improve(state, EditContext(workload=None)).proposals  # type: ignore[arg-type]
        # as a model reading its feedback would: not the change it already tried on this version
        tried = len(re.findall(r"^\d+\. ", prompt.split("Attempts on this version so far", 1)[-1],
                               re.M)) if "Attempts on this version so far" in prompt else 0
        if not proposals:
            return "FEATURE: none"
        return answer_text(state, proposals[tried % len(proposals)].edit, "One change.")
    if prompt.startswith("# Task: apply these skill cards together"):
        for block in re.findall(r"```json\n(.*?)\n```", prompt, re.S):
            card = json.loads(block)
            params = (card.get("rewrite") or {}).get("params") or {}
            found = rules.rederive(state, card["feature"], EditContext(workload=None), params)  # type: ignore[arg-type]
            if found.proposals:
                return answer_text(state, found.proposals[0].edit, "Applying the cards that hold.")
        return "None of these cards applies here."
    feature = re.match(r"# Task: \w+ (?:one optimization \(forward step\)|a skill card): (\w+)", prompt)[1]
    tunables: dict[str, Any] = {}
    if prompt.startswith("# Task: apply"):
        card = json.loads(prompt.split("```json\n", 1)[1].split("\n```", 1)[0])
        tunables = (card.get("rewrite") or {}).get("params") or {}
    else:
        found = re.search(r"Parameters\s+that worked there: (\{.*?\})\.", prompt, re.S)
        tunables = json.loads(found[1]) if found else {}
    answer = rules.rederive(state, feature, EditContext(workload=None), tunables)  # type: ignore[arg-type]
    if not answer.proposals:
        return "I cannot apply this here."
    return answer_text(state, answer.proposals[0].edit, f"Adding {feature}.")
