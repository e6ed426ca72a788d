import os
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.http.request import split_domain_port, validate_host

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
        self.stdout.write('  try:  curl -H "Authorization: Token ' + token + '" ' + _answering(url) + "/api/v1/info")


def _answering(url: str) -> str:
    """url, or the public address when its host is not one the hub answers to.

    Under the production settings ALLOWED_HOSTS names the public host only, and the hub would answer a
    request to 127.0.0.1 with 400: the hint then names the first host it does answer to, through the
    proxy (https when SECURE_SSL_REDIRECT is on)."""
    url = url.rstrip("/")
    domain, _ = split_domain_port(urlsplit(url).netloc)
    if validate_host(domain, settings.ALLOWED_HOSTS):
        return url
    public = [host.lstrip(".") for host in settings.ALLOWED_HOSTS if host != "*"]
    if not public:
        return url
    return f"{'https' if settings.SECURE_SSL_REDIRECT else 'http'}://{public[0]}"
