"""The trust boundary: candidate kernels run only in ``_runner.c``'s process, never in ours.

This module is the trusted side of it. ``Arena`` is shared memory the trusted side writes and
reads with numpy (a memfd; the candidate maps the input arena from a read-only descriptor, so
no call it makes can write an input). ``Candidate`` is one sandboxed runner process holding one
kernel: it runs a call when told and answers with a return code and its own clock's reading,
which is only believed after it is checked against ours (``call`` returns both, plus the CPU
time the process used, read from outside it).

What a candidate says can make a verdict fail, never pass: its replies name crashes and give
times; outputs are read here, from the arena, and judged by ``gate._trusted``.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from klineage.backends._arenas import CudaArena, HostArena
from klineage.backends._cpu_machine import runner_cores
from klineage.backends.base import SANDBOX_WORKLOAD, RunnerSpec
from klineage.gate._runner_log import SYSCALL_NAMES_X86_64, telling_line, trap_site
from klineage.gate._runner_process import (
    confine,
    copy_workload_files,
    cpu_clock_of,
    guard_this_process,
    precise_sleeps,
    private_copy,
)

__all__ = ["Arena", "CallResult", "Candidate", "CandidateFailed", "Limits"]

Arena = HostArena | CudaArena


_MAX_REPLY = 4096
_SELF_STOP_S = 0.02
"""How long the runner has to stop itself after its reply before we stop it."""
_UNTIMEABLE = {
    "X context": "the kernel made a CUDA context of its own: work there is neither waited for by "
                 "the call's device synchronisation nor timed with it",
    "X unfinished": "GPU work of the kernel's was still unfinished (or its activity record lost) "
                    "after the call's device synchronisation: work the call cannot time",
}
"""The CUDA runner's refusals to time a call (gate/_runner.c, CUPTI's records): a kernel writing
one of these lines itself only accuses itself."""
_READY = re.compile(r"READY (0x[0-9a-f]+|\(nil\)) (0x[0-9a-f]+|\(nil\))")
_RESULT = re.compile(r"R (-?[0-9]{1,10}) ([0-9]{1,18})")
"""A call's reply: the kernel's return code and the runner's clock in nanoseconds, never below
zero (an honest clock reads forward; a negative median was once accepted as within speed of
light)."""


@dataclass(frozen=True)
class Limits:
    """How long and how much a candidate may take before it becomes a verdict."""

    stall_s: float = 60.0
    """No answer to one command for this long is a hang (each call is one command)."""
    memory_bytes: int | None = 8 << 30
    """Address-space cap of the runner, beyond its shared arenas, where the backend allows one
    (CPU), else None."""


class CandidateFailed(Exception):
    """The candidate's process died, hung or broke the protocol; ``outcome`` is the verdict."""

    def __init__(self, outcome: str, reason: str, input_offset: int | None = None):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason
        self.input_offset = input_offset
        """Where in the input arena a write was stopped, if that is how it died."""


@dataclass(frozen=True)
class CallResult:
    rc: int
    reported_s: float
    """The candidate's own clock around the call (untrusted)."""
    wall_s: float
    """Our clock from sending the command to seeing the process stopped after its reply."""
    cpu_s: float
    """CPU time the candidate's process used during the call, read from outside it."""
    after_reply_s: float = 0.0
    """Our clock from reading its reply to seeing the whole process stopped (part of
    ``wall_s``): the runner stops itself as it replies, so an honest call's is our polling."""


