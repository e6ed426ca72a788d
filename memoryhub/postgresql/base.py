"""Django's PostgreSQL backend, with batches that fit the protocol when parameters are bound by the server.

With server-side binding (settings.DB_SERVER_SIDE_BINDING), a statement's parameters travel apart from it,
and PostgreSQL's protocol counts them in 16 bits: at most 65,535 to a statement. Django batches its own
multi-row statements by the backend's limit (the delete of a user's entries and their history, bulk
creates and updates), and its PostgreSQL backend names none, as quoting them into the text has none: the
removal of an account of 160,000 entries sent one DELETE of 160,000 ids, which the driver refused. Here
the limit is named whenever the server binds, so Django cuts such statements into batches, as it does on
SQLite. The hub's own statements stay under it (they already fit SQLite's lower limit).
"""

from typing import Any

from django.db.backends.postgresql import base, features, operations
from django.utils.functional import cached_property

# The parameters one statement may carry over PostgreSQL's extended protocol.
PROTOCOL_MAX_PARAMETERS = 65_535


class DatabaseFeatures(features.DatabaseFeatures):
    @cached_property
    def max_query_params(self) -> int | None:  # type: ignore[override]
        if self.connection.settings_dict.get("OPTIONS", {}).get("server_side_binding") is True:
            return PROTOCOL_MAX_PARAMETERS
        return None


class DatabaseOperations(operations.DatabaseOperations):
    def bulk_batch_size(self, fields: Any, objs: Any) -> int:  # noqa: ANN401 - as Django's
        """As SQLite's backend batches: as many rows as fit the limit, when there is one."""
        limit = self.connection.features.max_query_params
        fields = list(fields)
        if limit is None or not fields:
            return len(objs)
        return max(limit // len(fields), 1)


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
    ops_class = DatabaseOperations
