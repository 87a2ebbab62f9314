"""Benchmarks: the performance figures of docs/performance.md, measured side by side in one run."""
