"""The per-token rate limit: MEMORYHUB_RATE_LIMIT requests per token, answered 429 with Retry-After."""

import hashlib
from typing import TYPE_CHECKING

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

if TYPE_CHECKING:  # rest_framework.views imports this module while it loads
    from rest_framework.views import APIView


class TokenRateThrottle(SimpleRateThrottle):
    """Counts requests per API token (per account for a logged-in session); no limit when the rate is empty.

    The rate is read from settings on every request, so a changed setting applies at once.
    """

    scope = "token"

    def get_rate(self) -> str | None:
        return settings.MEMORYHUB_RATE_LIMIT or None

    def get_cache_key(self, request: Request, view: "APIView") -> str:
        token_key = getattr(request.auth, "key", None)
        if token_key:
            # The counter is named after a digest: the token itself never lands in the cache.
            ident = "token-" + hashlib.sha256(token_key.encode()).hexdigest()[:32]
        elif request.user and request.user.is_authenticated:
            ident = f"account-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request) or 'unknown'}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
