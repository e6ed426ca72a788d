"""The rate limit's counters: the shared-memory table of one machine and Redis, both exact under
processes that count at once."""

import multiprocessing
import uuid
from pathlib import Path

import pytest
from django.core.cache import caches

from memoryhub.ratelimit import RedisCounter, SharedMemoryCounter

PROCESSES = 4
HITS_EACH = 2000
WINDOW = 3600
NOW = 1_800_000_000.0  # a fixed moment, so no test straddles a window's end


def _hit_shared_table(path: str, ident: str, hits: int, start, results) -> None:
    counter = SharedMemoryCounter(Path(path))
    start.wait()
    results.put([counter.hit(ident, WINDOW, NOW).count for _ in range(hits)])


def _counts_from_processes(target, *arguments: object) -> list[int]:
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    start = context.Event()  # all processes count at once, not one after the other
    workers = [
        context.Process(target=target, args=(*arguments, HITS_EACH, start, results), daemon=True)
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    start.set()
    counts = [count for _ in workers for count in results.get(timeout=120)]
    for worker in workers:
        worker.join(timeout=30)
    return counts


def test_the_shared_table_loses_no_hit_when_processes_count_at_once(tmp_path):
    counts = _counts_from_processes(_hit_shared_table, str(tmp_path / "table"), "token-a")

    # Every hit got its own number: none lost, none counted twice.
    assert sorted(counts) == list(range(1, PROCESSES * HITS_EACH + 1))


def test_the_shared_table_counts_each_token_and_window_apart(tmp_path):
    counter = SharedMemoryCounter(tmp_path / "table")

    first = [counter.hit("token-a", WINDOW, NOW).count for _ in range(3)]
    other = counter.hit("token-b", WINDOW, NOW)
    next_window = counter.hit("token-a", WINDOW, NOW + WINDOW)
    per_minute = counter.hit("token-a", 60, NOW)

    assert first == [1, 2, 3]
    assert other.count == 1
    assert (next_window.count, next_window.ends_at) == (1, (int(NOW) // WINDOW + 2) * WINDOW)
    assert per_minute.count == 1


def test_a_second_process_mapping_the_table_sees_the_first_ones_counts(tmp_path):
    SharedMemoryCounter(tmp_path / "table").hit("token-a", WINDOW, NOW)

    assert SharedMemoryCounter(tmp_path / "table").hit("token-a", WINDOW, NOW).count == 2


def test_more_tokens_than_one_neighbourhood_holds_each_keep_their_count(tmp_path):
    counter = SharedMemoryCounter(tmp_path / "table")
    idents = [f"token-{number}" for number in range(2000)]

    for ident in idents:
        counter.hit(ident, WINDOW, NOW)

    assert {counter.hit(ident, WINDOW, NOW).count for ident in idents} == {2}


@pytest.fixture
def redis_cache(settings, redis_url):
    settings.MEMORYHUB_CACHE_URL = redis_url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    return caches["default"]


def _hit_redis(ident: str, hits: int, start, results) -> None:
    counter = RedisCounter()
    start.wait()
    results.put([counter.hit(ident, WINDOW, NOW).count for _ in range(hits)])


@pytest.mark.slow
def test_redis_loses_no_hit_when_processes_count_at_once(redis_cache):
    counts = _counts_from_processes(_hit_redis, f"token-{uuid.uuid4().hex}")

    assert sorted(counts) == list(range(1, PROCESSES * HITS_EACH + 1))


def test_a_redis_counter_expires_with_its_window(redis_cache):
    ident = f"token-{uuid.uuid4().hex}"
    counter = RedisCounter()
    now = NOW + WINDOW - 10  # ten seconds before the window ends

    counts = [counter.hit(ident, WINDOW, now).count for _ in range(2)]
    key = redis_cache.make_and_validate_key(f"ratelimit:{ident}:{WINDOW}:{(int(now) // WINDOW + 1) * WINDOW}")
    lifetime_ms = redis_cache._cache.get_client(key).pttl(key)

    assert counts == [1, 2]
    assert 0 < lifetime_ms <= 11_000


def test_without_redis_a_request_goes_uncounted_rather_than_refused(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # the discard port: nothing answers there
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }

    assert RedisCounter().hit("token-a", WINDOW, NOW).count == 0
