"""The "Calling a real model" guides (docs/calling-a-real-model-*.md) show the example agents' code
as excerpts: every code block in the guide's language must appear, line for line, in the
example's sources, so that the guide cannot drift from the code the scenario suite runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

from conformance.agents import ROOT

GUIDES = {
    "rust": ("rust", sorted((ROOT / "examples" / "model-agent" / "src").glob("*.rs"))),
    "python": ("python", [ROOT / "examples" / "python" / "model_agent.py"]),
    "node": ("js", [ROOT / "examples" / "node" / "model_agent.mjs"]),
}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(guide: Path, language: str) -> List[str]:
    return [body for lang, body in FENCE.findall(guide.read_text()) if lang == language]


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_guide_code_is_the_examples_code(name: str) -> None:
    language, sources = GUIDES[name]
    guide = ROOT / "docs" / f"calling-a-real-model-{name}.md"
    code = "\n".join(source.read_text() for source in sources)
    excerpts = blocks(guide, language)
    assert len(excerpts) >= 4, f"{guide.name}: expected the example's code in ```{language} blocks"
    for excerpt in excerpts:
        assert excerpt in code, f"{guide.name}: this block is not in {[s.name for s in sources]}:\n{excerpt}"


def test_readme_links_the_guides() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in GUIDES:
        assert f"docs/calling-a-real-model-{name}.md" in readme
