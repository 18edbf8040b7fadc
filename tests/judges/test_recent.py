"""The models' caches (evaluators/judges/recent.py): what is found is marked recent, the least recent goes first."""
from __future__ import annotations

from evaluators.judges.recent import Recent


def test_the_least_recently_used_goes_first_past_the_size():
    cache: Recent[str, int] = Recent(2)
    cache.keep([("a", 1), ("b", 2)])
    assert cache.found(["a", "z"]) == {"a": 1}  # "a" now the most recent
    cache.keep([("c", 3)])
    assert cache.found(["a", "b", "c"]) == {"a": 1, "c": 3} and len(cache) == 2
    cache.keep([("a", 10)])  # kept again: the new value
    assert cache.found(["a"]) == {"a": 10}
    cache.clear()
    assert cache.found(["a", "c"]) == {} and len(cache) == 0
