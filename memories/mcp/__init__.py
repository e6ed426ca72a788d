"""The MCP server: MemoryHub's memories as tools an agent calls, on the official `mcp` SDK.

tools.py builds the server (remember, recall, get, list, forget, history, context) on the same
services and selectors as the REST API; http.py serves it over Streamable HTTP at /mcp with the
API's token, rate limit and body cap; `manage.py mcp --account NAME` serves it over stdio.
"""
