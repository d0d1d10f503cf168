"""A content-hash build cache that is safe under concurrent builds.

Each build runs in a private temporary folder and is published with one atomic rename, under a
per-key file lock so two processes never compile the same thing at once. A failed compile is
cached too: the same sources and flags fail the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from klineage.backends._jailed_build import CandidateBuild, candidate_source, run_jailed, toolchain_roots
from klineage.backends.base import BuildResult
from klineage.errors import ToolchainError
from klineage.settings import cache_dir

__all__ = ["ARTIFACT_NAME", "SANDBOX_SOURCES", "CandidateBuild", "cached_build", "candidate_source",
           "defined_symbols", "imported_symbols", "parse_nm_undefined", "refused_build", "run_tool",
           "system_call_sites", "toolchain_roots", "trusted_build"]

SANDBOX_SOURCES = Path(__file__).parent.parent / "gate"
"""Where the sandbox's own native code lives (the runner, the calibration kernels)."""

ARTIFACT_NAME = "kernel.so"


def run_tool(command: Sequence[str], timeout: float = 300,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a compiler or binutils command; a missing tool is a ToolchainError."""
    try:
        # errors="replace": a tool quoting a candidate's bytes (a symbol name, a source line) must
        # not turn into a traceback.
        return subprocess.run(list(command), capture_output=True, text=True, errors="replace",
                              timeout=timeout, env={**os.environ, **env} if env else None)
    except FileNotFoundError as exc:
        raise ToolchainError(f"{command[0]}: not found on PATH") from exc


def parse_nm_undefined(text: str) -> set[str]:
    """Symbol names from ``nm -D -C --undefined-only --format=posix`` output.

    Demangled C++ names contain spaces, so the type letter is found from the right.
    """
    names = set()
    for line in text.splitlines():
        match = re.match(r"^(.*?) [UuvwV](?: |$)", line)
        if match:
            names.add(match.group(1).split("@")[0])
    return names


def trusted_build(source: Path, name: str, command: Sequence[str]) -> tuple[Path, str]:
    """Build klineage's own native code (never a candidate's): (artifact, sha256).
    ``command`` is the compiler command without its output; ``-o`` and the source are added."""
    key = hashlib.sha256(source.read_bytes() + "\0".join(command).encode()).hexdigest()
    build = cached_build("trusted", key, lambda out: [*command, "-o", str(out), str(source)],
                         artifact_name=name)
    if not build.ok:
        raise ToolchainError(f"could not build {source.name}:\n{build.log[-2000:]}")
    return build.artifact, build.artifact_sha256


def imported_symbols(artifact: Path, dynamic: bool = True) -> set[str]:
    """Undefined symbols of a shared object's dynamic table (what it will call from outside),
    or with ``dynamic`` False, of an object file."""
    proc = run_tool(["nm", *(["-D"] if dynamic else []), "-C", "--undefined-only", "--format=posix",
                     str(artifact)])
    if proc.returncode != 0:
        raise ToolchainError(f"nm failed on {artifact}: {proc.stderr.strip()}")
    return parse_nm_undefined(proc.stdout)


_NM_DEFINED = re.compile(r"^(.*) [A-Za-z] [0-9a-f]+(?: [0-9a-f]+)?$")


def defined_symbols(artifact: Path) -> set[str]:
    """Global symbols an object file defines: what a kernel's other objects may take from it."""
    proc = run_tool(["nm", "-C", "--defined-only", "--extern-only", "--format=posix", str(artifact)])
    if proc.returncode != 0:
        raise ToolchainError(f"nm failed on {artifact}: {proc.stderr.strip()}")
    return {m.group(1) for m in map(_NM_DEFINED.match, proc.stdout.splitlines()) if m}


_SYSCALL_INSTRUCTION = re.compile(r"\t(syscall|sysenter|int\s+\$0x80|svc\s+#?0x0|svc\s+#0)\b")


