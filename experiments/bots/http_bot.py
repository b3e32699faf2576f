"""A seat over HTTP (docs/seats.md): random legal answers. `python3 http_bot.py [PORT]` (default 8000; 0: any)."""
import json
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEYS = {"propose": "team", "vote": "vote", "quest": "card", "assassinate": "merlin"}


class Seat(BaseHTTPRequestHandler):
    def do_POST(self):
        last = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][-1]
        legal, kind = last.get("legal", {}), last.get("kind")  # a request (or the end: its answer is not read)
        value = "I have nothing to hide."  # a speech
        if kind == "propose":
            value = random.sample(legal["players"], legal["team_size"])
        elif kind in ("vote", "quest"):
            value = random.choice(legal["options"])
        elif kind == "assassinate":
            value = random.choice(legal["players"])
        body = json.dumps({"id": last.get("id"), "action": {KEYS.get(kind, "text"): value}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), Seat)
print(f"http://127.0.0.1:{server.server_port}/", flush=True)
server.serve_forever()
