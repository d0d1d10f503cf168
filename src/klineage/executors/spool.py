"""A spool folder between where the brain runs and where the GPU is (``--executor spool:DIR``).

Many GPU clusters give compute nodes no internet, and our own GPU machine reaches no model: the
run (and its brain) stays where the model is, and each gate job it needs is written to
``DIR/pending/`` as one self-contained JSON file: the workload's files, the kernel folder's
bytes, the kernel's spec and the gate options, named by the hash of that content. On the GPU
node ``klineage worker DIR`` (``serve``) claims a job by renaming it into ``DIR/claimed/`` (an
atomic rename: of several workers on one spool exactly one wins), gates it with the local
executor, and writes the same typed record a local run returns to ``DIR/done/`` (written aside,
then renamed). A claim whose worker stopped touching it for ``stale_s`` goes back to pending.

Nothing in a job is trusted by the worker but the workload and the kernel it gates, as the
local gate trusts them: the job is data (no pickle), its files land only under a fresh folder
(no absolute paths, no ``..``), and the workload's fingerprint must match its files. The
submitting side accepts only a result whose hash is that of a job it wrote, once.

While results are missing, ``map`` waits, saying every 30 s how many jobs wait and the command
that drains them; with ``wait=False`` (``--no-wait``) it raises ``GateWaiting`` instead, once every
job is written: a run stops there, kept, and its ``--resume`` takes the results up (a job already
answered is never written again, so a resume costs no second round). ``ahead`` writes jobs a
later ``map`` will ask for (a candidate's comparison beside its gate run), and any other job (a
bench's expert timing or group) runs here, its own gate jobs coming back to the spool.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from klineage.backends import Backend, get_backend
from klineage.errors import ConfigError, GateWaiting, KlineageError
from klineage.executors.base import Item, Result
from klineage.executors.local import LocalExecutor
from klineage.workload import KernelSpec, Workload

__all__ = ["FORMAT", "SpoolExecutor", "job_record", "serve"]

FORMAT = "klineage-spool-job/1"
MAX_JOB_BYTES = 64 << 20
"""A job's files, all together: a workload's reference and a kernel folder are kilobytes."""
STALE_S = 600.0
POLL_S = 0.5
_FOLDERS = ("pending", "claimed", "done")


def job_record(task: Any) -> dict[str, Any]:
    """One gate task (``gate.session.GateTask``) as the data a worker needs, hashed."""
    workload = task.workload
    record = {
        "format": FORMAT,
        "mode": "compare" if task.compare_only else "gate",
        "workload": {"model": workload.model_dump(mode="json", exclude={"root"}),
                     "fingerprint": workload.fingerprint(),
                     "files": _packed(workload.root, skip=("kernels",))},
        "kernel": _kernel_record(task.kernel),
        "against": _kernel_record(task.against) if task.against is not None else None,
        "backend": task.backend.name,
        "options": _options_record(task.options),
        "origin": task.origin,
    }
    record["job"] = _hash(record)
    return record


class SpoolExecutor:
    """Jobs go through a spool folder to a ``klineage worker`` wherever the device is; builds
    are done by the worker (the compiler is where the device is)."""

    name = "spool"

    def __init__(self, folder: Path, poll_s: float = POLL_S,
                 waiting: Callable[[str], None] | None = None, wait: bool = True):
        self.folder = Path(folder)
        for name in _FOLDERS:
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        self.poll_s = poll_s
        self.waiting = waiting or (lambda line: None)
        self.wait = wait
        """False: a result not there yet stops the command (``GateWaiting``) instead."""

    def prebuild(self, backend: Backend, kernels: Sequence[KernelSpec]) -> None:
        return None  # the worker builds: its compiler matches its device

    def slots(self, device: str) -> int:
        return 1

    def remote(self, device: str) -> bool:
        return True

    def map(self, job: Callable[[Item], Result], items: Sequence[Item],
            device: str = "cpu") -> Iterator[tuple[int, Result]]:
        from klineage.gate.session import run_task

        if job is not run_task:
            yield from self._here(job, items)
            return
        waiting: dict[str, list[int]] = {}  # the same job twice is gated once
        for index, item in enumerate(items):
            waiting.setdefault(self._placed(item), []).append(index)
        last_said = 0.0
        while waiting:
            for name in list(waiting):
                done = self.folder / "done" / f"{name}.json"
                if done.is_file():
                    result = _result_of(done, name)
                    for index in waiting.pop(name):
                        yield index, result
            if waiting and not self.wait:
                raise self._waiting(len(waiting))
            if waiting and time.monotonic() - last_said > 30:
                last_said = time.monotonic()
                self.waiting(f"{len(waiting)} gate job(s) waiting in {self.folder} (drain them "
                             f"where the device is: klineage worker {self.folder})")
            if waiting:
                time.sleep(self.poll_s)


    def ahead(self, job: Callable[[Item], Result], items: Sequence[Item], device: str = "cpu") -> None:
        """Gate jobs a later ``map`` asks for go to ``pending/`` now: one worker round runs them
        beside the jobs asked for first."""
        from klineage.gate.session import run_task

        if job is run_task:
            for item in items:
                self._placed(item)

    def _placed(self, task: Any) -> str:
        """The job's name; its file is in ``pending/`` unless ``done/`` answered it already."""
        record = job_record(task)
        if not (self.folder / "done" / f"{record['job']}.json").is_file():
            _write_atomically(self.folder / "pending" / f"{record['job']}.json",
                              json.dumps(record).encode())
        return str(record["job"])

    def _here(self, job: Callable[[Item], Result], items: Sequence[Item]) -> Iterator[tuple[int, Result]]:
        """A job that is not one gate run (a bench's expert timing, a group of optimize runs)
        runs here, where the brain is; the gate jobs inside it come back to this spool. With
        ``wait=False`` every item goes as far as its first missing result, so one round of a
        worker gates all of them, then the stop counts them all."""
        waiting = 0
        for index, item in enumerate(items):
            try:
                result = job(item)
            except GateWaiting as exc:
                waiting += exc.jobs
                continue
            yield index, result
        if waiting:
            raise self._waiting(waiting)

    def _waiting(self, jobs: int) -> GateWaiting:
        return GateWaiting(f"{jobs} gate job(s) wait in {self.folder}: drain them where the device "
                           f"is (klineage worker {self.folder} --once)", jobs=jobs,
                           flags=f"--executor spool:{self.folder} --no-wait")


