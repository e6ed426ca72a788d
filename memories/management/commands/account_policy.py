from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories import selectors, services
from memories.models import AccountPolicy, GuardMode, Privacy

YES_NO = {"yes": True, "no": False}


def policy_lines(policy: AccountPolicy) -> list[str]:
    """The policy as the command prints it: one `field: value` line each."""
    return [
        f"account: {policy.account.username}",
        f"default_privacy: {policy.default_privacy}",
        f"guard_mode: {policy.guard_mode}",
        f"context_includes_flagged: {'yes' if policy.context_includes_flagged else 'no'}",
    ]


class Command(BaseCommand):
    help = "Show an account's policy, or change it: the default privacy of writes, the write guard, flagged context."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The account's username.")
        parser.add_argument("--privacy", choices=Privacy.values, help="The privacy class of a write that names none.")
        parser.add_argument("--guard", choices=GuardMode.values, help="What the write guard does with a suspect value.")
        parser.add_argument(
            "--context-flagged", choices=list(YES_NO), help="Whether flagged entries appear in the context block."
        )

    def handle(
        self,
        *args: object,
        name: str,
        privacy: str | None,
        guard: str | None,
        context_flagged: str | None,
        **options: object,
    ) -> None:
        account = get_user_model().objects.filter(username=name).first()
        if account is None:
            raise CommandError(f"No account named {name!r}.")
        if privacy is None and guard is None and context_flagged is None:
            policy = selectors.account_policy(account=account)
        else:
            policy = services.account_policy_set(
                account=account,
                default_privacy=privacy,
                guard_mode=guard,
                context_includes_flagged=None if context_flagged is None else YES_NO[context_flagged],
            )
        self.stdout.write("\n".join(policy_lines(policy)))
