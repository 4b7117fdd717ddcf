"""Rate limits of the server: token buckets by key (a client address, a caller's name).

A bucket holds up to one minute's allowance and refills continuously, so a burst of a minute's
worth passes at once and then the steady rate applies. Used for failed API-key attempts (by
client address: a guesser is slowed, then refused, even with a right key, until the bucket
refills) and for the characters a caller writes (``remember``, ``add``, ``update``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from ..errors import RateLimitedError

__all__ = ["Limiter"]

_MAX_KEYS = 10_000


class Limiter:
    """``per_minute`` units a minute per key; ``per_minute <= 0`` means no limit."""

    def __init__(self, per_minute: float, what: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.what = what
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (level, at)

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def _level(self, key: str, now: float) -> float:
        level, at = self._buckets.get(key, (self.capacity, now))
        return min(self.capacity, level + (now - at) * self.capacity / 60)

    def _refuse(self, level: float, amount: float) -> RateLimitedError:
        wait = math.ceil((amount - level) * 60 / self.capacity) if amount <= self.capacity else 60
        return RateLimitedError(f"too many {self.what}: try again in {wait} s", retry_after=wait)

    def check(self, key: str, amount: float = 1) -> None:
        """Raise RateLimitedError unless ``amount`` is available now (spends nothing)."""
        if not self.enabled:
            return
        with self._lock:
            level = self._level(key, self._clock())
        if level < amount:
            raise self._refuse(level, amount)

    def spend(self, key: str, amount: float = 1, *, strict: bool = True) -> None:
        """Take ``amount`` from the key's bucket; ``strict`` raises (taking nothing) when it
        is not there, otherwise the bucket is emptied."""
        if not self.enabled:
            return
        if strict and amount > self.capacity:
            raise RateLimitedError(
                f"one request of {amount:.0f} {self.what} is over the limit of "
                f"{self.capacity:.0f} a minute: split it")
        with self._lock:
            now = self._clock()
            level = self._level(key, now)
            if strict and level < amount:
                raise self._refuse(level, amount)
            if len(self._buckets) >= _MAX_KEYS:
                self._forget_full(now)
            self._buckets[key] = (max(0.0, level - amount), now)

    def _forget_full(self, now: float) -> None:
        for key in [k for k in self._buckets if self._level(k, now) >= self.capacity]:
            del self._buckets[key]
