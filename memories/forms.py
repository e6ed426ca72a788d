"""The dashboard's forms: they parse what a person typed and check it with memories.validation.

The checks are the ones every other way in uses, so a field's error names the same limit the API
would. Forms never write: views pass the cleaned data to memories.services.
"""

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.utils import timezone

from memories.models import DEFAULT_KIND, Privacy
from memories.validation import (
    EXPIRY_MAX_SECONDS,
    META_MAX_DEPTH,
    InvalidField,
    check_expires,
    check_key,
    check_kind,
    check_meta,
    check_uid,
    check_value,
)

# How the expiry box shows and reads a time: the browser's datetime-local, to the second, in the hub's time zone.
EXPIRES_INPUT_FORMAT = "%Y-%m-%dT%H:%M:%S"

Checked = TypeVar("Checked")


def _checked(check: Callable[[object], Checked], value: object) -> Checked:
    try:
        return check(value)
    except InvalidField as error:
        raise forms.ValidationError(error.message, code="invalid") from None


def parse_meta(text: str) -> dict:
    """The meta field's text as a JSON object; an empty box means {}."""
    if not text.strip():
        return {}
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as error:
        raise forms.ValidationError(
            f"must be valid JSON (line {error.lineno}, column {error.colno}: {error.msg}).", code="invalid"
        ) from None
    except RecursionError:
        raise forms.ValidationError(f"must be nested at most {META_MAX_DEPTH} levels deep.", code="invalid") from None
    return _checked(check_meta, meta)


def same_lines(text: str) -> str:
    """text with its line breaks as LF, the way a textarea's CRLF (or a lone CR) is compared and stored."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def format_meta(meta: dict) -> str:
    """meta as the pretty JSON the form and the entry page show."""
    return json.dumps(meta, indent=2, ensure_ascii=False, sort_keys=True)


def format_expires(expires: datetime | None) -> str:
    """An entry's expiry as the expiry box shows it ("" for none): to the second, in the hub's time zone."""
    return "" if expires is None else timezone.localtime(expires).strftime(EXPIRES_INPUT_FORMAT)


class EntryChangeForm(forms.Form):
    """Change an entry's value, kind, meta and privacy; version guards against overwriting someone else's change."""

    value = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="The memory itself, as text.",
    )
    kind = forms.CharField(
        required=False,  # an empty kind gets check_kind's message, which names the limit
        widget=forms.TextInput(attrs={"required": True}),
        initial=DEFAULT_KIND,
        help_text="preference, fact, pattern ... letters, digits, '_', '-', '.' and ':'.",
    )
    meta = forms.CharField(
        required=False,
        strip=False,
        initial="{}",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="A JSON object; leave {} when there is nothing to add.",
    )
    privacy = forms.ChoiceField(
        choices=[
            (Privacy.SHARED.value, "shared: may be synced to Honcho and embedded by a remote provider"),
            (Privacy.LOCAL.value, "local: never leaves this hub"),
        ],
        required=False,  # left out: a new memory takes the account's default, an existing one keeps its own
        widget=forms.RadioSelect,
        help_text="A local memory is never synced nor sent to a remote embeddings endpoint; it is found by its words.",
    )
    expires = forms.DateTimeField(
        required=False,
        input_formats=[EXPIRES_INPUT_FORMAT, "%Y-%m-%dT%H:%M"],
        widget=forms.DateTimeInput(format=EXPIRES_INPUT_FORMAT, attrs={"type": "datetime-local", "step": "1"}),
        help_text=f"When the memory expires ({settings.TIME_ZONE}): then no read shows it, and it is deleted. Empty: "
        f"never. A future time, at most {EXPIRY_MAX_SECONDS} seconds ahead.",
    )
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def __init__(self, *args: Any, stored_expires: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The memory's expiry as stored (None for a new memory): the box left showing it keeps it.
        self.stored_expires = stored_expires

    @property
    def expires_changed(self) -> bool:
        """Whether the expiry box asks for another expiry than the memory has (to the second it shows)."""
        return format_expires(self.cleaned_data.get("expires")) != format_expires(self.stored_expires)

    def clean_expires(self) -> datetime | None:
        """The time typed, checked as the API checks expires (a future time, at most EXPIRY_MAX_SECONDS ahead),
        unless it is the memory's own, left as shown: saving an untouched form keeps the expiry."""
        expires = self.cleaned_data["expires"]
        if expires is None or not self.expires_changed:
            return expires
        return _checked(lambda moment: check_expires(moment, now=timezone.now()), expires)

    def clean_value(self) -> str:
        # Browsers send every line break of a textarea as CRLF; store them as the API's clients do, as LF.
        return _checked(check_value, same_lines(self.cleaned_data["value"]))

    def clean_kind(self) -> str:
        return _checked(check_kind, self.cleaned_data["kind"])

    def clean_meta(self) -> dict:
        return parse_meta(self.cleaned_data["meta"])


class EntryCreateForm(EntryChangeForm):
    """Store a new memory about a user."""

    field_order = ["uid", "key", "value", "kind", "meta", "privacy", "expires"]

    # Empty uid and key get the checks' messages (which name the limits), not Django's "required".
    # uid and key are kept exactly as typed, as the API keeps them: "alice " and "alice" are two users.
    uid = forms.CharField(
        required=False,
        strip=False,
        widget=forms.TextInput(attrs={"required": True}),
        label="User (uid)",
        help_text="Who the memory is about, e.g. alice or discord:1234.",
    )
    key = forms.CharField(
        required=False,
        strip=False,
        widget=forms.TextInput(attrs={"required": True}),
        help_text="A short name for the memory, e.g. language.",
    )
    # A new entry has no version to guard: None is Django's way to drop an inherited form field.
    version = None  # type: ignore[assignment]

    def clean_uid(self) -> str:
        return _checked(check_uid, self.cleaned_data["uid"])

    def clean_key(self) -> str:
        return _checked(check_key, self.cleaned_data["key"])
