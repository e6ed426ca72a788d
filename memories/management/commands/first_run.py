import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from memories.accounts import account_create


class Command(BaseCommand):
    help = (
        "On the first start, create the admin account and its API token and print both once "
        "(the password from MEMORYHUB_ADMIN_PASSWORD when set). Later runs change nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("MEMORYHUB_ADMIN_USER", "admin"))
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="Where the hub will answer, for the hint it prints."
        )

    def handle(self, *args: object, username: str, url: str, **options: object) -> None:
        if get_user_model().objects.filter(is_superuser=True).exists():
            self.stdout.write("Accounts exist already; nothing to prepare.")
            return
        given = os.environ.get("MEMORYHUB_ADMIN_PASSWORD", "")
        password = given or secrets.token_urlsafe(12)
        _, token = account_create(username=username, staff=True, password=password)
        self.stdout.write("MemoryHub is ready. These are shown once; keep them:")
        self.stdout.write(f"  admin login:  {username}")
        self.stdout.write(f"  password:     {'(from MEMORYHUB_ADMIN_PASSWORD)' if given else password}")
        self.stdout.write(f"  API token:    {token}")
        self.stdout.write('  try:  curl -H "Authorization: Token ' + token + '" ' + url.rstrip("/") + "/api/v1/info")
