"""A span's time as the formats write it -> Unix nanoseconds."""
from __future__ import annotations

from datetime import datetime, timezone


def nanos(value) -> int:
    """A datetime, an ISO 8601 text (Z or an offset; naive read as UTC) or epoch milliseconds (a number, as pandas'
    to_json writes timestamps); ValueError naming what it is otherwise."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
    if isinstance(value, bool):
        raise ValueError("a boolean, not a time")
    if isinstance(value, (int, float)):
        return int(value * 1_000_000)
    if isinstance(value, str) and value.strip():
        try:
            return nanos(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 time") from None
    raise ValueError("empty, not a time")
