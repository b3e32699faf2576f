"""Reading a speech against its prompt: how many consecutive words of its instructions it copied, the copied words
trimmed away, a cap in words that ends at a sentence end, and whether it stops mid-sentence. Pure functions on text;
the extractor's speech guard and the health figures use them (avalon_agents.profiles says when).

Words are compared case-blind and without punctuation, so "The host has asked me" copies "the host has asked
me," word for word. A prompt's instructions are its words in the package's wording (`instructions`): the rules, the
role cards, the host's lines and questions, every template under prompts/; other players' speeches (quoted) and
what the seat's own model wrote before (its summary, analysis, plan) are not instructions, so a speech that repeats
some of them among its own words is no echo. A speech with (almost) nothing of its own is another matter
(`whole_copy`): made of its prompt's wording (a field's description, a line of the rules, however short) or of
other players' words, it is a copy and counted as an echo; only the seat's own earlier text may be said again.
"""

from __future__ import annotations

import re
from functools import lru_cache
from string import Formatter

from avalon_agents.profiles import ECHO_WORDS, OWN_WORDS
from avalon_agents.prompting import PROMPTS_DIR, all_templates, data

TOKEN = re.compile(r"\S+")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
QUOTED_SPEECH = re.compile(r'\bsaid: "(?:[^"\\\n]|\\.)*"')
"""A player's speech in a prompt: prompts/host/speech.txt, its words as a JSON string literal (narrate.quote)."""
WORDING_RUN = 4
"""A prompt's words are the package's wording where they stand in a run of this many words of a template's fixed
text (short enough for the text between two {placeholders}, long enough that a player's sentence rarely shares it)."""
FILLED = 3
"""Words between two stretches of wording are placeholders' values ("Player 1, Player 2 and Player 5 for quest 4")
where at most this many of them are other than players' names, numbers and "and"."""
SEAT_WORDS = frozenset({"player", "players", "and", "nobody"})
SENTENCE_END = re.compile(r"[.!?…](?:[\"'”’)\]]*)(?=\s|$)")
ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’)\]*]*\s*$")


@lru_cache(maxsize=65536)  # a prompt's few hundred distinct tokens, normalized again for every speech checked
def _norm(token: str) -> str:
    return "".join(WORD.findall(token.lower()))


def words(text: str) -> list[str]:
    """The text's words, lower case, without punctuation."""
    return [w for w in (_norm(t) for t in TOKEN.findall(text)) if w]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@lru_cache(maxsize=1)
def _wording() -> frozenset[tuple[str, ...]]:
    """Every run of WORDING_RUN words of the fixed text of the package's prompts: each template's text between its
    {placeholders}, and the strings of its YAML files (role cards, host phrases)."""
    pieces = [literal for t in all_templates() for literal, *_ in Formatter().parse(t.text)]
    for path in sorted(PROMPTS_DIR.rglob("*.yaml")):
        pieces += _strings(data(str(path.relative_to(PROMPTS_DIR).with_suffix(""))))
    runs = set()
    for piece in pieces:
        said = words(piece)
        runs.update(tuple(said[i:i + WORDING_RUN]) for i in range(len(said) - WORDING_RUN + 1))
    return frozenset(runs)


def instructions(prompt: str) -> list[tuple[str, bool] | None]:
    """The prompt's words: None for a word that is not its instructions (other players' speeches, quoted; the
    seat's own earlier text; anything no template wrote); (word, True) for the package's wording; (word, False) for
    placeholders' values between two stretches of it (FILLED: "Player 1 and Player 2 for quest 1"), which join the
    stretches but are the game's facts, not its wording."""
    return list(_instructions(prompt).marked)


