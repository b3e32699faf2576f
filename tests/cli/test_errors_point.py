"""Errors that point the right way: a newcomer's near miss is named with what was meant (the near spelling, the
agent a variant names, the command a config is for) on the line where it is written; one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from avalon_agents.experiments import load_experiments
from tests.cli.test_bad_inputs import one_line_error
from tests.helpers import avalon

ROOT = Path(__file__).parents[2]

RUN = """\
name: t
model: scripted
agents:
  ours: {kind: cognitive}
  base:
    kind: baseline
sides: {good: ours, evil: base}
"""
TOURNAMENT = """\
name: t
players: 5
entrants:
  a: {kind: rulebot}
  b: {kind: random}
blocks: 2
"""
REDTEAM = """\
name: t
model: scripted
defended:
  kind: llm
attacker:
  seat: 1
games: 1
"""
BIAS = """\
name: t
model: scripted
agents:
  vanilla: {kind: llm}
seats: [vanilla, vanilla, vanilla, vanilla, vanilla, vanilla]
lists: [players]
"""


def error_of(tmp_path, command: str, text: str, *needles: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = avalon(command, "--check", str(path))
    one_line_error(result, *needles)
    return result.stderr.strip()


@pytest.mark.parametrize(("command", "text", "typo", "meant", "line"), [
    ("run", RUN, "agents", "agnets", 3),
    ("run", RUN + "variants: {a: {}, b: {series: 2}}\n", "variants", "varaints", 8),  # a file key, no field
    ("run", RUN, "sides", "sieds", 7),
    ("tournament", TOURNAMENT, "entrants", "entrnats", 3),
    ("tournament", TOURNAMENT, "blocks", "blokcs", 6),
    ("tournament", TOURNAMENT + "seed: 3\n", "seed", "seeed", 7),
    ("redteam", REDTEAM, "defended", "defnded", 3),
    ("bias", BIAS, "agents", "agnets", 3),
    ("bias", BIAS, "lists", "list", 6),
])
def test_a_misspelled_top_key_names_the_near_spelling(tmp_path, command, text, typo, meant, line):
    bad = text.replace(f"{typo}:", f"{meant}:", 1)
    error_of(tmp_path, command, bad, f"c.yaml:{line}: {meant}: unknown key (did you mean {typo}?)")


def test_a_nested_misspelled_key_names_the_near_spelling_and_its_line(tmp_path):
    error_of(tmp_path, "run", RUN.replace("    kind: baseline", "    kidn: baseline"),
             "c.yaml:6: agents.base.kidn: unknown key (did you mean kind?)")
    error_of(tmp_path, "redteam", REDTEAM.replace("  seat: 1\n", "  seat: 1\n  sied: evil\n"),
             "c.yaml:7: attacker.sied: unknown key (did you mean side?)")
    error_of(tmp_path, "tournament", TOURNAMENT.replace("{kind: random}", "{kidn: random}"),
             "c.yaml:5: entrants.b.kidn: unknown key (did you mean kind?)")
    far = error_of(tmp_path, "run", RUN + "colour: blue\n", "c.yaml:8: colour: unknown key")
    assert "did you mean" not in far  # nothing near: no guess


def test_a_variant_naming_an_unknown_agent_says_so(tmp_path):
    variant = RUN + ("variants:\n  full: {}\n  wo_analysis:\n    agents:\n      our:\n"
                     "        modules: {analysis: {enabled: false}}\n")
    error_of(tmp_path, "run", variant, "c.yaml:12: variants.wo_analysis.agents.our: no agent named 'our'",
             "agents: ours, base; did you mean ours?")
    grid = RUN + "grid:\n  agents.our.modules.analysis.enabled: [true, false]\n"
    error_of(tmp_path, "run", grid, "c.yaml:9: grid: agents.our.modules.analysis.enabled: no agent named 'our'")
    added = variant.replace("      our:\n", "      our:\n        kind: rulebot\n").replace(
        "        modules: {analysis: {enabled: false}}\n", "")  # a variant may add an agent, with its kind
    path = tmp_path / "added.yaml"
    path.write_text(added)
    assert load_experiments(path)["wo_analysis"].agents["our"].kind == "rulebot"


@pytest.mark.parametrize(("text", "line", "needle"), [
    # a variant's own value is where the mistake is, not the base's key it overrides
    (RUN + "variants:\n  a: {}\n  swap:\n    sides: {good: base, evil: other}\n", 11,
     "(variant swap): sides.evil: no agent named 'other'"),
    (RUN + "variants:\n  a: {}\n  b:\n    agents:\n      ours:\n        modules:\n          analysis:\n"
           "            enabled: maybe\n", 15, "agents.ours.modules.analysis.enabled"),
    (RUN + "grid:\n  agents.ours.modules.analysis.enabled: [true, maybe]\n", 9, "analysis.enabled"),
    # a block mapping's error is on its key's line, not on its first entry's
    (RUN.replace("  ours: {kind: cognitive}\n  base:\n    kind: baseline\n", "  {}\n"), 3, "agents: name at least one"),
    # a list's item on its own line, without pydantic's union member in the path
    (RUN + "roles:\n  - merlin\n  - 3\n  - loyal_servant\n  - loyal_servant\n  - morgana\n  - assassin\n", 10,
     "roles.1: Input should be"),
    (RUN.replace("    kind: baseline", "    kind: baseline\n    cards: fancy"), 7, "agents.base.cards"),
    # a check across an agent's fields: the line of the field its message names
    (RUN.replace("    kind: baseline", "    kind: rulebot\n    learn: false\n    modules:\n      plan: {enabled: false}"),
     8, "agents.base: modules: agent kind 'rulebot' has no modules"),
])
def test_line_numbers_point_at_the_mistake(tmp_path, text, line, needle):
    message = error_of(tmp_path, "run", text, needle)
    assert f"c.yaml:{line}" in message, message
    assert "list[" not in message and "function-" not in message


@pytest.mark.parametrize("spec, meant", [("Local:smollm2", "local:smollm2"), ("lokal:smollm2", "local:smollm2"),
                                         ("OpenAI:gpt-4o-mini", "openai:gpt-4o-mini")])
def test_a_provider_in_another_case_or_a_letter_off_names_ours(tmp_path, spec, meant):
    error_of(tmp_path, "run", RUN.replace("model: scripted", f"model: {spec}"),
             f"c.yaml:2: model.spec: no provider {spec.split(':')[0]!r}", f"did you mean {meant}?")
    one_line_error(avalon("play", "--seats", "llm", "--model", spec), f"did you mean {meant}?")


def test_a_provider_langchain_knows_is_left_to_it():
    from avalon_agents.llm.settings import check_spec

    check_spec("anthropic:claude-3-5-haiku-latest")  # not ours, not near ours: langchain's init_chat_model's
    check_spec("azure_openai:gpt-4o")


@pytest.mark.parametrize(("command", "config", "plays"), [
    ("play", "experiments/quickstart.yaml", "run"), ("play", "experiments/redteam.yaml", "redteam"),
    ("analyze", "experiments/quickstart.yaml", "run"), ("analyze", "experiments/tournament_bots.yaml", "tournament"),
])
def test_a_config_given_to_play_or_analyze_names_the_command_that_plays_it(command, config, plays):
    one_line_error(avalon(command, str(ROOT / config)), f"run `avalon {plays} {ROOT / config}`")


def test_other_usage_errors_of_play_and_analyze_are_unchanged(tmp_path):
    one_line_error(avalon("play", "--agent-config", str(ROOT / "experiments/agents/per_turn.yaml"), "--players",
                          "11"), "--players")  # a config given to an option is no mistake of this kind
    one_line_error(avalon("play", "foo"), "unexpected extra argument (foo)")
    (tmp_path / "notes.yaml").write_text("just: notes\n")
    one_line_error(avalon("analyze", str(tmp_path / "notes.yaml")), "is a file")


@pytest.mark.slow  # a new process, so that what the command imports is its own
@pytest.mark.parametrize("command", ["run", "tournament"])
def test_a_missing_key_is_found_before_anything_heavy_is_loaded(tmp_path, command):
    import subprocess
    import sys

    text = (RUN if command == "run" else TOURNAMENT.replace("{kind: random}", "{kind: llm}")).replace(
        "model: scripted\n", "") + "model: openai:gpt-4o-mini\n"
    (tmp_path / "c.yaml").write_text(text)
    heavy = ("langchain_openai", "matplotlib", "chromadb", "torch", "openai")
    probe = ("import sys\nfrom avalon_agents.cli import main\n"
             f"sys.argv = ['avalon', {command!r}, {str(tmp_path / 'c.yaml')!r}, '--out', {str(tmp_path / 'o')!r}]\n"
             "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
             f"print(code, [m for m in {heavy!r} if m in sys.modules])\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert "needs OPENAI_API_KEY in the environment" in done.stderr, done.stderr[-2000:]
    assert done.stdout.strip() == "2 []", done.stdout  # exit 2, none of them imported
    assert not (tmp_path / "o").exists()


def test_a_misspelled_agent_kind_or_rules_preset_names_the_near_one(tmp_path):
    error_of(tmp_path, "run", RUN.replace("{kind: cognitive}", "{kind: cognitve}"),
             "c.yaml:4: agents.ours.kind: unknown agent kind 'cognitve'", "(did you mean cognitive?)")
    error_of(tmp_path, "run", RUN + "rules: offical\n", "c.yaml:8: rules: unknown rules preset 'offical'",
             "(did you mean official?)")


def test_a_missing_key_is_named_on_the_line_of_the_mapping_that_lacks_it(tmp_path):
    nested = error_of(tmp_path, "run", RUN.replace("    kind: baseline", "    learn: false"),
                      "c.yaml:5: agents.base.kind: required, not given")
    top = error_of(tmp_path, "run", RUN.replace("name: t\n", ""), "c.yaml: name: required, not given")
    assert "Field required" not in nested + top
