"""What the API reads and writes. Serializers parse and check shapes; services do the writing."""

import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, ClassVar, TypeVar

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.db.models.manager import BaseManager
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from memories import context
from memories.models import KEY_MAX_LENGTH, HeldWrite, MemoryEntry, MemoryEvent, Privacy
from memories.rows import SHOWN_COLUMNS
from memories.search import HybridMatches, LexicalMatches, RankedMatches, ShownMatches
from memories.services import (
    BATCH_MAX_OPERATIONS,
    BATCH_MIN_EXPECTED_VERSION,
    BatchOp,
    check_batch_op,
    check_expected_version,
    check_put_has_value,
)
from memories.validation import (
    EXPIRY_MAX_SECONDS,
    InvalidField,
    check_expires,
    check_key,
    check_kind,
    check_meta,
    check_ttl,
    check_value,
)


class StrictCharField(serializers.CharField):
    """A string taken as sent: no number-to-text coercion, no whitespace trimming."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data


Checked = TypeVar("Checked")


def _run_check(check: Callable[[object], Checked], value: object) -> Checked:
    try:
        return check(value)
    except InvalidField as error:
        raise serializers.ValidationError(error.message) from None


FieldReader = Callable[[MemoryEntry], Any]
# Model fields an entry shows as stored (text, a JSON object, a number): DRF's fields for them return
# the value unchanged, so a page reads the attribute directly.
PLAIN_ENTRY_FIELDS = frozenset({"uid", "key", "value", "kind", "meta", "version"})
PLAIN_FIELD_TYPES = (serializers.CharField, serializers.IntegerField, serializers.JSONField)


def _field_reader(field: serializers.Field, moment: Callable[[datetime], str]) -> tuple[str, FieldReader]:
    """A bound field's name in the output, and how a page reads it from an entry."""
    name, own = field.field_name, vars(field)
    assert name is not None  # a field of a serializer is bound to its name
    if field.source != name:
        pass
    elif name in PLAIN_ENTRY_FIELDS and isinstance(field, PLAIN_FIELD_TYPES) and not own.get("binary"):
        return name, operator.attrgetter(name)
    elif isinstance(field, serializers.DateTimeField) and "format" not in own and "timezone" not in own:
        return name, lambda entry: moment(getattr(entry, name))

    def read(entry: MemoryEntry) -> Any:  # noqa: ANN401 - whatever the field shows
        # As Serializer.to_representation reads a field: None stays None.
        attribute = field.get_attribute(entry)
        return None if attribute is None else field.to_representation(attribute)

    return name, read


class EntryListSerializer(serializers.ListSerializer):
    """A page of entries, each exactly as its serializer gives one alone, without DRF's work per field.

    Each field's reader is chosen once per page: plain attributes are read directly, datetimes go
    through one DRF DateTimeField whose time zone is looked up once per page instead of twice per
    entry, and every other field is read by its own DRF field as a serializer would (on a page of 50,
    DRF's work per field was most of the request).
    """

    child: "EntrySerializer"

    def to_representation(self, data: "Iterable[MemoryEntry] | BaseManager[MemoryEntry]") -> list[dict[str, Any]]:
        entries = data.all() if isinstance(data, BaseManager) else data
        moment = _moment_writer(timezone.get_current_timezone())
        readers = [_field_reader(field, moment) for field in _readable_fields(type(self.child))]
        return [{name: read(entry) for name, read in readers} for entry in entries]


# The names of the zone that is UTC (zoneinfo.ZoneInfo keys).
UTC_ZONE_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"})


def _moment_writer(zone: tzinfo) -> Callable[[Any], Any]:
    """DRF's DateTimeField.to_representation in zone, with its ISO 8601 output written directly for an aware
    datetime (every datetime read from the database): astimezone, isoformat, "+00:00" as "Z", as DRF writes it.
    Anything else, or another DATETIME_FORMAT, goes through DRF's own."""
    drf = serializers.DateTimeField(default_timezone=zone).to_representation
    if str(api_settings.DATETIME_FORMAT).lower() != ISO_8601:
        return drf

    # Shown in UTC (the default TIME_ZONE): a moment read in UTC (as the databases give them) is written as it
    # is, without astimezone, which costs four times the isoformat.
    shown_in_utc = zone is UTC or getattr(zone, "key", None) in UTC_ZONE_NAMES

    def moment(value: Any) -> Any:  # noqa: ANN401 - as DRF's: a datetime, else whatever DRF makes of it
        if not isinstance(value, datetime) or value.tzinfo is None:
            return drf(value)
        moment_in_zone = value if shown_in_utc and value.tzinfo is UTC else value.astimezone(zone)
        text = moment_in_zone.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return moment


