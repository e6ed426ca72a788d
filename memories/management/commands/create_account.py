from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.accounts import AccountExists, account_create, token_rotate


class Command(BaseCommand):
    help = "Create an account for an agent or a person and print its API token (--rotate: issue a new one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The account's username.")
        parser.add_argument("--staff", action="store_true", help="Make the account staff (admin access, all accounts).")
        parser.add_argument(
            "--rotate", action="store_true", help="For an existing account: a new token; the old one is revoked."
        )

    def handle(self, *args: object, name: str, staff: bool, rotate: bool, **options: object) -> None:
        if rotate:
            account = get_user_model().objects.filter(username=name).first()
            if account is None:
                raise CommandError(f"No account named {name!r}; create it first without --rotate.")
            self.stdout.write(token_rotate(account=account))
            self.stderr.write(f"New token for {name}; the old one no longer works.")
            return
        try:
            _, token = account_create(username=name, staff=staff)
        except AccountExists:
            raise CommandError(f"An account named {name!r} exists; use --rotate to issue it a new token.") from None
        except ValidationError as error:
            raise CommandError(f"Invalid account name {name!r}: {'; '.join(error.messages)}") from None
        self.stdout.write(token)
        self.stderr.write(
            f"Created account {name}{' (staff)' if staff else ''}. Keep the token above: it is shown once here."
        )
