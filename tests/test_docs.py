"""The repository explains itself: every section the code cites exists in docs/semantics.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEMANTICS = ROOT / "docs" / "semantics.md"
REFERENCE = re.compile(r"§(\d+)(?:\.(\d+))?(?:[–-](\d+)(?:\.(\d+))?)?")


def _sections() -> set[str]:
    """``"1"``, ``"1.7"``, …: a ``## N.`` heading and its top-level numbered rules."""
    sections: set[str] = set()
    current = None
    for line in SEMANTICS.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d+)\. ", line)
        if heading:
            current = heading.group(1)
            sections.add(current)
            continue
        rule = re.match(r"(\d+)\. ", line)
        if rule and current is not None:
            sections.add(f"{current}.{rule.group(1)}")
    return sections


def _cited(text: str) -> list[str]:
    cited = []
    for major, minor, end_major, end_minor in REFERENCE.findall(text):
        cited.append(f"{major}.{minor}" if minor else major)
        if end_major:  # a range: §2.3–2.4, or §3.2–4 within one section
            cited.append(f"{end_major}.{end_minor}" if end_minor else f"{major}.{end_major}" if minor else end_major)
    return cited


def test_the_semantics_page_has_numbered_sections_and_rules():
    sections = _sections()
    assert {"0", "1", "2", "3", "4", "5", "6", "7"} <= sections
    assert {f"1.{i}" for i in range(1, 11)} <= sections
    assert {"2.4", "3.6", "4.6"} <= sections


def test_every_section_the_code_tests_and_notebooks_cite_exists():
    sections = _sections()
    files = [
        p
        for pattern in (
            "kjoin/**/*.py",
            "kjoin_viz/**/*.py",
            "tests/**/*.py",
            "tests/**/*.yaml",
            "notebooks/*.ipynb",
            "docs/**/*.md",
        )
        for p in ROOT.glob(pattern)
        if p.relative_to(ROOT).parts[:2] not in {("docs", "_build"), ("docs", "generated")}
    ]
    missing = []
    citing = 0
    for path in files:
        cited = _cited(path.read_text(encoding="utf-8"))
        citing += bool(cited)
        missing += [f"{path.relative_to(ROOT)}: §{section}" for section in cited if section not in sections]
    assert citing >= 10, "the code no longer cites docs/semantics.md: is this test still looking in the right places?"
    assert missing == []
