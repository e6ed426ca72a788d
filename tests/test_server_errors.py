"""An error the hub did not expect answers 500 in the shape of the place it happened: JSON under /api/, where a
client parses every answer, and the dashboard's HTML page elsewhere."""

import pytest
from rest_framework.authtoken.models import Token

from memories import selectors


@pytest.fixture
def failing_users_list(monkeypatch):
    def fail(**_arguments: object) -> None:
        raise RuntimeError("the database vanished")

    monkeypatch.setattr(selectors, "user_list", fail)


@pytest.mark.usefixtures("failing_users_list")
def test_an_api_request_that_fails_answers_json(owner, client):
    client.raise_request_exception = False
    token = Token.objects.get(user=owner).key

    response = client.get("/api/v1/users/", HTTP_AUTHORIZATION=f"Token {token}")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "log says why" in response.json()["detail"]


@pytest.mark.usefixtures("failing_users_list")
def test_a_dashboard_page_that_fails_answers_the_html_page(owner, client):
    client.raise_request_exception = False
    client.force_login(owner)

    response = client.get("/users/")

    assert response.status_code == 500
    assert b"Something went wrong" in response.content
