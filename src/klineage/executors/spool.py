"""A spool folder between where the brain runs and where the GPU is (``--executor spool:DIR``).

Many GPU clusters give compute nodes no internet, and our own GPU machine reaches no model: the
run (and its brain) stays where the model is, and each gate job it needs is written to
``DIR/pending/`` as one self-contained JSON file: the workload's files, the kernel folder's
bytes, the kernel's spec and the gate options, named by the hash of that content. On the GPU
node ``klineage worker DIR`` (``serve``) claims a job by renaming it into ``DIR/claimed/`` (an
atomic rename: of several workers on one spool exactly one wins), gates it with the local
executor, and writes the same typed record a local run returns to ``DIR/done/`` (written aside,
then renamed). A claim whose worker stopped touching it for ``stale_s`` goes back to pending.

Jobs and results are signed with a secret the run and its workers share (``KLINEAGE_SPOOL_KEY``,
HMAC-SHA256; a result is bound to its job's name): whoever else can write the folder can neither
forge a result (a wrong kernel shown ``accepted``) nor have a worker run a job (a job's workload
runs its ``reference.py`` in the worker, as a workload does locally). A worker reads only regular
files named by a job hash, no larger than a job can be, checks the signature before it parses
anything, and moves what fails it to ``rejected/`` with the reason; every other failure of a job
is a signed error result, never a crashed or hung worker. Writes go through the folder's own
descriptor with no symlink followed. The job is data (no pickle): the workload is loaded from its
files (its fingerprint must match) and the kernel's files must hash to what the job says. The
submitting side accepts only a signed result of a job it wrote, once.

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
import hmac
import json
import os
import re
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from klineage import settings
from klineage.backends import Backend, get_backend
from klineage.errors import ConfigError, GateWaiting, WorkerError
from klineage.executors.base import Item, Result
from klineage.executors.local import LocalExecutor
from klineage.workload import KernelSpec, Workload, load_workload

__all__ = ["FORMAT", "SpoolExecutor", "job_record", "serve", "signed"]

FORMAT = "klineage-spool-job/2"
MAX_JOB_BYTES = 64 << 20
"""A job's files, all together: a workload's reference and a kernel folder are kilobytes."""
MAX_FILE_BYTES = MAX_JOB_BYTES * 4 // 3 + (1 << 20)
"""A job file: its files in base64, and the record around them."""
MAX_RESULT_BYTES = 16 << 20
STALE_S = 600.0
POLL_S = 0.5
_FOLDERS = ("pending", "claimed", "done", "rejected")
_JOB_NAME = re.compile(r"[0-9a-f]{32}")
_SIGNATURE = b"klineage-spool-signed/1 "
"""A signed file's first line: this, then the HMAC-SHA256 of what follows, in hex."""


