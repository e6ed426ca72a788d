"""The ways the double can misbehave, chosen per call from a seeded plan (so a failing run replays)."""

import enum
import random
import threading
from dataclasses import dataclass, field


class Fault(enum.Enum):
    """What happens to one call instead of (or after) its normal answer."""

    SERVER_ERROR = "server_error"  # 500 before anything is written
    TIMEOUT = "timeout"  # no answer before the client gives up; nothing written
    DROPPED_CONNECTION = "dropped_connection"  # the write happens, then the connection drops: the reply is lost
    UNAUTHORIZED = "unauthorized"  # 401, as for a bad API key
    RATE_LIMITED = "rate_limited"  # 429 with a Retry-After header; nothing written
    UNREACHABLE = "unreachable"  # connection refused


@dataclass
class FaultPlan:
    """Which calls fail, and how.

    failure_rate: the fraction (0 to 1) of calls that fail, each with one of `kinds` picked at random.
    fail_next: faults for the next calls, in order (None: a normal answer), before failure_rate applies.
    unauthorized / unreachable: every call answers 401 / cannot connect, until switched off.
    seed: makes the random choices repeatable.
    """

    failure_rate: float = 0.0
    kinds: tuple[Fault, ...] = (Fault.SERVER_ERROR, Fault.TIMEOUT, Fault.DROPPED_CONNECTION)
    fail_next: list[Fault | None] = field(default_factory=list)
    unauthorized: bool = False
    unreachable: bool = False
    seed: int = 0
    injected: int = 0
    _random: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def reset(self) -> None:
        """Back to a healthy server."""
        with self._lock:
            self.failure_rate = 0.0
            self.fail_next.clear()
            self.unauthorized = False
            self.unreachable = False

    def fail(self, rate: float, kinds: tuple[Fault, ...] | None = None, seed: int | None = None) -> None:
        """Fail `rate` of the calls from now on with one of `kinds`."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1; got {rate}")
        with self._lock:
            self.failure_rate = rate
            if kinds is not None:
                self.kinds = tuple(kinds)
            if seed is not None:
                self._random = random.Random(seed)

    def next_fault(self) -> Fault | None:
        """The fault for the call being answered now, or None for a normal answer."""
        with self._lock:
            fault = self._choose()
            if fault is not None:
                self.injected += 1
            return fault

    def _choose(self) -> Fault | None:
        if self.unreachable:
            return Fault.UNREACHABLE
        if self.unauthorized:
            return Fault.UNAUTHORIZED
        if self.fail_next:
            return self.fail_next.pop(0)
        if self.failure_rate and self._random.random() < self.failure_rate:
            return self._random.choice(self.kinds)
        return None
