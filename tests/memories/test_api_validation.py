from urllib.parse import quote

import pytest
from django.db import OperationalError, ProgrammingError, connection

from memories import services
from memories.models import MemoryEntry, MemoryEvent

BASE = "/api/v1/users"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({}, "value", "required"),
        ({"value": None}, "value", "null"),
        ({"value": 42}, "value", "valid string"),
        ({"value": "v" * (64 * 1024 + 1)}, "value", "at most 65536 bytes"),
        ({"value": "a\x00b"}, "value", "Null characters are not allowed"),
        ({"value": "ok", "kind": ""}, "kind", "1 to 32"),
        ({"value": "ok", "kind": "k" * 33}, "kind", "1 to 32"),
        ({"value": "ok", "kind": "no spaces"}, "kind", "letters, digits"),
        ({"value": "ok", "kind": 7}, "kind", "valid string"),
        ({"value": "ok", "meta": "a string"}, "meta", "JSON object"),
        ({"value": "ok", "meta": [1, 2]}, "meta", "JSON object"),
        ({"value": "ok", "meta": {"blob": "m" * 16 * 1024}}, "meta", "at most 16384 bytes"),
    ],
)
def test_a_bad_body_gets_a_400_naming_the_field_and_the_limit(owner_api, body, field, words):
    response = owner_api.put(f"{BASE}/alice/memories/language", body, format="json")

    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == [field]
    assert words in errors[field][0]
    assert not MemoryEntry.objects.exists()
    assert not MemoryEvent.objects.exists()


OUT_OF_RANGE = "must hold only numbers from -1.8e308 to 1.8e308; one is out of range."


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("PUT", b'{"value": "v", "meta": {"n": 1e400}}'),
        ("PUT", b'{"value": "v", "meta": {"deep": [1, {"n": -1e400}]}}'),
        ("PATCH", b'{"meta": {"n": 1E+999}}'),
        # A whole number past a double's range, as most readers of the JSON would read it: infinity.
        ("PUT", b'{"value": "v", "meta": {"n": ' + b"9" * 400 + b"}}"),
        ("PATCH", b'{"meta": {"n": -' + b"9" * 4000 + b"}}"),
    ],
)
def test_a_number_in_meta_out_of_range_gets_a_400_naming_meta_and_the_range(owner, owner_api, method, body):
    services.entry_put(owner=owner, uid="alice", key="language", value="v")

    response = owner_api.generic(method, f"{BASE}/alice/memories/language", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json() == {"meta": [OUT_OF_RANGE]}
    assert MemoryEntry.objects.get().version == 1


def test_a_batch_put_with_a_number_in_meta_out_of_range_names_the_operation_and_meta(owner_api):
    body = b'{"operations": [{"op": "put", "key": "k", "value": "v", "meta": {"n": 1e400}}]}'

    response = owner_api.generic("POST", f"{BASE}/alice/memories/batch", body, content_type="application/json")

    assert response.status_code == 400
    assert response.json() == {"operations": {"0": {"meta": [OUT_OF_RANGE]}}}
    assert not MemoryEntry.objects.exists()


def test_the_tool_names_a_number_in_meta_out_of_range(owner_api):
    store = b'{"action": "store", "uid": "alice", "key": "k", "value": "v", "meta": {"n": 1e400}}'
    query = b'{"action": "query", "uid": "alice", "query": "v", "meta": {"n": 1e400}}'

    stored = owner_api.generic("POST", "/api/v1/tool", store, content_type="application/json").json()
    queried = owner_api.generic("POST", "/api/v1/tool", query, content_type="application/json").json()

    assert stored == {"ok": False, "key": "k", "error": f"meta: {OUT_OF_RANGE}"}
    assert queried == {
        "ok": False,
        "error": "meta.n: each number must be from -1.8e308 to 1.8e308; one is out of range.",
    }
    assert not MemoryEntry.objects.exists()


@pytest.mark.parametrize(
    ("uid", "key", "field", "words"),
    [
        ("u" * 256, "language", "uid", "at most 255 characters"),
        ("alice", "k" * 256, "key", "at most 255 characters"),
        ("tab\there", "language", "uid", "control characters"),
        ("alice", "bell\x07", "key", "control characters"),
    ],
)
def test_a_bad_uid_or_key_in_the_path_gets_a_400_naming_it(owner_api, uid, key, field, words):
    response = owner_api.put(f"{BASE}/{quote(uid)}/memories/{quote(key)}", {"value": "x"}, format="json")

    assert response.status_code == 400
    assert words in response.json()[field][0]
    assert not MemoryEntry.objects.exists()


@pytest.mark.parametrize(
    ("key", "words"),
    [("", "must not be empty"), ("k" * 256, "at most 255"), ("new\nline", "control characters"), (None, "null")],
)
def test_a_bad_key_in_a_post_body_gets_a_400_naming_it(owner_api, key, words):
    response = owner_api.post(f"{BASE}/alice/memories/", {"key": key, "value": "x"}, format="json")

    assert response.status_code == 400
    assert words in response.json()["key"][0]


def test_a_value_at_the_limit_is_stored_whole(owner_api):
    value = "v" * (64 * 1024)

    response = owner_api.put(f"{BASE}/alice/memories/big", {"value": value}, format="json")

    assert response.status_code == 201
    assert owner_api.get(f"{BASE}/alice/memories/big").json()["value"] == value


def test_whitespace_in_values_is_kept_as_sent(owner_api):
    owner_api.put(f"{BASE}/alice/memories/poem", {"value": "  two spaces\n\tand a tab "}, format="json")

    assert owner_api.get(f"{BASE}/alice/memories/poem").json()["value"] == "  two spaces\n\tand a tab "


def test_malformed_json_gets_a_400_and_other_content_types_a_415(owner_api):
    broken = owner_api.generic("PUT", f"{BASE}/alice/memories/k", "{not json", content_type="application/json")
    form = owner_api.put(f"{BASE}/alice/memories/k", "value=x", content_type="application/x-www-form-urlencoded")

    assert broken.status_code == 400
    assert "JSON parse error" in broken.json()["detail"]
    assert form.status_code == 415


def test_a_page_size_above_the_cap_is_held_to_the_cap(owner, owner_api, settings):
    from memories import services

    settings.MEMORYHUB_MAX_PAGE_SIZE = 2
    for number in range(3):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value="v")

    response = owner_api.get(f"{BASE}/alice/memories/?page_size=100000")

    assert response.status_code == 200
    assert len(response.json()["results"]) == 2
    assert response.json()["count"] == 3


