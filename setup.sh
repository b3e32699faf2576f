#!/usr/bin/env bash
# Sets up everything in .venv: the package with its pinned dependencies and the test tools.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip==26.3"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"
echo "setup done: .venv is ready (activate with: source .venv/bin/activate)"
