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
from avalon_agents.llm import ModelSettings, ScriptedChatModel
from avalon_agents.narrate import quote, system_prompt
from avalon_agents.profiles import ECHO_WORDS
from avalon_agents.prompting import data, template
from avalon_agents.records import MemoryTracer, usage
from avalon_agents.records.health import NOT_DATA, health_line, not_data, problems
from avalon_agents.records.run_dir import TRACE
from avalon_agents.records.trace import SpeechCheck
from avalon_agents.speeches import copied_run, instructions, whole_copy, words
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
def test_a_scripted_game_echoes_no_instructions_and_its_repeated_lines_are_counted():
    """The scripted model never repeats its instructions; its speeches are its own first sentence and lines from a
    short list, so a speech whose every line another seat said before is a copy of other players' words (issue 41:
    counted), but not most of them: its speeches stay data."""
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=scripted_setup()))
    records = host.tracer.records
    u = usage(records)
    assert all(r.copied < ECHO_WORDS for r in records if isinstance(r, SpeechCheck))
    assert u["speeches"] >= 10 and 0 < u["echoes"] <= u["speeches"] * NOT_DATA
    assert u["placeholder_speeches"] == u["empty_speeches"] == 0
    assert "speeches are not data" not in health_line(u) and problems(u) == []


def record(placeholder: bool = False, words: int = 12) -> SpeechCheck:
    return SpeechCheck(seat=1, quest=1, attempt=1, placeholder=placeholder, trimmed=placeholder, words=words)


def test_placeholder_and_empty_speeches_are_counted_and_most_of_them_make_speeches_not_data():
    u = usage([record(placeholder=True, words=7), record(placeholder=True, words=7), record(words=0), record()])
    assert (u["speeches"], u["placeholder_speeches"], u["empty_speeches"]) == (4, 2, 1)
    line = health_line(u)
    assert "speeches 4: 0 copy their instructions, 2 placeholders, 1 empty" in line
    assert "speeches are not data: 3 of 4 are not their own (placeholders, empty or copies), over 50%" in line
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
    assert "**full: speeches are not data: 3 of 4 are not their own" in report_markdown(result, {})


# --------------------------------------------------------------------------- copies with nothing of their own

FIELD = data("modules/answer_part")["speech_small"]
ASKED_SMALL = template("modules/action_response").render(context=PROMPT, instruction=ASKED, answer_part=FIELD,
                                                         max_words=60)


def test_a_speech_with_nothing_of_its_own_is_a_copy_however_short():
    """The stubs README command 1's game said (issue 41): a line of the instructions, the field's description, the
    host's question, another player's speech, each whole and short of ECHO_WORDS, are copies; the seat's own
    earlier text and a speech of its own around the game's facts are not."""
    copies_ = [FIELD, "Speak only as yourself.", "Share your view in at most 100 words.", OTHER,
               "Player 2 said: I have been watching the votes closely and the pattern matters more."]
    for copy in copies_:
        assert whole_copy(copy, ASKED_SMALL), copy
    own = [OWN, "I trust Player 1 and Player 2 for quest 1.", "Speak only as yourself, Player 3 is lying to us."]
    assert not any(whole_copy(text, ASKED_SMALL) for text in own)
    u = checked_against(ASKED_SMALL, *copies_, *own)
    assert (u["speeches"], u["echoes"]) == (8, 5)
    assert "speeches 8: 5 copy their instructions" in health_line(u)
    assert "speeches are not data: 5 of 8 are not their own" in health_line(u)
    assert any(p.startswith("speeches are not data: 5 of 8") for p in problems(u))


def checked_against(prompt: str, *texts: str) -> dict:
    tracer = MemoryTracer()
    extract = Extractor(tracer=tracer)
    for text in texts:
        asyncio.run(extract(SPEAK, Reply(text=text, prompt=prompt)))
    return usage(tracer.records)


@pytest.mark.slow  # a scripted game of cognitive seats: 4 s
def test_the_small_prompt_offers_no_stub_to_copy():
    """A small-profile cognitive seat's combined action prompt describes its speech field without a line to say
    (README command 1's seats said "Your answer to the host.", the old description, as their speech)."""
    model = ScriptedChatModel()
    setup = scripted_setup(model, settings=ModelSettings(spec="scripted", profile="small"))
    asyncio.run(play_one(make_rules("official", 5), ["cognitive"] * 5, 0, setups=setup))
    prompts = [m["content"] for call in model.calls for m in call["messages"]]
    assert sum(FIELD in p for p in prompts) > 0
    assert not any(data("modules/answer_part")["speech"] in p for p in prompts)
    assert len(words(FIELD)) > 12  # a description, not a line to say


@pytest.mark.slow  # a whole scripted game: 2 s
def test_a_small_model_that_answers_copies_is_counted_and_its_speeches_are_not_data():
    """The scripted model in the small profile answering every speech with a line of its prompt, again when asked
    again: every speech is counted as a copy and said as the placeholder, and the run's problems say so."""
    stubs = ["Speak only as yourself.", "Answer the host; do not talk to it as to a player."]  # system/rules_small

    def respond(messages, kwargs):
        asked = messages[-1].content
        if "approve or reject" in asked:
            return "approve. They look fine."
        if "Start your answer with the team" in asked:
            return "Team: Player 1, Player 2. They are fine."
        if "success or fail" in asked:
            return "success"
        return stubs[len(asked) % 2]

    setup = scripted_setup(ScriptedChatModel(respond=respond),
                           settings=ModelSettings(spec="scripted", constrained=False, profile="small"), extractor=None)
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=setup))
    u = usage(host.tracer.records)
    assert u["speeches"] >= 5 and u["echoes"] == u["echo_reasks"] == u["placeholder_speeches"] == u["speeches"]
    line = health_line(u)
    assert f"speeches {u['speeches']}: {u['speeches']} copy their instructions" in line
    assert any("speeches are not data" in p for p in problems(u))
