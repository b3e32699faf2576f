"""Every consumer from its registry (issue 39): `avalon extract --kind` takes the decision kinds, `avalon import`
one subcommand per importer (a plugin's too), and a plugin's decision kind, which the engine would never ask, is
refused when it is registered, naming why. Asserted at the command line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from avalon_agents.decisions.kinds import KINDS
from tests.helpers import avalon, registries_restored

NLU = Path(__file__).parents[1] / "importers" / "avalon_nlu"


def test_extract_takes_every_decision_kind_the_lady_among_them():
    shown = avalon("extract", "--help").stdout
    assert all(name in shown for name, spec in KINDS.items() if spec.key is not None)
    done = avalon("extract", "--kind", "lady", "--text", "I'll look at Player 3", "--players", "7", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"action": 3, "method": "rule", "valid": True}
    myself = avalon("extract", "--kind", "lady", "--text", "Player 1", "--players", "7", "--seat", "1", "--json")
    assert json.loads(myself.stdout)["valid"] is False  # the holder cannot examine itself: the fallback


def test_import_has_a_subcommand_per_importer_a_plugins_too(tmp_path):
    from avalon_agents.importers import IMPORTERS

    listed = avalon("import", "--help").stdout
    assert set(IMPORTERS.names()) == {"avalonlogs", "avalon-nlu"} and all(n in listed for n in IMPORTERS)
    plugin = tmp_path / "again.py"
    plugin.write_text(textwrap.dedent('''\
        from avalon_agents.importers import Importer, avalon_nlu, register_importer

        register_importer(Importer(name="nlu-again", help="Avalon-NLU once more.", argument="dataset",
                                   log_files=avalon_nlu.log_files, import_logs=avalon_nlu.import_logs))
        '''))
    with registries_restored():
        done = avalon("import", "--plugin", str(plugin), "nlu-again", str(NLU), "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "imported 1 of 1 game(s) from avalon-nlu"
    assert len(list((tmp_path / "run").glob("game-*/meta.json"))) == 1
    unknown = avalon("import", "nlu-again", str(NLU), "--out", str(tmp_path / "other"))
    assert unknown.returncode == 2 and "No such command 'nlu-again'" in unknown.stderr


def test_a_plugins_decision_kind_is_refused_when_registered_naming_why(tmp_path):
    plugin = tmp_path / "bribe.py"
    plugin.write_text(textwrap.dedent('''\
        from dataclasses import replace
        from enum import Enum

        from avalon_agents.decisions.kinds import KINDS, register_kind


        class Mine(str, Enum):
            BRIBE = "bribe"


        register_kind(replace(KINDS["vote"], kind=Mine.BRIBE))
        '''))
    done = avalon("play", "--plugin", str(plugin), "--seats", "random")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "decision kind bribe: the engine asks only its own request kinds (speak, propose, vote, quest, " \
           "assassinate, lady), so a new kind needs its RequestKind, action and the rule asking it in the package" \
        in done.stderr
    assert "bribe" not in KINDS
