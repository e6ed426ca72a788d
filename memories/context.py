"""The context block: the memories an agent should see this turn, as prompt-ready plain text.

The format (documented in the README and the OpenAPI schema; `CONTEXT_FORMAT` names its version):

    Memories about alice (3 of 12, most relevant first):
    - language (preference): prefers Python
    - editor (fact): uses vim
    - address (fact): 12 Long Road
      Springfield

One header line, then one item per memory: "- key (kind): value". A value's own line breaks are
kept, each following line indented by two spaces, so every line that starts with "- " starts a
memory. A line break is any that str.splitlines ends a line at (LINE_BREAK: LF, CR and CRLF, VT,
FF, the file, group and record separators, NEL, and the line and paragraph separators), each
written as "\n"; one in a key or a uid (which refuse control characters, but not the two
separators) is indented alike, so a reader splitting lines by Unicode's rules sees no item the
block does not hold. The header says "most relevant first" when a query ranked the first memories
and the search judges one of those shown relevant (it passes the relevance cut-off: each result's
`relevant`, memories.search.hybrid; a word match of a lexical search always does), "nearest to the
query first, none judged relevant" when the query ranked the first memories but none of them passes,
"newest first" otherwise. Each memory shown has a reason: REASON_RELEVANT (ranked first and judged
relevant), REASON_NEAREST (ranked first, not judged relevant) or REASON_RECENT (among the newest).
Consumers must treat a reason or header wording they do not know as informational: a later version
of the format may add some. A user with no memories, or a budget too small for the header and one
memory, gets an empty block.

Lengths are counted in characters (Python's len, code points), the block's final newline included.
Memories are taken in order (those the query ranks first, then the most recently
updated) and a memory that does not fit whole is skipped, never cut; a later, shorter one may
still fit: once a recent memory does not fit, the CONTEXT_FILL_WINDOW memories after the last one
taken are looked at for shorter ones, again after each one so found. The same data, budget and
query always give the same block.
"""

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memories.validation import UNSTORABLE_CHARACTERS, InvalidField
from memoryhub.numbers import plain_whole_number

# /2 added the reason "nearest" and its header wording (/1 called every memory the query ranked first relevant).
CONTEXT_FORMAT = "memoryhub-context/2"
CONTEXT_DEFAULT_BUDGET = 2200
CONTEXT_MIN_BUDGET = 1
CONTEXT_MAX_BUDGET = 20_000
CONTEXT_QUERY_MAX_LENGTH = 1000
# How many memories the query may put first; the rest of the budget goes to the newest.
CONTEXT_RELEVANT_LIMIT = 20
# The newest memories short enough for the room left are asked for this many first (then twice as
# many each time), and taken from the database CONTEXT_FETCH_SIZE at a time, so the rows past a full
# block are never read.
CONTEXT_SCAN_CHUNK = 64
CONTEXT_FETCH_SIZE = 16
# Once a memory does not fit, shorter ones are looked for among this many memories that follow the
# last one taken (so a user whose older memories are all too long costs a bounded read).
CONTEXT_FILL_WINDOW = 64
ITEM_PREFIX = "- "
CONTINUATION_INDENT = "  "
# Every line break str.splitlines knows, CRLF as one (tests/memories/test_context.py holds the set to it).
LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# The characters an item adds around its key, kind and value: "- ", " (", "): " and the newline.
ITEM_OVERHEAD = len(ITEM_PREFIX) + len(" (") + len("): ") + len("\n")

REASON_RELEVANT = "relevant"
REASON_NEAREST = "nearest"
REASON_RECENT = "recent"
# The header's wording of the block's order.
ORDER_RELEVANT = "most relevant first"
ORDER_NEAREST = "nearest to the query first, none judged relevant"
ORDER_NEWEST = "newest first"


@dataclass(frozen=True)
class Candidate:
    """A memory that may go into the block, as read from the database."""

    key: str
    kind: str
    value: str
    version: int
    updated: datetime


@dataclass(frozen=True)
class UsedEntry:
    """A memory the block shows, and why it was chosen (REASON_RELEVANT, REASON_NEAREST or REASON_RECENT)."""

    key: str
    kind: str
    version: int
    updated: datetime
    reason: str


@dataclass(frozen=True)
class ContextBlock:
    uid: str
    budget: int
    query_text: str
    text: str
    entries: tuple[UsedEntry, ...]
    total: int
    etag: str

    @property
    def length(self) -> int:
        return len(self.text)


def check_budget(budget: object) -> int:
    """The budget as a whole number of characters within the limits, else InvalidField naming them."""
    limits = f"a whole number of characters from {CONTEXT_MIN_BUDGET} to {CONTEXT_MAX_BUDGET}"
    number = plain_whole_number(budget.strip()) if isinstance(budget, str) else None
    if number is not None:
        budget = number
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidField("budget", f"must be {limits}; got {str(budget)[:40]!r}.")
    if not CONTEXT_MIN_BUDGET <= budget <= CONTEXT_MAX_BUDGET:
        raise InvalidField("budget", f"must be {limits}; got {budget}.")
    return budget


