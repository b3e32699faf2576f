"""The deterministic stage of the extractor: whole-word parsing that prefers "unclear" to a wrong answer.

Every function returns None when the text does not settle the question; the extractor then asks its LLM
stage or the agent again. What it handles:

- seats are whole words: "Player 1" never matches inside "Player 10"; "Players 2, 3 and 5", "P4",
  "player three" and "myself" (the speaker's own seat) all count;
- a seat named only in a negated way ("not Player 4", "without Player 4", "Player 4 is not Merlin") is
  left out, and a seat named twice counts once;
- cue words are negated by a nearby "not", "n't", "never" or "no" ("I don't disagree" approves);
- answers that point both ways are unclear.
"""

from __future__ import annotations

import re

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10}
_NUM = r"(?:\d{1,2}|" + "|".join(NUMBER_WORDS) + r")"
_LIST = _NUM + r"(?:\s*(?:,|&|\+|/|\band\b|\bor\b)\s*" + _NUM + r")*"
SEAT_LIST = re.compile(r"\b(?:players?|seats?)\s*#?\s*(" + _LIST + r")\b|\bp(\d{1,2})\b|\[\s*(" + _LIST + r")\s*\]",
                       re.IGNORECASE)
SELF = re.compile(r"\bmyself\b|(?<=\band )me\b|(?<=, )me\b|\bme(?= and\b)|\bme(?=,)", re.IGNORECASE)
NUMBER = re.compile(_NUM, re.IGNORECASE)
CLAUSE_END = re.compile(r"[.;:!?()\n]|\bbut\b|\bbecause\b|\bsince\b|\bwhile\b", re.IGNORECASE)
NEGATION_BEFORE = re.compile(r"\b(?:not|no|never|except|without|excluding|exclude|instead of|rather than|"
                             r"leave out|leaving out|minus|\w+n't)\b", re.IGNORECASE)
NEGATION_AFTER = re.compile(r"^\s*(?:is|seems|looks|should|must|will|would|can|could|am)?\s*(?:\w+n't|not|never|"
                            r"cannot|unlikely)\b", re.IGNORECASE)
TEAM_CUE = re.compile(r"\b(?:propos\w*|choos\w*|chose|pick\w*|select\w*|nominat\w*|team|send\w*|take|taking|"
                      r"go with|going with|want|bring\w*|includ\w*)\b", re.IGNORECASE)
TARGET_CUE = re.compile(r"\b(?:merlin|assassinat\w*|kill\w*|target\w*|stab\w*|nam(?:e|ing)|choos\w*|chose|pick\w*|"
                        r"accus\w*|eliminat\w*)\b", re.IGNORECASE)
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")

APPROVE = r"approv\w*|agree\w*|accept\w*|support\w*|endorse\w*|in favou?r|vote for|back (?:this|the) team|yes"
REJECT = r"reject\w*|disagree\w*|oppos\w*|declin\w*|refus\w*|veto\w*|vote against|against (?:this|the) team|no"
SUCCESS = r"success\w*|succeed\w*"
FAIL = r"fail\w*|sabotag\w*"
VOTE_CUES = [(re.compile(r"\b(?:" + APPROVE + r")\b", re.IGNORECASE), True),
             (re.compile(r"\b(?:" + REJECT + r")\b", re.IGNORECASE), False)]
QUEST_CUES = [(re.compile(r"\b(?:" + SUCCESS + r")\b", re.IGNORECASE), True),
              (re.compile(r"\b(?:" + FAIL + r")\b", re.IGNORECASE), False)]
NEGATOR = re.compile(r"\b(?:not|never|no|\w+n't|cannot)\b", re.IGNORECASE)
NEGATION_WORDS = 3  # a negator this many words before a cue word flips it
WEAK_WORDS = {"yes", "no"}  # only trusted as the first word of the answer


