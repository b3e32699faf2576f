"""`avalon view`: every run under a set of folders as one local site (index, run, compare, game and calls pages,
with a JSON API mirroring each), live while runs play, exportable as plain files (docs/view.md)."""
