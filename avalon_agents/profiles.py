"""How a seat's prompts and answers are shaped for the size of its model: declared here once, read by the agents
(the rules text, where the decision goes), the model client (stop sequences) and the extractor (the speech
guard).

`standard` is the paper's protocol. `small` is for models of a few hundred million parameters (the embedded
SmolLM2-135M is the default of `local:`), which echo their instructions, write lines for other players and stop
mid-sentence at their token cap: the decision comes first and the reasons after, the rules text is shorter,
answers stop where a small model starts another speaker's line, speeches are capped in words and end at a
sentence end, and a speech that copies its own prompt is asked again once, then trimmed to its own words.
Choose one per model (`profile: small` in a model's settings, `--profile` on the command line); unset, the
provider's registration decides (llm.registry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ProfileName = Literal["standard", "small"]

ECHO_WORDS = 8
"""A speech that repeats this many consecutive words of its own prompt echoes it (the echo rate of the health
line and of `avalon analyze` counts these, for every profile)."""

OWN_WORDS = 3
"""A speech with fewer words than this of its own (outside what it copied of its prompt) is a copy whatever its
length ("Your answer to the host.", "Speak only as yourself.": counted as echoes); a trimmed speech left with fewer
says prompts/host/no_speech.txt instead."""


@dataclass(frozen=True)
class Profile:
    """What a profile changes.

    Attributes:
        name: its name in configs.
        rules: the system prompt's rules template (prompts/system/).
        decision_first: free-text decisions are asked to start with the decision itself (prompts/agent/
            decision_first.yaml), so that the rule stage reads it before the model runs out of tokens.
        stop: stop sequences sent with every call (a small model goes on with the host's or another player's
            line); at most four, OpenAI's limit.
        speech_words: speeches are cut to this many words, at the last sentence end inside them (0: no cap).
        echo_reask: a speech that copies its prompt (speeches.copies) is asked again once, then trimmed.
        answer_field: the line naming the speech's answer field in the combined action prompt
            (prompts/modules/answer_part.yaml): the small profile's offers no line to copy as the speech.
        standing: in the `cache` layout, the steps' standing instructions are said once in the system message and
            each prompt ends with a short line naming its step (a prefix cache then serves the instructions
            too); False: each prompt carries its step's whole task at its end. Both profiles say them once: on
            the embedded model the cognitive seats read 269 instead of 419 new tokens a call, fewer speeches copied
            their prompt (3 of 18, 8 of 18 against 21 of 36) and fewer decisions fell back, but a few more of the
            small model's combined JSON answers ran to max_tokens (3 and 6 calls of 130 and 148 failed after their
            retries, against none of 245; the response module then answers alone): docs/benchmarks.md.
    """

    name: ProfileName
    rules: str = "system/rules"
    decision_first: bool = False
    stop: tuple[str, ...] = ()
    speech_words: int = 0
    echo_reask: bool = False
    answer_field: str = "speech"
    standing: bool = True


PROFILES: dict[str, Profile] = {
    "standard": Profile("standard"),
    "small": Profile("small", rules="system/rules_small", decision_first=True,
                     stop=("\nHost:", "\nPlayer ", "\nYou:", "\n\n\n"), speech_words=60, echo_reask=True,
                     answer_field="speech_small"),
}


def profile(name: str | None) -> Profile:
    """A profile by name (None: standard)."""
    return PROFILES[name or "standard"]
