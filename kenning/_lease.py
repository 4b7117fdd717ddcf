"""Who holds a claim on a memory, whether that holder is known to be dead, and the heartbeat
that keeps a live holder's claims fresh.

A worker claims memories as ``processing`` under an owner id ``host/pid/token``. Its claims
stay fresh while it works (a heartbeat renews them every quarter of the lease). Another worker
takes a claim over when the lease has run out, or at once when the owner ran on the same host
and its process is gone (killed, crashed, rebooted away).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable

__all__ = ["Heartbeat", "dead_owners", "new_owner"]

log = logging.getLogger(__name__)


def new_owner() -> str:
    """An owner id for one engine: this host, this process, and a token of its own."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def dead_owners(owners: Iterable[str]) -> list[str]:
    """The owners that ran on this host in a process that no longer exists. An owner of another
    host is never known dead: its claims wait for their lease to run out."""
    host = socket.gethostname()
    dead = []
    for owner in owners:
        parts = owner.rsplit("/", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        if int(parts[1]) != os.getpid() and not _pid_alive(int(parts[1])):
            dead.append(owner)
    return dead


class Heartbeat:
    """Calls ``renew`` every ``interval`` seconds on a daemon thread while at least one block
    ``with heartbeat:`` is running (blocks may nest and run on several threads)."""

    def __init__(self, renew: Callable[[], None], interval: float) -> None:
        self._renew = renew
        self._interval = interval
        self._lock = threading.Lock()
        self._users = 0
        self._stop: threading.Event | None = None

    def __enter__(self) -> Heartbeat:
        with self._lock:
            self._users += 1
            if self._users == 1 and self._interval > 0:
                self._stop = threading.Event()
                threading.Thread(target=self._run, args=(self._stop,), name="kenning-lease", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._stop is not None:
                self._stop.set()
                self._stop = None

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval):
            try:
                self._renew()
            except Exception as exc:  # noqa: BLE001 - a missed renewal is retried next beat
                log.warning("could not renew claims", extra={"error_type": type(exc).__name__})