def _number(token: str) -> int:
    token = token.lower()
    return NUMBER_WORDS[token] if token in NUMBER_WORDS else int(token)


def _clause_before(text: str, start: int, width: int = 40) -> str:
    window = text[max(0, start - width):start]
    ends = list(CLAUSE_END.finditer(window))
    return window[ends[-1].end():] if ends else window


def _clause_after(text: str, end: int, width: int = 30) -> str:
    window = text[end:end + width]
    stop = CLAUSE_END.search(window)
    return window[:stop.start()] if stop else window


def _mentions(text: str, seat: int) -> list[tuple[int, bool]]:
    """(seat, negated) for every seat mention in reading order."""
    found: list[tuple[int, int, int, bool]] = []  # (start, end_of_group, seat, list_negated)
    for match in SEAT_LIST.finditer(text):
        group = match.group(1) or match.group(2) or match.group(3)
        offset = match.start(match.lastindex or 0)
        for number in NUMBER.finditer(group):
            found.append((offset + number.start(), match.start(), match.end(), _number(number.group(0))))
    for match in SELF.finditer(text):
        found.append((match.start(), match.start(), match.end(), seat))
    found.sort()
    mentions = []
    for _, start, end, who in found:
        negated = bool(NEGATION_BEFORE.search(_clause_before(text, start))) or bool(
            NEGATION_AFTER.search(_clause_after(text, end)))
        mentions.append((who, negated))
    return mentions


def _positive(mentions: list[tuple[int, bool]]) -> list[int]:
    """Seats named at least once without negation, in first-mention order."""
    return list(dict.fromkeys(who for who, negated in mentions if not negated))


def seats_named(text: str, *, seat: int, players: int) -> list[int]:
    """Every seat the text names (not only in a negated way), once each, in order. Out-of-range seats are kept
    so that validation can say what was wrong; `players` bounds nothing else."""
    del players
    return _positive(_mentions(text, seat))


def parse_team(text: str, *, seat: int, players: int, team_size: int) -> tuple[int, ...] | None:
    """The team the text proposes, sorted, or None. First the sentences that say they propose a team, then
    the whole text; the answer counts only when it names exactly `team_size` seats."""
    del players
    sentences = [s.group(0) for s in SENTENCE.finditer(text) if TEAM_CUE.search(s.group(0))]
    for scope in (" ".join(sentences), text):
        named = _positive(_mentions(scope, seat))
        if len(named) == team_size:
            return tuple(sorted(named))
        if named:  # the text commits to a set of the wrong size: unclear, never a guess
            return None
    return None


def parse_target(text: str, *, seat: int, players: int) -> int | None:
    """The one seat the Assassin names, or None."""
    del players
    sentences = [s.group(0) for s in SENTENCE.finditer(text) if TARGET_CUE.search(s.group(0))]
    for scope in (" ".join(sentences), text):
        named = [s for s in _positive(_mentions(scope, seat))]
        if len(named) == 1:
            return named[0]
        if named:
            return None
    return None


def _polarity(text: str, cues: list[tuple[re.Pattern[str], bool]]) -> bool | None:
    """True / False when every cue points the same way (negations flip a cue), else None."""
    first_word = len(text) - len(text.lstrip(" \t\n*\"'`#->"))
    values: set[bool] = set()
    for pattern, value in cues:
        for match in pattern.finditer(text):
            if match.group(0).lower() in WEAK_WORDS and match.start() != first_word:
                continue
            before = " ".join(_clause_before(text, match.start()).split()[-NEGATION_WORDS:])
            values.add(value != bool(NEGATOR.search(before)))
    return values.pop() if len(values) == 1 else None


def parse_vote(text: str) -> bool | None:
    """True (approve), False (reject) or None (unclear)."""
    return _polarity(text, VOTE_CUES)


def parse_quest(text: str) -> bool | None:
    """True (success), False (fail) or None (unclear)."""
    return _polarity(text, QUEST_CUES)
