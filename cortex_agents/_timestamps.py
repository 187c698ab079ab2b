"""Timestamps as the substrate and the memory pipeline use them.

Times are timezone-aware :class:`~datetime.datetime` values in UTC. The memory
pipeline works in integer microseconds since the Unix epoch, so that ages are
exact integer differences and every engine computes the same floats.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

from cortex_agents.errors import InvalidArgument

__all__ = ["EPOCH", "format_timestamp", "parse_timestamp", "require_aware", "to_micros"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# re.ASCII: otherwise `\d` also matches other scripts' digits (e.g. '٢'),
# which the shape check is there to refuse.
_ISO: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})", re.ASCII
)
_SHAPE: Final = "must be an ISO 8601 timestamp like '2026-01-01T00:00:00Z'"


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
    # timedelta // timedelta is exact integer arithmetic; `value.timestamp() * 1e6`
    # would go through a float and can be off by one microsecond.
    return (value - EPOCH) // _MICROSECOND


def parse_timestamp(text: str, field: str = "timestamp") -> datetime:
    """Parse an ISO 8601 timestamp that carries a timezone (``Z`` or ``+HH:MM``).

    The shape is checked first (ASCII digits, ``YYYY-MM-DDTHH:MM[:SS[.ffffff]]``
    then ``Z`` or an offset, nothing after it), then the calendar; the instant
    must exist in UTC (``9999-12-31T23:59:59-14:00`` does not).

    Raises:
        InvalidArgument: ``text`` is not such a timestamp.
    """
    if not isinstance(text, str):
        raise InvalidArgument(field, "must be an ISO 8601 string", text)
    # 40 characters is more than the longest valid shape (32); the bound keeps a
    # huge string out of the regex and out of the error message.
    if len(text) > 40 or not _ISO.fullmatch(text):
        # Valid but for the timezone: the most common mistake gets its own message.
        if len(text) <= 40 and _ISO.fullmatch(text + "Z"):
            raise InvalidArgument(field, "must carry a timezone ('Z' or '+HH:MM')", text)
        raise InvalidArgument(field, _SHAPE, text if len(text) <= 40 else text[:40] + "...")
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(field, _SHAPE, text) from None
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidArgument(
            field, "must be an instant between 0001-01-01 and 9999-12-31 in UTC", text
        ) from None


def format_timestamp(value: datetime) -> str:
    """Format a datetime as ISO 8601 in UTC with a ``Z`` suffix.

    Microseconds are written only when non-zero, so the output is canonical:
    parsing and formatting again yields the same string.
    """
    # a parsed or normalised timestamp is in UTC already: no conversion to make
    utc = (
        value
        if type(value) is datetime and value.tzinfo is UTC
        else require_aware(value, "timestamp")
    )
    spec = "microseconds" if utc.microsecond else "seconds"
    # Naive then "Z": isoformat of an aware UTC time would write "+00:00".
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