def _marked(prompt: str) -> list[tuple[str, bool] | None]:
    given = words(QUOTED_SPEECH.sub("said: ", prompt))
    wording = _wording()
    ours = [False] * len(given)
    for i in range(len(given) - WORDING_RUN + 1):
        if tuple(given[i:i + WORDING_RUN]) in wording:
            ours[i:i + WORDING_RUN] = [True] * WORDING_RUN
    marked: list[tuple[str, bool] | None] = [(w, True) if mine else None for w, mine in zip(given, ours)]
    last = None
    for i, mine in enumerate(ours):
        if mine:
            gap = given[last + 1:i] if last is not None else []
            if gap and sum(w not in SEAT_WORDS and not w.isdigit() for w in gap) <= FILLED:
                marked[last + 1:i] = [(w, False) for w in gap]
            last = i
    return marked


class _Read:
    """A prompt's words as a speech is matched against them: `marked` (instructions' or `_copyable`'s) and `given`
    (each marked word, None for a break)."""

    def __init__(self, marked: list[tuple[str, bool] | None]) -> None:
        self.marked = tuple(marked)
        self.given = [m[0] if m else None for m in marked]  # None: not instructions, a break no word matches

    def longest(self, said: list[str], least: int = 1) -> tuple[int, int, int]:
        """(where in `given` the longest run of `said`'s words standing consecutively in it starts, where in `said`,
        its length): difflib's SequenceMatcher(None, given, said, autojunk=False).find_longest_match, its ties
        alike (the earliest in `given`, then in `said`), found from where `said`'s words stand in `given` (a
        longest match shorter than `least` words: (0, 0, 0), as SequenceMatcher's when nothing matches)."""
        given = self.given
        at: dict[str, list[int]] = {}
        for j, word in enumerate(said):
            at.setdefault(word, []).append(j)
        best = (0, 0, 0)
        for i in [i for i, word in enumerate(given) if word in at]:
            for j in at[given[i]]:  # type: ignore[index]
                if i and j and given[i - 1] == said[j - 1]:
                    continue  # inside a match found from its start
                k = 1
                while i + k < len(given) and j + k < len(said) and given[i + k] == said[j + k]:
                    k += 1
                if k > best[2]:  # ties: the earliest in `given` came first, then the earliest in `said`
                    best = (i, j, k)
        return best if best[2] >= least else (0, 0, 0)

    def wording(self, start: int, size: int) -> int:
        """The words of the package's wording in `size` words of `given` from `start`."""
        return sum(1 for m in self.marked[start:start + size] if m and m[1])


@lru_cache(maxsize=8)  # the guard reads a speech, and the same seat's next, against the same prompt several times
def _instructions(prompt: str) -> _Read:
    return _Read(_marked(prompt))


def _longest(said: list[str], read: _Read) -> tuple[int, int, int]:
    """(where in `said` the longest copy of the instructions starts, its length in words, the words of the
    package's wording in it)."""
    if not said or not read.given:
        return 0, 0, 0
    start, at, size = read.longest(said)
    return at, size, read.wording(start, size)


def copied_run(answer: str, prompt: str) -> int:
    """How many words of the package's wording the longest stretch of `answer` standing consecutively in `prompt`'s
    instructions holds (`instructions`: never other players' words nor the seat's own earlier text; the game's
    facts between two stretches of wording join them but are not counted)."""
    return _longest(words(answer), _instructions(prompt))[2]


def echoes(answer: str, prompt: str) -> bool:
    """The answer copies ECHO_WORDS or more consecutive words of its prompt's instructions."""
    return copied_run(answer, prompt) >= ECHO_WORDS


@lru_cache(maxsize=8)
def _copyable(prompt: str) -> _Read:
    """The prompt's words a speech may not consist of: its instructions (`instructions`: (word, True) for the
    package's wording, (word, False) for the game's facts between two stretches of it) and other players' speeches
    (quoted: (word, True)); None for the rest (the seat's own earlier text, anything no template wrote), a break."""
    marked: list[tuple[str, bool] | None] = []
    at = 0
    for match in [*QUOTED_SPEECH.finditer(prompt), None]:
        marked += [*_marked(prompt[at:match.start() if match else len(prompt)]), None]
        if match:
            marked += [*((w, True) for w in words(match.group())), None]
            at = match.end()
    return _Read(marked)


