"""The speeches in the health line: an echo is a copy of the instructions (the package's wording), never of another
player's speech or the seat's own earlier text; placeholder and empty speeches are counted, and a run whose speeches
are mostly not their own says that they are not data (records.health.NOT_DATA)."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import make_rules
from avalon_agents.core.actions import ActionRequest, Reply, RequestKind
from avalon_agents.core.types import Role
from avalon_agents.extract.extractor import Extractor
from avalon_agents.host.play import play_one
from avalon_agents.narrate import quote, system_prompt
from avalon_agents.prompting import template
from avalon_agents.records import MemoryTracer, usage
from avalon_agents.records.health import NOT_DATA, health_line, not_data
from avalon_agents.records.run_dir import TRACE
from avalon_agents.records.trace import SpeechCheck
from avalon_agents.speeches import copied_run, instructions
from tests.helpers import scripted_setup

OTHER = "I have been watching the votes closely and the pattern matters more than any single speech."
OWN = "Player 3 voted against every team so far and I will not trust him on a quest yet."
ASKED = template("host/request_speak_team").render(team="Player 1 and Player 2", quest=1)
PROMPT = "\n\n".join([
    system_prompt(make_rules("official", 6), 4, Role.MERLIN),
    template("host/speech").render(speaker="Player 2", quoted=quote(OTHER)),
    f"Your analysis of the other players:\n{OWN}",
    f"The host's instruction: {ASKED}",
])
SPEAK = ActionRequest(seat=4, kind=RequestKind.SPEAK, quest=1, attempt=1)


def checked(*texts: str) -> dict:
    tracer = MemoryTracer()
    extract = Extractor(tracer=tracer)
    for text in texts:
        asyncio.run(extract(SPEAK, Reply(text=text, prompt=PROMPT)))
    return usage(tracer.records)


def test_a_speech_that_copies_its_instructions_echoes():
    rules = "Keep your own role to yourself unless revealing it (truthfully or not) helps your side."
    # the whole copy, as one; the game's facts in it ("Player 1 and Player 2 for quest 1") are not counted
    for copy, copied in ((rules, 15), (ASKED, 16)):
        assert copied_run(copy + " I trust Player 2.", PROMPT) == copied
        u = checked(copy + " I trust Player 2.")
        assert (u["speeches"], u["echoes"]) == (1, 1)


def test_repeating_another_players_speech_or_ones_own_thoughts_is_no_echo():
    assert OTHER in PROMPT and OWN in PROMPT  # both stand in the prompt, word for word ...
    u = checked(f"As Player 2 said, {OTHER}", OWN, "I trust Player 1 and Player 2 for quest 1.")
    assert (u["speeches"], u["echoes"]) == (3, 0)  # ... but neither is the instructions
    assert "speeches 3: 0 copy their instructions" in health_line(u)
    seen = {m[0] for m in instructions(PROMPT) if m}
    assert "watching" not in seen and "trust" not in seen and "revealing" in seen and "share" in seen


@pytest.mark.slow  # a whole scripted game: 2 s
def test_a_scripted_game_raises_no_echo_alarm():
    """The scripted model repeats other seats' lines: none of it is the instructions."""
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=scripted_setup()))
    u = usage(host.tracer.records)
    assert u["speeches"] >= 10 and u["echoes"] == 0 and u["placeholder_speeches"] == u["empty_speeches"] == 0
    assert "speeches are not data" not in health_line(u)


def record(placeholder: bool = False, words: int = 12) -> SpeechCheck:
    return SpeechCheck(seat=1, quest=1, attempt=1, placeholder=placeholder, trimmed=placeholder, words=words)


def test_placeholder_and_empty_speeches_are_counted_and_most_of_them_make_speeches_not_data():
    u = usage([record(placeholder=True, words=7), record(placeholder=True, words=7), record(words=0), record()])
    assert (u["speeches"], u["placeholder_speeches"], u["empty_speeches"]) == (4, 2, 1)
    line = health_line(u)
    assert "speeches 4: 0 copy their instructions, 2 placeholders, 1 empty" in line
    assert "speeches are not data: 3 of 4 are placeholders or empty, over 50%" in line
    half = usage([record(placeholder=True, words=7), record()])  # exactly NOT_DATA: still data
    assert NOT_DATA == 0.5 and "not data" not in health_line(half)
    assert not_data(0, 0) is None and not_data(10, 6) and not_data(10, 5) is None


@pytest.mark.slow  # every metric of a small run: a second
def test_the_analysis_report_says_when_a_variants_speeches_are_not_data(tmp_path):
    from avalon_agents.analysis.load import load_run
    from avalon_agents.analysis.paper.report import compute, report_markdown
    from tests.analysis.records import write_run

    run = write_run(tmp_path / "run")
    trace = run / "full" / "series-1" / "game-00001" / TRACE
    checks = [record(placeholder=True, words=7)] * 3 + [record()]
    trace.write_text(trace.read_text() + "".join(c.model_dump_json() + "\n" for c in checks))
    result = compute(load_run(run), run, tmp_path / "analysis")
    health = result.tables["health"].iloc[0]
    assert (health["speeches"], health["placeholders"]) == (4, 3)
    assert "**full: speeches are not data: 3 of 4 are placeholders or empty" in report_markdown(result, {})
