"""Small, escaping HTML builders: every text that reaches a page goes through ``esc``.

Values shown on the console come from peers (node ids, lesson content, reasons): all of it is
untrusted, so the builders escape text and attribute values, and only ``Markup`` (HTML this
package built) is inserted as is.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

__all__ = ["Markup", "attrs", "el", "esc", "join", "void"]


class Markup(str):
    """A string of HTML this package built; inserted without escaping."""

    __slots__ = ()


def esc(value: object) -> Markup:
    """``value`` as escaped text (quotes too, so it is safe in attributes); Markup passes."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def attrs(values: Mapping[str, object | None]) -> Markup:
    """Attributes as ` name="value"`; ``None`` and ``False`` drop one, ``True`` writes its name."""
    parts: list[str] = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f" {esc(name)}")
        else:
            parts.append(f' {esc(name)}="{esc(value)}"')
    return Markup("".join(parts))


def join(items: Iterable[object]) -> Markup:
    """Concatenate children, escaping any that are not already Markup."""
    return Markup("".join(esc(i) for i in items))


def _names(attributes: Mapping[str, object | None]) -> dict[str, object | None]:
    """Keyword names as HTML names: ``class_`` -> ``class``, ``data_sort`` -> ``data-sort``."""
    return {k.rstrip("_").replace("_", "-"): v for k, v in attributes.items()}


def el(tag: str, *children: object, **attributes: object | None) -> Markup:
    """``<tag attrs>children</tag>``; children not already Markup are escaped."""
    return Markup(f"<{tag}{attrs(_names(attributes))}>{join(children)}</{tag}>")


def void(tag: str, **attributes: object | None) -> Markup:
    """An element without content or end tag (``input``, ``meta``, ``link``)."""
    return Markup(f"<{tag}{attrs(_names(attributes))}>")