def serve(folder: Path, once: bool = False, stale_s: float = STALE_S, poll_s: float = POLL_S,
          on_job: Callable[[str, str], None] | None = None,
          stop: threading.Event | None = None) -> int:
    """Drain ``folder``'s pending jobs through the local executor; with ``once``, return when
    none is left, else wait for more (until ``stop`` is set). Returns how many jobs it ran."""
    folder = Path(folder)
    for name in _FOLDERS:
        (folder / name).mkdir(parents=True, exist_ok=True)
    me = f"{socket.gethostname()}-{os.getpid()}-{threading.get_ident()}"
    ran = 0
    while stop is None or not stop.is_set():
        _requeue_stale(folder, stale_s)
        claimed = _claim(folder, me)
        if claimed is None:
            if once:
                return ran
            time.sleep(poll_s)
            continue
        name = claimed.name.split(".", 1)[0]
        with _touching(claimed):
            outcome = _run_claimed(claimed, name)
        _write_atomically(folder / "done" / f"{name}.json", json.dumps(outcome).encode())
        claimed.unlink(missing_ok=True)
        ran += 1
        if on_job is not None:
            on_job(name, outcome.get("error") or outcome["result"].get("verdict")
                   or outcome["result"].get("decision", ""))
    return ran


# -- the submitting side ---------------------------------------------------------------------

def _kernel_record(kernel: KernelSpec) -> dict[str, Any]:
    return {"spec": kernel.model_dump(mode="json", exclude={"source"}),
            "source": kernel.source.name, "source_hash": kernel.source_hash(),
            "files": _packed(kernel.folder)}


def _options_record(options: Any) -> dict[str, Any]:
    record = asdict(options)
    record["patience_s"] = 0.0  # the submitting side decides whether to time again
    return record