@functools.cache
def _readable_fields(serializer_class: type["EntrySerializer"]) -> tuple[serializers.Field, ...]:
    """The fields a page of this serializer shows, built once per process: a ModelSerializer builds its
    fields from the model each time one is made (a fifth of a search request), and these depend on
    nothing of the request (their method fields read only the entry)."""
    return tuple(serializer_class()._readable_fields)


PRIVACY_HELP = (
    "shared: may be mirrored to Honcho and embedded by a remote provider; local: never leaves this hub "
    "(not synced, never sent to a remote embeddings endpoint; found by its words, or by the local model)."
)


def _check_future(moment: object) -> datetime:
    return check_expires(moment, now=timezone.now())


class EntrySerializer(serializers.ModelSerializer):
    guard_flags = serializers.ListField(
        child=serializers.CharField(),
        source="guard_flag_names",
        read_only=True,
        help_text="The write guard's rules the key or value broke (memories.guard); empty when none. A flagged "
        "entry is left out of the context block unless the account's policy includes flagged entries.",
    )

    class Meta:
        model = MemoryEntry
        fields = [
            "uid",
            "key",
            "value",
            "kind",
            "meta",
            "privacy",
            "version",
            "created",
            "updated",
            "guard_flags",
            "expires",
        ]
        read_only_fields = fields
        list_serializer_class = EntryListSerializer
        extra_kwargs = {
            "privacy": {"help_text": PRIVACY_HELP},
            "expires": {"help_text": "When the memory expires (then no read shows it); null: never."},
        }


@functools.cache
def _entry_representer() -> EntrySerializer:
    return EntrySerializer()


def entry_data(entry: MemoryEntry) -> dict[str, Any]:
    """One entry as EntrySerializer shows it, through one serializer built once per process.

    A ModelSerializer builds its fields from the model each time one is made (most of what
    `EntrySerializer(entry).data` costs); a list's serializer builds them once and reuses its child
    for every row, and this reuses one the same way for every single entry.
    """
    return _entry_representer().to_representation(entry)


_SHOWN_WIDTH = len(SHOWN_COLUMNS)


def _shown_entry(moment: Callable[[datetime], str], values: Sequence[Any]) -> dict[str, Any]:
    """One entry's memories.rows.SHOWN_COLUMNS values (the first of values) as EntrySerializer shows them."""
    uid, key, value, kind, meta, privacy, version, created, updated, guard_flags, expires = values[:_SHOWN_WIDTH]
    shown_created = None if created is None else moment(created)
    return {
        "uid": uid,
        "key": key,
        "value": value,
        "kind": kind,
        "meta": meta,
        "privacy": privacy,
        "version": version,
        "created": shown_created,
        # An entry never changed was updated when created: the same moment, written once.
        "updated": shown_created if updated == created else None if updated is None else moment(updated),
        "guard_flags": guard_flags.split(",") if guard_flags else [],
        "expires": None if expires is None else moment(expires),
    }


