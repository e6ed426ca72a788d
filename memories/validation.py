"""Checks on every field an entry is written with, and on the yes-or-no flags a request reads.

Each check raises InvalidField, whose message names the field and the limit, so every way in
(API, tool, dashboard, admin, import) answers bad input the same way.
"""

import json
import math
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from memories.models import KEY_MAX_LENGTH, KIND_MAX_LENGTH, UID_MAX_LENGTH, Privacy

KIND_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
META_MAX_DEPTH = 20
# The largest row offset SQLite and PostgreSQL take (a signed 64-bit integer): a page past it has no rows.
MAX_ROW_OFFSET = 2**63 - 1


class InvalidField(ValueError):
    """A field's value breaks one of the hub's limits."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# Lone surrogates (category Cs) cannot be encoded as UTF-8 and NUL cannot be stored in PostgreSQL text.
UNSTORABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
# Control characters (category Cc) and lone surrogates (Cs): a regular expression is many times
# faster than asking unicodedata.category about each character, which matters on the import's hot path.
IDENTIFIER_FORBIDDEN_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _has_unstorable_characters(text: str) -> bool:
    return UNSTORABLE_CHARACTERS.search(text) is not None


def _check_identifier(field: str, text: object, max_length: int) -> str:
    if not isinstance(text, str):
        raise InvalidField(field, "must be a string.")
    if text == "":
        raise InvalidField(field, f"must not be empty (1 to {max_length} characters).")
    if len(text) > max_length:
        raise InvalidField(field, f"must be at most {max_length} characters; got {len(text)}.")
    if IDENTIFIER_FORBIDDEN_CHARACTERS.search(text):
        raise InvalidField(field, "must not contain control characters.")
    return text


def check_uid(uid: object) -> str:
    return _check_identifier("uid", uid, UID_MAX_LENGTH)


def check_key(key: object) -> str:
    return _check_identifier("key", key, KEY_MAX_LENGTH)


def check_value(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidField("value", "must be a string.")
    if _has_unstorable_characters(value):
        raise InvalidField("value", "must not contain NUL characters or unpaired surrogates.")
    limit = settings.MEMORYHUB_MAX_VALUE_BYTES
    size = len(value.encode("utf-8"))
    if size > limit:
        raise InvalidField("value", f"must be at most {limit} bytes (UTF-8); got {size}.")
    return value


def check_kind(kind: object) -> str:
    if not isinstance(kind, str):
        raise InvalidField("kind", "must be a string.")
    if not 1 <= len(kind) <= KIND_MAX_LENGTH:
        raise InvalidField("kind", f"must be 1 to {KIND_MAX_LENGTH} characters; got {len(kind)}.")
    if not KIND_PATTERN.fullmatch(kind):
        raise InvalidField(
            "kind",
            "must start with a letter or digit and hold only letters, digits, '_', '-', '.' and ':'.",
        )
    return kind


# The words a yes-or-no query parameter takes (any case), the same for every flag (?include_expired=, ?erase=);
# an empty one is no.
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("", "0", "false", "no", "off")


def check_flag(parameter: str, text: str) -> bool:
    """A yes-or-no query parameter's value: one of TRUE_WORDS or FALSE_WORDS, in any case."""
    if text.lower() in TRUE_WORDS:
        return True
    if text.lower() in FALSE_WORDS:
        return False
    raise InvalidField(
        parameter, f"must be one of {', '.join(TRUE_WORDS)} or {', '.join(word for word in FALSE_WORDS if word)}."
    )


def check_privacy(privacy: object) -> str:
    if privacy not in Privacy.values:
        raise InvalidField("privacy", f"must be one of {', '.join(Privacy.values)}.")
    return str(privacy)


def _depth(value: object, limit: int) -> int:
    """Nesting depth of a JSON value, stopping early once past the limit."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    children: Iterable[object]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _has_unstorable_strings(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _has_unstorable_characters(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# The numbers JSON may carry here: a double's range. A parser reads a number past it (1e400) as infinity, which
# JSON cannot hold.
JSON_NUMBER_RANGE = "from -1.8e308 to 1.8e308"


def _has_out_of_range_numbers(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, int) and not isinstance(item, bool):
            # A whole number past a double's range: most readers of the JSON would make it infinity.
            if abs(item) > sys.float_info.max:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def check_meta(meta: object) -> dict:
    if not isinstance(meta, dict):
        raise InvalidField("meta", "must be a JSON object.")
    if _depth(meta, META_MAX_DEPTH) > META_MAX_DEPTH:
        raise InvalidField("meta", f"must be nested at most {META_MAX_DEPTH} levels deep.")
    if _has_unstorable_strings(meta):
        raise InvalidField("meta", "must not contain NUL characters or unpaired surrogates.")
    if _has_out_of_range_numbers(meta):
        raise InvalidField("meta", f"must hold only numbers {JSON_NUMBER_RANGE}; one is out of range.")
    limit = settings.MEMORYHUB_MAX_META_BYTES
    try:
        size = len(json.dumps(meta, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError):
        raise InvalidField("meta", "must hold only JSON values.") from None
    if size > limit:
        raise InvalidField("meta", f"must be at most {limit} bytes as JSON; got {size}.")
    return meta


# The longest an entry may be kept before it expires, when it expires at all: ten years.
EXPIRY_MAX_SECONDS = 10 * 365 * 24 * 60 * 60


def check_moment_in_range(name: str, moment: datetime) -> datetime:
    """moment, when it is a time in UTC from year 1 to 9999 (what Python and both databases hold alike); else
    InvalidField naming it. "0001-01-01T00:00:00+14:00" is a time of year 0 in UTC, which PostgreSQL would store
    and no read of it could give back."""
    try:
        if moment.tzinfo is not None:
            moment.astimezone(UTC)
    except OverflowError:
        raise InvalidField(name, "is out of range: a time from year 1 to 9999 in UTC.") from None
    return moment


def check_ttl(ttl: object) -> int:
    """ttl: whole seconds from now until the entry expires, 1 to EXPIRY_MAX_SECONDS."""
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise InvalidField("ttl", f"must be a whole number of seconds, 1 to {EXPIRY_MAX_SECONDS}.")
    if not 1 <= ttl <= EXPIRY_MAX_SECONDS:
        raise InvalidField("ttl", f"must be 1 to {EXPIRY_MAX_SECONDS} seconds; got {ttl}.")
    return ttl


def check_expires(expires: object, *, now: datetime) -> datetime:
    """expires: an aware date and time after now and at most EXPIRY_MAX_SECONDS ahead."""
    if not isinstance(expires, datetime) or timezone.is_naive(expires):
        raise InvalidField("expires", "must be an ISO 8601 date and time with a time zone.")
    if expires <= now:
        raise InvalidField("expires", f"must be in the future (after {now.isoformat()}).")
    if expires > now + timedelta(seconds=EXPIRY_MAX_SECONDS):
        raise InvalidField("expires", f"must be at most {EXPIRY_MAX_SECONDS} seconds ahead.")
    return expires


def expiry_from(*, expires: object = None, ttl: object = None, now: datetime) -> datetime | None:
    """The expiry a write asks for: from ttl (seconds from now) or expires (a time), not both; None for neither."""
    if ttl is not None and expires is not None:
        raise InvalidField("ttl", "give ttl or expires, not both.")
    if ttl is not None:
        return now + timedelta(seconds=check_ttl(ttl))
    if expires is not None:
        return check_expires(expires, now=now)
    return None
