"""``klineage demo``'s own bookkeeping: every stop is resumable, a resume starts after the last
finished step and continues the child a stop left, and the command a stop prints is the demo's.
The stages themselves are stood in for here (each has its own tests; the whole demo takes
minutes): what is tested is which of them run, with what, after a stop."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from klineage import demo as demo_module
from klineage.cli._common import BUSY_EXIT, exit_status
from klineage.errors import ConfigError, MachineLoadedError

EXAMPLES = Path(__file__).parents[1] / "examples" / "workloads" / "cpu"


class Stages:
    """Stand-ins for the demo's stages that make child run folders as the real ones do, record
    each call, and stop once where told to, as a loaded machine stops a run."""

    def __init__(self, stop_in: str):
        self.calls: list[tuple[str, str | None]] = []
        self.stop_in = stop_in

    def _child(self, runs_root: Path, kind: str, name: str, resume: Path | None) -> Path:
        self.calls.append((f"{kind} {name}", resume and resume.name))
        path = resume or runs_root / f"{kind}-{name}"
        if resume is None:
            path.mkdir(parents=True)
            (path / "run.json").write_text(json.dumps({"kind": kind, "name": name}))
            (path / "events.jsonl").write_text(json.dumps({"event": "run_started"}) + "\n")
        if self.stop_in == f"{kind} {name}":
            self.stop_in = ""
            raise MachineLoadedError(f"{name}/abcd1234: the timing was too noisy. The run is kept at "
                                     f"{path}: continue it with klineage {kind} W --resume {path}")
        with (path / "events.jsonl").open("a") as events:
            events.write(json.dumps({"event": f"{kind}_finished"}) + "\n")
        return path

    def mine(self, workload, expert, runs_root, library, options, resume=None, say=None):
        path = self._child(runs_root, "mine", workload.name, resume)
        return SimpleNamespace(run=SimpleNamespace(path=path), summary=lambda: {"run": str(path)})

    def build_memory(self, training, options, runs_root, out, say=None):
        path = self._child(runs_root, "optimize", "memory", None)
        return SimpleNamespace(runs=[str(path)])

    def optimize(self, workload, start, library, options, runs_root, say=None, resume=None):
        path = self._child(runs_root, "optimize", workload.name, resume)
        return SimpleNamespace(run=SimpleNamespace(path=path), best_speedup=1.5, stop_reason="budget")

    def bench(self, suite, library, methods, options, runs_root, quick, say=None):
        path = self._child(runs_root, "bench", suite.name, None)
        return SimpleNamespace(run=SimpleNamespace(path=path), record={"summary": {}, "results": []})

    def resume_bench(self, path, library, options, say=None):
        self._child(path.parent, "bench", "rmsnorm", path)
        return SimpleNamespace(run=SimpleNamespace(path=path), record={"summary": {}, "results": []})


@pytest.fixture
def stages(monkeypatch):
    def install(stop_in: str) -> Stages:
        fake = Stages(stop_in)
        for name in ("mine", "build_memory", "optimize", "bench", "resume_bench"):
            monkeypatch.setattr(demo_module, name, getattr(fake, name))
        monkeypatch.setattr(demo_module, "mine_spent", lambda path: path)
        monkeypatch.setattr(demo_module, "write_report",
                            lambda path, say=None: SimpleNamespace(html=path / "report" / "index.html"))
        return fake
    return install


@pytest.mark.parametrize("stop_in", ["mine transpose", "optimize rmsnorm", "bench rmsnorm"])
def test_a_stopped_demo_resumes_after_its_last_finished_step(tmp_path, stages, stop_in):
    fake = stages(stop_in)
    with pytest.raises(MachineLoadedError) as stop:
        demo_module.run_demo(EXAMPLES, tmp_path, backend="null")
    (run,) = tmp_path.iterdir()
    message = str(stop.value)
    # The command a stop prints is the demo's, not its child's (which a user could not resume).
    assert message.endswith(f"continue it with klineage demo --resume {run}"), message
    assert "klineage mine" not in message and "klineage optimize" not in message
    assert exit_status(stop.value) == BUSY_EXIT
    before = list(fake.calls)
    fake.calls.clear()
    result = demo_module.run_demo(resume=run)
    done_before = [step for step, _ in before[:-1]]
    assert not any(step in done_before for step, _ in fake.calls), (before, fake.calls)
    assert fake.calls[0] == (stop_in, f"{stop_in.replace(' ', '-')}"), fake.calls
    assert result.optimized["best_speedup"] == 1.5 and [m["run"] for m in result.mined]
    with pytest.raises(ConfigError, match="this demo run is finished"):
        demo_module.run_demo(resume=run)
