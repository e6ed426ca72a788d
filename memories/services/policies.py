"""Account policies: the operator's per-account rules (default privacy, the write guard, the context block)."""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memories.models import AccountPolicy, GuardMode, Privacy


class InvalidPolicy(ValueError):
    """A policy field was given a value it does not take; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def account_policy_set(
    *,
    account: User,
    default_privacy: str | None = None,
    guard_mode: str | None = None,
    context_includes_flagged: bool | None = None,
) -> AccountPolicy:
    """Change the account's policy (made on first change); a field left None keeps its value. Returns the policy.

    Raises InvalidPolicy, writing nothing, when a choice is not one the field takes.
    """
    if default_privacy is not None and default_privacy not in Privacy.values:
        raise InvalidPolicy("default_privacy", f"must be one of {', '.join(Privacy.values)}.")
    if guard_mode is not None and guard_mode not in GuardMode.values:
        raise InvalidPolicy("guard_mode", f"must be one of {', '.join(GuardMode.values)}.")
    with transaction.atomic():
        policy, _ = AccountPolicy.objects.select_for_update().get_or_create(account=account)
        if default_privacy is not None:
            policy.default_privacy = default_privacy
        if guard_mode is not None:
            policy.guard_mode = guard_mode
        if context_includes_flagged is not None:
            policy.context_includes_flagged = context_includes_flagged
        policy.updated = timezone.now()
        policy.save()
    return policy
