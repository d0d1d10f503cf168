"""The klineage command line: parse, call one library function, render (rich) or --json."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from klineage import __version__
from klineage.cli._brains import BrainOpt, BudgetOpt, ConfigOpt, RecordOpt, ReplayOpt, brain_settings
from klineage.cli._common import (
    BackendOpt,
    ExecutorOpt,
    JsonOpt,
    NoWaitOpt,
    PatienceOpt,
    PlainProgress,
    QuickOpt,
    RunsOpt,
    ThreadsOpt,
    console,
    err_console,
    executing,
    exit_status,
    new_app,
    parse_memory,
    run_gate_options,
    stop_line,
    user_errors,
    workload_at,
)
from klineage.cli._render import doctor_table, gate_summary_table, stage_table, verdict_style
from klineage.errors import ConfigError, GateWaiting, KlineageError

app = new_app("klineage",
              "Learn when a kernel optimization is sound, under one compile/correctness/profile gate.",
              completion=True)


def _version(value: bool) -> None:
    if value:
        console.print(f"klineage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """klineage: verified optimization skills from expert kernel lineages."""


@contextmanager
def again_once_drained(as_json: bool) -> Iterator[None]:
    """``gate --no-wait`` keeps no run: the same command, run again, takes the results up."""
    with user_errors(as_json):
        try:
            yield
        except GateWaiting as exc:
            raise GateWaiting(f"{exc}; then run this command again (a job is never written "
                              f"twice)", exc.jobs, exc.flags) from None


@app.command()
def gate(
    workload: Annotated[Path, typer.Argument(help="Workload folder (holds workload.toml).")],
    kernel: Annotated[str | None, typer.Argument(
        help="Variant name under kernels/, or a path to a kernel folder or file. "
             "Omit to gate every variant.")] = None,
    against: Annotated[str | None, typer.Option(
        help="Baseline kernel: accept only if faster by the paired comparison.")] = None,
    threads: ThreadsOpt = None,
    timeout: Annotated[float, typer.Option(
        min=1, help="Seconds without progress before a candidate counts as hung.")] = 60.0,
    memory: Annotated[str, typer.Option(help="Worker memory cap where enforceable.")] = "8G",
    no_profile: Annotated[bool, typer.Option("--no-profile", help="Correctness only.")] = False,
    seed: Annotated[int | None, typer.Option(
        help="Fix the secret seed (only to reproduce a failure).")] = None,
    quick: QuickOpt = False,
    backend: BackendOpt = None,
    patience: Annotated[float, typer.Option(
        min=0, metavar="SECONDS",
        help="How long a verdict the machine's load made 'unmeasurable' waits for a quieter "
             "moment and is gated again (0: the verdict stands).")] = 0.0,
    executor: ExecutorOpt = "local",
    no_wait: NoWaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the gate on one kernel (or all of a workload's variants, side by side on the
    executor's timing slots)."""
    from klineage.gate import GateOptions, Limits, Verdict
    from klineage.gate._noise import quiet_limit
    from klineage.gate.session import GateTask, device_of, patiently, run_task
    from klineage.workload import load_kernel

    loaded = workload_at(workload, quick)
    names = [kernel] if kernel else loaded.kernel_variants()
    if not names:
        raise ConfigError(f"{workload}: no kernels/ variants to gate; name a kernel path")
    kernels = [load_kernel(loaded, name) for name in names]
    baseline = load_kernel(loaded, against) if against else None
    options = GateOptions(threads=threads, profile=not no_profile, secret_seed=seed, backend=backend,
                          limits=Limits(stall_s=timeout, memory_bytes=parse_memory(memory)))
    with console.status("", spinner="dots") as status, executing(executor, wait=not no_wait) as where, \
            again_once_drained(as_json):
        device = device_of(options.backend_for(kernels[0].language))

        def shown(name: str) -> Callable[[str, str], None] | None:
            if as_json or where.remote(device):  # a remote job's progress is not shown
                return None
            return lambda stage, detail: status.update(f"[bold]{loaded.name}/{name}[/] {stage}: "
                                                       f"{detail}")

        tasks = [GateTask(loaded, spec, options.backend_for(spec.language), options,
                          against=baseline, progress=shown(spec.name)) for spec in kernels]
        status.update(f"gating {len(tasks)} kernel(s) on {where.name}")
        finished = dict(where.map(run_task, tasks, device))

        def unmeasurable(done: dict) -> bool:
            return any(report.verdict is Verdict.UNMEASURABLE for report in done.values())

        def again() -> dict:
            retried = [i for i, report in finished.items() if report.verdict is Verdict.UNMEASURABLE]
            redone = dict(where.map(run_task, [tasks[i] for i in retried], device))
            finished.update({retried[i]: report for i, report in redone.items()})
            return finished

        limit = quiet_limit(threads or tasks[0].backend.default_threads(kernels[0]))
        patiently(again, finished, unmeasurable, limit, patience, lambda line: status.update(line))
    reports = [finished[index] for index in range(len(tasks))]
    if as_json:
        payload = [r.model_dump(mode="json") for r in reports]
        print(json.dumps(payload[0] if kernel else payload, indent=2))
    elif kernel:
        report = reports[0]
        console.print(stage_table(report))
        console.print(gate_summary_table(reports))
        style = verdict_style(report.verdict)
        console.print(Text.assemble("verdict: ", (report.verdict.value, style), f" — {report.reason}"))
    else:
        console.print(gate_summary_table(reports, title=f"{loaded.name} on {reports[0].platform}"))
        for report in reports:
            if not report.accepted:
                console.print(Text.assemble(f"{report.kernel}: ", (report.verdict.value,
                              verdict_style(report.verdict)), f" — {report.reason}"))
    if any(not r.accepted for r in reports):
        raise typer.Exit(1)


