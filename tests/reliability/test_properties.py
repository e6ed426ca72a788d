"""Property tests: whatever keys, uids, values and meta an agent sends (any unicode, control
characters, huge sizes, deep JSON), the hub stores them exactly or answers 400 naming the field,
never a server error."""

import json

import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memories.models import KEY_MAX_LENGTH, UID_MAX_LENGTH
from memories.tool import ACTIONS
from memories.validation import META_MAX_DEPTH
from tests.support.figures import FigureCounter

pytestmark = pytest.mark.slow

EXAMPLES = 60
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
FIGURES = FigureCounter("property tests")

# Any code point, lone surrogates and control characters included, weighted towards the awkward ones.
awkward_text = st.one_of(
    st.text(st.characters(codec=None), max_size=40),
    st.text(st.characters(categories=["Cc", "Cf", "Cs", "Zl", "Zp", "Co"]), min_size=1, max_size=10),
    st.text(
        st.sampled_from(["\x00", "\u202e", "\ufeff", "é", "😀", "\U0001d54f", "\n", " ", "/", "%", "'", '"', "\\"]),
        max_size=30,
    ),
)
identifiers = st.one_of(awkward_text, st.text(min_size=KEY_MAX_LENGTH - 2, max_size=KEY_MAX_LENGTH + 2))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    awkward_text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(awkward_text, children, max_size=4),
    max_leaves=30,
)


def _nested(depth: int) -> dict:
    meta: dict = {"leaf": True}
    for _ in range(depth - 1):
        meta = {"n": meta}
    return meta


def _has_unstorable(text: str) -> bool:
    return any(char == "\x00" or 0xD800 <= ord(char) <= 0xDFFF for char in text)


def _is_control(char: str) -> bool:
    import unicodedata

    return unicodedata.category(char) in ("Cc", "Cs")


def _json_body(payload: object) -> str:
    # Lone surrogates travel as \\udXXX escapes, as a JSON client would send them.
    return json.dumps(payload, ensure_ascii=True)


@pytest.fixture(autouse=True, scope="module")
def _record_figures():
    yield
    FIGURES.record()


@pytest.fixture
def api(owner_api, settings):
    settings.MEMORYHUB_RATE_LIMIT = ""
    return owner_api


@FUZZ_SETTINGS
@given(key=identifiers, value=awkward_text)
def test_any_key_in_a_body_is_stored_exactly_or_refused_naming_the_key(api, key, value):
    response = api.generic(
        "POST",
        "/api/v1/users/alice/memories",
        _json_body({"key": key, "value": value}),
        content_type="application/json",
    )
    FIGURES.count(response.status_code)
    valid_key = 1 <= len(key) <= KEY_MAX_LENGTH and not any(_is_control(char) for char in key)
    valid_value = not _has_unstorable(value)
    if valid_key and valid_value:
        assert response.status_code in (200, 201), response.content
        stored = api.post("/api/v1/tool", {"action": "get", "uid": "alice", "key": key}, format="json").json()
        assert (stored["key"], stored["value"]) == (key, value)
    else:
        assert response.status_code == 400
        assert set(response.json()) <= {"key", "value"}


@FUZZ_SETTINGS
@given(uid=identifiers, key=identifiers)
def test_any_uid_and_key_through_the_tool_round_trip_or_get_an_error_reply(api, uid, key):
    response = api.generic(
        "POST",
        "/api/v1/tool",
        _json_body({"action": "store", "uid": uid, "key": key, "value": "v"}),
        content_type="application/json",
    )
    FIGURES.count(response.status_code)
    assert response.status_code == 200
    reply = response.json()
    valid = all(
        1 <= len(text) <= limit and not any(_is_control(c) for c in text)
        for text, limit in ((uid, UID_MAX_LENGTH), (key, KEY_MAX_LENGTH))
    )
    assert reply["ok"] is valid, reply
    if valid:
        fetched = api.generic(
            "POST",
            "/api/v1/tool",
            _json_body({"action": "get", "uid": uid, "key": key}),
            content_type="application/json",
        ).json()
        assert fetched["key"] == key and fetched["value"] == "v"


