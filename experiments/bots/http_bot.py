"""A seat over HTTP (docs/seats.md, protocol 1): random legal answers, for any number of seats of any number of
games at once. `python3 http_bot.py [PORT]` (default 8000; 0: any free port)."""
import json
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sides = {}  # (game, seat) -> "good" or "evil": what this server knows of each seat it plays


def answer(message):
    """The action answering a request message, by the shape of its legal answers."""
    legal, side = message["legal"], sides[message["game"], message["seat"]]
    if "team_size" in legal:
        return random.sample(legal["players"], legal["team_size"])
    if "options" in legal:  # evil fails every quest it is on; other choices at random
        return "fail" if side == "evil" and "fail" in legal["options"] else random.choice(legal["options"])
    if "players" in legal:
        return random.choice(legal["players"])
    return "I have nothing to hide."  # a speech


class Seat(BaseHTTPRequestHandler):
    def do_POST(self):
        reply = {}
        for message in json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"]:
            key = message["game"], message["seat"]
            if message["type"] == "start":
                sides[key] = message["setup"]["sides"][message["role"]]
            elif message["type"] == "end":
                del sides[key]  # the game is over (the end's answer is not read)
            elif message["type"] == "request":  # the last message of the body
                reply = {"id": message["id"], "action": {message["key"]: answer(message)}}
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), Seat)
print(f"http://127.0.0.1:{server.server_port}/", flush=True)
server.serve_forever()
