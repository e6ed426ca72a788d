"""How many examples a property test tries: its own count, or the fast profile's fewer.

`make test-fast` runs pytest with `--hypothesis-profile=fast`, which caps every property test at
FAST_MAX_EXAMPLES examples; `make test` loads no profile and each test tries its own count.
"""

from hypothesis import settings

FAST_PROFILE = "fast"
FAST_MAX_EXAMPLES = 10

settings.register_profile(FAST_PROFILE, max_examples=FAST_MAX_EXAMPLES)


def examples(count: int) -> int:
    """count, or the loaded profile's max_examples when that is lower (read when the test is defined)."""
    return min(count, settings.default.max_examples)