def check_query_text(query_text: object, *, field: str = "q") -> str:
    if not isinstance(query_text, str):
        raise InvalidField(field, "must be a string.")
    if len(query_text) > CONTEXT_QUERY_MAX_LENGTH:
        raise InvalidField(field, f"must be at most {CONTEXT_QUERY_MAX_LENGTH} characters; got {len(query_text)}.")
    if UNSTORABLE_CHARACTERS.search(query_text):
        raise InvalidField(field, "must not contain NUL characters or unpaired surrogates.")
    return query_text


def indented(text: str) -> str:
    """text with each of its line breaks written as a newline and the line after it indented: it cannot
    start a line of the block's own."""
    return LINE_BREAK.sub("\n" + CONTINUATION_INDENT, text)


def item_text(candidate: Candidate) -> str:
    """One memory as the block writes it, with its final newline."""
    return indented(f"{ITEM_PREFIX}{candidate.key} ({candidate.kind}): {candidate.value}") + "\n"


def header_text(*, uid: str, shown: int, total: int, order: str) -> str:
    return indented(f"Memories about {uid} ({shown} of {total}, {order}):") + "\n"


def header_order(used: Iterable[UsedEntry]) -> str:
    """The header's wording for the memories shown: ORDER_RELEVANT when one is relevant, ORDER_NEAREST when
    the query ranked some first but none is relevant, ORDER_NEWEST otherwise."""
    reasons = {entry.reason for entry in used}
    if REASON_RELEVANT in reasons:
        return ORDER_RELEVANT
    if REASON_NEAREST in reasons:
        return ORDER_NEAREST
    return ORDER_NEWEST


class BlockBuilder:
    """Fills a block within a budget from candidates offered in order.

    The header's length depends on how many memories it counts and on its wording, so the builder keeps
    room for the longest header it could need: the one counting every memory the user has, in the longest
    wording the memories it may be offered could give. ranked: a query may rank memories first (offered
    as REASON_RELEVANT or REASON_NEAREST); nearest: some of them may be offered as REASON_NEAREST.
    """

    def __init__(self, *, uid: str, budget: int, total: int, ranked: bool, nearest: bool = False) -> None:
        self.uid = uid
        self.total = total
        self.nearest = nearest
        orders = [ORDER_NEWEST, *([ORDER_RELEVANT] if ranked else []), *([ORDER_NEAREST] if nearest else [])]
        longest_header = max(len(header_text(uid=uid, shown=total, total=total, order=order)) for order in orders)
        self.room = budget - longest_header
        self.items: list[str] = []
        self.used: list[UsedEntry] = []
        self.keys: set[str] = set()

    @property
    def full(self) -> bool:
        """Whether no memory can fit any more (the shortest possible item is 'k (k): ' and a newline)."""
        return self.room < ITEM_OVERHEAD + 2

    def offer(self, candidate: Candidate, *, reason: str) -> bool:
        """Add the memory if it fits whole in the room left (and is not shown already); whether it was added."""
        # The room kept for the header holds the wording of REASON_NEAREST only when the builder was told of it.
        assert self.nearest or reason != REASON_NEAREST
        if candidate.key in self.keys:
            return False
        text = item_text(candidate)
        if len(text) > self.room:
            return False
        self.room -= len(text)
        self.items.append(text)
        self.keys.add(candidate.key)
        self.used.append(
            UsedEntry(
                key=candidate.key,
                kind=candidate.kind,
                version=candidate.version,
                updated=candidate.updated,
                reason=reason,
            )
        )
        return True

    def text(self) -> str:
        if not self.items:
            return ""
        order = header_order(self.used)
        return header_text(uid=self.uid, shown=len(self.items), total=self.total, order=order) + "".join(self.items)


def block_etag(
    *,
    text: str,
    used: Iterable[UsedEntry],
    budget: int,
    query_text: str,
    total: int,
    last_updated: datetime | None,
) -> str:
    """A strong entity tag derived from everything the block was made from and the block itself.

    Any write to the user's memories changes their count or last update; an entry that the block
    shows changes its version; a changed ranking (an embedding finished) or an expired entry
    changes which entries are used, or why (each entry's reason is hashed). Each of those changes the tag.
    """
    parts: Sequence[str] = (
        CONTEXT_FORMAT,
        str(budget),
        query_text,
        str(total),
        last_updated.isoformat() if last_updated else "",
        *(f"{entry.key}\x1f{entry.version}\x1f{entry.reason}" for entry in used),
        text,
    )
    digest = hashlib.sha256("\x1e".join(parts).encode("utf-8", "surrogatepass"))
    return f'"{digest.hexdigest()[:32]}"'