def entry_page_data(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """A page of entries read as their memories.rows.SHOWN_COLUMNS (selectors.EntryListing), each exactly as
    EntrySerializer shows it: the dicts written straight from the values, without a serializer's work per
    field (the fields are EntrySerializer's, in its order: tests/memories/test_rows.py holds the two equal)."""
    moment = _moment_writer(timezone.get_current_timezone())
    return [_shown_entry(moment, row) for row in rows]


def search_page_data(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """A page of a ranked search's results read as memories.search.ShownMatches gives them (an entry's
    memories.rows.SHOWN_COLUMNS values, then score, matched_terms, lexical_rank, semantic_similarity, relevant),
    each exactly as SearchResultSerializer shows it (tests/memories/test_rows.py holds the two equal)."""
    moment = _moment_writer(timezone.get_current_timezone())
    page = []
    for row in rows:
        score, matched_terms, lexical_rank, similarity, relevant = row[_SHOWN_WIDTH:]
        shown = _shown_entry(moment, row)
        shown["score"] = score
        shown["matched_terms"] = list(matched_terms)
        shown["lexical_rank"] = lexical_rank
        shown["semantic_similarity"] = None if similarity is None else round(similarity, 4)
        shown["relevant"] = relevant
        page.append(shown)
    return page


class SearchResultSerializer(EntrySerializer):
    """An entry found by ?q=, with what ranked it."""

    score = serializers.SerializerMethodField(
        help_text="The ranking's score (higher is better; comparable within one query only): the fused score "
        "when the search was hybrid (null past the fused results), the lexical one otherwise (null past the "
        "ranked results, where they come newest first), and null with match=substring."
    )
    matched_terms = serializers.SerializerMethodField(
        help_text="The query's words and phrases (folded: no case, no accents) that the entry holds."
    )
    lexical_rank = serializers.SerializerMethodField(
        help_text="In a hybrid search: its place in the lexical ranking (1 is first); null when the words did not "
        "rank it, or the search was lexical only."
    )
    semantic_similarity = serializers.SerializerMethodField(
        help_text="In a hybrid search: the cosine similarity of its embedding to the query's; null when it is not "
        "among the nearest, or the search was lexical only."
    )
    relevant = serializers.SerializerMethodField(
        help_text="In a hybrid search: whether it passes the relevance cut-off (both the words and the meaning "
        "found it, or its meaning is close to the query and stands far above the user's other entries); when no "
        "result of a search passes, most likely nothing answers it. Null when the search was lexical only (it has "
        "no cut-off)."
    )

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_score(self, entry: MemoryEntry) -> float | None:
        return getattr(entry, "score", None)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_matched_terms(self, entry: MemoryEntry) -> list[str]:
        return list(getattr(entry, "matched_terms", ()))

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_lexical_rank(self, entry: MemoryEntry) -> int | None:
        return getattr(entry, "lexical_rank", None)

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_semantic_similarity(self, entry: MemoryEntry) -> float | None:
        similarity = getattr(entry, "semantic_similarity", None)
        return None if similarity is None else round(similarity, 4)

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_relevant(self, entry: MemoryEntry) -> bool | None:
        return getattr(entry, "relevant", None)

    class Meta(EntrySerializer.Meta):
        fields = [
            *EntrySerializer.Meta.fields,
            "score",
            "matched_terms",
            "lexical_rank",
            "semantic_similarity",
            "relevant",
        ]
        read_only_fields = fields


def search_results_data(entries: "RankedMatches | QuerySet[MemoryEntry]", *, limit: int) -> list[dict[str, Any]]:
    """The first `limit` of a search's entries (selectors.entry_search), each as ?q= shows it (SearchResultSerializer's
    fields): a ranked search's written straight from the values it shows, as the API's pages are."""
    if isinstance(entries, LexicalMatches | HybridMatches):
        return search_page_data(ShownMatches(entries)[0:limit])
    return list(SearchResultSerializer(entries[:limit], many=True).data)


class FieldsCopiedShallow(serializers.Serializer):
    """A Serializer whose fields are shallow copies of its declared ones, not DRF's deep copies.

    DRF deep-copies every declared field for each serializer it makes, which re-runs each field's
    __init__ (three quarters of validating a PUT's body). A field keeps no state of a validation on
    itself (what bind() sets is set on the copy), so a shallow copy of each, bound anew, validates
    exactly as a deep one: the same values, the same errors.
    """

    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: _shallow_copy(field) for name, field in self._declared_fields.items()}


def _shallow_copy(field: serializers.Field) -> serializers.Field:
    # As copy.copy, without its generic protocol (a fifth of the cost).
    clone = field.__class__.__new__(field.__class__)
    clone.__dict__.update(field.__dict__)
    return clone


class MetaField(serializers.JSONField):
    """A memory's meta, checked by validation.check_meta, whose messages say what is wrong: DRF's JSONField answers
    every value json.dumps refuses with 'Value must be valid JSON.', a number past a double's range among them
    (valid JSON, which the parser reads as infinity)."""

    def to_internal_value(self, data: object) -> dict:
        return _run_check(check_meta, data)


@extend_schema_field({"type": "integer", "minimum": BATCH_MIN_EXPECTED_VERSION})
class ExpectedVersionField(serializers.IntegerField):
    """A whole number; its lower bound is the batch's rule (services.check_expected_version), checked in validate."""


# What an entry shows that a write does not take: a body sent back as a GET (or a search's result) gave it is
# taken, these left unread.
ENTRY_SHOWN_ONLY = frozenset(
    {"uid", "key", "version", "created", "updated", "guard_flags"}
    | {"score", "matched_terms", "lexical_rank", "semantic_similarity", "relevant"}
)


def _refuse_unknown(data: object, fields: Iterable[str], *, left_unread: frozenset[str] = frozenset()) -> None:
    """A 400 naming each field of a body (an object) that is none of fields nor left_unread: a misspelt name would
    otherwise be left unread (a misspelt "privacy" left the memory shared)."""
    if not isinstance(data, Mapping):
        return
    taken = list(fields)
    unknown = [name for name in data if name not in taken and name not in left_unread]
    if unknown:
        message = f"is no field of this write; it takes {', '.join(taken)}."
        raise serializers.ValidationError({name: [message] for name in unknown})


class EntryWriteSerializer(FieldsCopiedShallow):
    """Body of PUT /users/{uid}/memories/{key} (and of PATCH, where every field is optional)."""

    value = StrictCharField(
        allow_blank=True, help_text=f"The memory, at most {settings.MEMORYHUB_MAX_VALUE_BYTES} bytes."
    )
    kind = StrictCharField(
        required=False,
        allow_blank=True,
        help_text="Defaults to 'preference' on creation; kept on update when left out.",
    )
    meta = MetaField(required=False, help_text="A JSON object; kept on update when left out.")
    privacy = serializers.ChoiceField(
        choices=Privacy.choices,
        required=False,
        help_text=f"{PRIVACY_HELP} The account's default_privacy on creation; kept on update when left out.",
    )
    ttl = serializers.IntegerField(
        required=False,
        help_text=f"Seconds from now until the memory expires (1 to {EXPIRY_MAX_SECONDS}); then no read shows it.",
    )
    expires = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text=f"When the memory expires: a future time, at most {EXPIRY_MAX_SECONDS} seconds ahead; null "
        "never expires. Give ttl or expires, not both; both left out keep the memory's expiry.",
    )

    expected_version = ExpectedVersionField(
        required=False,
        help_text="Store only if the memory is at this version, as If-Match asks on PUT and PATCH (both sent must "
        "hold); 412 otherwise.",
    )

    # What the body may hold beside the fields, left unread (what an entry, or a search's result, shows).
    left_unread: ClassVar[frozenset[str]] = ENTRY_SHOWN_ONLY

    def to_internal_value(self, data: object) -> dict[str, Any]:
        """The body's fields, checked; a name that is no field of the write is refused by name (_refuse_unknown)."""
        _refuse_unknown(data, self.fields, left_unread=self.left_unread)
        return super().to_internal_value(data)

    def validate_value(self, value: str) -> str:
        return _run_check(check_value, value)

    def validate_expected_version(self, expected_version: int) -> int | None:
        return _run_check(check_expected_version, expected_version)

    def validate_ttl(self, ttl: int) -> int:
        return _run_check(check_ttl, ttl)

    def validate_expires(self, expires: datetime | None) -> datetime | None:
        if expires is None:
            return None
        return _run_check(_check_future, expires)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # expires null (no expiry) with a ttl is as contrary as a time with one.
        if attrs.get("ttl") is not None and "expires" in attrs:
            raise serializers.ValidationError({"ttl": ["Give ttl or expires, not both."]})
        return attrs

    def validate_kind(self, kind: str) -> str:
        return _run_check(check_kind, kind)


