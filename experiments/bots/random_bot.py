"""A seat of Avalon as a program (docs/seats.md, protocol 1): random legal answers, JSON lines on stdin and stdout."""

import json
import random
import sys

for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "start":  # one process plays one seat of one game
        if message["protocol"] != 1:
            sys.exit(f"this bot speaks protocol 1, not {message['protocol']}")
        side = message["setup"]["sides"][message["role"]]  # "good" or "evil"
    if message["type"] != "request":
        continue  # event and end messages: this bot ignores what happens
    legal = message["legal"]  # its shape says how to answer, whatever the request's kind
    if "team_size" in legal:
        value = random.sample(legal["players"], legal["team_size"])
    elif "options" in legal:  # evil fails every quest it is on; other choices at random
        value = "fail" if side == "evil" and "fail" in legal["options"] else random.choice(legal["options"])
    elif "players" in legal:
        value = random.choice(legal["players"])
    else:
        value = "I have nothing to hide."  # a speech
    print(json.dumps({"id": message["id"], "action": {message["key"]: value}}), flush=True)
