"""Providers declare what the framework treats them as (`free`, `canned`, `local`, `replays` on llm.registry's
`Provider`), and every place that used to compare provider names reads the declaration: a plugin's provider
declared so is priced, captioned and replayed like the built-in ones."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from avalon_agents.llm import register_provider
from avalon_agents.llm.registry import PROVIDERS
from avalon_agents.llm.scripted import ScriptedChatModel
from avalon_agents.prices import FREE, FREE_PROVIDERS, Prices


def declared(what: str) -> set[str]:
    return {name for name, p in PROVIDERS.items() if getattr(p, what)}


def test_the_built_in_providers_declare_what_they_are_and_prices_agree():
    assert (declared("free"), declared("canned"), declared("local"), declared("replays")) == (
        {"local", "scripted", "replay"}, {"scripted"}, {"local"}, {"replay"})
    assert set(FREE_PROVIDERS) == declared("free")  # prices names the built-in free ones below the model layer


def test_a_plugins_free_canned_provider_costs_nothing_and_its_judgments_say_canned():
    from avalon_agents.analysis.humans.calibrate import Calibration
    from avalon_agents.analysis.humans.calibration import provenance
    from avalon_agents.analysis.plots import SCRIPTED_JUDGE, caption_text

    register_provider("parrot", lambda model, settings: ScriptedChatModel(), free=True, canned=True)
    assert "parrot" in FREE_PROVIDERS and Prices.shipped().price("parrot:any") == FREE
    assert caption_text("run x", judge="parrot:any").startswith(SCRIPTED_JUDGE)
    assert caption_text("run x", judge="openai:gpt-4o-mini") == "judge: openai:gpt-4o-mini | run x"
    found = Calibration(run=Path("r"), judge_spec="parrot:any", sample=None, seed=0, messages=0,
                        rows=pd.DataFrame({"game": []}))
    assert provenance(found).startswith("judge model parrot:any (canned labels, not a real judgment")
