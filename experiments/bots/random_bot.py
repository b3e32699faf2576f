"""A seat of Avalon as a program (docs/seats.md): random legal answers, JSON lines on stdin and stdout."""

import json
import random
import sys

for line in sys.stdin:
    message = json.loads(line)
    if message["type"] != "request":
        continue  # start, event and end messages: this bot ignores what happens
    legal, kind = message["legal"], message["kind"]
    if kind == "propose":
        action = {"team": random.sample(legal["players"], legal["team_size"])}
    elif kind == "vote":
        action = {"vote": random.choice(legal["options"])}
    elif kind == "quest":
        action = {"card": random.choice(legal["options"])}
    elif kind == "assassinate":
        action = {"merlin": random.choice(legal["players"])}
    else:
        action = {"text": "I have nothing to hide."}
    print(json.dumps({"id": message["id"], "action": action}), flush=True)
