"""Account policies: the defaults without a row, changes through the service, the command and the admin."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import selectors, services
from memories.models import AccountPolicy


def run(*args: str) -> str:
    out = StringIO()
    call_command("account_policy", *args, stdout=out)
    return out.getvalue()


def test_an_account_without_a_policy_reads_the_defaults_without_a_write(owner):
    with CaptureQueriesContext(connection) as queries:
        policy = selectors.account_policy(account=owner)

    assert (policy.default_privacy, policy.guard_mode, policy.context_includes_flagged) == ("shared", "flag", False)
    assert len(queries) == 1  # the policy's row, absent
    assert not AccountPolicy.objects.exists()


def test_setting_one_field_keeps_the_others(owner, stranger):
    services.account_policy_set(account=owner, guard_mode="hold")
    services.account_policy_set(account=owner, default_privacy="local")

    policy = selectors.account_policy(account=owner)
    assert (policy.default_privacy, policy.guard_mode, policy.context_includes_flagged) == ("local", "hold", False)
    assert selectors.account_policy(account=stranger).default_privacy == "shared"


def test_an_unknown_choice_is_refused_naming_the_field_and_writes_nothing(owner):
    with pytest.raises(services.InvalidPolicy) as refused:
        services.account_policy_set(account=owner, default_privacy="secret")

    assert refused.value.field == "default_privacy"
    assert "local, shared" in refused.value.message
    assert not AccountPolicy.objects.exists()


def test_the_command_prints_the_defaults_of_an_account_without_a_policy(owner):
    output = run("owner")

    assert output.splitlines() == [
        "account: owner",
        "default_privacy: shared",
        "guard_mode: flag",
        "context_includes_flagged: no",
    ]
    assert not AccountPolicy.objects.exists()


def test_the_command_changes_the_policy_and_prints_it(owner):
    output = run("owner", "--privacy", "local", "--guard", "allow", "--context-flagged", "yes")

    assert "default_privacy: local" in output
    assert "guard_mode: allow" in output
    assert "context_includes_flagged: yes" in output
    policy = AccountPolicy.objects.get(account=owner)
    assert (policy.default_privacy, policy.guard_mode, policy.context_includes_flagged) == ("local", "allow", True)


def test_the_command_refuses_an_unknown_account_and_an_unknown_choice(owner):
    with pytest.raises(CommandError, match="No account named 'nobody'"):
        run("nobody", "--guard", "hold")
    with pytest.raises(CommandError, match="invalid choice"):
        run("owner", "--guard", "block")
    assert not AccountPolicy.objects.exists()


@pytest.fixture
def admin_client_logged_in(client, staff):
    client.force_login(staff)
    return client


def test_staff_add_and_change_a_policy_in_the_admin(admin_client_logged_in, owner):
    added = admin_client_logged_in.post(
        "/admin/memories/accountpolicy/add/",
        {"account": owner.pk, "default_privacy": "local", "guard_mode": "hold"},
    )
    assert added.status_code == 302
    assert selectors.account_policy(account=owner).guard_mode == "hold"

    changed = admin_client_logged_in.post(
        f"/admin/memories/accountpolicy/{owner.pk}/change/",
        {"default_privacy": "shared", "guard_mode": "allow", "context_includes_flagged": "on"},
    )
    assert changed.status_code == 302
    policy = selectors.account_policy(account=owner)
    assert (policy.default_privacy, policy.guard_mode, policy.context_includes_flagged) == ("shared", "allow", True)
    listing = admin_client_logged_in.get("/admin/memories/accountpolicy/")
    assert "owner" in listing.content.decode()


def test_the_admin_refuses_a_choice_the_field_does_not_take(admin_client_logged_in, owner):
    response = admin_client_logged_in.post(
        "/admin/memories/accountpolicy/add/", {"account": owner.pk, "default_privacy": "secret", "guard_mode": "flag"}
    )

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not AccountPolicy.objects.exists()
