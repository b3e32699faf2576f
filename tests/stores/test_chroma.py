"""stores/chroma.py: chromadb without the idle seconds of rfc3987_syntax, and IRI checks that still answer."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
import avalon_agents.stores.experience
deferred = type(sys.modules.get('rfc3987_syntax')).__name__
from jsonschema import Draft7Validator
check = Draft7Validator({'format': 'iri'}, format_checker=Draft7Validator.FORMAT_CHECKER)
print(deferred, check.is_valid('http://example.org/caf\\u00e9'), check.is_valid('no iri at all :: %%'),
      type(sys.modules['rfc3987_syntax']).__name__)
"""


def test_opening_a_store_does_not_build_the_iri_parser():
    import avalon_agents.stores.experience  # noqa: F401

    assert type(sys.modules["rfc3987_syntax"]).__name__ == "_Deferred"  # chromadb loaded, the parser not built


@pytest.mark.slow  # builds the parser: seconds
def test_iri_checks_still_answer_once_used():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["_Deferred", "True", "False", "module"]  # deferred, then the real module answered both checks
