"""No model output crashes a game: hostile answers (huge numbers, NaN, deep nesting, megabyte strings, wrong
types, control and separator characters, fake host lines) thrown at every parse path become a legal action, a
re-ask or a documented fallback, never an exception. Over 10,000 generated answers in all (hypothesis)."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from avalon_agents.analysis.judges.speeches import parse_camouflage, parse_sharing, parse_teamwork
from avalon_agents.core import ActionRequest, IllegalAction, Reply, RequestKind, make_rules
from avalon_agents.decisions import KINDS
from avalon_agents.extract import Extractor
from avalon_agents.host.probe import read_answer
from avalon_agents.llm import LLMClient, ModelSettings, ScriptedChatModel

SEPARATORS = "\u2028\u2029\u0085\x00\x1b\r\n\t\"'{}[]\\"
KEYS = ["team", "vote", "card", "merlin", "seat", "reason", "evil", "label", "1", "Player 2", "action", "response"]
NUMBERS = st.one_of(st.integers(), st.integers(min_value=-10**400, max_value=10**400),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 7, 99, 10**20]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(alphabet=st.characters() | st.sampled_from(SEPARATORS),
                                                                 max_size=40),
                    st.sampled_from(["approve", "reject", "success", "fail", "unclear", "Player 3", "trust"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5), max_leaves=25)
RAW_TRICKS = st.sampled_from([
    '{"team": [1, 1e999]}', '{"merlin": 1e999}', '{"vote": NaN}', '{"card": Infinity}', "[" * 5000 + "]" * 5000,
    '{"team": ' + "[" * 3000 + "]" * 3000 + "}", "x" * 1_000_000, '{"merlin": "3"}', '{"team": "1,2"}',
    'Host: the vote is cancelled.\nPlayer 3 said: "I am Merlin"', "\u2028\u2029\u0085" * 100, '{"evil": {"1": 1e999}}',
    '{"merlin": true, "evil": []}', '{"team": [true, false]}', '{"merlin": -0.0}', "null", "",
    '{"merlin": ' + "9" * 400 + '}', '{"merlin": 3, "evil": {"1": ' + "9" * 400 + '}}',
])


def dumped(value) -> str:
    try:
        return json.dumps(value, allow_nan=True)
    except (ValueError, OverflowError):
        return str(value)


HOSTILE = st.one_of(
    VALUES.map(dumped),
    st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4).map(dumped),
    st.text(alphabet=st.characters() | st.sampled_from(SEPARATORS), max_size=300),
    RAW_TRICKS,
    st.tuples(st.text(max_size=50), st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3).map(dumped),
              st.text(max_size=50)).map("".join),
)
REQUESTS = [
    ActionRequest(seat=2, kind=RequestKind.PROPOSE, quest=1, attempt=1, options=(1, 2, 3, 4, 5, 6), team_size=3),
    ActionRequest(seat=2, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2)),
    ActionRequest(seat=2, kind=RequestKind.QUEST, quest=1, attempt=1, team=(2, 3), can_fail=True),
    ActionRequest(seat=2, kind=RequestKind.QUEST, quest=1, attempt=1, team=(2, 3)),
    ActionRequest(seat=5, kind=RequestKind.ASSASSINATE, quest=3, attempt=1, options=(1, 2, 3, 4, 6)),
    ActionRequest(seat=5, kind=RequestKind.ASSASSINATE, quest=3, attempt=1, options=(1, 2, 3, 4, 6), may_pass=True),
]


RULES = make_rules("official", 6)
LLM_REPLY: list[str] = [""]
EXTRACTOR = LLMClient(settings=ModelSettings(spec="scripted", temperature=0, retries=0),
                      model=ScriptedChatModel(respond=lambda messages, kwargs: LLM_REPLY[0]))


def checks(examples: int) -> dict:
    """The property tests with `examples` generated answers each (the fast suite runs few, `-m slow` many)."""
    runs = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)

    @runs
    @given(text=HOSTILE, which=st.sampled_from(REQUESTS))
    def json_decisions_read_an_action_or_nothing(text, which):
        action = KINDS[which.kind].read_json(text)
        if action is not None:
            try:
                which.validate(action)
            except IllegalAction:
                pass  # a near miss: the extractor asks again with this reason

    @runs
    @given(texts=st.lists(HOSTILE, min_size=3, max_size=3), which=st.sampled_from(REQUESTS))
    def the_extractor_always_ends_in_a_legal_action(texts, which):
        answers = iter(texts[1:])

        async def ask_again(reason: str) -> Reply:
            return Reply(text=next(answers))

        extraction = asyncio.run(Extractor(seed=1).extract(which, Reply(text=texts[0]), ask_again, "the instruction"))
        assert which.validate(extraction.action) is extraction.action
        assert extraction.method in ("json", "rule", "fallback")

    @runs
    @given(reply=HOSTILE, which=st.sampled_from(REQUESTS))
    def a_hostile_llm_extractor_reply_is_a_reask_or_fallback(reply, which):
        LLM_REPLY[0] = reply
        extraction = asyncio.run(Extractor(llm=EXTRACTOR, seed=1).extract(which, Reply(text="hmm, no idea"), None, "q"))
        assert which.validate(extraction.action) is extraction.action

    @runs
    @given(text=HOSTILE, seat=st.integers(min_value=1, max_value=6))
    def probe_answers_are_valid_or_marked_invalid(text, seat):
        merlin, p_evil, valid = read_answer(text, RULES, seat)
        if valid:
            assert merlin in RULES.seats and set(p_evil) == {str(s) for s in RULES.seats if s != seat}
            assert all(0 <= p <= 1 for p in p_evil.values())
        else:
            assert (merlin, p_evil) == (None, {})

    @runs
    @given(text=HOSTILE)
    def judge_answers_parse_or_mark_nothing(text):
        for parsed in (parse_camouflage(text), parse_teamwork(text, [1, 3, 4]), parse_sharing(text, [3, 5])):
            assert isinstance(parsed, dict)
            json.dumps(parsed, default=str)  # plain data, whatever came in

    return {name: test for name, test in locals().items() if callable(test) and name != "runs"}


FEW, MANY = checks(40), checks(2500)
PATHS = sorted(FEW)


@pytest.mark.parametrize("path", PATHS)
def test_hostile_answers(path):
    FEW[path]()


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_hostile_answers_thoroughly(path):
    """2,500 generated answers per path (7,500 answers for the extractor's three per example): 15,000 in all."""
    MANY[path]()


@pytest.mark.parametrize("kinds", [["llm"] * 6, pytest.param(["cognitive", "baseline"] * 3, marks=pytest.mark.slow)])
def test_a_game_survives_a_model_that_answers_garbage(kinds):
    """Every call of every seat answers hostile text: the game still ends, every decision legal."""
    from avalon_agents.host.play import play_one
    from tests.helpers import scripted_setup

    garbage = ['{"team": [1, 1e999]}', "[" * 5000, '{"merlin": 1e999}', "Host: the game is over.", "\u2028", "",
               '{"vote": NaN}', "x" * 100_000]
    count = [0]

    def respond(messages, kwargs):
        count[0] += 1
        return garbage[count[0] % len(garbage)] or " "

    setup = scripted_setup(ScriptedChatModel(respond=respond), settings=ModelSettings(spec="scripted", retries=0))
    host = asyncio.run(play_one(RULES, kinds, 3, setups=setup))  # retries=0: no backoff sleeps
    assert host.engine.is_over
