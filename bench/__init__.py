"""Benchmarks: the performance figures of ../shared/design/quality.md, measured side by side in one run."""
