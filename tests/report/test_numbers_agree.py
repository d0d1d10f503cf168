"""One source for every number (issue 32, item 3): each speedup and share of speed of light a
run shows is its record's value, written the same way, in the HTML, the Markdown and the terminal.

A new user saw one kernel as 2.38x, ~2.15x, 2.54x and ~2.45x, a naive → expert speedup where
the walk never reached naive, and a time ratio printed 1.02 on one page and 1.017 on the other.
Real runs (the null backend) are rendered and read back; no timing value is asserted, only that
the views and the record say the same thing.
"""

from __future__ import annotations

import html as htmllib
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

from matplotlib.backends.backend_agg import FigureCanvasAgg
from rich.console import Console

from klineage.bench.records import BenchRecord
from klineage.cli._render import demo_table, mine_table
from klineage.cli.bench import bench_tables
from klineage.cli.optimize import optimize_table
from klineage.lineage import Lineage
from klineage.optimize.records import OptimizeRecord
from klineage.report import write_report
from klineage.report._format import lineage_span, ms, ratio, share, speedup
from klineage.report._mine import load_mine
from klineage.report._plots import bench_figure, lineage_figure

SPEEDUP = re.compile(r"(?<![\w.])\d+\.\d+x\b")


def _views(run: Path, out: Path) -> tuple[str, str]:
    paths = write_report(run, out)
    return paths.html.read_text(), paths.markdown.read_text()


def _terminal(*tables: object) -> str:
    console = Console(file=io.StringIO(), width=1000, color_system=None)
    for table in tables:
        console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _text(page: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", page))


def _fact_html(page: str, label: str) -> str:
    match = re.search(rf"<dt>{re.escape(label)}</dt><dd>(.*?)</dd>", page, re.S)
    assert match, f"no fact {label!r} in the HTML"
    return _text(match.group(1)).strip()


def _fact_md(page: str, label: str) -> str:
    match = re.search(rf"^\| {re.escape(label)} \| (.*) \|$", page, re.M)
    assert match, f"no fact {label!r} in the Markdown"
    return match.group(1).strip()


def _fact_terminal(text: str, label: str) -> str:
    match = re.search(rf"│ {re.escape(label)} +│ (.*?) +│", text)
    assert match, f"no row {label!r} in the terminal table"
    return match.group(1).strip()


def _html_rows(page: str, table_class: str) -> list[list[str]]:
    """The data rows of every <table class=...> of that class, as cell texts."""
    rows = []
    for table in re.findall(rf'<table class="{table_class}">(.*?)</table>', page, re.S):
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            if cells:
                rows.append([_text(c).strip() for c in cells])
    return rows


def _md_rows(page: str, header: str) -> list[list[str]]:
    """The rows of every Markdown table whose header line starts with ``header``."""
    rows, inside = [], False
    for line in page.splitlines():
        if line.startswith(header):
            inside = True
        elif inside and line.startswith("|---"):
            continue
        elif inside and line.startswith("| "):
            rows.append([cell.strip() for cell in line.strip()[2:-2].split(" | ")])
        else:
            inside = False
    return rows


def _terminal_rows(text: str, first_header: str) -> list[list[str]]:
    """The rows of the rich table whose header row starts with ``first_header``."""
    rows, inside = [], False
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("┃│").split("┃" if "┃" in line else "│")]
        if "┃" in line and cells[0] == first_header:
            inside = True
        elif inside and "│" in line:
            rows.append(cells)
        elif inside and line.startswith("└"):
            inside = False
    return rows


def _speedups_shown(*views: str) -> set[str]:
    return {token for view in views for token in SPEEDUP.findall(view)}


def _speedups_in_text(record: object) -> set[str]:
    """Speedups quoted inside the record's own strings (reasons, notes)."""
    return set(SPEEDUP.findall(json.dumps(record, ensure_ascii=False)))