class EntryCreateSerializer(EntryWriteSerializer):
    """Body of POST /users/{uid}/memories/: the key travels in the body."""

    key = StrictCharField(allow_blank=True, max_length=None, help_text=f"1 to {KEY_MAX_LENGTH} characters.")

    def validate_key(self, key: str) -> str:
        return _run_check(check_key, key)


class EventSerializer(serializers.ModelSerializer):
    actor: "serializers.SlugRelatedField[User]" = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = MemoryEvent
        fields = [
            "action",
            "version",
            "value_before",
            "value_after",
            "kind_before",
            "kind_after",
            "meta_before",
            "meta_after",
            "privacy_before",
            "privacy_after",
            "entries_erased",
            "actor",
            "held_write",
            "at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "action": {
                "help_text": "create, update, delete, expire, erase, or reject: staff rejected a write the guard held "
                "(nothing changed; before and after are the memory as it stood, none when there was none)."
            },
            "held_write": {
                "help_text": "For a decision on a held write (an approval's create or update, a rejection): its "
                "number, at /api/v1/held/{id}, which holds the value asked for. The actor is who decided."
            },
        }


class UserSummarySerializer(serializers.Serializer):
    uid = serializers.CharField()
    entries = serializers.IntegerField()
    last_updated = serializers.DateTimeField()


