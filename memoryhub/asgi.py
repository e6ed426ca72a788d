"""ASGI entry point: Django for every path, except /mcp, which is the MCP server (memories.mcp.http)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

django_application = get_asgi_application()

# Imported once Django is set up: the MCP tools use the models.
from memories.mcp.http import with_mcp  # noqa: E402

application = with_mcp(django_application)
