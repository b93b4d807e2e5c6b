"""The console's static files, served by name from an allow-list (never from a request path).

They ship in the wheel under ``lamarck/node/console/static/``; the listener answers
``/static/<name>`` with ``asset(name)`` and ``CONTENT_TYPES[name]``.
"""

from __future__ import annotations

from importlib import resources

from lamarck.errors import NotFound

__all__ = ["CONTENT_TYPES", "asset"]

#: Every file the console serves, with its content type. Anything else is not found.
CONTENT_TYPES: dict[str, str] = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
}


def asset(name: str) -> bytes:
    """The bytes of the static file ``name``; ``NotFound`` for a name not in the allow-list."""
    if name not in CONTENT_TYPES:
        raise NotFound(f"no console asset named {name[:80]!r}", reason="no_such_asset")
    return resources.files("lamarck.node.console").joinpath("static", name).read_bytes()
