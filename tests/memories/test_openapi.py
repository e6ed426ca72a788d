from django.core.management import call_command


def test_the_schema_builds_and_validates_without_warnings(tmp_path):
    target = tmp_path / "schema.yml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    text = target.read_text()
    assert "/api/v1/users/{uid}/memories/{key}" in text
    assert "/api/v1/tool" in text


def test_the_schema_and_its_page_are_served(client, db):
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b"cdn" not in page.content.lower(), "the docs page loads its scripts from the hub itself"


def test_the_page_size_parameter_states_its_minimum_and_cap(settings):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    listing = schema["paths"]["/api/v1/users/{uid}/memories/"]["get"]
    (page_size,) = [parameter for parameter in listing["parameters"] if parameter["name"] == "page_size"]
    assert page_size["schema"]["minimum"] == 1
    assert str(settings.MEMORYHUB_MAX_PAGE_SIZE) in page_size["description"]


def test_the_page_parameter_states_its_minimum_and_that_a_page_past_the_last_is_a_404():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path in ("/api/v1/users/", "/api/v1/users/{uid}/memories/", "/api/v1/users/{uid}/memories/{key}/history/"):
        listing = schema["paths"][path]["get"]
        (page,) = [parameter for parameter in listing["parameters"] if parameter["name"] == "page"]
        assert page["schema"]["minimum"] == 1
        assert "past the last answers 404" in page["description"]
        assert {"400", "404"} <= set(listing["responses"])


def test_every_memory_operation_is_tagged_memories_and_describes_its_uid():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = [
        (path, method, operation)
        for path, methods in schema["paths"].items()
        if path.startswith("/api/v1/users/{uid}/memories")
        for method, operation in methods.items()
    ]
    assert len(operations) >= 9
    for path, method, operation in operations:
        assert operation["tags"] == ["memories"], (path, method)
        (uid,) = [parameter for parameter in operation["parameters"] if parameter["name"] == "uid"]
        assert uid.get("description"), (path, method)


def test_every_write_of_a_memory_states_its_preconditions():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    entry = schema["paths"]["/api/v1/users/{uid}/memories/{key}/"]
    listing = schema["paths"]["/api/v1/users/{uid}/memories/"]
    for method, operation in [
        *((method, entry[method]) for method in ("put", "patch", "delete")),
        ("post", listing["post"]),
    ]:
        headers = {parameter["name"] for parameter in operation["parameters"] if parameter["in"] == "header"}
        assert {"If-Match", "If-None-Match"} <= headers, method
        assert "412" in operation["responses"], method


def test_every_operation_documents_the_503_of_a_database_out_of_reach_with_retry_after():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            unavailable = operation["responses"]["503"]
            assert "database_busy" in unavailable["description"], (path, method)
            assert "Retry-After" in unavailable["headers"], (path, method)
