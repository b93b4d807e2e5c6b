"""Pieces every console page shows the same way: a node id as a link to its peer page,
a time, a sortable table head, and the labels and CSRF field names the pages share."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from lamarck.node.console.markup import Markup, el
from lamarck.proto.timefmt import format_ts

__all__ = [
    "CSRF_FIELD",
    "NO_LABELS",
    "SHORT_ID_CHARS",
    "Labels",
    "short_peer",
    "sort_header",
    "when",
]

#: Node id -> human label (``lamarck.proto.labels``): shown beside an id, never instead.
Labels = Mapping[str, str]
NO_LABELS: Labels = {}
#: The form field and meta tag name carrying the anti-forgery token.
CSRF_FIELD = "csrf_token"


#: Characters of a node id shown where space is short (the whole id is the link's title).
SHORT_ID_CHARS = 12


def short_peer(node_id: str, labels: Labels = NO_LABELS, *, short: bool = True) -> Markup:
    """A link to a peer's page: its label (a claim, so never alone) beside its id, shortened
    to its start when ``short`` (all of it on hover)."""
    cut = short and len(node_id) > SHORT_ID_CHARS + 1
    shown = node_id[:SHORT_ID_CHARS] + "…" if cut else node_id
    label = labels.get(node_id, "")
    return el(
        "a",
        el("span", label, class_="peer-label") if label else "",
        " " if label else "",
        el("code", shown, class_="peer-id"),
        href=f"/reputation/{node_id}",
        title=node_id,
        class_="peer",
    )


def when(at: datetime | None) -> Markup:
    """A time as an RFC 3339 ``<time>`` element, or a dash."""
    if at is None:
        return Markup("–")
    text = format_ts(at)
    return el("time", text, datetime=text)


def sort_header(*labels: str) -> Markup:
    """A table head whose columns the script sorts on click."""
    return el("thead", el("tr", *(el("th", lbl, scope="col", tabindex="0") for lbl in labels)))
