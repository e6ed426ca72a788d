"""How `make serve` (and every test and benchmark that starts a real hub) runs the hub: gunicorn
managing uvicorn workers over memoryhub.asgi. The Makefile adds --bind, --workers and --timeout.

One kind of server for everything the hub serves: the API, the dashboard and the MCP endpoint,
which needs ASGI. Each worker's event loop reads every connection, so sockets that send half a
request and stall hold no worker; the views still run one at a time per worker, on its one sync
thread (memoryhub.asgi.HubASGIHandler), with the database connection kept between requests.
"""

import os

wsgi_app = "memoryhub.asgi:application"
worker_class = "uvicorn_worker.UvicornWorker"
# The access log goes to stdout, without query strings and without /healthz (memoryhub.asgi).
accesslog = "-"
control_socket_disable = True
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
