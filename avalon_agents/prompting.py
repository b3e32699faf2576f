"""Prompt templates: files under prompts/ with named {variables}, loaded once, hashed, checked on render."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Formatter

from avalon_agents.errors import parse_yaml

PROMPTS_DIR = (Path(__file__).parent / "prompts").resolve()  # a symlink to ../prompts in a checkout


@dataclass(frozen=True)
class Template:
    """One prompt file. `id` is its path under prompts/ without the suffix (e.g. "host/vote_result")."""

    id: str
    text: str
    variables: frozenset[str]

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def render(self, **values: object) -> str:
        """Fill the template. Raises KeyError naming missing or unexpected variables."""
        given = set(values)
        if given != self.variables:
            missing, extra = sorted(self.variables - given), sorted(given - self.variables)
            raise KeyError(f"prompt {self.id}: missing {missing}, unexpected {extra}")
        return self.text.format(**values).strip()


@lru_cache(maxsize=None)
def template(template_id: str) -> Template:
    """Load prompts/<template_id>.txt."""
    path = PROMPTS_DIR / f"{template_id}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {template_id!r} at {path}")
    text = path.read_text()
    return Template(template_id, text, frozenset(name for _, name, _, _ in Formatter().parse(text) if name))


@lru_cache(maxsize=None)
def data(name: str) -> dict:
    """Load prompts/<name>.yaml (role cards, host phrases)."""
    path = PROMPTS_DIR / f"{name}.yaml"
    return parse_yaml(path.read_text(), str(path))[0]


def all_templates() -> list[Template]:
    """Every template file under prompts/ (for the test that checks variables against the code)."""
    return [template(str(p.relative_to(PROMPTS_DIR).with_suffix(""))) for p in sorted(PROMPTS_DIR.rglob("*.txt"))]