def job_record(task: Any) -> dict[str, Any]:
    """One gate task (``gate.session.GateTask``) as the data a worker needs, hashed."""
    workload = task.workload
    record = {
        "format": FORMAT,
        "mode": "compare" if task.compare_only else "gate",
        "workload": {"quick": workload.quick, "fingerprint": workload.fingerprint(),
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
        self.key = _key()
        self.folder = _spool_folder(folder).absolute()  # the resume command it prints works anywhere
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
                    result = _result_of(done, name, self.key)
                    if _unmeasurable(result):  # a verdict on the worker's load, not the kernel's:
                        done.unlink(missing_ok=True)  # asked again, the job is gated again
                    for index in waiting.pop(name):
                        yield index, result
                elif any((self.folder / "rejected").glob(f"{name}.*.txt")):
                    raise WorkerError(f"spool {self.folder}: the worker set job {name} aside, unread "
                                      f"(rejected/{name}.*.txt): its KLINEAGE_SPOOL_KEY is not this "
                                      f"run's; give both the same key, then resume")
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
            _write_atomically(self.folder / "pending", f"{record['job']}.json",
                              signed(self.key, b"job", json.dumps(record).encode()))
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
    none is left, else wait for more (until ``stop`` is set). Returns how many jobs it ran (a
    job whose signature fails is moved to ``rejected/``, not run, and not counted)."""
    key = _key()
    folder = _spool_folder(folder)
    me = f"{socket.gethostname()}-{os.getpid()}-{threading.get_ident()}".replace(".", "_")
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
        with _touching(claimed, every_s=min(10.0, stale_s / 4)):
            outcome = _run_claimed(claimed, name, key)
        if outcome is None:  # not signed by a key holder: never run, never answered
            _move_aside(folder, claimed, name, me)
            continue
        _write_atomically(folder / "done", f"{name}.json",
                          signed(key, b"result\0" + name.encode(), json.dumps(outcome).encode()))
        with contextlib.suppress(OSError):
            claimed.unlink()
        ran += 1
        if on_job is not None:
            on_job(name, outcome.get("error") or outcome["result"].get("verdict")
                   or outcome["result"].get("decision", ""))
    return ran


def signed(key: bytes, kind: bytes, body: bytes) -> bytes:
    """``body`` with a first line that proves a key holder wrote it as ``kind`` (a job, or the
    result of one named job: the kind binds it to that name)."""
    mac = hmac.new(key, kind + b"\0" + body, hashlib.sha256).hexdigest().encode()
    return _SIGNATURE + mac + b"\n" + body


def _verified(key: bytes, kind: bytes, data: bytes) -> bytes | None:
    """What a key holder signed as ``kind``, or None."""
    head, newline, body = data.partition(b"\n")
    if not newline or not head.startswith(_SIGNATURE):
        return None
    mac = hmac.new(key, kind + b"\0" + body, hashlib.sha256).hexdigest().encode()
    return body if hmac.compare_digest(head[len(_SIGNATURE):], mac) else None


def _spool_folder(folder: Path) -> Path:
    """The spool with its four folders, each a real directory (one swapped for a symlink would
    send a worker's writes, or its reads, somewhere else)."""
    folder = Path(folder)
    for name in _FOLDERS:
        (folder / name).mkdir(parents=True, exist_ok=True)
        if not stat.S_ISDIR((folder / name).lstat().st_mode):
            raise ConfigError(f"spool {folder}: {name}/ is not a directory (a symlink?): refused")
    return folder


def _key() -> bytes:
    key = settings.spool_key()
    if key is None or len(key) < 16:
        raise ConfigError("a spool needs KLINEAGE_SPOOL_KEY, a secret of 16 characters or more "
                          "shared by the run and its workers and by no one else who can write the "
                          "folder (jobs and results are signed with it); e.g. export "
                          "KLINEAGE_SPOOL_KEY=$(python -c 'import secrets; print(secrets.token_hex(32))') "
                          "on both sides")
    return key


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


def _result_of(done: Path, name: str, key: bytes) -> Any:
    """A worker's record for job ``name``, as the typed result a local run returns. A record that
    is no verdict (unsigned, unreadable, the worker's own failure) is removed, so the job is
    queued again, and stops the run as a ``WorkerError``: resumable, never a method's failure."""
    from klineage.gate import Comparison, GateReport

    try:
        body = _verified(key, b"result\0" + name.encode(), _read_regular(done, MAX_RESULT_BYTES))
        if body is None:
            raise _refused(done, f"not signed with this run's KLINEAGE_SPOOL_KEY for job {name} "
                                 f"(anyone who can write the folder could have put it there)")
        outcome = json.loads(body)
    except (OSError, ValueError, RecursionError) as exc:
        raise _refused(done, f"unreadable ({exc})") from exc
    if not isinstance(outcome, dict) or outcome.get("job") != name:
        raise _refused(done, f"not the result of job {name}")
    if outcome.get("error"):
        raise _refused(done, f"the worker could not run job {name}: {outcome['error']}")
    model = Comparison if outcome.get("mode") == "compare" else GateReport
    return model.model_validate(outcome["result"])


def _refused(done: Path, why: str) -> WorkerError:
    with contextlib.suppress(OSError):
        done.unlink()
    return WorkerError(f"spool result {done}: {why}; removed, so a resume queues the job again")


def _unmeasurable(result: Any) -> bool:
    return getattr(getattr(result, "verdict", None), "value", None) == "unmeasurable" or (
        getattr(result, "decision", None) == "unmeasurable")


# -- the worker's side -------------------------------------------------------------------------

def _claim(folder: Path, me: str) -> Path | None:
    """The oldest pending job, renamed into ``claimed/`` (of several workers exactly one wins).
    Only regular files named ``<job hash>.json`` are jobs: anything else there (a directory, a
    FIFO, a symlink, another name) is left alone."""
    for pending in sorted((folder / "pending").glob("*.json"), key=_age):
        if not _JOB_NAME.fullmatch(pending.stem) or not _regular(pending):
            continue
        claimed = folder / "claimed" / f"{pending.stem}.{me}.json"
        try:
            pending.rename(claimed)  # atomic: one worker of several wins
        except OSError:  # taken by another worker, or a cross-device claimed/
            continue
        with contextlib.suppress(OSError):
            os.utime(claimed, follow_symlinks=False)
        return claimed
    return None


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes, read without following a symlink or blocking on a FIFO; refused
    over ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{info.st_size} bytes, more than {limit}")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(limit + 1)
    finally:
        os.close(fd)


def _move_aside(folder: Path, claimed: Path, name: str, me: str) -> None:
    """A job no key holder signed: out of the queue, with a note saying why, never answered."""
    with contextlib.suppress(OSError):
        claimed.rename(folder / "rejected" / f"{name}.{me}.json")
    _write_atomically(folder / "rejected", f"{name}.{me}.txt",
                      b"not run: not a job this worker can read as signed with its "
                      b"KLINEAGE_SPOOL_KEY (a wrong signature, too large, or not a regular file)\n")


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
        with contextlib.suppress(OSError):
            if now - claimed.lstat().st_mtime > stale_s:
                claimed.rename(folder / "pending" / f"{claimed.name.split('.', 1)[0]}.json")


@contextlib.contextmanager
def _touching(claimed: Path, every_s: float = 10.0) -> Iterator[None]:
    """Keep a claim fresh while its job runs, so no other worker takes it for stale."""
    done = threading.Event()

    def touch() -> None:
        while not done.wait(every_s):
            with contextlib.suppress(OSError):
                os.utime(claimed, follow_symlinks=False)

    thread = threading.Thread(target=touch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _run_claimed(claimed: Path, name: str, key: bytes) -> dict[str, Any] | None:
    """The job's result record, or its error; None for a file no key holder signed. Whatever
    a signed job holds, the worker answers it: a malformed one is refused, never run."""
    from klineage.executors import using
    from klineage.gate.session import GateTask, run_task

    try:
        body = _verified(key, b"job", _read_regular(claimed, MAX_FILE_BYTES))
    except (OSError, ValueError):
        return None
    if body is None:
        return None
    try:
        record = json.loads(body)
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
    except Exception as exc:  # a signed job's mistake is its answer; the worker goes on
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
    """Loaded from its files, as a local run loads it: a job says nothing of the workload that
    its workload.toml does not."""
    _unpack(record["files"], root)
    workload = load_workload(root, quick=bool(record["quick"]))
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


def _write_atomically(folder: Path, name: str, data: bytes) -> None:
    """Written aside in ``folder``, then renamed: a reader sees all of it or nothing. Through the
    folder's own descriptor, following no symlink (a ``done/`` made a link elsewhere is refused),
    under a unique aside name (two runs may submit the same job, two workers share a folder)."""
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    aside = f".{name}.{os.getpid()}.{threading.get_ident()}.{os.urandom(4).hex()}.part"
    try:
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                     dir_fd=directory)
        os.fchmod(fd, 0o644)  # whatever the umask: a worker on a shared folder may be another user
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(aside, name, src_dir_fd=directory, dst_dir_fd=directory)
    finally:
        os.close(directory)