@pytest.mark.parametrize("page_size", ["0", "-3", "ten", "2.5"])
@pytest.mark.parametrize("path", ["memories/", "memories/?q=python", "memories/language/history/"])
def test_a_page_size_that_is_not_a_whole_number_from_1_gets_a_400_naming_it(owner, owner_api, page_size, path):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    separator = "&" if "?" in path else "?"

    response = owner_api.get(f"{BASE}/alice/{path}{separator}page_size={page_size}")

    assert response.status_code == 400, response.content
    assert "at least 1" in response.json()["page_size"][0]


@pytest.mark.parametrize("match", ["ranked", "substring"])
def test_a_query_of_many_words_past_the_limit_gets_a_400_naming_q(owner, owner_api, match):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    words = " ".join(f"word{number}" for number in range(600))

    response = owner_api.get(f"{BASE}/alice/memories/", {"q": words, "match": match})

    assert response.status_code == 400
    assert response.json() == {"q": [f"must be at most 1000 characters; got {len(words)}."]}


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PUT", "alice/memories/language", b'{"value": "v", "privacy": "\\ud800"}', "privacy"),
        ("PATCH", "alice/memories/language", b'{"privacy": "\\ud800"}', "privacy"),
        ("POST", "alice/memories/batch", b'{"operations": [{"op": "\\ud800", "key": "k"}]}', "operations"),
    ],
)
def test_a_lone_surrogate_echoed_in_an_error_gets_a_400_not_500(owner, owner_api, method, path, body, field):
    services.entry_put(owner=owner, uid="alice", key="language", value="v")

    response = owner_api.generic(method, f"{BASE}/{path}", body, content_type="application/json")

    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "\\ud800" in response.content.decode()


