"""The screenshots in docs/view.md, taken in headless Chromium (run by hand, about a minute):

    .venv/bin/python -m tests.view.screenshots docs

Runs made for it in a temporary folder: an ablation of two variants and a second seed of it (rule bots against
random seats, 20 games each), and the recorded run with LLM calls (tests/data/replay/run). Taken: the index
(view-index.png), a run's page (view-run.png), the comparison of the two runs (view-compare.png), the run's calls
(view-calls.png), and the index and the comparison at phone width (view-phone.png, view-compare-phone.png). Each
is saved as a PNG of 256 colours (Pillow).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.browser import chromium
from tests.helpers import AVALON, avalon
from tests.table.screenshots import shoot

ROOT = Path(__file__).parents[2]
ABLATION = """\
name: {name}
agents:
  bots: {{kind: rulebot}}
  shaky: {{kind: rulebot, options: {{blunder: 0.5}}}}
  rand: {{kind: random}}
sides: {{good: bots, evil: rand}}
variants:
  full: {{}}
  blunders: {{sides: {{good: shaky, evil: rand}}}}
games_per_series: 20
seed: {seed}
"""


def main(folder: Path) -> None:
    work = Path(tempfile.mkdtemp())
    runs = work / "runs"
    runs.mkdir()
    for name, seed in (("ablation", 0), ("ablation-seed2", 5000)):
        config = work / f"{name}.yaml"
        config.write_text(ABLATION.format(name=name, seed=seed))
        done = avalon("run", str(config), "--out", str(runs / name))
        assert done.returncode == 0, done.stderr
    shutil.copytree(ROOT / "tests/data/replay/run", runs / "llm-smoke")
    server = subprocess.Popen([AVALON, "view", str(runs), "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split(" at ")[1].split()[0]
    driver = chromium(1300, 900)
    try:
        for page, name in (("", "view-index"), ("runs/ablation", "view-run"),
                           ("compare?runs=ablation,ablation-seed2", "view-compare"),
                           ("runs/llm-smoke/calls", "view-calls")):
            driver.set_window_size(1300, 900)
            driver.get(url + page)
            time.sleep(3)
            shoot(driver, folder / f"{name}.png")
        for page, name in (("", "view-phone"), ("compare?runs=ablation,ablation-seed2", "view-compare-phone")):
            driver.set_window_size(390, 844)
            driver.get(url + page)
            time.sleep(2)
            shoot(driver, folder / f"{name}.png")
    finally:
        driver.quit()
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
