"""``python -m lamarck.node.cli``: the same as the ``lamarck`` console script."""

from __future__ import annotations

import sys

from lamarck.node.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
