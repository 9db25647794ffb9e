"""The wiki's ``ts:value`` notation: ``"1:null, 3:A, 5:B"``."""

from __future__ import annotations

__all__ = ["parse_notation"]


def parse_notation(text: str, *, what: str = "records") -> list[tuple[int, str | None]]:
    """Parse ``"1:null, 3:A"`` into ``[(1, None), (3, "A")]``.

    Each item is ``ts:value``; ``null`` is a null value; items are separated by commas
    (or whitespace). An empty string is no records.
    """
    records: list[tuple[int, str | None]] = []
    for position, item in enumerate(part for part in text.replace(",", " ").split() if part):
        ts_text, sep, value = item.partition(":")
        if not sep or not value:
            raise ValueError(f"{what}: item {position + 1} {item!r} is not ts:value (e.g. 3:A or 1:null)")
        try:
            ts = int(ts_text)
        except ValueError:
            raise ValueError(
                f"{what}: item {position + 1} {item!r}: the timestamp {ts_text!r} is not an integer"
            ) from None
        if ts < 0:
            raise ValueError(f"{what}: item {position + 1} {item!r}: timestamps are non-negative milliseconds")
        records.append((ts, None if value == "null" else value))
    return records
