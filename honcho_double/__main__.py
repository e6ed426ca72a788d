"""Run the Honcho double over HTTP: `python -m honcho_double --port 8765`.

Then point the hub at it: `HONCHO_URL=http://127.0.0.1:8765 python manage.py evaluate`.
"""

import argparse
import signal
import sys
from types import FrameType

from honcho_double.faults import Fault, FaultPlan
from honcho_double.server import HonchoDouble


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m honcho_double", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0 picks a free one)")
    parser.add_argument("--api-key", default=None, help="answer 401 to requests without this Bearer token")
    parser.add_argument("--fail-rate", type=float, default=0.0, help="fraction of calls that fail (0 to 1)")
    parser.add_argument(
        "--fail-kinds",
        default="server_error,timeout,dropped_connection",
        help="comma-separated faults to draw from: server_error, timeout, dropped_connection, rate_limited",
    )
    parser.add_argument("--timeout-delay", type=float, default=30.0, help="seconds a 'timeout' fault holds a request")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds every call waits before its answer")
    parser.add_argument("--unauthorized", action="store_true", help="answer 401 to everything")
    parser.add_argument("--seed", type=int, default=0, help="seed for the fault choices")
    options = parser.parse_args(argv)
    try:
        kinds = tuple(Fault(kind.strip()) for kind in options.fail_kinds.split(",") if kind.strip())
    except ValueError as error:
        parser.error(str(error))
    if not 0.0 <= options.fail_rate <= 1.0:
        parser.error("--fail-rate must be between 0 and 1")
    faults = FaultPlan(
        failure_rate=options.fail_rate, kinds=kinds, unauthorized=options.unauthorized, seed=options.seed
    )
    if options.latency < 0:
        parser.error("--latency must be 0 or more")
    double = HonchoDouble(
        api_key=options.api_key, faults=faults, timeout_delay=options.timeout_delay, latency=options.latency
    )
    base_url = double.serve(options.host, options.port)

    def stop(signum: int, frame: FrameType | None) -> None:
        double.stop()

    signal.signal(signal.SIGTERM, stop)
    print(f"Honcho double answering on {base_url} (Ctrl-C to stop)", flush=True)
    try:
        double.wait_forever()
    except KeyboardInterrupt:
        double.stop()
    print(f"stopped after {len(double.calls)} calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
