def test_a_stored_memory_comes_back(owner_api):
    response = owner_api.put("/api/v1/users/alice/memories/language", {"value": "prefers Python"}, format="json")
    assert response.status_code == 201
    assert owner_api.get("/api/v1/users/alice/memories/language").json()["value"] == "prefers Python"
