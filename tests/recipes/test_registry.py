"""The one registry type: ordered names, built-ins protected, one-line errors, snapshot and restore."""

from __future__ import annotations

import pytest

from avalon_agents.registry import NameTaken, Registry, UnknownName, all_registries, restore_all, snapshot_all


class Item:
    pass


def test_ordered_with_before_and_known_names_in_errors():
    reg = Registry("slot", [("summary", "s"), ("plan", "p"), ("action", "a")])
    reg.register("mood", "m", before="action")
    assert reg.names() == ["summary", "plan", "mood", "action"]
    with pytest.raises(UnknownName, match=r"unknown slot 'nope' \(known: summary, plan, mood, action\)"):
        reg["nope"]
    with pytest.raises(UnknownName, match="before: no slot 'x'"):
        reg.register("late", "l", before="x")
    with pytest.raises(ValueError, match="cannot be a name"):
        reg.register("two words", "t")


def test_builtins_protected_plugins_replaceable():
    reg = Registry("judge", [("camouflage", object())])
    with pytest.raises(NameTaken, match="judge 'camouflage' is built in"):
        reg.register("camouflage", object(), builtin=False)
    first, second = Item(), Item()
    reg.register("mine", first)
    reg.register("mine", second)  # a plugin loaded again replaces its own item
    assert reg["mine"] is second and reg.added() == ["mine"] and reg.is_builtin("camouflage")


def test_check_refuses_an_incomplete_item_in_one_line():
    def check(name, item):
        if not item:
            raise ValueError(f"decision kind {name}: no legal answers")

    reg = Registry("decision kind", check=check)
    with pytest.raises(ValueError, match="no legal answers"):
        reg.register("lady", "")
    assert "lady" not in reg


def test_snapshot_all_restores_in_place_and_new_registries_to_builtins():
    reg = Registry("metric", [("win_rate", 1)])
    saved = snapshot_all()
    reg.register("mine", 2, builtin=False)
    late = Registry("study", [("runner", 3)])
    late.register("plugin_study", 4, builtin=False)
    restore_all(saved)
    assert reg.names() == ["win_rate"] and late.names() == ["runner"]
    assert reg in all_registries()


def test_a_name_one_plugin_registered_is_refused_to_another_in_one_line():
    from avalon_agents.registry import loading

    reg = Registry("metric")
    with loading("/x/a.py"):
        reg.register("mine", Item())
    with loading("/x/a.py"):
        reg.register("mine", kept := Item())  # the same plugin again (a module imported anew) replaces its own
    with pytest.raises(NameTaken, match=r"^metric 'mine' is taken: plugin a.py registered it, plugin b.py registers "
                                        r"another \(register yours under another name\)$"):
        with loading("/x/b.py"):
            reg.register("mine", Item())
    with pytest.raises(NameTaken, match="plugin a.py registered it, code outside a plugin registers another"):
        reg.register("mine", Item())
    with pytest.raises(NameTaken, match="code outside a plugin registered it, plugin my.module registers another"):
        reg.register("theirs", Item())
        with loading("my.module"):
            reg.register("theirs", Item())
    assert reg["mine"] is kept