class ForgetSerializer(serializers.Serializer):
    uid = serializers.CharField()
    deleted = serializers.IntegerField(
        help_text="How many entries were deleted; their history stays, unless erase=1 erased it too."
    )
    erased = serializers.BooleanField(help_text="Whether the user was erased (erase=1): history and Honcho too.")
    history_erased = serializers.IntegerField(
        required=False, help_text="With erase=1: how many history events went (one erase event stays)."
    )


class CountsSerializer(serializers.Serializer):
    entries = serializers.IntegerField()
    users = serializers.IntegerField()


class SyncStatusSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="Whether writes are mirrored to Honcho (MEMORYHUB_HONCHO_SYNC).")
    scope = serializers.ChoiceField(
        choices=["account", "hub"], help_text="account: this account's entries; hub: every account's (staff)."
    )
    pending = serializers.IntegerField(help_text="Changes waiting to be pushed.")
    failed = serializers.IntegerField(
        help_text="Changes parked after an error that will not pass by waiting; retried by hand."
    )
    oldest_pending_seconds = serializers.FloatField(
        allow_null=True, help_text="Age of the oldest change not yet in Honcho."
    )
    last_success = serializers.DateTimeField(allow_null=True, help_text="When a push last worked.")
    last_error = serializers.CharField(allow_blank=True)
    last_error_at = serializers.DateTimeField(allow_null=True)


class InfoSyncSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    pending = serializers.IntegerField(required=False, help_text="The account's changes waiting (when enabled).")
    failed = serializers.IntegerField(required=False, help_text="The account's failed changes (when enabled).")


class InfoWorkSerializer(serializers.Serializer):
    worker_seen = serializers.BooleanField(
        help_text="Whether a running worker (`manage.py work`) was seen in the last minute (one that stopped is not)."
    )
    last_seen = serializers.DateTimeField(allow_null=True, help_text="When a worker was last seen.")
    waiting = serializers.DictField(
        child=serializers.IntegerField(), help_text="Work waiting, by kind (sync, evaluation, ...), for the whole hub."
    )


class InfoSerializer(serializers.Serializer):
    backend = serializers.CharField()
    cloud = serializers.BooleanField()
    available = serializers.BooleanField()
    reason = serializers.CharField()
    counts = CountsSerializer()
    sync = InfoSyncSerializer()
    work = InfoWorkSerializer()
    embeddings = serializers.ChoiceField(
        choices=["off", "local", "openai"],
        help_text="Who embeds memories and queries for the search by meaning (MEMORYHUB_EMBEDDINGS): the local model, "
        "an OpenAI-compatible endpoint, or off (search by words alone). The worker embeds each memory after its "
        "write (work.waiting.embeddings counts those not yet embedded).",
    )
    version = serializers.CharField()


