"""A seat over HTTP (docs/seats.md): random legal answers. `python3 http_bot.py [PORT]` (default 8000; 0: any)."""
import json
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Seat(BaseHTTPRequestHandler):
    def do_POST(self):
        last = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][-1]
        legal = last.get("legal", {})  # a request (or the end: its answer is not read); its shape says how to answer
        value = "I have nothing to hide."  # a speech
        if "team_size" in legal:
            value = random.sample(legal["players"], legal["team_size"])
        elif "options" in legal:
            value = random.choice(legal["options"])
        elif "players" in legal:
            value = random.choice(legal["players"])
        body = json.dumps({"id": last.get("id"), "action": {last.get("key", "text"): value}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), Seat)
print(f"http://127.0.0.1:{server.server_port}/", flush=True)
server.serve_forever()
