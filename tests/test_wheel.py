"""The wheel carries every prompt file inside the package (DESIGN: prompts shipped inside the wheel)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_wheel_ships_every_prompt(tmp_path):
    source = tmp_path / "src"  # a copy, so the build leaves no build/ folder in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("avalon_agents", "prompts"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("avalon_agents-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    prompts = {f"avalon_agents/prompts/{p.relative_to(ROOT / 'prompts')}" for p in (ROOT / "prompts").rglob("*")
               if p.is_file()}
    assert len(prompts) > 30
    assert prompts <= names, sorted(prompts - names)
    assert "avalon_agents/cli.py" in names
