from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories import services


class Command(BaseCommand):
    help = (
        "Forget a user of an account: delete every memory about them, keeping the history; --erase, for a "
        "request to be forgotten, removes the history and their Honcho sessions too (one record of the erasure stays)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("account", help="The account's username.")
        parser.add_argument("uid", help="The user the memories are about.")
        parser.add_argument("--erase", action="store_true", help="Erase the history and Honcho sessions as well.")

    def handle(self, *args: object, account: str, uid: str, erase: bool, **options: object) -> None:
        owner = get_user_model().objects.filter(username=account).first()
        if owner is None:
            raise CommandError(f"No account named {account!r}.")
        if erase:
            erasure = services.user_erase(owner=owner, uid=uid)
            if erasure is None:
                raise CommandError(f"Account {account!r} holds nothing about {uid!r}.")
            self.stdout.write(
                f"Erased {uid}: {erasure.entries} entries and {erasure.events} history events removed, "
                "their Honcho sessions queued for deletion; the history records the erasure."
            )
            return
        deleted = services.user_forget(owner=owner, uid=uid)
        if not deleted:
            raise CommandError(f"Account {account!r} has no memories about {uid!r}.")
        self.stdout.write(f"Forgot {uid}: {deleted} entries deleted, history kept.")
