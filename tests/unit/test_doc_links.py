"""Every relative link in the README and docs/ reaches a file of the repository (docs moved by
audience: docs/ for users and operators, docs/dev/ for developers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_relative_links_reach_a_file(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if "://" not in t]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(REPO)} links to {missing}"


def test_the_pages_are_found() -> None:
    names = {str(p.relative_to(REPO)) for p in PAGES}
    assert {"docs/getting-started.md", "docs/troubleshooting.md", "docs/policy.md"} <= names
    assert {"docs/dev/architecture.md", "docs/dev/oracles.md", "docs/dev/scale.md"} <= names