def _packed(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    files, total = {}, 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or relative.parts[0] in skip or "__pycache__" in relative.parts:
            continue
        data = path.read_bytes()
        total += len(data)
        if total > MAX_JOB_BYTES:
            raise ConfigError(f"{root}: over {MAX_JOB_BYTES >> 20} MiB of files for one spool job")
        files[relative.as_posix()] = base64.b64encode(data).decode()
    return files


def _hash(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "job"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def _result_of(done: Path, name: str) -> Any:
    """A worker's record for job ``name``, as the typed result a local run returns."""
    from klineage.gate import Comparison, GateReport

    try:
        outcome = json.loads(done.read_text())
    except (OSError, ValueError) as exc:
        raise KlineageError(f"spool result {done}: unreadable ({exc})") from exc
    if not isinstance(outcome, dict) or outcome.get("job") != name:
        raise KlineageError(f"spool result {done}: not the result of job {name} (refused)")
    if outcome.get("error"):
        raise KlineageError(f"spool job {name}: the worker could not run it: {outcome['error']}")
    model = Comparison if outcome.get("mode") == "compare" else GateReport
    return model.model_validate(outcome["result"])


# -- the worker's side -------------------------------------------------------------------------

def _claim(folder: Path, me: str) -> Path | None:
    for pending in sorted((folder / "pending").glob("*.json"), key=_age):
        claimed = folder / "claimed" / f"{pending.stem}.{me}.json"
        try:
            pending.rename(claimed)  # atomic: one worker of several wins
        except FileNotFoundError:
            continue
        claimed.touch()
        return claimed
    return None


def _age(path: Path) -> float:
    """Oldest first; a file another worker just took sorts anywhere (its rename will fail)."""
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _requeue_stale(folder: Path, stale_s: float) -> None:
    """Claims not touched for ``stale_s`` (their worker died) go back to pending."""
    now = time.time()
    for claimed in (folder / "claimed").glob("*.json"):
        with contextlib.suppress(FileNotFoundError):
            if now - claimed.stat().st_mtime > stale_s:
                claimed.rename(folder / "pending" / f"{claimed.name.split('.', 1)[0]}.json")


@contextlib.contextmanager
def _touching(claimed: Path, every_s: float = 10.0) -> Iterator[None]:
    """Keep a claim fresh while its job runs, so no other worker takes it for stale."""
    done = threading.Event()

    def touch() -> None:
        while not done.wait(every_s):
            with contextlib.suppress(FileNotFoundError):
                claimed.touch()

    thread = threading.Thread(target=touch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _run_claimed(claimed: Path, name: str) -> dict[str, Any]:
    """The job's result record, or its error: a malformed job is refused, never run."""
    from klineage.executors import using
    from klineage.gate.session import GateTask, run_task

    try:
        record = json.loads(claimed.read_text())
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ConfigError(f"not a {FORMAT} job")
        if record.get("job") != name or _hash(record) != name:
            raise ConfigError("its content does not match its hash")
        with tempfile.TemporaryDirectory(prefix="klineage-spool-") as scratch:
            root = Path(scratch)
            workload = _unpacked_workload(record["workload"], root / "workload")
            kernel = _unpacked_kernel(record["kernel"], root / "kernel")
            against = (_unpacked_kernel(record["against"], root / "against")
                       if record.get("against") else None)
            task = GateTask(workload, kernel, get_backend(str(record["backend"])),
                            _options_from(record["options"]), against=against,
                            compare_only=record.get("mode") == "compare")
            with using(LocalExecutor()):
                result = run_task(task)
    except (KlineageError, KeyError, TypeError, ValueError, OSError) as exc:
        return {"job": name, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    return {"job": name, "mode": record.get("mode"), "result": result.model_dump(mode="json")}


def _unpack(files: Any, root: Path) -> None:
    if not isinstance(files, dict):
        raise ConfigError("a job's files must be a table of paths")
    for relative, data in files.items():
        parts = Path(str(relative)).parts
        if not parts or Path(str(relative)).is_absolute() or ".." in parts:
            raise ConfigError(f"a job's file path leaves its folder: {relative!r}")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(str(data), validate=True))


def _unpacked_workload(record: dict[str, Any], root: Path) -> Workload:
    _unpack(record["files"], root)
    workload = Workload.model_validate({**record["model"], "root": str(root)})
    if workload.fingerprint() != record["fingerprint"]:
        raise ConfigError("the workload's files do not match its fingerprint")
    return workload


def _unpacked_kernel(record: dict[str, Any], folder: Path) -> KernelSpec:
    _unpack(record["files"], folder)
    source = folder / Path(str(record["source"])).name
    kernel = KernelSpec.model_validate({**record["spec"], "source": str(source)})
    if kernel.source_hash() != record["source_hash"]:
        raise ConfigError("the kernel's files do not match its hash")
    return kernel


def _options_from(record: dict[str, Any]) -> Any:
    from klineage.gate import GateOptions, Limits

    known = {f.name for f in fields(GateOptions)}
    unknown = sorted(set(record) - known)
    if unknown:
        raise ConfigError(f"unknown gate options: {', '.join(unknown)}")
    limits = Limits(**record.get("limits", {}))
    return GateOptions(**{**record, "limits": limits})


def _write_atomically(path: Path, data: bytes) -> None:
    """Written aside in the same folder, then renamed: a reader sees all of it or nothing. The
    aside file's name is unique (not ``runs.write_atomic``'s one name per path): two runs may
    submit the same job, and two workers' folders may be one."""
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".", suffix=".part", delete=False) as out:
        out.write(data)
    os.chmod(out.name, 0o644)  # a worker on a shared folder may be another user
    os.replace(out.name, path)
