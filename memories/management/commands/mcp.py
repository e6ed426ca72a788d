import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.mcp.tools import build_server


class Command(BaseCommand):
    help = (
        "Serve the MCP tools over stdio for one account (for desktop agents that start a process): "
        "every tool reads and writes that account's memories, as its API token would."
    )

    # The system checks would import every URL, view and schema of the site, which the tools never use.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="The account whose memories the tools use.")

    def handle(self, *args: object, account: str, **options: object) -> None:
        user = get_user_model().objects.filter(username=account, is_active=True).first()
        if user is None:
            raise CommandError(f"No active account {account!r}: create it with `manage.py create_account {account}`.")
        server = build_server(lambda ctx: user)
        anyio.run(server.run_stdio_async)
