"""Judges: what fills a sample's claim matrix and rubric scores (DESIGN.md "Judging").

`offline` is the default judge: a deterministic heuristic that needs no key and no network.
A judge is a module with `build_matrices(samples) -> list[ClaimMatrix]`.
"""
from evaluators.judges import offline

JUDGES = {offline.JUDGE: offline}
