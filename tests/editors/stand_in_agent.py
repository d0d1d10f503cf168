"""A stand-in for an agent CLI (``claude -p PROMPT``): edits kernel/kernel.c where it is run.

    stand_in_agent.py MODE PROMPT
MODE: edit    drop the '#pragma GCC unroll' line, call ./gate.sh, write result.json
      bare    drop the line, write no result.json (the brain infers the feature)
      hang    start a child that sleeps, then sleep (the time limit must kill both)
      fail    exit 3
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

mode, prompt = sys.argv[1], sys.argv[-1]
kernel = Path("kernel/kernel.c")
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(os.environ["STAND_IN_PIDS"]).write_text(f"{os.getpid()} {child.pid}")
    time.sleep(120)
if mode == "fail":
    print("cannot do it", file=sys.stderr)
    sys.exit(3)
assert "kernel/kernel.c" in prompt and Path("gate.sh").is_file() and Path("workload/workload.toml").is_file()
kernel.write_text("".join(line for line in kernel.read_text().splitlines(keepends=True)
                          if "#pragma GCC unroll" not in line))
if mode == "edit":
    gate = subprocess.run(["./gate.sh", "--no-profile", "--json"], capture_output=True, text=True)
    verdict = json.loads(gate.stdout)["verdict"]
    Path("result.json").write_text(json.dumps({
        "feature": "unroll", "tunables": {"factor": 4},
        "rationale": f"gate said {verdict}; worked in {os.getcwd()}"}))
