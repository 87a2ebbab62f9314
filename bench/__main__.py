"""`python -m bench` (what `make bench` runs): every figure of quality.md into bench/results.json."""

from __future__ import annotations

import sys

from bench.run import main

if __name__ == "__main__":
    sys.exit(main())
