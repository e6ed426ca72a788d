from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories import services


class Command(BaseCommand):
    help = (
        "Forget a user of an account: delete every memory about them, keeping the history; --erase, for a "
        "request to be forgotten, removes the history and their Honcho sessions too (one record of the erasure stays). "
        "--by names the account the history records as having done it (the account itself when left out)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account", help="The account's username.")
        parser.add_argument("uid", help="The user the memories are about.")
        parser.add_argument("--erase", action="store_true", help="Erase the history and Honcho sessions as well.")
        parser.add_argument(
            "--by",
            metavar="USERNAME",
            help="The account that asked for it (an operator's staff account, say): the history names it.",
        )

    def _account(self, username: str) -> User:
        account = get_user_model().objects.filter(username=username).first()
        if account is None:
            raise CommandError(f"No account named {username!r}.")
        return account

    def handle(self, *args: object, account: str, uid: str, erase: bool, by: str | None, **options: object) -> None:
        owner = self._account(account)
        actor = self._account(by) if by is not None else owner
        if erase:
            erasure = services.user_erase(owner=owner, uid=uid, actor=actor)
            if erasure is None:
                raise CommandError(f"Account {account!r} holds nothing about {uid!r}.")
            queued = ", their Honcho sessions queued for deletion" if erasure.honcho_deletions else ""
            self.stdout.write(
                f"Erased {uid}: {_counted(erasure.entries, 'entry', 'entries')} and "
                f"{_counted(erasure.events, 'history event', 'history events')} removed{queued}; "
                f"the history records the erasure by {actor.get_username()}."
            )
            return
        deleted = services.user_forget(owner=owner, uid=uid, actor=actor)
        if not deleted:
            raise CommandError(f"Account {account!r} has no memories about {uid!r}.")
        self.stdout.write(f"Forgot {uid}: {_counted(deleted, 'entry', 'entries')} deleted, history kept.")


def _counted(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"