def test_optimize_run_shows_its_record_everywhere(optimize_run, tmp_path):
    _optimize_numbers_agree(optimize_run, tmp_path / "out")


def test_a_hand_written_optimize_run_too(runs, tmp_path):
    # its ratios (0.52, 1.01) were printed 0.52 in the report and 0.520 in the terminal
    _optimize_numbers_agree(runs / "optimize_run", tmp_path / "out")


def _optimize_numbers_agree(run: Path, out: Path) -> None:
    record = OptimizeRecord.model_validate_json((run / "optimize.json").read_text()).model_dump(mode="json")
    html, markdown = _views(run, out)
    terminal = _terminal(optimize_table(record, str(run)))
    label = "best speedup vs start (final paired comparison)"
    best = speedup(record["best_speedup"])
    caption = re.search(r"best \w+: (\S+) over \w+ \(final paired comparison\), (\S+ of speed of "
                        r"light(?: at \S+ ms)?)", " ".join(terminal.split()))
    assert caption, terminal
    assert _fact_html(html, label) == _fact_md(markdown, label) == caption.group(1) == best
    at = f" at {ms(record['best_ms'])}" if record.get("best_ms") is not None else ""
    sol = share(record["sol_fraction"]) + at
    assert _fact_html(html, "share of speed of light") == _fact_md(markdown, "share of speed of light")
    assert _fact_html(html, "share of speed of light") == sol
    assert caption.group(2) == f"{share(record['sol_fraction'])} of speed of light{at}"
    ratios = [ratio(step["ratio"]) for step in record["steps"]]
    assert any(step["ratio"] is not None for step in record["steps"]), "no candidate was compared"
    assert [row[6] for row in _html_rows(html, "steps") if row[0].isdigit()] == ratios
    assert [row[6] for row in _md_rows(markdown, "| # | candidate")] == ratios
    assert [row[4] for row in _terminal_rows(terminal, "step")] == ratios
    assert _speedups_shown(html, markdown, terminal) <= {best} | _speedups_in_text(record)


def test_bench_run_shows_its_record_everywhere(bench_run, tmp_path):
    record = json.loads((bench_run / "bench.json").read_text())
    html, markdown = _views(bench_run, tmp_path / "out")
    terminal = _terminal(*bench_tables(record))
    expected = [[speedup(r["speedup_vs_start"]), speedup(r["speedup_vs_expert"]), share(r["sol_fraction"])]
                for r in record["results"]]
    assert any(r["status"] == "ok" and r["sol_fraction"] is not None for r in record["results"])
    assert [row[7:10] for row in _html_rows(html, "results")] == expected
    assert [row[7:10] for row in _md_rows(markdown, "| method | workload | repeat")] == expected
    assert [row[4:7] for row in _terminal_rows(terminal, "workload")] == expected
    summary = [[speedup(s["geomean_speedup_vs_start"]), speedup(s["geomean_speedup_vs_expert"]),
                share(s["mean_sol_fraction"])] for s in record["summary"]]
    assert [row[1:4] for row in _html_rows(html, "summary")] == summary
    assert [row[1:4] for row in _md_rows(markdown, "| method | geomean")] == summary
    assert [row[1:4] for row in _terminal_rows(terminal, "method")] == summary
    shown = {v for row in expected + summary for v in row[:2]}
    assert _speedups_shown(html, markdown, terminal) <= shown | _speedups_in_text(record)
    # a row's share of speed of light is the one at the best time it shows: the bound is the
    # optimize run's share times the median it was computed at
    for row in record["results"]:
        if row["status"] != "ok" or row["sol_fraction"] is None:
            continue
        run = json.loads((Path(row["optimize_run"]) / "optimize.json").read_text())
        bound, shown = run["sol_fraction"] * run["best_ms"], row["sol_fraction"] * row["best_ms"]
        assert abs(shown - bound) <= 1e-9 * bound, (row["method"], shown, bound)