@FUZZ_SETTINGS
@given(
    action=st.sampled_from([action for action in ACTIONS if action != "evaluate"]),
    arguments=st.fixed_dictionaries(
        {},
        optional={
            "uid": awkward_text,
            "key": identifiers,
            "value": awkward_text,
            "query": awkward_text,
            "meta": json_values,
        },
    ),
)
def test_every_tool_action_with_any_arguments_replies_without_a_server_error(api, action, arguments):
    response = api.generic(
        "POST", "/api/v1/tool", _json_body({"action": action, **arguments}), content_type="application/json"
    )
    FIGURES.count(response.status_code)
    assert response.status_code == 200
    assert isinstance(response.json()["ok"], bool)


@FUZZ_SETTINGS
@given(uid=identifiers)
def test_any_uid_in_the_path_is_found_or_refused_never_a_server_error(api, uid):
    from urllib.parse import quote

    path = "/api/v1/users/" + quote(uid.encode("utf-8", "surrogatepass"), safe="") + "/memories/"
    response = api.get(path)
    FIGURES.count(response.status_code)
    assert response.status_code in (200, 400, 404)


@FUZZ_SETTINGS
@given(size=st.integers(min_value=0, max_value=3 * 64 * 1024), filler=st.sampled_from(["a", "é", "😀", "\n"]))
def test_a_value_is_kept_up_to_its_byte_limit_and_refused_past_it(api, size, filler):
    value = filler * (size // len(filler.encode()))
    response = api.put("/api/v1/users/alice/memories/big", {"value": value}, format="json")
    FIGURES.count(response.status_code)
    limit = django_settings.MEMORYHUB_MAX_VALUE_BYTES
    if len(value.encode()) <= limit:
        assert response.status_code in (200, 201)
        assert api.get("/api/v1/users/alice/memories/big").json()["value"] == value
    else:
        assert response.status_code == 400
        assert f"at most {limit} bytes" in response.json()["value"][0]


@FUZZ_SETTINGS
@given(meta=st.dictionaries(awkward_text, json_values, max_size=6))
def test_any_json_object_as_meta_is_stored_exactly_or_refused_naming_meta(api, meta):
    response = api.generic(
        "PUT",
        "/api/v1/users/alice/memories/meta",
        _json_body({"value": "v", "meta": meta}),
        content_type="application/json",
    )
    FIGURES.count(response.status_code)
    text = json.dumps(meta, ensure_ascii=False)
    if _has_unstorable(text) or "\\u0000" in text:
        assert response.status_code == 400
        assert "meta" in response.json()
    else:
        assert response.status_code in (200, 201), response.content
        assert api.get("/api/v1/users/alice/memories/meta").json()["meta"] == meta


@FUZZ_SETTINGS
@given(depth=st.integers(min_value=1, max_value=5000))
@example(depth=META_MAX_DEPTH).via("the limit")
@example(depth=META_MAX_DEPTH + 1).via("just past it")
@example(depth=900).via("near Python's recursion limit")
@example(depth=990).via("at Python's recursion limit")
@example(depth=1100).via("past Python's recursion limit")
def test_meta_of_any_depth_is_kept_to_the_limit_and_refused_past_it(api, depth):
    body = '{"value": "v", "meta": ' + '{"n": ' * (depth - 1) + '{"leaf": true}' + "}" * (depth - 1) + "}"
    response = api.generic("PUT", "/api/v1/users/alice/memories/deep", body, content_type="application/json")
    FIGURES.count(response.status_code)
    if depth <= META_MAX_DEPTH:
        assert response.status_code in (200, 201)
        assert api.get("/api/v1/users/alice/memories/deep").json()["meta"] == _nested(depth)
    else:
        assert response.status_code == 400


@FUZZ_SETTINGS
@given(payload=json_values)
def test_any_json_body_on_every_write_gets_an_answer_below_500(api, payload):
    body = _json_body(payload)
    for method, path in (
        ("PUT", "/api/v1/users/alice/memories/any"),
        ("PATCH", "/api/v1/users/alice/memories/any"),
        ("POST", "/api/v1/users/alice/memories"),
        ("POST", "/api/v1/tool"),
    ):
        response = api.generic(method, path, body, content_type="application/json")
        FIGURES.count(response.status_code)
        assert response.status_code < 500, (method, path, response.content)
