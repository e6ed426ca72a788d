"""The rate limit's counters: fixed windows per API token, counted where every worker sees them.

A window is `seconds` long and aligned to the clock (a minute's window ends on the minute); a
token may make `limit` requests in it. Two counters, one interface (`hit`):

- `SharedMemoryCounter`, the default: a small table in shared memory (a file under /dev/shm
  mapped into every worker process of the machine), updated under a lock. No file is read or
  written and no database is touched on the request path; the limit holds on one machine.
- `RedisCounter`, when MEMORYHUB_CACHE_URL names a Redis: one atomic INCR (with its expiry) per
  request through Django's RedisCache, so the limit holds across every app server.
"""

import fcntl
import hashlib
import logging
import math
import mmap
import os
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ImproperlyConfigured
from redis.commands.core import Script
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The shared table: slots of (token digest, window end, count). 16,384 slots hold that many tokens
# active in one window; a token looks at PROBE_SLOTS slots from its digest's own.
TABLE_SLOTS = 16384
PROBE_SLOTS = 16
SLOT = struct.Struct("<16sqq")
DIGEST_BYTES = 16


@dataclass(frozen=True)
class Rate:
    limit: int
    seconds: int


def parse_rate(rate: str) -> Rate:
    """ "1200/minute" -> Rate(1200, 60); the unit is read from its first letter, as DRF does."""
    count, unit = rate.split("/")
    return Rate(limit=int(count), seconds=RATE_UNITS[unit[0]])


@dataclass(frozen=True)
class Window:
    count: int  # requests counted in this window, this one included
    ends_at: int  # when the window ends (seconds since the epoch)


class RateCounter(Protocol):
    def hit(self, ident: str, seconds: int, now: float) -> Window:
        """Count one request of ident in the window of `seconds` that holds `now`."""
        ...


def _window_end(seconds: int, now: float) -> int:
    return (int(now) // seconds + 1) * seconds


class SharedMemoryCounter:
    """Counters in a table that every process mapping the same file shares.

    Each process opens and maps the file itself (after a fork too: an inherited descriptor would
    share the parent's lock), and takes an exclusive flock around each hit.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pid: int | None = None
        self._fd = -1
        self._table: mmap.mmap | None = None
        self._lock = threading.Lock()

    def _open(self) -> mmap.mmap:
        if self._table is not None and self._pid == os.getpid():
            return self._table
        size = TABLE_SLOTS * SLOT.size
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)  # zero slots: every process truncating to the same size agrees
        self._fd, self._table, self._pid = fd, mmap.mmap(fd, size), os.getpid()
        return self._table

    def hit(self, ident: str, seconds: int, now: float) -> Window:
        digest = hashlib.blake2b(f"{ident}/{seconds}".encode(), digest_size=DIGEST_BYTES).digest()
        ends_at = _window_end(seconds, now)
        home = int.from_bytes(digest[:4], "little") % TABLE_SLOTS
        with self._lock:
            table = self._open()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                free = oldest = None
                oldest_end = math.inf
                for step in range(PROBE_SLOTS):
                    offset = ((home + step) % TABLE_SLOTS) * SLOT.size
                    slot_digest, slot_end, slot_count = SLOT.unpack_from(table, offset)
                    if slot_digest == digest:
                        count = slot_count + 1 if slot_end == ends_at else 1
                        SLOT.pack_into(table, offset, digest, ends_at, count)
                        return Window(count, ends_at)
                    if free is None and slot_end <= now:
                        free = offset
                    if slot_end < oldest_end:
                        oldest, oldest_end = offset, slot_end
                # A new token takes a slot whose window is over; when every probed slot is live
                # (thousands of tokens at once), the one whose window ends first starts afresh.
                target = free if free is not None else oldest
                assert target is not None  # PROBE_SLOTS >= 1, so some slot was probed
                SLOT.pack_into(table, target, digest, ends_at, 1)
                return Window(1, ends_at)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)


# INCR and its expiry in one step: the first request of a window sets when its counter goes.
INCREMENT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count
"""


class RedisCounter:
    """Counters in the Redis of Django's cache named `alias` (a RedisCache), one key per token and window."""

    def __init__(self, alias: str = "default") -> None:
        cache = caches[alias]
        if not isinstance(cache, RedisCache):
            raise ImproperlyConfigured(f"The rate limit counts in Redis: the cache {alias!r} must be a RedisCache.")
        self.cache = cache
        self._script: Script | None = None

    def hit(self, ident: str, seconds: int, now: float) -> Window:
        ends_at = _window_end(seconds, now)
        key = self.cache.make_and_validate_key(f"ratelimit:{ident}:{seconds}:{ends_at}")
        # Django's RedisCache has no atomic increment-or-create; its client's Redis connection does.
        client = self.cache._cache.get_client(key, write=True)
        if self._script is None:
            self._script = client.register_script(INCREMENT_SCRIPT)
        expire_ms = int((ends_at - now) * 1000) + 1000
        try:
            count = int(self._script(keys=[key], args=[expire_ms], client=client))
        except RedisError as error:
            # Redis down must not take the API down with it: the request goes uncounted.
            logger.warning("rate limit not counted, Redis answered: %s", error)
            return Window(0, ends_at)
        return Window(count, ends_at)


_counters: dict[str, RateCounter] = {}


def rate_counter() -> RateCounter:
    """The counter the settings name: Redis when MEMORYHUB_CACHE_URL is set, else the shared table."""
    where = settings.MEMORYHUB_CACHE_URL or str(settings.MEMORYHUB_RATE_LIMIT_TABLE)
    counter = _counters.get(where)
    if counter is None:
        counter = RedisCounter() if settings.MEMORYHUB_CACHE_URL else SharedMemoryCounter(Path(where))
        _counters[where] = counter
    return counter


def rate_window(ident: str, rate: Rate) -> Window:
    return rate_counter().hit(ident, rate.seconds, time.time())
