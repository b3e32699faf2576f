"""Entry point of the embedded model's server process: llama-cpp-python's OpenAI-compatible server with a
prompt cache that keeps each seat's evaluated prefix, within its memory budget, and says how much it reused.

Run as `python -m avalon_agents.llm.llama_server <llama_cpp.server arguments>`. With `--cache true`,
llama-cpp-python keeps the model's state after every call and resumes a later prompt from the saved state
that shares the longest prefix with it. A seat's prompts begin with the same part (rules and role card, what it
privately knows, the game so far, append-only: agents' layout `cache`), so its next call reads only what is new.
Why saved states and not slots: llama-cpp-python's server has one context and no slots (`cache_prompt` and
`id_slot` are llama.cpp's own server, which the wheel does not ship); a state is the seat's whole evaluated
prefix (~24 kB a token), restored in ~30 ms, where reading it again costs ~4 ms a token.

What is changed here:

- the cache keeps one state per conversation: a new state replaces the saved ones it extends past the end of
  their system message (the same seat's earlier calls: a seat's system message names its seat and role), which
  the new one serves as well. Before, every call left a state, a cognitive seat's five calls a step filled the
  1 GB budget, and the least recently used seats (the baseline's, between its steps) were evicted and read
  their whole prompt again;
- a state is saved and restored without the copies llama-cpp-python makes (a zero-filled buffer, a second copy,
  bytes, and 512 rows of logits, ~100 MB, that sampling never reads: the last prompt token is always decoded
  again); the budget counts every byte a state holds;
- each answer's `usage.prompt_tokens_details.cached_tokens` says how many of its prompt tokens came from the
  cache, as OpenAI's does (the trace's `cached_tokens`; `avalon run`'s cost line shows the sum).

And one for the machine: llama.cpp built with -march=native on a CPU with AMX (Sapphire Rapids and newer)
puts the weights in AMX buffers, and its AMX matrix multiply crashed the process (SIGSEGV) on the first
prompt here, under KVM. Weights stay in plain CPU buffers (`use_extra_bufts` off); for this model's Q4_1
weights nothing is repacked anyway, so nothing is lost where AMX does not exist.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import llama_cpp.llama_cpp as llama_cpp_lib
import numpy as np
from llama_cpp import llama, llama_cache, llama_types
from typing_extensions import NotRequired


def _save_state(self: llama.Llama) -> llama.LlamaState:
    size = llama_cpp_lib.llama_state_get_size(self._ctx.ctx)
    data = np.empty(size, dtype=np.uint8)
    written = llama_cpp_lib.llama_state_get_data(self._ctx.ctx, data.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)),
                                                 size)
    if written > size:
        raise RuntimeError("Failed to copy llama state data")
    state = llama.LlamaState(input_ids=self.input_ids[:self.n_tokens].copy(), scores=self.scores[-1:].copy(),
                             n_tokens=self.n_tokens, llama_state=data[:written], llama_state_size=int(written),
                             seed=self._seed)
    found = np.flatnonzero(state.input_ids == self.token_eos())
    state.system_end = int(found[0]) + 1 if len(found) else self.n_tokens  # tokens up to the first <|im_end|>
    return state


def _load_state(self: llama.Llama, state: llama.LlamaState) -> None:
    self.input_ids[:state.n_tokens] = state.input_ids
    self.n_tokens = state.n_tokens
    self._requires_eval = True
    self._seed = state.seed
    buffer = (ctypes.c_uint8 * state.llama_state_size).from_buffer(state.llama_state)
    if llama_cpp_lib.llama_state_set_data(self._ctx.ctx, buffer, state.llama_state_size) != state.llama_state_size:
        raise RuntimeError("Failed to set llama state data")


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if len(differ) else n


def _find_longest_prefix_key(self: llama_cache.LlamaRAMCache, key: tuple[int, ...]) -> tuple[int, ...] | None:
    best, found = 0, None
    for k in self.cache_state:
        common = _common(k, key)
        if common > best:
            best, found = common, k
    return found


def _store(self: llama_cache.LlamaRAMCache, key: Any, value: llama.LlamaState) -> None:
    key = tuple(key)
    end = getattr(value, "system_end", len(key))
    for old in [k for k in self.cache_state if _common(k, key) > end or k == key]:
        del self.cache_state[old]  # the same conversation, which the new state extends
    self.cache_state[key] = value
    while self.cache_size > self.capacity_bytes and len(self.cache_state) > 1:
        self.cache_state.popitem(last=False)


def _cache_size(self: llama_cache.LlamaRAMCache) -> int:
    return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())


def _eval(self: llama.Llama, tokens: Any) -> None:
    if getattr(self, "prompt_read", None) is None:  # the first evaluation of a completion: its prompt's new part
        self.prompt_read = len(tokens)
    _original_eval(self, tokens)


def _create_chat_completion(self: llama.Llama, *args: Any, **kwargs: Any) -> Any:
    self.prompt_read = None
    out = _original_create_chat_completion(self, *args, **kwargs)
    usage = out.get("usage") if isinstance(out, dict) else None
    if usage:
        usage["prompt_tokens_details"] = {"cached_tokens": max(0, usage["prompt_tokens"] - (self.prompt_read or 0))}
    return out


def _model_params() -> llama_cpp_lib.llama_model_params:
    params = _original_model_params()
    params.use_extra_bufts = False  # no AMX / repacked weight buffers (see above)
    return params


_original_model_params = llama_cpp_lib.llama_model_default_params
llama_cpp_lib.llama_model_default_params = _model_params
_original_eval = llama.Llama.eval
_original_create_chat_completion = llama.Llama.create_chat_completion
llama.Llama.save_state = _save_state
llama.Llama.load_state = _load_state
llama.Llama.eval = _eval
llama.Llama.create_chat_completion = _create_chat_completion
llama_cache.LlamaRAMCache.cache_size = property(_cache_size)
llama_cache.LlamaRAMCache._find_longest_prefix_key = _find_longest_prefix_key
llama_cache.LlamaRAMCache.__setitem__ = _store
# the answer's usage may say what was cached (the server's response model would drop the field otherwise)
llama_types.CompletionUsage.__annotations__["prompt_tokens_details"] = NotRequired[dict]
_usage = llama_types.CompletionUsage
_usage.__optional_keys__ = _usage.__optional_keys__ | {"prompt_tokens_details"}

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    sys.argv[0] = "llama_cpp.server"
    main()
