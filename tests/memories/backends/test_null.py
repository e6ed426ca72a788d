"""The null backend against its own documented expectations: it accepts everything and keeps nothing."""

from memories.backends.null import NullBackend


def test_null_is_always_available(owner):
    availability = NullBackend(owner=owner).available()
    assert availability.ok is True
    assert "null" in availability.reason


def test_null_accepts_a_write_and_keeps_nothing(owner, django_assert_num_queries):
    backend = NullBackend(owner=owner)
    with django_assert_num_queries(0):
        stored = backend.put("alice", "editor", "vim", kind="tool")
        assert (stored.key, stored.value, stored.kind) == ("editor", "vim", "tool")
        assert backend.get("alice", "editor") is None
        assert backend.find("alice", "vim") == []
        assert backend.list("alice") == []
        assert backend.delete("alice", "editor") is False


def test_null_is_not_a_cloud(owner):
    backend = NullBackend(owner=owner)
    assert (backend.name, backend.is_cloud) == ("null", False)
