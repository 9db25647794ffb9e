"""Hypothesis strategies shared by the property tests: random multi-key, multi-partition,
out-of-order inputs with nulls and tombstones."""

from __future__ import annotations

from hypothesis import strategies as st

KEYS = st.sampled_from(["k1", "k2", "k3", "k4", 7, None])
"""A few keys (one of them an integer) so that keys meet; ``None`` is a null key."""


def values(prefix: str, null_share: int = 4) -> st.SearchStrategy:
    """Values like ``L3``; about one in ``null_share`` is null (a tombstone for a table)."""
    return (
        st.one_of(st.none(), st.integers(0, 9).map(lambda i: f"{prefix}{i}"))
        if null_share
        else st.integers(0, 9).map(lambda i: f"{prefix}{i}")
    )


@st.composite
def events(draw, max_ts: int = 60, max_size: int = 40, null_values: bool = True, null_keys: bool = True) -> list[dict]:
    """Events in processing order: timestamps drawn independently, so arrival is out of order."""
    count = draw(st.integers(0, max_size))
    result = []
    for _ in range(count):
        side = draw(st.sampled_from(["left", "right"]))
        key = draw(KEYS if null_keys else KEYS.filter(lambda k: k is not None))
        value = (
            draw(st.one_of(st.none(), st.integers(0, 9).map(lambda i, s=side: f"{s[0].upper()}{i}")))
            if null_values
            else f"{side[0].upper()}{draw(st.integers(0, 9))}"
        )
        result.append({"side": side, "key": key, "value": value, "ts": draw(st.integers(0, max_ts))})
    return result


PARTITIONS = st.integers(1, 3)
EVERY_ERA = ["0.10.0", "0.10.2", "3.1", "latest"]
