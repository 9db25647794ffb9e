"""Shared fixtures. ``spark``: one quiet local Spark session for the whole test run.

Spark tests fail, never skip, when Spark or Java is missing: the session fixture lets the
error through.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from kjoin.spark import local_session

    session = local_session()
    yield session
    session.stop()
