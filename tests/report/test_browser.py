"""The page as a browser shows it: headless Chromium loads the report, the lineage is in the
rendered DOM and every plot image decodes. Skipped where no Chromium is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from klineage.lineage import Lineage
from klineage.report import write_report

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_BROWSER = next((found for name in _BROWSERS if (found := shutil.which(name))), None)

pytestmark = pytest.mark.skipif(
    _BROWSER is None,
    reason="no Chromium binary on PATH (Debian/Ubuntu: apt-get install chromium); "
           "the report's browser test needs one",
)

# Appended to a copy of the page: after load, write each image's decoded size into the DOM.
_PROBE = """<script>window.addEventListener("load", function () {
  var rows = Array.prototype.map.call(document.images, function (img) {
    return {src: img.getAttribute("src"), complete: img.complete,
            width: img.naturalWidth, height: img.naturalHeight};
  });
  var out = document.createElement("pre");
  out.id = "klineage-probe";
  out.textContent = JSON.stringify(rows);
  document.body.appendChild(out);
});</script>"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert _BROWSER is not None
    command = [_BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
               f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
def demo_page(tmp_path, mine_run, runs) -> Path:
    """One page with the real mine run, the optimize run and the bench run."""
    demo = tmp_path / "demo"
    demo.mkdir()
    children = [str(mine_run), str(runs / "optimize_run"), str(runs / "bench_run")]
    (demo / "run.json").write_text(json.dumps({"kind": "demo", "name": "browser", "children": children}))
    return write_report(demo, tmp_path / "report").html


def test_chromium_renders_the_lineage_and_loads_every_plot(tmp_path, demo_page, mine_run):
    probe = demo_page.with_name("probe.html")
    probe.write_text(demo_page.read_text().replace("</body>", _PROBE + "</body>"))
    proc = _chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    lineage = Lineage.model_validate_json((mine_run / "lineage.json").read_text())
    for number, transition in enumerate(reversed(lineage.transitions), start=1):
        step = re.search(rf'<li class="step" id="s1-step-{number}">.*?</li>', dom, re.S)
        assert step, f"step {number} missing from the rendered DOM"
        assert f"<code>{transition.feature}</code>" in step.group(0)
        assert '<pre class="diff"' in step.group(0)
    assert dom.count('<li class="state"') == len(lineage.states)
    found = re.search(r'<pre id="klineage-probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe script did not run"
    images = json.loads(found.group(1).replace("&quot;", '"'))
    assert sorted(i["src"] for i in images) == ["s1-lineage.png", "s2-optimize-curve.png",
                                                "s3-bench-curves.png"]
    for image in images:
        assert image["complete"] and image["width"] > 200 and image["height"] > 100, image


def test_chromium_screenshot_is_not_blank(tmp_path, demo_page):
    shot = tmp_path / "page.png"
    proc = _chromium(tmp_path, "--window-size=1200,1600", "--hide-scrollbars",
                     f"--screenshot={shot}", demo_page.as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1200)
    ink = (pixels.min(axis=2) < 0.9).mean()  # share of pixels that are not near-white
    assert 0.02 < ink < 0.8, f"{ink:.3f} of the screenshot is drawn"
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50  # text, tables and plot colours
