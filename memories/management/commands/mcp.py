import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.mcp import stdio
from memories.mcp.tools import build_server


class Command(BaseCommand):
    help = (
        "Serve the MCP tools over stdio for one account (for desktop agents that start a process): "
        "every tool reads and writes that account's memories, as its API token would."
    )

    # The system checks would import every URL, view and schema of the site, which the tools never use.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        choice = parser.add_mutually_exclusive_group(required=True)
        choice.add_argument("--account", help="The account whose memories the tools use.")
        choice.add_argument(
            "--keep-answers",
            action="store_true",
            help="Serve nothing: keep the server's answers to a client's first messages in the data folder, so the "
            "next start answers at once (make install and make migrate do this; nothing changes while they are up "
            "to date).",
        )

    def handle(self, *args: object, account: str | None, keep_answers: bool, verbosity: int, **options: object) -> None:
        if keep_answers:
            asked = stdio.keep_answers()
            if verbosity:
                path = stdio.data_dir() / stdio.KEPT_ANSWERS_FILE
                self.stdout.write(
                    f"Kept the answers in {path}." if asked else f"The answers kept in {path} are up to date."
                )
            return
        user = get_user_model().objects.filter(username=account, is_active=True).first()
        if user is None:
            raise CommandError(f"No active account {account!r}: create it with `manage.py create_account {account}`.")
        server = build_server(lambda ctx: user)
        anyio.run(server.run_stdio_async)
