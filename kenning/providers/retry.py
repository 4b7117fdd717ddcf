"""Backoff for model calls: exponential with jitter, and the server's ``Retry-After`` honoured.

Provider-neutral: a provider decides *whether* an error is retryable; this module decides *how
long* to wait before the next attempt.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RetryPolicy", "parse_retry_after"]

#: a server asking for longer than this is not waited for longer than this
RETRY_AFTER_CAP = 60.0


def parse_retry_after(headers: Mapping[str, str] | None, now: dt.datetime | None = None) -> float | None:
    """Seconds the server asks us to wait (``retry-after-ms``, or ``Retry-After`` as seconds or
    an HTTP date), capped at ``RETRY_AFTER_CAP``; None when absent or unreadable."""
    if not headers:
        return None
    lowered = {name.lower(): value for name, value in headers.items()}
    seconds: float | None = None
    millis = lowered.get("retry-after-ms")
    value = lowered.get("retry-after")
    if millis is not None:
        try:
            seconds = float(millis) / 1000.0
        except ValueError:
            seconds = None
    if seconds is None and value is not None:
        seconds = _seconds_or_date(value.strip(), now)
    if seconds is None or seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP)


def _seconds_or_date(value: str, now: dt.datetime | None) -> float | None:
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    now = now or dt.datetime.now(dt.timezone.utc)
    return (when - now).total_seconds()


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; waits grow ``base_delay * 2**n``."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        if retry_after is not None:
            return retry_after
        ceiling = min(self.max_delay, self.base_delay * (2**retry))
        # "equal jitter": at least half the backoff, so clients that failed together spread out
        return ceiling / 2 + random.uniform(0, ceiling / 2)
