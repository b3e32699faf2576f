"""The web table (`avalon serve`): people play seats from a browser page, a spectator watches, programs and
agents take the other seats. desk: a person's seat; watch: the public view; server: the HTTP side; serve: one
game at the table; page.html: the one self-contained page."""
