"""Logging pieces: the development server's access log without query strings, and one-line refusals."""

import logging


class WithoutQueryStrings(logging.Filter):
    """Drops the query string from the request line of Django's development server log (`make run`).

    A search's text (?q=...) and a uid in a dashboard link are the agent's data, not the log's; the
    production server's access log leaves them out the same way (the Makefile's ACCESS_LOG_FORMAT).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args and isinstance(record.args[0], str):
            request_line = record.args[0]
            method, _, rest = request_line.partition(" ")
            target, space, protocol = rest.rpartition(" ") if " " in rest else (rest, "", "")
            record.args = (f"{method} {target.split('?', 1)[0]}{space}{protocol}", *record.args[1:])
        return True


class WithoutTraceback(logging.Filter):
    """Keeps a record's message and drops its traceback: for refusals whose cause the message says
    whole (a Host header not in ALLOWED_HOSTS), where Django's frames would bury it in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