def test_a_page_past_the_last_answers_404_not_500(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="v")

    response = owner_api.get(f"{BASE}/alice/memories/?page=9")

    assert response.status_code == 404
    assert response.json() == {"detail": "Invalid page."}


@pytest.mark.parametrize("page", ["0", "-1", "abc", "2.5", "1e3", " 1", "+1", "1_0", "last"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/users/",
        "/api/v1/users/alice/memories/",
        "/api/v1/users/alice/memories/?kind=preference",
        "/api/v1/users/alice/memories/?q=python",
        "/api/v1/users/alice/memories/?q=python&match=substring",
        "/api/v1/users/alice/memories/language/history/",
        "/api/v1/held/",
    ],
)
def test_a_page_that_is_not_a_whole_number_from_1_gets_a_400_naming_it(owner, owner_api, page, path):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    separator = "&" if "?" in path else "?"

    response = owner_api.get(f"{path}{separator}page={quote(page)}")

    assert response.status_code == 400, response.content
    assert response.json() == {"page": ["A whole number of at least 1 is required."]}


@pytest.mark.parametrize(
    "path", ["/api/v1/users/", "/api/v1/users/alice/memories/", "/api/v1/users/alice/memories/language/history/"]
)
def test_an_empty_page_is_the_first(owner, owner_api, path):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")

    response = owner_api.get(f"{path}?page=")

    assert response.status_code == 200
    assert response.json()["count"] == 1


@pytest.mark.parametrize(
    "query",
    [
        "",  # the plain list
        "kind=preference&",
        "match=substring&q=v&",
    ],
)
@pytest.mark.parametrize("page", ["9223372036854775807", "99999999999999999999"])
def test_a_page_number_past_any_offset_the_database_reads_answers_404_not_500(owner, owner_api, query, page):
    services.entry_put(owner=owner, uid="alice", key="language", value="v")

    assert owner_api.get(f"{BASE}/alice/memories/?{query}page={page}").status_code == 404
    assert owner_api.get(f"{BASE}/alice/memories/language/history?page={page}").status_code == 404


@pytest.mark.parametrize("kind", ["pref\n", "pref\r\n", " pref"])
def test_a_kind_with_a_trailing_newline_or_leading_space_is_refused(owner_api, kind):
    response = owner_api.put(f"{BASE}/alice/memories/k", {"value": "v", "kind": kind}, format="json")

    assert response.status_code == 400
    assert "letters, digits" in response.json()["kind"][0]


def test_an_unknown_api_path_answers_404_in_json(owner_api):
    response = owner_api.get("/api/v1/no/such/route")

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_each_body_is_validated_on_its_own_whatever_came_before(owner_api):
    # The write serializers' fields are copied for each request: one body's errors never reach the next.
    bad = owner_api.put(f"{BASE}/alice/memories/language", {"value": 42, "kind": "no spaces"}, format="json")
    good = owner_api.put(f"{BASE}/alice/memories/language", {"value": "Python", "kind": "fact"}, format="json")
    bad_again = owner_api.put(f"{BASE}/alice/memories/language", {"value": "ok", "meta": [1]}, format="json")

    assert bad.status_code == 400 and set(bad.json()) == {"value", "kind"}
    assert good.status_code == 201 and (good.json()["value"], good.json()["kind"]) == ("Python", "fact")
    assert bad_again.status_code == 400 and list(bad_again.json()) == ["meta"]
    assert MemoryEntry.objects.get().value == "Python"


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("put", "alice/memories/diagnosis", {"value": "asthma", "privcy": "local"}, "privcy"),
        ("put", "alice/memories/diagnosis", {"value": "asthma", "expire": "2030-01-01T00:00:00Z"}, "expire"),
        ("patch", "alice/memories/language", {"valeu": "typo"}, "valeu"),
        ("post", "alice/memories/", {"key": "diagnosis", "value": "asthma", "Privacy": "local"}, "Privacy"),
        (
            "post",
            "alice/memories/batch",
            {"operations": [{"op": "put", "key": "z", "value": "x", "privcy": "local"}]},
            None,
        ),
    ],
)
def test_a_field_a_write_does_not_take_is_refused_by_name_not_left_unread(owner, owner_api, method, path, body, field):
    # Left unread, a misspelt privacy left the memory shared (synced, embedded remotely) and a misspelt expiry
    # left it kept forever.
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")

    response = getattr(owner_api, method)(f"{BASE}/{path}", body, format="json")

    assert response.status_code == 400
    errors = response.json() if field else response.json()["operations"]["0"]
    [(name, [message])] = errors.items()
    assert name == (field or "privcy")
    assert message.startswith("is no field of this write; it takes ") and "privacy" in message
    assert list(MemoryEntry.objects.values_list("key", "value", "version")) == [("language", "prefers Python", 1)]


