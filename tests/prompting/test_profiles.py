"""Profiles (avalon_agents.profiles): the small model's shaping, the speech guard, and the extractor as an
instrument whatever the agents' settings."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import make_rules
from avalon_agents.core.actions import ActionRequest, Reply, RequestKind
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS, Extractor, extractor_settings, guard_speech
from avalon_agents.host.play import play_one
from avalon_agents.llm import ModelSettings, ScriptedChatModel
from avalon_agents.profiles import ECHO_WORDS, PROFILES
from avalon_agents.records import MemoryTracer, usage
from avalon_agents.records.health import health_line
from avalon_agents.speeches import copied_run, cut_speech, mid_sentence, trim_copies, unlabelled
from tests.helpers import scripted_setup

PROMPT = ("You are Player 4, and your role is Merlin. Keep your own role to yourself unless revealing it (truthfully "
          "or not) helps your side. Your turn to speak about the proposed team Player 1 and Player 2 for quest 1. "
          "Share your view in at most 100 words.")  # the package's wording: system/rules.txt, host/request_speak_team
ECHO = "Keep your own role to yourself unless revealing it, truthfully or not, helps your side. I trust Player 2."
SPEAK = ActionRequest(seat=4, kind=RequestKind.SPEAK, quest=1, attempt=1)


# --------------------------------------------------------------------------- the text functions


def test_copied_words_are_counted_case_blind_and_without_punctuation():
    assert copied_run(ECHO, PROMPT) == 15
    assert copied_run("KEEP your own role, to yourself... unless revealing it", PROMPT) == 9
    assert copied_run("I trust Player 2 and Player 5 on this team.", PROMPT) < ECHO_WORDS
    assert copied_run("", PROMPT) == copied_run("words", "") == 0


def test_trimming_keeps_only_the_speakers_own_words():
    assert trim_copies(ECHO, PROMPT) == "I trust Player 2."
    assert trim_copies("I trust Player 2.", PROMPT) == "I trust Player 2."  # nothing copied: unchanged
    # a sentence that holds a copy goes whole: no fragment of it is left to read as nonsense
    mixed = "Well, keep your own role to yourself unless revealing it helps, so: Player 5. I trust Player 2!"
    assert trim_copies(mixed, PROMPT) == "I trust Player 2!"
    # a short quote of the prompt (under ECHO_WORDS) stays
    assert trim_copies("As I keep your own role to yourself, I vote for Player 1.", PROMPT).startswith("As I keep")


@pytest.mark.parametrize(("text", "words", "spoken", "cut"), [
    ("I trust Player 1. Player 3 was quiet and I think we should", 60, "I trust Player 1.", True),
    ("one two three four five six", 3, "one two three.", True),
    ("Short and done.", 60, "Short and done.", False),
    ("First. Second sentence runs past the cap here", 4, "First.", True),
    ('He said "go."', 60, 'He said "go."', False),
])
def test_a_speech_is_capped_in_words_and_ends_at_a_sentence_end(text, words, spoken, cut):
    assert cut_speech(text, words) == (spoken, cut)
    assert not mid_sentence(spoken)


def test_mid_sentence():
    assert mid_sentence("I agree with") and mid_sentence("Player 3 is,")
    assert not mid_sentence("I agree.") and not mid_sentence("Really?!") and not mid_sentence("")


# --------------------------------------------------------------------------- settings


def test_the_embedded_model_is_small_by_default_and_any_model_may_choose():
    assert ModelSettings(spec="local:smollm2").complete().profile == "small"
    assert ModelSettings(spec="scripted").complete().profile == "standard"
    assert ModelSettings(spec="scripted", profile="small").shape is PROFILES["small"]
    assert ModelSettings(spec="local:smollm2", profile="standard").complete().kwargs == {}
    small = ModelSettings(spec="openai:gpt-4o-mini", profile="small").complete()
    assert small.kwargs["stop"] == list(PROFILES["small"].stop) and len(small.kwargs["stop"]) <= 4  # OpenAI's limit
    mine = ModelSettings(spec="openai:gpt-4o-mini", profile="small", kwargs={"stop": ["END"]}).complete()
    assert mine.kwargs["stop"] == ["END"]  # a stop the user set wins
    with pytest.raises(ValueError, match="profile"):
        ModelSettings(spec="scripted", profile="tiny")


def test_the_extractor_is_an_instrument_whatever_the_agents_settings():
    player = ModelSettings(spec="local:smollm2", constrained=False, temperature=0.9, max_tokens=300)
    settings = extractor_settings(EXTRACTOR_SETTINGS, player).complete()
    assert settings.spec == "local:smollm2"  # the game's model ...
    assert settings.constrained is None and settings.schema_style == "llama_cpp"  # ... with its grammar
    assert settings.temperature == 0 and settings.max_tokens == 64 and settings.profile == "standard"
    own = extractor_settings(ModelSettings(spec="scripted", temperature=0.5), player).complete()
    assert own.spec == "scripted" and own.temperature == 0.5 and own.max_tokens == 64  # its own settings win
    off = extractor_settings(ModelSettings(constrained=False), player).complete()
    assert off.schema_style == "none"  # only the extractor's own settings turn its grammar off
    assert extractor_settings(None, player) is None


def test_a_setup_for_unconstrained_agents_gives_the_extractor_its_grammar():
    setup = scripted_setup(settings=ModelSettings(spec="local:smollm2", constrained=False, temperature=0.3))
    extractor = setup.extractor_settings().complete()
    assert extractor.schema_style == "llama_cpp" and extractor.temperature == 0
    assert setup.meta()["extractor_model"]["temperature"] == 0  # recorded as used


@pytest.mark.slow  # a whole game of re-asks: seconds
def test_an_unconstrained_game_still_asks_the_extractor_for_json():
    """The paper configs' `constrained: false` reaches the agents only: the extractor's calls carry a schema."""
    model = ScriptedChatModel()
    model.respond = lambda messages, kwargs: (model._default(messages, kwargs) if kwargs.get("response_format")
                                              else "Hmm, let me think about it.")
    setup = scripted_setup(model, settings=ModelSettings(spec="scripted", constrained=False))
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=setup))
    calls = [r for r in host.tracer.records if r.type == "llm_call"]
    extracting = [c for c in calls if c.stage == "extract"]
    assert extracting and all(c.constrained and c.settings["temperature"] == 0 for c in extracting)
    assert not any(c.constrained for c in calls if c.stage != "extract")
    assert all('Reply: {"' in c.messages[0].content for c in extracting)  # JSON few-shot examples


# --------------------------------------------------------------------------- the speech guard


def speak(profile: str, again: list[str]) -> tuple[str, object, list[str]]:
    reasons: list[str] = []

    async def ask_again(reason: str) -> Reply:
        reasons.append(reason)
        return Reply(text=again.pop(0), prompt=PROMPT, profile=profile)

    speech, check = asyncio.run(guard_speech(SPEAK, Reply(text=ECHO, prompt=PROMPT, profile=profile), ask_again))
    return speech.text, check, reasons


def test_a_small_models_echo_is_asked_again_once_then_trimmed():
    text, check, reasons = speak("small", [ECHO + " Player 5 worries me."])
    assert len(reasons) == 1 and "repeated the instructions" in reasons[0]
    assert text == "I trust Player 2. Player 5 worries me." and copied_run(text, PROMPT) < ECHO_WORDS
    assert check.echo and check.reasked and check.trimmed and check.copied == 15 and not check.mid_sentence
    text, check, _ = speak("small", ["I trust Player 2 more than Player 3."])
    assert text == "I trust Player 2 more than Player 3." and check.reasked and not check.trimmed


def test_a_speech_with_nothing_of_its_own_left_says_so_and_labels_go():
    text, check, _ = speak("small", [ECHO.split(".")[0] + "."])  # the answer again is only the echo
    assert text == "I have nothing to add for now." and check.trimmed
    speech, _ = asyncio.run(guard_speech(SPEAK, Reply(text="Host: Player 4: I trust Player 2.", prompt=PROMPT,
                                                       profile="small")))
    assert speech.text == "I trust Player 2."
    assert unlabelled("Preliminary: A: I chose Player 2.") == "I chose Player 2."
    assert unlabelled("Team of three: no") == "Team of three: no" and unlabelled("I think: yes.") == "I think: yes."


def test_any_other_model_is_measured_not_changed():
    text, check, reasons = speak("standard", [])
    assert text == ECHO and reasons == []
    assert check.echo and not check.reasked and check.profile == "standard"
    speech, check = asyncio.run(guard_speech(SPEAK, Reply(text="A bot's words")))  # no prompt: nothing to read
    assert speech.text == "A bot's words" and check is None


def test_the_health_line_counts_echoes_and_unfinished_speeches():
    tracer = MemoryTracer()
    extract = Extractor(tracer=tracer)
    replies = [Reply(text=ECHO, prompt=PROMPT), Reply(text="I trust Player 2", prompt=PROMPT),
               Reply(text="Fine.", prompt=PROMPT)]
    for reply in replies:
        asyncio.run(extract(SPEAK, reply))
    u = usage(tracer.records)
    assert (u["speeches"], u["echoes"], u["mid_sentence"]) == (3, 1, 1)
    assert u["echo_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert "speeches 3: 1 copy their instructions, 0 placeholders, 0 empty, 1 end mid-sentence" in health_line(u)


# --------------------------------------------------------------------------- the small profile in a game


def test_a_small_profile_seat_gets_the_short_rules_and_is_asked_for_the_decision_first():
    seen: list[list] = []

    def respond(messages, kwargs):
        seen.append(messages)
        return "approve. They look fine." if "approve or reject" in messages[-1].content else "Player 1. Player 2."

    setup = scripted_setup(ScriptedChatModel(respond=respond),
                           settings=ModelSettings(spec="scripted", constrained=False, profile="small"), extractor=None)
    host = asyncio.run(play_one(make_rules("official", 5), ["llm"] * 5, 0, setups=setup))
    systems = {m[0].content for m in seen}
    assert all("You play The Resistance: Avalon" in s for s in systems)  # prompts/system/rules_small.txt
    votes = [m[-1].content for m in seen if "Vote on the team" in m[-1].content]
    assert votes and all("Start your answer with one word, approve or reject" in v for v in votes)
    records = host.tracer.records
    assert all(r.valid for r in records if r.type == "extraction" and r.kind == "vote")  # read at once
    checks = [r for r in records if r.type == "speech_check"]
    assert checks and all(r.profile == "small" and r.words <= PROFILES["small"].speech_words for r in checks)


def test_a_small_profile_baseline_is_asked_for_its_concise_answer_first():
    from avalon_agents.agents.baseline import BaselineAgent, concise
    from avalon_agents.core.types import Role
    from avalon_agents.llm import ClientPool

    setup = scripted_setup(settings=ModelSettings(spec="scripted", profile="small"), learn=False)
    agent = BaselineAgent(seat=2, context=setup.context(ClientPool().for_game(None)))
    agent.rules, agent.role = make_rules("official", 5), Role.MERLIN
    assert agent.system().startswith("You play The Resistance: Avalon")  # the short rules text
    # the answer's form, in its standing instruction (the system message's "How you work"), the answer first
    form = agent.system().split("\n- Answer: ", 1)[1]
    assert form.index('"My concise talking content: ..."') < form.index('"My step-by-step thought process: ..."')
    assert agent._respond_prompt("Vote on the team.")[1].endswith("\nNow: Answer.")
    assert concise("My concise talking content: I approve. My step-by-step thought process: it is") == "I approve."
    assert concise("My step-by-step thought process: hm. My concise talking content: Reject.") == "Reject."
