"""``python -m lamarck.cli``: the same as the ``lamarck`` console script."""

from __future__ import annotations

import sys

from lamarck.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