def test_a_body_sent_back_as_a_get_gave_it_is_taken_with_its_shown_only_fields_left_unread(owner_api):
    stored = owner_api.put(f"{BASE}/alice/memories/language", {"value": "prefers Python"}, format="json").json()

    response = owner_api.put(f"{BASE}/alice/memories/language", {**stored, "value": "prefers Rust"}, format="json")

    assert response.status_code == 200
    assert (response.json()["value"], response.json()["version"]) == ("prefers Rust", 2)


@pytest.mark.parametrize("method", ["put", "patch"])
def test_expected_version_in_the_body_is_a_precondition_as_if_match_is(owner, owner_api, method):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Go")
    send = getattr(owner_api, method)

    stale = send(f"{BASE}/alice/memories/language", {"value": "lost?", "expected_version": 1}, format="json")
    assert stale.status_code == 412
    assert stale.json() == {"detail": "The entry is at version 2."}
    current = send(f"{BASE}/alice/memories/language", {"value": "prefers Rust", "expected_version": 2}, format="json")
    assert current.status_code == 200
    assert (current.json()["value"], current.json()["version"]) == ("prefers Rust", 3)
    # Both sent: each must hold. The headers' holds here (If-Match: * and If-None-Match naming another version
    # find version 3), the body's does not.
    for headers in ({"HTTP_IF_MATCH": "*"}, {"HTTP_IF_NONE_MATCH": '"2"'}, {"HTTP_IF_MATCH": '"3"'}):
        both = send(f"{BASE}/alice/memories/language", {"value": "x", "expected_version": 1}, format="json", **headers)
        assert (both.status_code, both.json()) == (412, {"detail": "The entry is at version 3."}), headers
    if method in ("put", "patch"):
        # No entry (If-None-Match: *), and at version 3: never both.
        contrary = send(
            f"{BASE}/alice/memories/language",
            {"value": "x", "expected_version": 3},
            format="json",
            HTTP_IF_NONE_MATCH="*",
        )
        assert contrary.status_code == 412
        assert "both cannot hold" in contrary.json()["detail"]
    agreeing = send(
        f"{BASE}/alice/memories/language",
        {"value": "prefers Zig", "expected_version": 3},
        format="json",
        HTTP_IF_MATCH='"3"',
    )
    assert (agreeing.status_code, agreeing.json()["version"]) == (200, 4)
    assert MemoryEntry.objects.get().value == "prefers Zig"


def test_a_users_search_longer_than_any_uid_gets_a_400_naming_it(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="k", value="v")

    too_long = owner_api.get(f"{BASE}/", {"search": "a" * 256})
    at_limit = owner_api.get(f"{BASE}/", {"search": "a" * 255})

    assert too_long.status_code == 400
    assert too_long.json() == {"search": ["must be at most 255 characters (a uid's); got 256."]}
    assert (at_limit.status_code, at_limit.json()["count"]) == (200, 0)


def test_an_unknown_field_named_with_a_lone_surrogate_is_named_by_its_escape(owner_api):
    body = '{"value": "v", "priv\\ud800cy": "local"}'

    response = owner_api.generic("PUT", f"{BASE}/alice/memories/k", body, content_type="application/json")

    assert response.status_code == 400
    [(name, [message])] = response.json().items()
    assert name == "priv\\ud800cy" and message.startswith("is no field of this write")
    assert not MemoryEntry.objects.exists()


