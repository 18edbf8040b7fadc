"""Pure functions: the metrics' math, statistics and text matching. No I/O, no project imports beyond this package."""