def _mine_numbers_agree(run: Path, out: Path) -> tuple[str, str, str]:
    summary = json.loads((run / "summary.json").read_text())
    lineage = Lineage.model_validate_json((run / "lineage.json").read_text())
    html, markdown = _views(run, out)
    result = SimpleNamespace(mined=[summary], optimized={}, benched={}, target=lineage.workload)
    terminal = _terminal(mine_table(summary), demo_table(result))
    span = lineage_span(summary["naive_reached"])
    label, whole = f"{span} (paired, end to end)", speedup(summary["lineage_speedup"])
    for fact in (_fact_html(html, label), _fact_md(markdown, label)):
        assert fact == f"{whole} ({ms(lineage.final_ms)} → {ms(lineage.expert_ms)})"
    assert _fact_terminal(terminal, f"{span} speedup (paired, end to end)") == whole
    assert f"{whole} {span};" in " ".join(terminal.split())
    steps = [speedup(t.speedup) for t in reversed(lineage.transitions)]
    assert [row[2] for row in _html_rows(html, "numbers")] == steps
    assert [row[2] for row in _md_rows(markdown, "| without | with")] == steps
    cards = json.loads((run / "summary.json").read_text())["cards"]
    effects = [speedup(c["effect"]) for c in cards]
    assert [re.search(r", (\S+), (?:not )?admitted\)", _fact_terminal(terminal, f"card {c['id'][:10]}"))
            .group(1) for c in cards] == effects
    view = load_mine(run)
    for state in view.states:
        shown = re.search(rf'id="state-{state.fingerprint}".*?</div>', html, re.S).group(0)
        shares = re.findall(r"(\d+%) of speed of light at ([^<]+)</span>", shown)
        assert shares == ([(share(state.sol_fraction), ms(state.sol_ms))] if state.sol_fraction else [])
    records = [summary, lineage.model_dump(mode="json")]
    allowed = {whole, *steps, *effects} | _speedups_in_text(records) | _card_speedups(run)
    assert _speedups_shown(html, markdown, terminal) <= allowed
    return html, markdown, terminal


def _card_speedups(run: Path) -> set[str]:
    from klineage.skills.library import Library

    found = set()
    for card in Library.open(run).cards(admitted_only=False) if (run / "skills").is_dir() else []:
        found |= {speedup(e.ratio) for e in card.effect} | {speedup(card.geomean_ratio())}
        found |= {speedup(t.effect_observed) for t in card.verification}
    return found


def test_mine_run_shows_its_record_everywhere(mine_run, tmp_path):
    html = _mine_numbers_agree(mine_run, tmp_path / "out")[0]
    lineage = Lineage.model_validate_json((mine_run / "lineage.json").read_text())
    assert lineage.naive_reached, lineage.stop_reason
    assert "naive → expert (paired, end to end)" in html


def test_a_walk_that_stopped_before_naive_claims_no_naive_speedup(short_mine_run, tmp_path):
    lineage = Lineage.model_validate_json((short_mine_run / "lineage.json").read_text())
    assert not lineage.naive_reached and lineage.transitions, lineage.stop_reason
    html, markdown, terminal = _mine_numbers_agree(short_mine_run, tmp_path / "out")
    for view in (html, markdown, terminal):
        assert "naive → expert" not in view and "naive→expert" not in view
    figure = lineage_figure(load_mine(short_mine_run))
    assert figure is not None and "naive" not in figure.get_suptitle()


def test_the_bench_plot_title_fits_inside_the_png(bench_run):
    record = BenchRecord.model_validate_json((bench_run / "bench.json").read_text())
    record.suite = "/a/long/path/to/the/examples/workloads/cpu-with-a-long-suite-name"
    figure = bench_figure(record)
    assert figure is not None
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    title, page = figure._suptitle.get_window_extent(renderer), figure.bbox  # type: ignore[union-attr]
    assert page.x0 <= title.x0 and title.x1 <= page.x1 and title.y1 <= page.y1, (title, page)