def test_a_search_result_sent_back_is_taken_as_a_get_s_body_is(owner, owner_api):
    owner_api.put(f"{BASE}/alice/memories/language", {"value": "prefers Python"}, format="json")
    [result] = owner_api.get(f"{BASE}/alice/memories/", {"q": "python"}).json()["results"]
    assert "score" in result and "matched_terms" in result

    response = owner_api.put(f"{BASE}/alice/memories/language", {**result, "value": "prefers Rust"}, format="json")

    assert (response.status_code, response.json()["version"]) == (200, 2)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        # "version" for expected_version, or another uid: an operation is no entry sent back.
        ({"operations": [{"op": "put", "key": "b", "value": "x", "version": 1}]}, ("operations", "0", "version")),
        ({"operations": [{"op": "put", "key": "b", "value": "x", "uid": "bob"}]}, ("operations", "0", "uid")),
        ({"operations": [{"op": "put", "key": "b", "value": "x"}], "atomic": False}, ("atomic",)),
    ],
)
def test_a_batch_refuses_a_field_it_does_not_take_by_name(owner_api, body, named):
    response = owner_api.post(f"{BASE}/alice/memories/batch", body, format="json")

    assert response.status_code == 400
    errors = response.json()
    for name in named:
        errors = errors[name]
    assert errors[0].startswith("is no field of this write; it takes ")
    assert not MemoryEntry.objects.exists()


def _database_failing(monkeypatch, error: Exception) -> None:
    def failing(**_kwargs: object) -> None:
        raise error

    monkeypatch.setattr("memories.api.views.selectors.entry_get", failing)


def _wrapped(cause: Exception) -> OperationalError:
    """Django's OperationalError over the driver's own error, as Django raises it."""
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


def _errors_of_this_database() -> dict[str, list[Exception]]:
    """Errors of each kind as this database's driver raises them: busy for now (rolled back), unreachable, and the
    hub's or the machine's own."""
    if connection.vendor == "sqlite":
        return {
            "busy": [OperationalError("database is locked")],
            "unreachable": [OperationalError("unable to open database file")],
            "own": [OperationalError("no such table: memories_memoryentry"), OperationalError("disk I/O error")],
        }
    import psycopg.errors

    return {
        "busy": [
            _wrapped(psycopg.errors.DeadlockDetected("deadlock detected")),
            _wrapped(psycopg.errors.SerializationFailure("could not serialize")),
        ],
        "unreachable": [
            OperationalError("server closed the connection unexpectedly"),
            _wrapped(psycopg.errors.AdminShutdown("terminating connection")),
        ],
        "own": [
            _wrapped(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
            _wrapped(psycopg.errors.DiskFull("could not extend file")),
            ProgrammingError('relation "memories_memoryentry" does not exist'),
        ],
    }


def test_a_database_busy_for_now_is_a_503_saying_nothing_was_written(owner, owner_api, monkeypatch):
    for error in _errors_of_this_database()["busy"]:
        _database_failing(monkeypatch, error)

        response = owner_api.get(f"{BASE}/alice/memories/language")

        assert response.status_code == 503, error
        assert response["Retry-After"] == "1"
        assert response.json()["code"] == "database_busy"
        assert "nothing was written. Try again." in response.json()["detail"]


def test_a_database_out_of_reach_is_a_503_saying_a_change_may_have_been_made(owner, owner_api, monkeypatch):
    for error in _errors_of_this_database()["unreachable"]:
        _database_failing(monkeypatch, error)

        response = owner_api.get(f"{BASE}/alice/memories/language")

        assert (response.status_code, response["Retry-After"]) == (503, "1"), error
        assert response.json()["code"] == "database_unreachable"
        assert "may or may not have been made" in response.json()["detail"]


def test_the_hubs_or_the_machines_own_database_fault_stays_a_500(owner, owner_api, monkeypatch):
    owner_api.raise_request_exception = False
    for error in _errors_of_this_database()["own"]:
        _database_failing(monkeypatch, error)

        assert owner_api.get(f"{BASE}/alice/memories/language").status_code == 500, error