class Candidate:
    """One runner process holding one kernel. ``close`` kills its whole process group,
    whatever happened; the session that made it always calls it."""

    def __init__(self, runner: RunnerSpec, kernel: tuple[Path, str], entry: str, inputs: Arena,
                 outputs: Arena, threads: int, memory_bytes: int | None, stall_s: float,
                 env: dict[str, str], files: tuple[Path, ...] = (), wait: bool = True):
        """Starts the runner; ``wait``: until it has loaded the kernel (else at its first
        command, so that a runner of ours can start while another is at work: a CUDA
        context takes a few hundred milliseconds)."""
        guard_this_process()
        precise_sleeps()
        self.stall_s, self.threads, self.memory_bytes = stall_s, threads, memory_bytes
        self.process: subprocess.Popen[bytes] | None = None
        self._command = self._reply = -1
        self._folder = Path(tempfile.mkdtemp(prefix="klineage-candidate-"))
        try:  # a runner that fails to start or load leaves no folder and no process behind
            self._start(runner, kernel, entry, inputs, outputs, threads, memory_bytes, env, files, wait)
        except BaseException:
            self.close()
            raise

    def _start(self, runner: RunnerSpec, kernel: tuple[Path, str], entry: str, inputs: Arena,
               outputs: Arena, threads: int, memory_bytes: int | None, env: dict[str, str],
               files: tuple[Path, ...], wait: bool) -> None:
        self._folder.chmod(0o755)  # the runner reads its kernel as nobody
        library = private_copy(*kernel, self._folder)
        program = private_copy(runner.path, runner.sha256, self._folder)
        program.chmod(0o555)
        copy_workload_files(files, self._folder / SANDBOX_WORKLOAD)
        command_r, self._command = os.pipe()
        self._reply, reply_w = os.pipe()
        in_arg, in_fds = inputs.runner_handle(read_only=True)
        out_arg, out_fds = outputs.runner_handle(read_only=False)
        # Device memory handles travel through the command pipe: a command line is readable by
        # every process of the machine (another runner could open this one's memory with them).
        handles = None if in_fds or out_fds else f"H {in_arg} {out_arg}"
        self._log_path = self._folder / "candidate.log"
        log = open(self._log_path, "wb")  # noqa: SIM115 - closed below, after the fork
        fds = (command_r, reply_w, *in_fds, *out_fds)
        cap = None if memory_bytes is None else memory_bytes + inputs.nbytes + outputs.nbytes
        try:
            self.process = subprocess.Popen(
                [str(program), str(library), entry, str(inputs.nbytes), str(outputs.nbytes),
                 str(command_r), str(reply_w), *(("pipe", "pipe") if handles else (in_arg, out_arg))],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=fds,
                env=env, cwd=self._folder, start_new_session=True,
                preexec_fn=confine(runner, self._folder, runner_cores(threads), cap),
            )
        finally:
            for fd in (command_r, reply_w, *in_fds):  # the read-only descriptor is a new one
                os.close(fd)
            log.close()
        if handles:
            self._send(handles)
        self._cpu_clock = cpu_clock_of(self.process.pid)
        self._buffer = b""
        self.in_base = self.out_base = 0
        self.in_bytes, self.out_bytes = inputs.nbytes, outputs.nbytes
        self._loaded = False
        if wait:
            self._await_load()

    def _await_load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        ready = self._reply_line("loading the kernel")
        started = _READY.fullmatch(ready)
        if not started:
            raise CandidateFailed("rejected_cheat", f"loading the kernel: the candidate's process "
                                  f"answered {ready[:80]!r} instead of the runner's READY line")
        self.in_base, self.out_base = (0 if a == "(nil)" else int(a, 16) for a in started.groups())

    # -- protocol --------------------------------------------------------------------------
    def call(self, in_offsets: list[int], out_offsets: list[int], axes: list[int],
             params: list[float], step: str) -> CallResult:
        """Run one call; the reply is checked by the caller."""
        self._await_load()
        cpu_before = self._cpu()
        words = [len(in_offsets), len(out_offsets), len(axes), len(params), *in_offsets,
                 *out_offsets, *axes]
        line = "C " + " ".join(map(str, words)) + "".join(
            f" {float(p).hex()}" for p in params)
        started = time.perf_counter()
        self._send(line)
        reply = self._reply_line(step)
        answer = _RESULT.fullmatch(reply)
        if reply in _UNTIMEABLE:
            raise CandidateFailed("rejected_cheat", f"{step}: {_UNTIMEABLE[reply]}")
        if not answer:
            raise CandidateFailed("rejected_cheat", f"{step}: the candidate's process answered "
                                  f"{reply[:80]!r} instead of a call result")
        # The call lasts until the process is stopped: work a helper thread finished after the
        # reply is timed. (Not the CPU it burnt after the reply: read from outside, a process's
        # CPU clock counts another running thread's time only at its next tick, and an honest
        # OpenMP pool's spin during the call showed up there, 1.2 ms a call in 0.12 ms.)
        return CallResult(rc=int(answer[1]), reported_s=int(answer[2]) / 1e9,
                          wall_s=self._stopped_at - started, cpu_s=self._answered_cpu - cpu_before,
                          after_reply_s=self._stopped_at - self._answered_at)

    def protect(self, offset: int, length: int, accessible: bool) -> None:
        self._await_load()
        if length:
            self._send(f"P {offset} {length} {3 if accessible else 0}")
            self._expect_ok("laying out buffers")

    def close(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                self.process.wait()
        for fd in (self._command, self._reply):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._folder, ignore_errors=True)

    def log_tail(self, limit: int = 1000) -> str:
        try:
            return self._log_path.read_bytes()[-limit:].decode(errors="replace").strip()
        except OSError:
            return ""

    def cpu_seconds(self) -> float:
        """CPU time the runner's process has used, read from outside it."""
        return self._cpu()

    # -- plumbing ---------------------------------------------------------------------------
    def _cpu(self) -> float:
        try:
            return time.clock_gettime(self._cpu_clock)
        except OSError:  # the process is gone; its death is reported by the next read
            return 0.0

    def _freeze(self, step: str) -> None:
        """The whole process stopped once it has answered: the runner stops itself as it
        replies; where it has not within ``_SELF_STOP_S`` (a runner a candidate patched, or one
        preempted on a loaded machine) our SIGSTOP does. Between calls none of its threads runs,
        so nothing it does can overlap our work (it cannot start on the next inputs while we
        write them, nor finish a call unseen)."""
        started = time.perf_counter()
        while self._wait(os.WUNTRACED | os.WNOHANG, step) is None:
            waited = time.perf_counter() - started
            if waited > _SELF_STOP_S:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.process.pid, signal.SIGSTOP)
                self._wait(os.WUNTRACED, step)
                break
            # Sleep, not yield: a trusted side that kept its core while an OpenMP pool spun on
            # the other kept the runner from reaching its stop for a millisecond (2 cores).
            time.sleep(1e-5)
        self._stopped_at = time.perf_counter()

    def _wait(self, flags: int, step: str) -> int | None:
        """The runner's stop (its status) if it has stopped; raises if it died."""
        try:
            pid, status = os.waitpid(self.process.pid, flags)
        except ChildProcessError:
            return 0
        if pid == 0:
            return None
        if not os.WIFSTOPPED(status):  # it died meanwhile; keep what Popen would have seen
            self.process.returncode = (-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                                       else os.WEXITSTATUS(status))
            self._raise_death(step)
        return status

    def _send(self, line: str) -> None:
        """The command first, then SIGCONT: the runner finds its command waiting the moment it
        runs again, so no thread of the kernel's runs long before the call's clock starts."""
        try:
            os.write(self._command, (line + "\n").encode())
        except BrokenPipeError:
            self._raise_death("sending a command")
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGCONT)

    def _expect_ok(self, step: str) -> None:
        reply = self._reply_line(step)
        if reply != "K":
            raise CandidateFailed("rejected_cheat", f"{step}: the candidate's process answered "
                                  f"{reply[:80]!r}")

    def _reply_line(self, step: str) -> str:
        """The runner's one line for the last command. Replies are parsed as hostile: a line
        too long, a second line for one command, or bytes after the reply are out of protocol
        (a kernel can write into the reply pipe; a malformed line once crashed the gate)."""
        deadline = time.monotonic() + self.stall_s
        while b"\n" not in self._buffer:
            if len(self._buffer) > _MAX_REPLY:
                raise CandidateFailed("rejected_cheat", f"{step}: the candidate's process wrote "
                                      f"a reply line of over {_MAX_REPLY} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                raise CandidateFailed("timeout", f"no progress for {self.stall_s:g} s during "
                                      f"'{step}' (a hang, or a call slower than the stall limit; "
                                      f"raise it with --timeout)")
            ready, _, _ = select.select([self._reply], [], [], min(left, 0.05))
            if ready:
                chunk = os.read(self._reply, 4096)
                if not chunk:
                    self._raise_death(step)
                self._buffer += chunk
            elif self._wait(os.WUNTRACED | os.WNOHANG, step) is not None:
                # Stopped while we wait: a self-stop that came after our SIGSTOP had already
                # stopped it, and then our SIGCONT for this command. Let it go on.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.process.pid, signal.SIGCONT)
        # The CPU first, then the wall: the CPU read must fall inside the wall window, or an
        # honest OpenMP kernel is charged the CPU its pool spent spinning while we were
        # descheduled between the two reads (15.2 ms of CPU in 5.9 ms, 2 threads, 2 cores).
        self._answered_cpu = self._cpu()
        self._answered_at = time.perf_counter()
        line, _, self._buffer = self._buffer.partition(b"\n")
        text = line.decode(errors="replace")
        if text.startswith("S "):
            self._raise_signal(text, step)
        if text.startswith("E "):  # the runner's own failure: it exits, it does not stop
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2)
            raise CandidateFailed("crashed", f"{step}: the runner failed: {text[2:200]}")
        self._freeze(step)
        self._buffer += self._pending_bytes()
        if self._buffer:
            raise CandidateFailed("rejected_cheat", f"{step}: the candidate's process wrote more "
                                  f"than one reply to one command ({text[:40]!r}, then "
                                  f"{self._buffer[:40].decode(errors='replace')!r})")
        return text

    def _pending_bytes(self) -> bytes:
        """What is in the reply pipe now, without waiting (the runner is stopped)."""
        ready, _, _ = select.select([self._reply], [], [], 0)
        return os.read(self._reply, _MAX_REPLY + 1) if ready else b""

    def _raise_signal(self, text: str, step: str) -> None:
        _, signo, address, syscall, peak_kib = [*text.split(), "", "", "", ""][:5]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2)
        number = int(signo) if signo.lstrip("-").isdigit() else 0
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else signo
        if name == "SIGSYS":
            nr = int(syscall) if syscall.lstrip("-").isdigit() else -1
            call = SYSCALL_NAMES_X86_64.get(nr, f"number {nr}")
            site = trap_site(self.log_tail(limit=1 << 16))
            raise CandidateFailed("rejected_cheat", f"{step}: the kernel made a system call that "
                                  f"kernels may not make ({call}); the sandbox stopped it"
                                  + (f" (its log names the caller: {site})" if site else ""))
        fault = int(address, 16) if address.startswith("0x") else None
        if fault is not None and self.in_base <= fault < self.in_base + self.in_bytes:
            raise CandidateFailed("incorrect", f"{step}: the kernel wrote to an input (inputs "
                                  f"are read-only; its process was stopped at the first write)",
                                  input_offset=fault - self.in_base)
        where = self._describe_address(fault)
        peak = int(peak_kib) * 1024 if peak_kib.isdigit() else 0
        if self.memory_bytes and peak >= 0.7 * self.memory_bytes:
            where = (f"after using {peak / 2**30:.2f} GiB: out of memory (the kernel's limit is "
                     f"{self.memory_bytes / 2**30:.2f} GiB)")
        raise CandidateFailed("crashed", f"{step}: the kernel's process was killed by {name}"
                              + (f" ({where})" if where else ""))

    def _raise_death(self, step: str) -> None:
        self.process.wait()
        # A runner that failed says why, then exits: seen exiting between two reads of the pipe,
        # its last line is still in it ("exited with status 3" in 3 runs of 6, for one mistake).
        self._buffer += self._pending_bytes()
        text = self._buffer.partition(b"\n")[0].decode(errors="replace")
        if text.startswith("S "):
            self._raise_signal(text, step)
        if text.startswith("E "):
            raise CandidateFailed("crashed", f"{step}: the runner failed: {text[2:200]}")
        code = self.process.returncode
        how = (f"killed by {signal.Signals(-code).name}" if code < 0
               else f"exited with status {code}")
        said = telling_line(self.log_tail(limit=1 << 14))
        last = f"; last output: {said[:300]}" if said else ""
        raise CandidateFailed("crashed", f"{step}: the kernel's process {how}{last}")

    def _describe_address(self, address: int | None) -> str:
        if address is None:
            return ""
        if self.out_base <= address < self.out_base + self.out_bytes:
            return "it wrote outside its outputs, into a guard page"
        return f"at address {address:#x}"


