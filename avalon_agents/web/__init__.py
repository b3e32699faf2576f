"""The HTTP toolkit both local sites use, the web table (`table/`, `avalon serve`) and `avalon view` (`view/`):
which hosts are this machine's only and which address people can open (`hosts.py`); every refusal one JSON error
with its status, the headers every response carries, a bug a JSON 500 that names nothing of the code, the token
check, and a self-contained page served under a Content Security Policy that lets only its own scripts run
(`serving.py`). aiohttp, nothing of the game."""
