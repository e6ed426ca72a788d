"""`python -m memoryhub.preflight HOST PORT`: say in one line that the port is taken, before a server starts.

`make run` and `make serve` run it first, so a port in use is one line naming PORT= instead of a
server's traceback or its retries.
"""

import socket
import sys


def port_problem(host: str, port: int) -> str | None:
    """Why a server could not listen on host:port, or None when it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except PermissionError:
            return f"port {port} on {host} needs privileges this user lacks: choose another with PORT=8000"
        except OSError as error:
            return (
                f"port {port} on {host} is in use ({error.strerror}): stop what holds it, "
                f"or choose another with PORT={port + 1} (e.g. `make run PORT={port + 1}`)"
            )
    return None


def main(argv: list[str]) -> int:
    host, raw_port = argv
    try:
        port = int(raw_port)
    except ValueError:
        sys.stderr.write(f"memoryhub: PORT must be a whole number; got {raw_port!r}\n")
        return 2
    if not 0 < port < 65536:
        sys.stderr.write(f"memoryhub: PORT must be from 1 to 65535; got {port}\n")
        return 2
    problem = port_problem(host, port)
    if problem:
        sys.stderr.write(f"memoryhub: {problem}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
