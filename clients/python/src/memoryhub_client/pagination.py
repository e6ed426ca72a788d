"""Pages of a list: the items of one page, and iteration over every item from there on.

`for entry in hub.entries("alice")` walks all of alice's memories, fetching the next page only when
the current one is used up; `page.items` is just the page in hand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Generic, TypeVar

from memoryhub_client.models import PageData

T = TypeVar("T")

__all__ = ["AsyncPage", "Page"]


class _PageBase(Generic[T]):
    def __init__(self, data: PageData[T]) -> None:
        self._data = data

    @property
    def items(self) -> list[T]:
        """The items of this page only."""
        return list(self._data.items)

    @property
    def count(self) -> int:
        """How many items the whole list holds (an estimate when count_exact is False)."""
        return self._data.count

    @property
    def count_exact(self) -> bool:
        return self._data.count_exact

    @property
    def number(self) -> int:
        """This page's number, from 1."""
        return self._data.number

    @property
    def has_next(self) -> bool:
        return self._data.has_next

    @property
    def order(self) -> str | None:
        """The order of this page's items: "relevance" (a search's ranked results) or "newest"."""
        return self._data.order

    @property
    def ranking(self) -> str | None:
        """For a search, how the hub ranked it: "hybrid" (by words and meaning), or "lexical; semantic off" /
        "lexical; semantic unavailable: why" (by words alone); None for a plain list."""
        return self._data.ranking

    def __repr__(self) -> str:
        return f"{type(self).__name__}(number={self.number}, items={len(self._data.items)}, count={self.count})"


class Page(_PageBase[T]):
    """A page from MemoryHub; iterating it yields every item of this page and the ones after."""

    def __init__(self, data: PageData[T], fetch: Callable[[int], Page[T]]) -> None:
        super().__init__(data)
        self._fetch = fetch

    def next_page(self) -> Page[T] | None:
        return self._fetch(self.number + 1) if self.has_next else None

    def __iter__(self) -> Iterator[T]:
        page: Page[T] | None = self
        while page is not None:
            yield from page._data.items
            page = page.next_page()


class AsyncPage(_PageBase[T]):
    """A page from AsyncMemoryHub; `async for` yields every item of this page and the ones after."""

    def __init__(self, data: PageData[T], fetch: Callable[[int], Awaitable[AsyncPage[T]]]) -> None:
        super().__init__(data)
        self._fetch = fetch

    async def next_page(self) -> AsyncPage[T] | None:
        return await self._fetch(self.number + 1) if self.has_next else None

    async def __aiter__(self) -> AsyncIterator[T]:
        page: AsyncPage[T] | None = self
        while page is not None:
            for item in page._data.items:
                yield item
            page = await page.next_page()
