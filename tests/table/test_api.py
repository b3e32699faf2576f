"""The web table's JSON API over real HTTP on loopback: a whole game played by two people's pages, the tokens,
the answers refused with their reasons, the decision timeout's fallback, the spectator's public view, the
records and the replay."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.records.run_dir import EVENTS, read_meta, read_result, read_trace
from avalon_agents.records.trace import SeatFault
from avalon_agents.records.usage import usage
from avalon_agents.decisions.kinds import MAX_SPEECH
from avalon_agents.web.serving import MAX_BODY
from tests.table.helpers import SPEECH, Browser, answer_for, open_table

STATE_KEYS = {"seat", "role", "lines", "request", "over"}


def run(coro):
    return asyncio.run(coro)


def test_two_people_play_a_whole_game_over_http(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(2, 5), lobby=True)
        async with aiohttp.ClientSession() as session:
            people = [Browser(session, base, seat, table.tokens[seat]) for seat in (2, 5)]
            spectator_states = []

            async def watch():
                while True:
                    async with session.get(f"{base}/api/watch", params={"token": table.watch_token}) as r:
                        state = await r.json()
                    spectator_states.append(state)
                    if state["over"]:
                        return
                    await asyncio.sleep(0.01)

            ends = await asyncio.gather(*(p.play() for p in people), watch())
            async with session.get(f"{base}{ends[0]['replay']}") as r:  # the end's link, as the page opens it
                replay = (r.status, r.headers.get("Content-Security-Policy", ""), await r.text())
        [played] = await task
        return people, ends, spectator_states, replay, played, table

    people, ends, spectator_states, replay, played, table = run(main())
    assert table.spectator.replay == "/replay/1"  # the spectator's link too
    for person, end in zip(people, ends):
        assert not person.states[0]["started"] or person.states[0]["joined"] == [2, 5]  # the lobby waited
        assert STATE_KEYS <= set(end) and end["over"] is True and end["seat"] == person.seat
        assert end["role"] == end["result"]["roles"][str(person.seat)]
        assert all(status == 200 for status, _ in person.posts), person.posts
        kinds = {s["request"]["kind"] for s in person.states if s["request"]}
        assert {"vote", "speak"} <= kinds
        for s in person.states:
            if s["request"]:
                assert set(s["request"]) - {"team"} == {"type", "game", "seat", "id", "kind", "text", "legal", "key"}
                if s["request"]["kind"] in ("vote", "quest"):  # the team voted on or sent, as data
                    assert s["request"]["team"] and set(s["request"]["team"]) <= set(range(1, 7))
                assert s["request"]["type"] == "request" and s["request"]["id"].startswith(f"{person.seat}-")
        assert any(SPEECH in line for line in end["lines"])
        assert any(s["waiting"] for s in person.states)  # whom the table waits for, as the spectator sees it
        # the link carries no token (shared, it gives no seat to whoever gets it): a finished game's replay
        assert end["replay"] == "/replay/1"
    # the game is recorded like any other, the people's seats as `human`
    game = tmp_path / "game-00001"
    meta, result = read_meta(game), read_result(game)
    assert meta.seats == {1: "rulebot", 2: "human", 3: "rulebot", 4: "rulebot", 5: "human", 6: "rulebot"}
    assert result == played.result and {k: v.value for k, v in result.roles.items()} == {
        int(k): v for k, v in ends[0]["result"]["roles"].items()}
    assert (tmp_path / "replay" / "index.html").is_file()
    status, policy, page = replay
    assert status == 200 and "script-src 'sha256-" in policy and "game-00001" in page
    # the spectator saw every speech, no night information, and the roles only at the end
    last = spectator_states[-1]
    assert last["over"] and last["result"]["roles"] == ends[0]["result"]["roles"]
    assert sum(SPEECH in line for line in last["lines"]) >= 2
    assert not any("(night)" in line for s in spectator_states for line in s["lines"])
    assert all(s["result"] is None for s in spectator_states if not s["over"])
    assert any(s["waiting"] for s in spectator_states)


def test_tokens_guard_every_address(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1, 2), decision_timeout=0.01)
        got = {}
        async with aiohttp.ClientSession() as session:
            other = table.tokens[2]
            for name, method, path, params in [
                ("page, no token", "GET", "/seat/1", {}),
                ("page, wrong token", "GET", "/seat/1", {"token": "x" * 24}),
                ("page, another seat's token", "GET", "/seat/1", {"token": other}),
                ("state, no token", "GET", "/api/seat/1", {}),
                ("state, spectator token", "GET", "/api/seat/1", {"token": table.watch_token}),
                ("answer, another seat's token", "POST", "/api/seat/1/answer", {"token": other}),
                ("a bot's seat", "GET", "/api/seat/3", {"token": other}),
                ("watch, seat token", "GET", "/api/watch", {"token": other}),
                ("the page itself", "GET", "/seat/1", {"token": table.tokens[1]}),
                ("the spectator's page", "GET", "/watch", {"token": table.watch_token}),
            ]:
                async with session.request(method, base + path, params=params, json={"answer": "x"}) as r:
                    got[name] = (r.status, r.headers.get("Content-Security-Policy", ""), r.headers.get("Cache-Control"))
        await task
        return got

    got = run(main())
    for name, (status, _, _) in got.items():
        if not name.startswith("the "):
            assert status == 403, name
    for name in ("the page itself", "the spectator's page"):
        status, policy, cache = got[name]
        assert status == 200 and cache == "no-store"
        assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]


def test_answers_are_refused_with_their_reason(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,))
        found: dict[str, tuple[int, dict]] = {}
        async with aiohttp.ClientSession() as session:
            person = Browser(session, base, 1, table.tokens[1])

            async def post_raw(data: bytes) -> tuple[int, str]:
                async with session.post(f"{base}/api/seat/1/answer", params={"token": table.tokens[1]},
                                        data=data, headers={"Content-Type": "application/json"}) as r:
                    return r.status, await r.text()

            seen_kinds: set[str] = set()
            while len(seen_kinds) < 2:
                state = await person.get()
                request = state["request"]
                if request is None or request["kind"] in seen_kinds:
                    if request is not None:
                        await person.post({"answer": answer_for(request)})
                    await asyncio.sleep(0.01)
                    continue
                kind = request["kind"]
                if kind == "speak":
                    found["long speech"] = await person.post({"answer": "x" * (MAX_SPEECH + 1)})
                    found["speech with markup"] = await person.post({"answer": "<b>hi</b> & <script>x</script>",
                                                                     "id": request["id"]})
                    found["answered twice"] = await person.post({"answer": "and more", "id": request["id"]})
                    seen_kinds.add(kind)
                elif kind == "vote":
                    found["unclear vote"] = await person.post({"answer": "maybe"})
                    found["not JSON"] = await post_raw(b"approve")
                    found["wrong shape"] = await person.post({"vote": "approve"})
                    found["extra field"] = await person.post({"answer": "approve", "x": 1})
                    found["too big"] = await post_raw(json.dumps({"answer": "a" * (MAX_BODY + 10)}).encode())
                    found["another request's id"] = await person.post({"answer": "approve", "id": "1-0"})
                    found["misspelt vote"] = await person.post({"answer": "aprove", "id": request["id"]})
                    seen_kinds.add(kind)
                else:
                    await person.post({"answer": answer_for(request)})
            await Browser(session, base, 1, table.tokens[1]).play()
            found["after the game"] = await person.post({"answer": "approve"})
        await task
        return found

    found = run(main())
    assert found["long speech"] == (422, {"error": f"a speech has at most {MAX_SPEECH} characters, not "
                                                   f"{MAX_SPEECH + 1}"})
    assert found["speech with markup"] == (200, {"ok": True})
    assert found["answered twice"][0] == 409 and "open" in found["answered twice"][1]["error"]
    assert found["unclear vote"] == (422, {"error": "no clear answer"})
    assert found["not JSON"][0] == 400 and "not JSON" in json.loads(found["not JSON"][1])["error"]
    for name in ("wrong shape", "extra field"):
        assert found[name][0] == 400 and found[name][1]["error"].startswith("the body is one JSON object"), name
    big = len(json.dumps({"answer": "a" * (MAX_BODY + 10)}))
    assert found["too big"] == (413, json.dumps({"error": f"the body is at most {MAX_BODY} bytes, not {big}"}))
    assert found["another request's id"][0] == 409 and "no longer open" in found["another request's id"][1]["error"]
    assert found["misspelt vote"] == (200, {"ok": True})
    assert found["after the game"] == (409, {"error": "no request is open for this seat"})
    speeches = [e for e in map(json.loads, (tmp_path / "game-00001" / EVENTS).read_text().splitlines())
                if e["type"] == "speech" and e["seat"] == 1]
    assert speeches[0]["text"] == "<b>hi</b> & <script>x</script>"  # kept as typed: shown as text everywhere


def test_a_person_who_does_not_answer_costs_a_recorded_fallback(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(3,), decision_timeout=0.05)
        async with aiohttp.ClientSession() as session:
            silent = Browser(session, base, 3, table.tokens[3], answer=lambda request: None)
            end = await silent.play()
        notices = [s["timeout_notice"] for s in silent.states if s["timeout_notice"]]
        return end, notices, (await task)[0]

    end, notices, played = run(main())
    assert end["over"]
    faults = [r for r in read_trace(tmp_path / "game-00001") if isinstance(r, SeatFault)]
    assert faults and all(f.seat == 3 and f.problem == "fallback" for f in faults)
    assert "no answer in 0.05 s" in faults[0].detail
    assert usage(played.records)["seat_fallbacks"] == len(faults)
    # the log says what was decided at each fallback, as the game recorded it; the state's notice is the last one
    events = [json.loads(line) for line in (tmp_path / "game-00001" / EVENTS).read_text().splitlines()]
    votes = iter(3 in e["approvals"] for e in events if e["type"] == "votes_revealed")
    said = [line for line in end["lines"] if line.startswith("No answer in 0.05 s, so ")]
    assert len(said) == len(faults) and {"vote", "speak"} <= {f.kind for f in faults}
    for line, fault in zip(said, faults):
        if fault.kind == "vote":
            assert line.endswith("the host answered for you: " + ("I approve." if next(votes) else "I reject."))
        elif fault.kind == "speak":
            assert line.endswith("so you said nothing this time.")
    assert notices and {n["text"] for n in notices} <= set(said) and end["timeout_notice"]["text"] == said[-1]
    assert end["timeout_notice"]["id"].startswith("3-") and end["timeout_notice"]["kind"] == faults[-1].kind


@pytest.mark.slow  # seconds of analysis
def test_avalon_analyze_reads_a_table_game_and_its_fallbacks(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(3,), decision_timeout=0.01)
        async with aiohttp.ClientSession() as session:
            await Browser(session, base, 3, table.tokens[3], answer=lambda request: None).play()
        return await task

    run(main())
    faults = [r for r in read_trace(tmp_path / "game-00001") if isinstance(r, SeatFault)]
    analyzed = CliRunner().invoke(cli, ["analyze", str(tmp_path), "--out", str(tmp_path / "analysis")])
    assert analyzed.exit_code == 0, analyzed.output
    assert f"program and web seats: 0 protocol errors, {len(faults)} fallbacks" in analyzed.output
    assert "models none (people, bots)" in analyzed.output  # the provenance: no seat asked a model


@pytest.mark.parametrize("players", [5, 10])
def test_the_quest_track_follows_the_game(tmp_path, players):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), players=players)
        async with aiohttp.ClientSession() as session:
            person = Browser(session, base, 1, table.tokens[1])
            end = await person.play()
        return person, end, (await task)[0]

    person, end, played = run(main())
    assert end["players"] == players and len(end["quests"]) == 5
    results = [q["result"] for q in end["quests"] if q["result"]]
    assert results == ["success" if q.success else "fail" for q in played.result.quests]
    assert {s["leader"] for s in person.states if s["leader"]} <= set(range(1, players + 1))


def test_a_session_plays_its_games_at_the_same_addresses(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(4,), games=2, seed=5)
        async with aiohttp.ClientSession() as session:
            person = Browser(session, base, 4, table.tokens[4])
            end = await person.play()
        return person, end, await task

    person, end, played = run(main())
    assert [p.index for p in played] == [0, 1] and end["game"] == 2 and end["games"] == 2
    games = [s["game"] for s in person.states]
    assert games == sorted(games) and set(games) >= {1, 2}  # the same page, game after game
    first_of_second = next(s for s in person.states if s["game"] == 2)
    assert first_of_second["result"] is None and len(first_of_second["lines"]) < len(
        [s for s in person.states if s["game"] == 1][-1]["lines"])  # the second game's view starts afresh
    for n, p in enumerate(played, 1):
        game = tmp_path / f"game-{n:05d}"
        assert read_meta(game).seats[4] == "human" and read_meta(game).seed == 5 + n - 1
        assert read_result(game) == p.result
    assert (tmp_path / "replay" / "game-00002.html").is_file()


def test_a_finished_games_replay_needs_no_token_and_a_live_games_is_not_served(tmp_path):
    """Each game's replay at /replay/N, asked with no token: 404 JSON while game N is played (nothing of a live
    game without its seat's token), its page once it is over, game 1's while game 2 is played; every link to it
    carries no token."""
    async def main():
        task, table, base = await open_table(tmp_path, humans=(4,), games=2, seed=5)
        seen: list[tuple[tuple, list[tuple[int, str, str]]]] = []  # (the game, over) -> each replay's answer

        def moment() -> tuple:
            return table.spectator.game, table.spectator.result is not None

        async with aiohttp.ClientSession() as session:
            async def probe() -> None:
                while not task.done():
                    before, answers = moment(), []
                    try:
                        for n in (1, 2):
                            async with session.get(f"{base}/replay/{n}") as r:
                                answers.append((r.status, r.content_type, await r.text()))
                    except aiohttp.ClientConnectionError:  # the table closed after its last game's linger
                        return
                    if moment() == before:  # no game ended while asked: the answers are that moment's
                        seen.append((before, answers))
                    await asyncio.sleep(0.005)

            person = Browser(session, base, 4, table.tokens[4])
            _, end, _ = await asyncio.gather(probe(), person.play(), task)
        return seen, person, end

    seen, person, end = run(main())
    live = {game: [answers for (g, over), answers in seen if g == game and not over] for game in (1, 2)}
    assert live[1] and live[2], [m for m, _ in seen]  # both games were asked about while played
    for answers in live[1]:
        assert [(status, kind) for status, kind, _ in answers] == [(404, "application/json")] * 2
        assert "no replay of game 1: a game's replay is written when the game is over" in answers[0][2]
    for (status, kind, page), (status_2, _, text_2) in live[2]:
        assert (status, kind, status_2) == (200, "text/html", 404) and "game-00001" in page, page[:200]
        assert "game-00002" not in page and "no replay of game 2" in text_2
    over = [answers for (g, over), answers in seen if (g, over) == (2, True)]
    assert all(answers[1][0] == 200 and "game-00002" in answers[1][2] for answers in over)
    links = {(s["game"], s["replay"]) for s in person.states if s["over"]}
    assert links == {(1, "/replay/1"), (2, "/replay/2")} and end["replay"] == "/replay/2"
    assert all(s["replay"] is None for s in person.states if not s["over"])
