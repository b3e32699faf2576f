"""Entry point of the embedded model's server process: llama-cpp-python's OpenAI-compatible server with a
prompt cache whose memory stays inside its budget.

Run as `python -m avalon_agents.llm.llama_server <llama_cpp.server arguments>`. With `--cache true`,
llama-cpp-python keeps the model's state after every call and resumes a later prompt from the saved state
that shares the longest prefix with it. A seat's prompts grow by appending (rules, role card, notes, the
round so far), so its next call reads only what is new. Two fixes make that usable:

- each saved state also copies the logits of the last batch (512 × 49k floats, ~100 MB) that the cache's
  size accounting ignores, so the server grew past 10 GB. Sampling never reads restored logits (the last
  prompt token is always decoded again), so only the last row is kept;
- the budget counts every byte a state holds.

And one for the machine: llama.cpp built with -march=native on a CPU with AMX (Sapphire Rapids and newer)
puts the weights in AMX buffers, and its AMX matrix multiply crashed the process (SIGSEGV) on the first
prompt here, under KVM. Weights stay in plain CPU buffers (`use_extra_bufts` off); for this model's Q4_1
weights nothing is repacked anyway, so nothing is lost where AMX does not exist.
"""

from __future__ import annotations

import sys

import llama_cpp.llama_cpp as llama_cpp_lib
from llama_cpp import llama, llama_cache


def _save_state(self: llama.Llama) -> llama.LlamaState:
    state = _original_save_state(self)
    state.scores = state.scores[-1:].copy()  # a copy: a view would keep all rows alive
    return state


def _cache_size(self: llama_cache.LlamaRAMCache) -> int:
    return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())


def _model_params() -> llama_cpp_lib.llama_model_params:
    params = _original_model_params()
    params.use_extra_bufts = False  # no AMX / repacked weight buffers (see above)
    return params


_original_model_params = llama_cpp_lib.llama_model_default_params
llama_cpp_lib.llama_model_default_params = _model_params
_original_save_state = llama.Llama.save_state
llama.Llama.save_state = _save_state
llama_cache.LlamaRAMCache.cache_size = property(_cache_size)

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    sys.argv[0] = "llama_cpp.server"
    main()