@app.command()
def features(
    workload: Annotated[Path, typer.Argument(help="Workload folder.")],
    kernel: Annotated[str, typer.Argument(help="Variant name or path to a kernel.")],
    compiled: Annotated[bool, typer.Option(help="Also check the compiled output.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """List a kernel's optimization features with their sites."""
    from klineage.cli._render import features_table
    from klineage.source.report import feature_report
    from klineage.workload import load_kernel, load_workload

    loaded = load_workload(workload)
    report = feature_report(load_kernel(loaded, kernel), compiled=compiled)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        console.print(features_table(report))


@app.command()
def mine(
    workload: Annotated[Path, typer.Argument(help="Workload folder.")],
    expert: Annotated[str, typer.Option(help="The expert kernel to walk backward.")] = "expert",
    brain: BrainOpt = None,
    library: Annotated[Path | None, typer.Option(help="Skill library to add the cards to.")] = None,
    runs: RunsOpt = Path("runs"),
    resume: Annotated[Path | None, typer.Option(help="Continue this interrupted run.")] = None,
    admit_on: Annotated[str | None, typer.Option(
        help="Comma-separated workload folders for admission (default: sibling workloads).")] = None,
    max_steps: Annotated[int, typer.Option(
        min=1, help="Most accepted simplifications the backward walk takes before it stops.")] = 30,
    max_rejections: Annotated[int, typer.Option(
        min=1, help="Most rejected candidates the walk tries before it stops.")] = 40,
    threads: ThreadsOpt = None,
    budget: BudgetOpt = None,
    config: ConfigOpt = None,
    record: RecordOpt = None,
    replay: ReplayOpt = None,
    quick: QuickOpt = False,
    backend: BackendOpt = None,
    patience: PatienceOpt = None,
    executor: ExecutorOpt = "local",
    no_wait: NoWaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Backward walk → lineage → re-derivation → skill cards → admission → library."""
    from klineage.cli._render import mine_table
    from klineage.lineage import WalkLimits
    from klineage.mine import MineOptions
    from klineage.mine import mine as run_mine
    from klineage.workload import load_kernel

    with user_errors(as_json):
        loaded = workload_at(workload, quick)
        settings_ = brain_settings(brain, budget, config, record, replay, resume)
        options = MineOptions(
            **settings_, limits=WalkLimits(max_steps=max_steps, max_rejections=max_rejections),
            gate=run_gate_options(threads, backend, patience),
            admit_on=tuple(Path(p) for p in admit_on.split(",") if p) if admit_on is not None else None)
        with console.status("", spinner="dots") as status, executing(executor, wait=not no_wait):
            kernel = load_kernel(loaded, expert) if resume is None else None  # the run has its own
            result = run_mine(loaded, kernel, runs, library, options, resume,
                              say=None if as_json else (lambda line: status.update(escape(line))))
    if as_json:
        print(json.dumps(result.summary(), indent=2))
        return
    console.print(mine_table(result.summary()))


@app.command()
def doctor(
    threads: Annotated[int | None, typer.Option(min=1, help="Thread count for CPU ceilings.")] = None,
    remeasure: Annotated[bool, typer.Option(help="Measure the ceilings again.")] = False,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report compilers, cores, SIMD, GPU presence, measured ceilings and usable brains."""
    from klineage.doctor import doctor as collect

    with console.status("measuring ceilings (first run only)…"):
        facts = collect(threads=threads, remeasure=remeasure, config=config)
    if as_json:
        print(json.dumps(facts, indent=2))
    else:
        console.print(doctor_table(facts))


@app.command()
def demo(
    examples: Annotated[Path | None, typer.Option(
        help="Folder of CPU example workloads (default: the checkout's examples/workloads/cpu).")] = None,
    runs: Annotated[Path, typer.Option(help="Where the demo's run folder goes.")] = Path("runs"),
    backend: BackendOpt = None,
    patience: PatienceOpt = None,
    resume: Annotated[Path | None, typer.Option(
        help="Continue this stopped demo run (its examples, backend and threads are its own).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The whole pipeline offline: mine two CPU experts, optimize a third kernel, bench, report."""
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from klineage.cli._render import demo_table
    from klineage.demo import DEMO_STEPS, run_demo

    if resume is not None and (examples is not None or backend is not None):
        raise ConfigError("demo --resume continues a demo with its own --examples and --backend; "
                          "give neither")
    columns = (TextColumn("[bold]{task.fields[stage]}"), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    # Off a terminal (a pipe, nohup, CI) no live display is drawn: plain lines on stderr instead,
    # with --json too (the JSON goes to stdout).
    plain = PlainProgress(err_console) if not err_console.is_terminal else None
    with Progress(*columns, console=err_console, disable=as_json or plain is not None,
                  transient=False) as progress:
        task = progress.add_task("", total=DEMO_STEPS, stage="starting")
        started = [False]

        def step(stage: str) -> None:
            progress.update(task, advance=1 if started[0] else 0, stage=stage, description="")
            started[0] = True
            if plain is not None:
                plain.stage(stage)

        def say(line: str) -> None:
            progress.update(task, description=escape(line[-90:]))
            if plain is not None:
                plain.line(line)

        result = run_demo(examples, runs, say=say, step=step, backend=backend, patience_s=patience,
                          resume=resume)
        progress.update(task, advance=1, stage="done", description="")
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
        return
    console.print(demo_table(result))
    console.print(f"report: {result.report}")
    console.print(f"run folder: {result.run}  ({result.seconds:.0f} s)")


@app.command()
def worker(
    spool: Annotated[Path, typer.Argument(help="The spool folder a run writes its gate jobs to "
                                                "(--executor spool:DIR).")],
    once: Annotated[bool, typer.Option("--once", help="Drain the jobs waiting now, then exit.")] = False,
    stale: Annotated[float, typer.Option(
        help="Seconds after which a claim its worker stopped touching goes back to pending.")] = 600.0,
    as_json: JsonOpt = False,
) -> None:
    """Gate the jobs of a spool folder here, where the device is (a run elsewhere wrote them,
    signed with KLINEAGE_SPOOL_KEY, the secret this worker shares with it)."""
    from klineage.executors.spool import serve

    def ran(job: str, outcome: str) -> None:
        if as_json:
            print(json.dumps({"job": job, "outcome": outcome}), flush=True)
        else:
            err_console.print(f"{job[:12]}  {escape(outcome)}")

    if not as_json:
        err_console.print(f"draining {spool}{' once' if once else ' (Ctrl-C stops)'}")
    count = serve(spool, once=once, stale_s=stale, on_job=ran)
    if not as_json:
        console.print(f"{count} job(s) gated")


@app.command()
def schemas(
    out: Annotated[Path, typer.Argument(help="Folder to write the JSON Schemas into.")],
    as_json: JsonOpt = False,
) -> None:
    """Write the JSON Schema of every record klineage writes to disk."""
    from klineage.cli._schemas import record_schemas

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in record_schemas().items():
        path = out / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2) + "\n")
        written.append(str(path))
    if as_json:
        print(json.dumps(written, indent=2))
    else:
        console.print(f"{len(written)} schemas in {out}: " + ", ".join(Path(w).name for w in written))


def _mount_subcommands() -> None:
    from klineage.cli.skills import skills_app

    app.add_typer(skills_app, name="skills", help="List, show, search and export skill cards.")
    from klineage.cli.report import report_command

    app.command("report")(report_command)
    from klineage.cli.listing import list_command

    app.command("list")(list_command)
    from klineage.cli.optimize import optimize_command

    app.command("optimize")(optimize_command)
    from klineage.cli.bench import bench_command

    app.command("bench")(bench_command)
    from klineage.cli.memory import memory_app

    app.add_typer(memory_app, name="memory",
                  help="Build the memory baseline's store from its own forward runs.")
    from klineage.cli.imports import export_app, import_app

    app.add_typer(import_app, name="import",
                  help="Turn other benchmarks' problem files (KernelBench, FlashInfer-Bench) into workloads.")
    app.add_typer(export_app, name="export",
                  help="Write gate reports in other benchmarks' formats (FlashInfer-Bench traces).")


_mount_subcommands()


def main() -> None:
    """Console entry: klineage errors, and a file or folder that cannot be made, read or written,
    become one red line and exit status 2 (``exit_status``); KLINEAGE_TRACEBACK=1 shows where."""
    try:
        app()
    except KlineageError as exc:
        stop_line(exc)
        sys.exit(exit_status(exc))
    except OSError as exc:
        if os.environ.get("KLINEAGE_TRACEBACK"):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _error_line(f"{where}{(exc.strerror or str(exc)).lower()} (a file system error; "
                    f"KLINEAGE_TRACEBACK=1 shows where it came from)")
        sys.exit(2)


def _error_line(text: str) -> None:
    err_console.print(Text.assemble(("error: ", "bold red"), text), highlight=False, soft_wrap=True)