class BatchOpField(serializers.ChoiceField):
    """A batch operation's op, checked by the batch's own rule (services.check_batch_op); an enum in the schema."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=BatchOp.choices, **kwargs)

    def to_internal_value(self, data: object) -> str:
        return _run_check(check_batch_op, data)


class BatchOperationSerializer(EntryCreateSerializer):
    """One operation of POST /users/{uid}/memories/batch: key, value, kind and meta checked as a put's."""

    # The batch's own rules (op, expected_version, a put's value) are services.batch's, which
    # entries_batch applies to every caller too.
    op = BatchOpField()
    # An operation is no entry sent back: "version" for expected_version, or a "uid" not the path's, is refused.
    left_unread: ClassVar[frozenset[str]] = frozenset()
    value = StrictCharField(required=False, allow_blank=True, help_text="Required for a put.")
    expected_version = ExpectedVersionField(
        required=False, help_text="Apply only if the entry is at this version (as If-Match)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        try:
            check_put_has_value(attrs["op"], attrs.get("value"))
        except InvalidField as error:
            raise serializers.ValidationError({error.field: [error.message]}) from None
        if attrs["op"] == BatchOp.DELETE:
            # A delete changes nothing of the entry it removes: a value or kind sent with it is a mistake to say.
            given = [name for name in attrs if name not in DELETE_TAKES]
            if given:
                message = f"is no field of a delete; it takes {', '.join(DELETE_TAKES)}."
                raise serializers.ValidationError({name: [message] for name in given})
        return attrs


# What a batch's delete takes.
DELETE_TAKES = ("op", "key", "expected_version")


class BatchSerializer(serializers.Serializer):
    """Body of POST /users/{uid}/memories/batch: the operations, applied in order, all or none."""

    def to_internal_value(self, data: object) -> dict[str, Any]:
        _refuse_unknown(data, self.fields)
        return super().to_internal_value(data)

    # many=True hands max_length on to the ListSerializer (DRF 3.14+); the stubs only know the child's arguments.
    operations = BatchOperationSerializer(
        many=True,
        allow_empty=False,
        max_length=BATCH_MAX_OPERATIONS,  # type: ignore[call-arg]
    )


class HeldWriteSerializer(serializers.ModelSerializer):
    guard_flags = serializers.ListField(
        child=serializers.CharField(), source="guard_flag_names", read_only=True, help_text="The rules it broke."
    )
    requested_by = serializers.CharField(source="requested_by.username", allow_null=True, default=None)
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)

    class Meta:
        model = HeldWrite
        fields = [
            "id", "uid", "key", "value", "kind", "meta", "privacy", "ttl", "expires", "clears_expiry",
            "expected_version", "guard_flags", "status",
            "requested_by", "requested_at", "decided_by", "decided_at", "entry_version",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "privacy": {
                "help_text": "The privacy the write asked for; for a new memory that named none, the account's "
                "default when it was written (null: the memory's own)."
            },
            "ttl": {
                "help_text": "The ttl the write asked for: on approval the memory expires this many seconds later."
            },
            "expires": {"help_text": "The expiry time the write asked for; a time passed by then cannot be approved."},
            "clears_expiry": {"help_text": "Whether the write asked for no expiry (expires: null)."},
            "expected_version": {
                "help_text": "The version the write named (If-Match; 0: create only), if any: it is approved only "
                "while the memory is still at that version."
            },
        }


class BatchOutcomeSerializer(serializers.Serializer):
    op = serializers.CharField()
    key = serializers.CharField()
    status = serializers.ChoiceField(choices=["created", "updated", "unchanged", "deleted", "absent", "held"])
    entry = EntrySerializer(allow_null=True)
    held = HeldWriteSerializer(
        allow_null=True, help_text="For a put the write guard held: the held write, waiting for review."
    )


class BatchResultSerializer(serializers.Serializer):
    results = BatchOutcomeSerializer(many=True)


class ContextEntrySerializer(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.CharField()
    version = serializers.IntegerField()
    updated = serializers.DateTimeField()
    reason = serializers.ChoiceField(
        choices=[context.REASON_RELEVANT, context.REASON_NEAREST, context.REASON_RECENT],
        help_text="relevant: found by the query q and judged relevant (it passes the search's relevance cut-off; "
        "with embeddings off, every word match); nearest: found by q and ranked first, but not judged relevant "
        "(most likely no answer); recent: among the newest. Treat a reason you do not know as informational: "
        "later versions of the format may add some.",
    )


class ContextBlockSerializer(serializers.Serializer):
    uid = serializers.CharField()
    budget = serializers.IntegerField(help_text="The most characters text may have.")
    query = serializers.CharField(source="query_text", allow_blank=True, help_text="The q it was made for.")
    text = serializers.CharField(allow_blank=True, help_text="The block, ready to put in a prompt (empty when none).")
    length = serializers.IntegerField(help_text="len(text) in characters; never above budget.")
    total = serializers.IntegerField(help_text="How many memories the user has; the block shows len(entries).")
    entries = ContextEntrySerializer(many=True, help_text="The memories the block shows, in its order.")