def own_words(answer: str, prompt: str) -> tuple[int, int]:
    """(the words of `answer` in stretches standing consecutively in its prompt's instructions or other players'
    speeches that hold WORDING_RUN or more words other than the game's facts, the words left: its own)."""
    read = _copyable(prompt)
    left, copied = [words(answer)], 0
    total = len(left[0])
    while left:
        part = max(left, key=len)
        start, at, size = read.longest(part, WORDING_RUN)  # a shorter copy holds fewer than WORDING_RUN words
        if read.wording(start, size) < WORDING_RUN:
            break
        copied += size
        left.remove(part)
        left += [rest for rest in (part[:at], part[at + size:]) if rest]
    return copied, total - copied


def whole_copy(answer: str, prompt: str) -> bool:
    """`answer` is its prompt's words and (almost) nothing of its own: WORDING_RUN or more words copied from its
    instructions (a field's description: "Your answer to the host.") or other players' speeches, and fewer than
    OWN_WORDS words beside them."""
    copied, own = own_words(answer, prompt)
    return copied >= WORDING_RUN and own < OWN_WORDS


def copies(answer: str, prompt: str) -> bool:
    """The answer is a copy of its prompt: ECHO_WORDS or more consecutive words of its instructions (`echoes`), or
    nothing of its own beside words of its prompt (`whole_copy`)."""
    return echoes(answer, prompt) or whole_copy(answer, prompt)


def sentences(text: str) -> list[str]:
    """The text's sentences (a sentence ends at . ! ? or … followed by a space or the end, or at a line end)."""
    parts = re.split(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+", text.strip())
    return [p.strip() for p in parts if p and p.strip()]


def trim_copies(answer: str, prompt: str, run: int = ECHO_WORDS) -> str:
    """`answer` without every sentence that holds a copy of `prompt`'s instructions of `run` or more words
    (`copied_run`) or that is a copy as a whole (`whole_copy`: "Speak only as yourself."): what is left is the
    speaker's own sentences, whole (a trimmed fragment would read as nonsense)."""
    marked = _instructions(prompt)
    parts = [part for part in sentences(answer) if not whole_copy(part, prompt)]
    flat = [(k, w) for k, part in enumerate(parts) for w in words(part)]  # a copy may cross sentences
    copied: set[int] = set()
    while True:
        kept = [(k, w) for k, w in flat if k not in copied]
        start, size, wording = _longest([w for _, w in kept], marked)
        if wording < run:
            return " ".join(part for k, part in enumerate(parts) if k not in copied)
        copied.update(k for k, _ in kept[start:start + size])


LABEL = re.compile(r"^\s*(?:(?:host|you|me|player\s*\d+)\s*|[A-Z][a-z]{0,11}):\s+", re.IGNORECASE)


def unlabelled(text: str) -> str:
    """The text without the labels a small model starts with ("Host:", "Player 3:", "You:", "A:",
    "Preliminary:")."""
    while (match := LABEL.match(text)) is not None:
        text = text[match.end():]
    return text


def mid_sentence(text: str) -> bool:
    """The text stops before its sentence ends (a model cut off at its token cap)."""
    stripped = text.strip()
    return bool(stripped) and not ENDS_SENTENCE.search(stripped)


def cut_speech(text: str, max_words: int) -> tuple[str, bool]:
    """(the speech in at most `max_words` words, ending at its last sentence end; whether anything was cut).
    Without a sentence end inside the cap, the words up to the cap end with a full stop."""
    text = text.strip()
    tokens = list(TOKEN.finditer(text))
    over = len(tokens) > max_words > 0
    head = text[: tokens[max_words - 1].end()] if over else text
    if not mid_sentence(head):
        return head, over
    ends = [m.end() for m in SENTENCE_END.finditer(head)]
    if ends:
        return head[: ends[-1]].strip(), True
    if not head:
        return head, over
    return head.rstrip(" ,;:-") + ".", True
