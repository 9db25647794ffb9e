"""Every test file has a tier (tests/conftest.py), so ``make test-fast`` and its siblings select every test."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FILE_TIERS, FIXTURE_TIERS, TIERS

TESTS = Path(__file__).resolve().parent


def test_every_test_file_has_a_tier():
    files = {path.name for path in TESTS.glob("test_*.py")}
    missing = sorted(files - set(FILE_TIERS))
    assert not missing, f"test files without a tier: add them to FILE_TIERS in tests/conftest.py: {missing}"
    gone = sorted(set(FILE_TIERS) - files)
    assert not gone, f"FILE_TIERS names files that do not exist: {gone}"


def test_every_tier_is_a_registered_marker():
    assert set(FILE_TIERS.values()) | set(FIXTURE_TIERS.values()) <= set(TIERS)
    pyproject = (TESTS.parent / "pyproject.toml").read_text()
    for tier in TIERS:
        assert f'"{tier}: ' in pyproject, f"marker {tier} is not registered in pyproject.toml"
