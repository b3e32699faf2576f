"""The replay pages without a browser: the timeline holds every event and record where it happened, the page
embeds the game's data and loads nothing from the network, the index links every game."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from avalon_agents.analysis.load import game_dirs
from avalon_agents.cli import cli
from avalon_agents.view.game import game_data, game_page, timeline
from avalon_agents.view.game.pages import embed, page_name
from avalon_agents.records.run_dir import EVENTS, RESULT, TRACE


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def private_records(game: Path) -> list[dict]:
    return lines(game / TRACE)


def calls(game: Path) -> list[dict]:
    return [r for r in private_records(game) if r["type"] == "llm_call"]


def resolved(call: dict, texts: list[str]) -> dict:
    """A timeline's LLM call as the trace holds it: its messages' contents back in place."""
    messages = [{"role": m["role"], "content": texts[m["text"]]} for m in call["messages"]]
    return {k: v for k, v in call.items() if k not in ("item", "visible_to")} | {"messages": messages}


def embedded(page: str) -> dict:
    (data,) = re.findall(r'<script type="application/json" id="game-data">(.*?)</script>', page, re.S)
    return json.loads(data)


def test_the_timeline_holds_every_event_in_order_and_every_record_once(replay_run):
    for game in game_dirs(replay_run):
        items = game_data(game, game.name)["items"]
        events = [i for i in items if i["item"] == "event"]
        assert [e["seq"] for e in events] == [e["seq"] for e in lines(game / EVENTS)]
        records = [i for i in items if i["item"] == "record"]
        kinds = Counter(r["type"] for r in records)
        assert kinds == Counter(r["type"] for r in private_records(game))
        assert all(kinds[k] for k in ("module", "extraction", "probe", "llm_call", "speech_check"))
        assert all(r["visible_to"] == [r["seat"]] for r in records)


def test_every_llm_call_is_in_the_timeline_with_its_prompt_and_reply_for_its_seat_alone(replay_run):
    for game in game_dirs(replay_run):
        data = game_data(game, game.name)
        shown = [i for i in data["items"] if i["type"] == "llm_call"]
        recorded = calls(game)
        assert len(shown) == len(recorded) > 0 and {c["seat"] for c in recorded} == {1, 3, 4, 6}  # no rulebot
        for seat in {c["seat"] for c in recorded}:  # each seat's calls in the order it made them
            assert [resolved(c, data["texts"]) for c in shown if c["seat"] == seat] == [
                c for c in recorded if c["seat"] == seat]
        assert all(c["visible_to"] == [c["seat"]] for c in shown)
        assert all(c["reply"] and len(c["messages"]) == 2 for c in shown)
        # each text once: the system prompt a seat sends with every call is not repeated
        contents = [m["content"] for c in recorded for m in c["messages"]]
        assert sorted(data["texts"]) == sorted(set(contents)) and len(data["texts"]) < len(contents)


def test_each_llm_call_sits_just_before_the_record_it_led_to(replay_run):
    game = game_dirs(replay_run)[0]
    trace = private_records(game)
    items = game_data(game, game.name)["items"]
    bare = [{k: v for k, v in i.items() if k not in ("item", "visible_to")} for i in items]
    for n, call in enumerate(trace):
        if call["type"] != "llm_call":
            continue
        led_to = next(r for r in trace[n + 1:] if r["seat"] == call["seat"] and r["type"] != "llm_call")
        at = next(i for i, item in enumerate(items) if item["type"] == "llm_call" and item["request_hash"]
                  == call["request_hash"] and item["step"] == call["step"] and item["seat"] == call["seat"])
        after = next(b for b in bare[at + 1:] if b["type"] != "llm_call")  # the seat's re-asks may come between
        assert after == led_to, (call["name"], call["seat"], call["quest"])
        if call["stage"] == "probe":  # after the quest it asked about
            assert [e["quest"] for e in items[:at] if e["type"] == "quest_completed"][-1] == call["quest"]
        if call["name"] == "vanilla" and call["request"] == "speak":  # the LLM seat's speech comes next
            said = next(i for i in items[at:] if i["type"] == "speech")
            assert said["seat"] == call["seat"] and said["quest"] == call["quest"]


def test_records_sit_where_they_happened(replay_run):
    game = game_dirs(replay_run)[0]
    items = game_data(game, game.name)["items"]
    for i, item in enumerate(items):
        if item["type"] == "team_proposed" and item["leader"] in (1, 3, 4, 6):  # a model seat's proposal, read before
            before = [r for r in items[:i] if r["type"] == "extraction"][-1]
            assert (before["kind"], before["seat"], before["quest"]) == ("propose", item["leader"], item["quest"])
        if item["type"] == "probe":  # after the quest it is about, before the next one
            done = [e["quest"] for e in items[:i] if e["type"] == "quest_completed"]
            assert done and done[-1] == item["quest"]
        if item["type"] == "speech" and item["seat"] in (1, 4, 6):  # a cognitive seat's response became it
            said = [r for r in items[:i] if r["type"] == "module" and r["seat"] == item["seat"]]
            assert said[-1]["slot"] == "response" and said[-1]["text"] == item["text"]


def test_an_unanchored_record_goes_before_the_next_anchored_one():
    events = [{"type": "leader_chosen", "seq": 0, "quest": 1, "attempt": 1},
              {"type": "team_proposed", "seq": 1, "quest": 1, "attempt": 1, "leader": 2},
              {"type": "game_ended", "seq": 2, "quest": 1, "attempt": 1}]
    plan = {"type": "module", "seat": 2, "module": "plan", "slot": "plan", "quest": 1, "attempt": 0, "text": "x"}
    read = {"type": "extraction", "seat": 2, "kind": "propose", "quest": 1, "attempt": 1, "method": "rule"}
    late = {"type": "module", "seat": 3, "module": "experience", "slot": "experience", "quest": 1, "text": "y"}
    order = [(i["item"], i["type"]) for i in timeline(events, [plan, read, late])]
    assert order == [("event", "leader_chosen"), ("record", "module"), ("record", "extraction"),
                     ("event", "team_proposed"), ("event", "game_ended"), ("record", "module")]


def test_calls_go_before_what_they_led_to_and_a_speech_check_before_its_speech():
    events = [{"type": "leader_chosen", "seq": 0, "quest": 1, "attempt": 1},
              {"type": "speech", "seq": 1, "quest": 1, "attempt": 1, "seat": 3, "text": "hi"},
              {"type": "vote_cast", "seq": 2, "quest": 1, "attempt": 1, "seat": 2},
              {"type": "vote_cast", "seq": 3, "quest": 1, "attempt": 1, "seat": 3},
              {"type": "quest_completed", "seq": 4, "quest": 1, "attempt": 1},
              {"type": "game_ended", "seq": 5, "quest": 1, "attempt": 1}]

    def call(seat, name):
        return {"type": "llm_call", "seat": seat, "name": name, "quest": 1, "messages": []}

    def vote(seat):
        return {"type": "extraction", "seat": seat, "kind": "vote", "quest": 1, "attempt": 1, "method": "json"}

    records = [call(3, "speak"), {"type": "speech_check", "seat": 3, "quest": 1, "attempt": 1},
               call(3, "vote"), call(2, "vote"), call(3, "extract"), vote(2), vote(3),
               call(2, "belief"), call(None, "judge"), {"type": "probe", "seat": 2, "quest": 1}]
    order = [(i["type"], i.get("seat"), i.get("name") or i.get("kind")) for i in timeline(events, records)]
    assert order == [("leader_chosen", None, None), ("llm_call", 3, "speak"), ("speech_check", 3, None),
                     ("speech", 3, None), ("llm_call", 2, "vote"), ("extraction", 2, "vote"), ("vote_cast", 2, None),
                     ("llm_call", 3, "vote"), ("llm_call", 3, "extract"), ("extraction", 3, "vote"),
                     ("vote_cast", 3, None), ("quest_completed", None, None), ("llm_call", 2, "belief"),
                     ("probe", 2, None), ("game_ended", None, None), ("llm_call", None, "judge")]
    judge = timeline(events, records)[-1]
    assert judge["visible_to"] == []  # a call of no seat: no seat's view shows it


def test_the_page_embeds_the_game_and_loads_nothing_from_the_network(replay_run):
    game = game_dirs(replay_run)[0]
    page = (replay_run / "replay" / page_name(game.name)).read_text()
    assert embedded(page) == json.loads(json.dumps(game_data(game, game.name)))
    assert not re.search(r'(src|href)\s*=\s*["\']?\s*(https?:)?//', page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and not re.search(r"<script[^>]*\bsrc=", page)
    assert "{{" not in page and "/*{{" not in page  # every template slot filled


def test_embedded_text_cannot_close_the_script():
    data = {"text": "</script><script>alert(1)</script> <!-- \u2028"}
    text = embed(data)
    assert "<" not in text and "\u2028" not in text
    assert json.loads(text) == data
    page = game_page({"game": "g</title>", "items": [], "seats": {}, "result": {}, **data})
    assert "<title>Avalon replay: g&lt;/title&gt;</title>" in page
    assert page.count("</script>") == 2  # the data's and the page script's own


def test_the_index_links_every_game_with_its_outcome(replay_run):
    folder = replay_run / "replay"
    index = (folder / "index.html").read_text()
    links = re.findall(r'<a href="([^"]+)">', index)
    games = game_dirs(replay_run)
    assert sorted(links) == sorted(page_name(g.name) for g in games) == sorted(
        p.name for p in folder.glob("*.html") if p.name != "index.html")
    for game in games:
        winner = json.loads((game / RESULT).read_text())["winner"]
        row = next(r for r in index.split("<tr") if page_name(game.name) in r)
        assert f"winner-{winner}" in row and f"<td>{winner}</td>" in row


def test_one_game_to_one_file_and_a_run_needs_a_folder(replay_run, tmp_path):
    game = game_dirs(replay_run)[1]
    out = tmp_path / "one.html"
    done = CliRunner().invoke(cli, ["replay", str(game), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert embedded(out.read_text())["game"] == game.name
    refused = CliRunner().invoke(cli, ["replay", str(replay_run), "--out", str(tmp_path / "all.html")])
    assert refused.exit_code == 2 and "holds 2 games; give a folder" in refused.output
    empty = CliRunner().invoke(cli, ["replay", str(tmp_path)])
    assert empty.exit_code == 2 and "no finished game" in empty.output
