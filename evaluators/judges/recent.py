"""Recent results by key, least recently used out first past a size, safe to share between threads: the models'
caches (the embedder's sentence vectors by text, the cross-encoder's probabilities by pair)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def found(self, keys: Iterable[K]) -> dict[K, V]:
        """The values held of `keys`, each then the most recent."""
        with self._lock:
            held = {}
            for key in keys:
                if key in self._items:
                    self._items.move_to_end(key)
                    held[key] = self._items[key]
            return held

    def keep(self, items: Iterable[tuple[K, V]]) -> None:
        """Hold these as the most recent, forgetting the least recent beyond `size`."""
        with self._lock:
            for key, value in items:
                self._items[key] = value
                self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