def system_call_sites(artifact: Path) -> list[str]:
    """One line per system-call instruction in a shared object's host machine code: a kernel
    asks the OS for nothing itself (the sandbox's seccomp filter stops it at run time too)."""
    proc = run_tool(["objdump", "-d", "--no-show-raw-insn", str(artifact)])
    if proc.returncode != 0:
        raise ToolchainError(f"objdump failed on {artifact}: {proc.stderr.strip()}")
    found, function = [], "?"
    for line in proc.stdout.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            function = header.group(1)
            continue
        match = _SYSCALL_INSTRUCTION.search(line)
        if match:
            address = line.split(":", 1)[0].strip()
            found.append(f"contains a system-call instruction ({match.group(1)} at 0x{address} in "
                         f"{function}): kernels may not call the operating system directly")
    return found


def cached_build(
    backend: str,
    fingerprint: str,
    command_for: Callable[[Path], Sequence[str]],
    resources_from_log: Callable[[str], dict[str, Any]] | None = None,
    timeout: float = 300,
    artifact_name: str = ARTIFACT_NAME,
    candidate: CandidateBuild | None = None,
) -> BuildResult:
    """Build once per fingerprint. ``command_for(out_path)`` gives the compiler command.

    ``candidate``: the sources are a candidate's, so the compiler runs jailed
    (``_jailed_build``) and its log keeps only what it said about the candidate's own files.
    The artifact's sha256 is recorded at build time; whoever loads it later checks a private
    copy against it (``gate._runner_process.private_copy``), so an entry changed afterwards is caught.
    """
    final = cache_dir() / "build" / backend / fingerprint[:2] / fingerprint
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / "meta.json").is_file():
            cached = _load(final, fingerprint, artifact_name)
            if cached is not None:
                return cached
        started = time.perf_counter()
        scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
        try:
            artifact = scratch / artifact_name
            if candidate is not None:
                outcome = run_jailed(command_for, artifact_name, candidate, artifact, timeout)
                ok, log, command, confinement = outcome.ok, outcome.log, outcome.command, outcome.confinement
            else:
                command, confinement = [str(c) for c in command_for(artifact)], "klineage's own code"
                ok, log = _run_trusted(command, timeout)
            resources = resources_from_log(log) if (ok and resources_from_log) else {}
            ok = ok and artifact.is_file()
            meta = {
                "ok": ok,
                "sha256": hashlib.sha256(artifact.read_bytes()).hexdigest() if ok else "",
                "log": log,
                "command": command,
                "seconds": time.perf_counter() - started,
                "resources": resources,
                "confinement": confinement,
            }
            (scratch / "meta.json").write_text(json.dumps(meta, indent=1))
            if final.exists():  # a half-written entry from a killed process
                shutil.rmtree(final)
            os.replace(scratch, final)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        result = _load(final, fingerprint, artifact_name)
        assert result is not None  # written just now, with its hash
        return BuildResult(**{**result.__dict__, "cached": False})


def refused_build(fingerprint: str, reason: str) -> BuildResult:
    """A build that never ran (a refused flag, a missing compiler): a compile error saying why."""
    return BuildResult(ok=False, artifact=None, log=f"error: {reason}", command=(),
                       fingerprint=fingerprint)


def _run_trusted(command: list[str], timeout: float) -> tuple[bool, str]:
    try:
        proc = run_tool(command, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"compiler timed out after {timeout:.0f} s"
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def _load(folder: Path, fingerprint: str, artifact_name: str) -> BuildResult | None:
    """The cached entry, or None for one written before artifacts carried their hash."""
    meta = json.loads((folder / "meta.json").read_text())
    if meta["ok"] and not meta.get("sha256"):
        return None
    return BuildResult(
        ok=meta["ok"],
        artifact=folder / artifact_name if meta["ok"] else None,
        artifact_sha256=meta.get("sha256", ""),
        log=meta["log"],
        command=tuple(meta["command"]),
        fingerprint=fingerprint,
        cached=True,
        seconds=meta["seconds"],
        resources=meta.get("resources", {}),
        confinement=meta.get("confinement", ""),
    )
