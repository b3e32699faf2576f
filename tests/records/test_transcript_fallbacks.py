"""A game a fallback decided says so (issue 41): the transcript line of each decision the fallback made, not the
seat, is marked with the seat and what it decided."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import make_rules
from avalon_agents.core.events import AssassinationAttempted
from avalon_agents.host.play import play_one
from avalon_agents.llm import ModelSettings, ScriptedChatModel
from avalon_agents.records.trace import Extraction
from avalon_agents.records.transcript import fell_back, transcript
from tests.helpers import scripted_setup


@pytest.mark.slow  # a scripted game with re-asks: 5 s
def test_the_decisions_a_fallback_made_are_marked_on_their_lines():
    """Seats whose votes and assassination no stage can read: their votes' lines and the assassination's name them;
    with no fallbacks given, no line is marked (the transcript as before)."""

    def respond(messages, kwargs):
        asked = messages[-1].content
        if "approve or reject" in asked or "Merlin" in asked.splitlines()[-1]:
            return "Hmm."  # nothing any stage can read: asked again, then the fallback
        return "Player 1 and Player 2. success. I trust Player 2, and I watch the votes."

    setup = scripted_setup(ScriptedChatModel(respond=respond),
                           settings=ModelSettings(spec="scripted", constrained=False), extractor=None)
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=setup))
    records = host.tracer.records
    decided = fell_back(records)
    fallbacks = [r for r in records if isinstance(r, Extraction) and r.method == "fallback"]
    assert fallbacks and len(decided) == len(fallbacks)
    lines = transcript(host.engine.events, decided=decided)
    votes = [line for line in lines if line.startswith("  vote ")]
    voted = {(r.seat, r.quest, r.attempt) for r in fallbacks if r.kind == "vote"}
    assert voted and sum("[fallback, no answer could be read: the vote of Player" in line for line in votes) == len(
        {(q, a) for _, q, a in voted})
    if any(isinstance(e, AssassinationAttempted) for e in host.engine.events) and any(r.kind == "assassinate"
                                                                                for r in fallbacks):
        assert any("as Merlin" in line and "[fallback, no answer could be read: the target of Player" in line
                   for line in lines)
    assert not any("[fallback" in line for line in transcript(host.engine.events))
