"""The report of each run kind: every step, card and method shown, markup escaped, real PNGs."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from klineage.errors import ConfigError
from klineage.lineage import Lineage
from klineage.optimize.records import CurvePoint
from klineage.report import write_report
from klineage.report._diff import reverse_diff
from klineage.report._plots import mean_curve
from klineage.skills.library import Library
from report._helpers import assert_png


def test_real_mine_run_shows_the_chain_naive_to_expert(mine_run, tmp_path):
    paths = write_report(mine_run, tmp_path / "out")
    html, markdown = paths.html.read_text(), paths.markdown.read_text()
    lineage = Lineage.model_validate_json((mine_run / "lineage.json").read_text())
    assert lineage.transitions, lineage.stop_reason
    forward = list(reversed(lineage.transitions))
    for number, transition in enumerate(forward, start=1):
        assert f'id="step-{number}"' in html
        assert f"Step {number}: add <code>{transition.feature}</code>" in html
        assert f"#### Step {number}: add `{transition.feature}`" in markdown
    for fingerprint in lineage.states:
        assert f'id="state-{fingerprint}"' in html and f"`{fingerprint}`" in markdown
    # the chain runs naive first, expert last
    positions = [html.index(f'id="state-{fp}"') for fp in reversed(lineage.states)]
    assert positions == sorted(positions)
    assert "Lineage: naive → … → expert" in html
    # the axpy kernel's loop bounds hold '<': escaped inside the diffs, never raw
    assert "block &lt; n" in html and "block < n" not in html
    assert "block < n" in markdown  # inside a ```diff fence, Markdown needs it raw
    assert [p.name for p in paths.plots] == ["lineage.png"]
    assert_png(paths.plots[0])
    assert '<img src="lineage.png"' in html and "](lineage.png)" in markdown


def test_default_output_folder_is_run_report(runs):
    paths = write_report(runs / "optimize_run")
    assert paths.html == runs / "optimize_run" / "report" / "index.html"
    assert paths.markdown.is_file() and all(p.parent == paths.html.parent for p in paths.plots)


def test_mine_cards_rejections_and_escaping(runs):
    run = runs / "mine_small"
    paths = write_report(run)
    html, markdown = paths.html.read_text(), paths.markdown.read_text()
    card = Library.open(run).cards(admitted_only=False)[0]
    # the step that produced the card links to it; the card's evidence links back
    assert f'<a href="#card-{card.id}">{card.name}</a>' in html
    assert f'<article class="card" id="card-{card.id}">' in html
    assert '<a href="#step-2">scale:aaaa0000:omp_simd</a>' in html
    assert f"[{card.name}](#card-{card.id})" in markdown
    # every §6 field of the card, in both renderings
    for text in (card.intent, card.anchor, card.carrier.summary.replace("`", ""),
                 card.preconditions[1].condition, card.preconditions[1].check, card.risk[0].what,
                 card.verification[0].target, "cpu-*", "omp_parallel"):
        assert text in _text(html), text
    for text in (card.intent, card.anchor, card.preconditions[0].reason, card.risk[0].what,
                 card.verification[0].target, "Verification log", "Measured effect"):
        assert text in markdown, text
    # the refused proposal: verdict, reason, and its diff escaped (it holds a </pre><script>)
    assert "audit_failed" in html and "removing restrict also removed omp_simd" in html
    assert "&lt;vectorizer gave up&gt;" in html
    assert "<script>" not in html and "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "**audit_failed**" in markdown and "&lt;vectorizer gave up&gt;" in markdown
    # a step without a card says why
    assert "not reproduced (the omp_parallel insertion pass found no site)" in html


def _text(page: str) -> str:
    """What a reader sees: tags dropped, entities decoded."""
    return htmllib.unescape(re.sub(r"<[^>]+>", "", page))


def test_optimize_run_lists_every_candidate_and_draws_the_curve(runs):
    record = json.loads((runs / "optimize_run" / "optimize.json").read_text())
    paths = write_report(runs / "optimize_run")
    html, markdown = paths.html.read_text(), paths.markdown.read_text()
    for step in record["steps"]:
        assert step["candidate"] in html and step["candidate"] in markdown
        assert f'v-{step["verdict"]}' in html
    assert "&lt;unwritten tail&gt;" in html and "i &lt; n - 3" in html
    assert "2.11x" in html and "43%" in html and record["stop_reason"] in markdown
    assert len(re.findall(r"^\| \d+ \| `", markdown, re.M)) == len(record["steps"])
    assert [p.name for p in paths.plots] == ["optimize-curve.png"]
    assert_png(paths.plots[0])


def test_bench_run_summarises_every_method_and_lists_failures(runs):
    record = json.loads((runs / "bench_run" / "bench.json").read_text())
    paths = write_report(runs / "bench_run")
    html, markdown = paths.html.read_text(), paths.markdown.read_text()
    for row in record["summary"]:
        assert f"<tr><td>{row['method']}</td>" in html
        assert f"| {row['method']} | {row['geomean_speedup_vs_start']:.2f}x |" in markdown
        for failure in row["failures"]:
            assert failure["reason"] in html and failure["reason"] in markdown
    results = re.findall(r"^\| (klineage|none|expert-source) \| (axpy|scale) \|", markdown, re.M)
    assert len(results) == len(record["results"])
    assert html.count('<tr class="failed">') == sum(r["status"] == "failed" for r in record["results"])
    assert [p.name for p in paths.plots] == ["bench-curves.png"]
    assert_png(paths.plots[0])


def test_mean_curve_holds_each_repeat_and_starts_at_one():
    first = [CurvePoint(gate_runs=2, best_speedup=2.0), CurvePoint(gate_runs=4, best_speedup=3.0)]
    second = [CurvePoint(gate_runs=3, best_speedup=1.5)]
    xs, ys = mean_curve([first, second], until=5)
    assert xs == [0, 2, 3, 4, 5]
    assert ys == pytest.approx([1.0, 1.5, 1.75, 2.25, 2.25])
    assert mean_curve([[]]) == ([0], [1.0])  # a failed repeat with no points stays at the start


def test_demo_run_is_one_page_with_a_section_per_child(runs):
    paths = write_report(runs / "demo_run")
    html, markdown = paths.html.read_text(), paths.markdown.read_text()
    assert '<nav class="toc"' in html and "## Contents" in markdown
    for anchor, title in (("s1-", "mine — scale"), ("s2-", "optimize — scale"),
                          ("s3-", "bench — cpu-small")):
        assert f'<a href="#{anchor}top">{title}</a>' in html and f'id="{anchor}top"' in html
        assert f"](#{anchor}top)" in markdown
    assert 'id="s1-step-1"' in html and 'href="#s1-card-' in html
    assert sorted(p.name for p in paths.plots) == ["s1-lineage.png", "s2-optimize-curve.png",
                                                    "s3-bench-curves.png"]
    for plot in paths.plots:
        assert_png(plot)
        assert f'src="{plot.name}"' in html and f"]({plot.name})" in markdown


def test_unknown_kind_and_non_runs_are_clear_errors(runs, tmp_path):
    odd = runs / "optimize_run"
    (odd / "run.json").write_text(json.dumps({"kind": "train", "name": "x"}))
    with pytest.raises(ConfigError, match=r"unknown run kind 'train'.*mine, optimize, bench, demo"):
        write_report(odd)
    with pytest.raises(ConfigError, match="not a run directory"):
        write_report(tmp_path)
    with pytest.raises(ConfigError, match="no such run directory"):
        write_report(tmp_path / "missing")
    (runs / "bench_run" / "bench.json").write_text(json.dumps({"results": [{"method": "m"}]}))
    with pytest.raises(ConfigError, match=r"bench.json: results.0.workload: Field required"):
        write_report(runs / "bench_run")
    (runs / "demo_run" / "run.json").write_text(json.dumps({"kind": "demo", "children": ["gone"]}))
    with pytest.raises(ConfigError, match="demo child 'gone' not found"):
        write_report(runs / "demo_run")


def test_reverse_diff_reads_a_removal_forward():
    removal = ("--- a/kernel\n+++ b/kernel\n@@ -3,3 +3,2 @@\n keep\n-#pragma omp simd\n"
               "-float* restrict y;\n+float* y;\n tail\n")
    forward = reverse_diff(removal)
    assert forward.splitlines() == ["--- b/kernel", "+++ a/kernel", "@@ -3,2 +3,3 @@", " keep",
                                    "-float* y;", "+#pragma omp simd", "+float* restrict y;", " tail"]
    assert reverse_diff(forward) == removal


def test_every_speedup_shown_is_the_ratio_of_the_times_beside_it(mine_run, tmp_path):
    # A mine report once showed three naive → expert numbers, and a card 1.06x beside times
    # that gave 1.008x: every speedup now comes from the comparison its times come from.
    html = write_report(mine_run, tmp_path / "out").html.read_text()
    rows = re.findall(r"<td>([0-9.e+-]+) ms</td><td>([0-9.e+-]+) ms</td><td>([0-9.]+)x</td><td>([^<]*)</td>",
                      html)
    assert rows, "no step or effect rows with two times and a speedup"
    assert all(re.fullmatch(r"\[[0-9.]+, [0-9.]+\]", ci) for *_, ci in rows), "a speedup without its interval"

    def close(speedup: float, before: float, after: float) -> bool:
        return abs(speedup - before / after) <= 0.006 + 0.002 * speedup  # printed rounding

    for before, after, speedup, _ in rows:
        assert close(float(speedup), float(before), float(after)), (before, after, speedup)
    headline, simplest, expert = re.search(
        r"<dt>naive → expert \(paired, end to end\)</dt><dd>([0-9.]+)x \(([0-9.e+-]+) ms → ([0-9.e+-]+) ms",
        html).groups()
    assert close(float(headline), float(simplest), float(expert))
