"""Building candidate code in a jail: the compiler is candidate code's first reader, and its
flags and sources are the candidate's.

The build runs in a folder of its own under the system's temporary folder (the cache may sit
where ``nobody`` cannot reach, under /root): ``src/`` holds a read-only copy of the kernel's
folder, ``out/`` is the only place the compiler may write (its temporary files too). The
compiler sees the toolchain's folders and ``src/`` and nothing else (``klineage.jail``), with a
scrubbed environment, no network, limits on CPU time, memory and file size, and a process group
killed whole when it ends or times out. The artifact is copied out by the trusted process, only
if it is a regular file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klineage.backends._build_log import candidate_log, missing_isa
from klineage.errors import ToolchainError
from klineage.jail import NOBODY, Jail

__all__ = ["CandidateBuild", "JailedOutcome", "candidate_source", "run_jailed", "toolchain_roots"]

SOURCES, OUTPUT = "src", "out"
_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache",
           "/etc/alternatives")
_LIMITS = {"memory_bytes": 16 << 30, "cpu_seconds": 900, "file_bytes": 1 << 30}


@dataclass(frozen=True)
class CandidateBuild:
    """A build of candidate code: what the compiler may read besides the sources."""

    reads: tuple[Path, ...]
    """The toolchain's folders (``toolchain_roots``) and any others the build needs (torch's
    headers for a ModelNew extension)."""
    sources: Path | None = None
    """The kernel's folder, copied read-only to ``src/`` (``candidate_source`` names a file there)."""


@dataclass(frozen=True)
class JailedOutcome:
    ok: bool
    log: str
    command: list[str]
    confinement: str


def toolchain_roots(*tools: str) -> tuple[Path, ...]:
    """The system's folders and each tool's own (where it is found on PATH, and the prefix of
    what that resolves to: /usr/local/bin/nvcc is a script that runs /usr/local/cuda-13.0/bin/nvcc)."""
    roots = [Path(p) for p in _SYSTEM]
    for tool in tools:
        found = shutil.which(tool)
        if found:
            roots += [Path(found).parent, Path(found).resolve().parent.parent]
    return tuple(dict.fromkeys(roots))


def candidate_source(out: Path, source: Path) -> Path:
    """Where a file of the kernel's folder is, for a command writing ``out``: its copy in ``src/``."""
    return out.parent.parent / SOURCES / source.name


def run_jailed(command_for, artifact_name: str, build: CandidateBuild, final: Path,
               timeout: float) -> JailedOutcome:
    """Run the compiler for ``command_for(out)`` in a jail; copy the artifact to ``final``, and
    the other files of the output folder beside it."""
    workspace = Path(tempfile.mkdtemp(prefix="klineage-build-"))
    try:
        workspace.chmod(0o755)
        if build.sources is not None:
            _copy_readonly(build.sources, workspace / SOURCES)
        out = workspace / OUTPUT
        (out / "tmp").mkdir(parents=True)
        jail = Jail(read=(*build.reads, workspace / SOURCES), write=(out,),
                    devices=(Path("/dev/null"),), **_LIMITS)
        if jail.uses_nobody():
            for folder in (out, out / "tmp"):
                os.chown(folder, NOBODY, NOBODY)
        command = [str(c) for c in command_for(out / artifact_name)]
        ok, log = _run(command, jail, out, timeout)
        ok = ok and _regular(out / artifact_name)
        if ok:  # the artifact, and what the build kept beside it (a ModelNew's objects)
            for path in out.iterdir():
                if _regular(path):
                    shutil.copyfile(path, final.parent / path.name)
        isa = None if ok else missing_isa(log)  # before the header's lines are left out
        log = candidate_log(log, workspace / SOURCES).replace(str(out) + "/", "")
        return JailedOutcome(ok, f"{isa}\n{log}" if isa else log, command, jail.describe())
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _regular(path: Path) -> bool:
    """A regular file, not a link the compiler made to lead a copy elsewhere."""
    return os.path.lexists(path) and stat.S_ISREG(os.lstat(path).st_mode)


def _run(command: Sequence[str], jail: Jail, out: Path, timeout: float) -> tuple[bool, str]:
    env = {"PATH": ":".join(dict.fromkeys([str(Path(command[0]).parent) if "/" in command[0] else "",
                                           "/usr/local/bin", "/usr/bin", "/bin"])).strip(":"),
           "LC_ALL": "C", "TMPDIR": str(out / "tmp"), "HOME": "/nonexistent"}
    try:
        process = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env, cwd=out,
                                   start_new_session=True, preexec_fn=jail.preexec())
    except FileNotFoundError as exc:
        raise ToolchainError(f"{command[0]}: not found on PATH") from exc
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return False, f"the compiler timed out after {timeout:.0f} s"
    finally:
        _kill_group(process)  # whatever it left running
    # A candidate's file may hold any bytes, and gcc quotes them: never decode strictly.
    return process.returncode == 0, output.decode(errors="replace").strip()


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _copy_readonly(folder: Path, target: Path) -> None:
    """The kernel's folder, regular files only (a link could lead out of it), readable by all."""
    target.mkdir(mode=0o755)
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or path.is_symlink():
            continue
        copy = target / path.relative_to(folder)
        if path.is_dir():
            copy.mkdir(mode=0o755, exist_ok=True)
            copy.chmod(0o755)
        elif path.is_file():
            copy.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            copy.chmod(0o444)
