from django.conf import settings
from rest_framework.pagination import PageNumberPagination


class MemoryPagination(PageNumberPagination):
    """Numbered pages: ?page=N&page_size=M, M capped at MEMORYHUB_MAX_PAGE_SIZE."""

    page_size_query_param = "page_size"

    @property
    def page_size(self) -> int:
        return settings.MEMORYHUB_PAGE_SIZE

    @property
    def max_page_size(self) -> int:
        return settings.MEMORYHUB_MAX_PAGE_SIZE
