"""Every place a help text, a doc, a config or the code names in the docs exists: `README.md#anchor`,
`docs/x.md#anchor`, a doc's Markdown link (`[..](x.md#anchor)`, `[..](#anchor)`) and "README, 'Section'". A
link that once worked and lost its heading (`avalon play --help`'s "README, 'Rules'") fails here."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_readme import anchors, slug

ROOT = Path(__file__).parent.parent
NAMED = re.compile(r"(?<![\w/.-])(README\.md|docs/[\w-]+\.md)(?:#([\w-]+))?")
LINKED = re.compile(r"\]\(((?:\.\./|docs/)?[\w-]+\.md)?(?:#([\w-]+))?\)")
SECTION = re.compile(r"README, '([^']+)'")


def sources() -> list[Path]:
    """The files that name places in the docs: the package (help texts among them), configs, docs, scripts."""
    return sorted({*ROOT.glob("avalon_agents/**/*.py"), *ROOT.glob("experiments/**/*.yaml"), *ROOT.glob("docs/*.md"),
                   ROOT / "README.md", *ROOT.glob("benchmarks/*.py"), *ROOT.glob("notebooks/*.ipynb"),
                   *ROOT.glob("prompts/**/*.txt")})


def broken(source: Path) -> list[str]:
    text = source.read_text()
    found = [(m.group(0), ROOT / m.group(1), m.group(2)) for m in NAMED.finditer(text)]
    if source.suffix == ".md":  # a doc's own links are relative to it
        found += [(m.group(0), (source.parent / m.group(1)).resolve() if m.group(1) else source, m.group(2))
                  for m in LINKED.finditer(text) if m.group(1) or m.group(2)]
    found += [(m.group(0), ROOT / "README.md", slug(m.group(1))) for m in SECTION.finditer(text)]
    out = []
    for named, target, anchor in found:
        if not target.is_file():
            out.append(f"{source.relative_to(ROOT)}: {named}: no such file")
        elif anchor and anchor not in anchors(target.read_text()):
            out.append(f"{source.relative_to(ROOT)}: {named}: no such heading in {target.relative_to(ROOT)}")
    return out


def test_every_place_named_in_the_docs_exists():
    assert len(sources()) > 100
    assert [b for s in sources() for b in broken(s)] == []


def test_a_lost_heading_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Title\n\n## Playing\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Rules\n\nSee [b](b.md#nothing), [here](#rules), [p](#gone).\n")
    (tmp_path / "help.py").write_text('"see README, \'Rules\'", "README.md#playing", "docs/a.md#rules", "docs/c.md"\n')
    assert broken(tmp_path / "help.py") == ["help.py: docs/c.md: no such file",
                                            "help.py: README, 'Rules': no such heading in README.md"]
    assert broken(tmp_path / "docs" / "a.md") == ["docs/a.md: ](b.md#nothing): no such file",
                                                  "docs/a.md: ](#gone): no such heading in docs/a.md"]
