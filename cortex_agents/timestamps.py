"""Timestamps as the substrate and the memory pipeline use them.

Times are timezone-aware :class:`~datetime.datetime` values in UTC. The memory
pipeline works in integer microseconds since the Unix epoch, so that ages are
exact integer differences and every engine computes the same floats.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cortex_agents.errors import InvalidArgument

__all__ = ["EPOCH", "format_timestamp", "parse_timestamp", "require_aware", "to_micros"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def require_aware(value: datetime, field: str) -> datetime:
    """Return ``value`` converted to UTC, rejecting naive datetimes.

    Args:
        value: The datetime to check.
        field: The field name used in the error message.

    Raises:
        InvalidArgument: ``value`` is not a datetime or has no timezone.
    """
    if not isinstance(value, datetime):
        raise InvalidArgument(field, "must be a datetime", value)
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument(field, "must be timezone-aware (e.g. UTC)", value)
    return value.astimezone(UTC)


def to_micros(value: datetime) -> int:
    """Whole microseconds since the Unix epoch, computed exactly."""
    return (value - EPOCH) // _MICROSECOND


def parse_timestamp(text: str, field: str = "timestamp") -> datetime:
    """Parse an ISO 8601 timestamp that carries a timezone (``Z`` or an offset).

    Raises:
        InvalidArgument: ``text`` is not ISO 8601 or has no timezone.
    """
    if not isinstance(text, str):
        raise InvalidArgument(field, "must be an ISO 8601 string", text)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(
            field, "must be an ISO 8601 timestamp like '2026-01-01T00:00:00Z'", text
        ) from None
    if value.tzinfo is None:
        raise InvalidArgument(field, "must carry a timezone ('Z' or '+HH:MM')", text)
    return value.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """Format a datetime as ISO 8601 in UTC with a ``Z`` suffix.

    Microseconds are written only when non-zero, so the output is canonical:
    parsing and formatting again yields the same string.
    """
    utc = require_aware(value, "timestamp")
    spec = "microseconds" if utc.microsecond else "seconds"
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
