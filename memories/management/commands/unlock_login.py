"""`manage.py unlock_login NAME`: lift the login lock-out of a username (memories.logins)."""

from django.core.management.base import BaseCommand, CommandParser

from memories import logins


class Command(BaseCommand):
    help = "Forget the failed logins of a username, so it can log in again at once (from every address, or one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--address", help="Only the failures from this client address.")

    def handle(self, *args: object, username: str, address: str | None, **options: object) -> None:
        cleared = logins.login_failures_clear(username=username, address=address)
        where = f" from {address}" if address else ""
        self.stdout.write(f"Cleared {cleared} failed login{'s' if cleared != 1 else ''} of {username}{where}.")
