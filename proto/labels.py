"""Human labels of nodes: a short name an operator reads next to a ``lmk1…`` id.

A label is set at enrollment (``lamarck registry enroll --label``: the operator signs it into
the node's enrollment token) or by the node itself (the ``label`` setting, signed into its
registration); a label the operator signed wins over the node's own (``peer_label``).

A label is a claim, not an identity: two nodes may carry the same label, and a node may
pick any label it likes for itself. It is therefore always shown *beside* the id
(``with_label``), never instead of it, and only an id (or a label naming exactly one known
node, ``resolve_peer``) selects a peer.

Rule: 1 to ``MAX_LABEL_CHARS`` printable characters, no leading or trailing space, none of
the characters a terminal or page would interpret (control characters, line breaks).
"""

from __future__ import annotations

from collections.abc import Mapping

from lamarck.errors import InvalidRecord, NotFound

__all__ = ["MAX_LABEL_CHARS", "check_label", "peer_label", "resolve_peer", "with_label"]

#: The longest label accepted, in characters.
MAX_LABEL_CHARS = 40


def check_label(value: str) -> str:
    """``value`` if it is a valid label, else ``InvalidRecord(reason="invalid_label")``."""
    if not isinstance(value, str):
        raise InvalidRecord("a node label is text", reason="invalid_label")
    if not value:
        raise InvalidRecord("a node label is not empty", reason="invalid_label")
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidRecord(
            f"a node label is at most {MAX_LABEL_CHARS} characters, got {len(value)}",
            reason="invalid_label",
        )
    if not value.isprintable():
        raise InvalidRecord(
            "a node label holds printable characters only (no control or line-break)",
            reason="invalid_label",
        )
    if value != value.strip():
        raise InvalidRecord("a node label has no leading or trailing space", reason="invalid_label")
    return value


def peer_label(own: str | None, enrolled: str | None) -> str:
    """The label shown for a node: the one its operator signed at enrollment, else its own
    (``""``: none)."""
    return enrolled or own or ""


def with_label(node_id: str, label: str, *, width: int = 0) -> str:
    """``node_id`` with its label beside it: ``node3 lmk1…``; the id alone when there is no
    label. ``width`` > 0 shortens the id to that many characters first (tables)."""
    shown = node_id if width <= 0 or len(node_id) <= width + 1 else node_id[:width] + "…"
    return f"{label} {shown}" if label else shown


def resolve_peer(name: str, labels: Mapping[str, str]) -> str:
    """The node id ``name`` designates: an id as given, or the one node whose label is
    ``name`` (``labels``: node id -> label). A label two nodes share designates neither:
    ``NotFound(reason="ambiguous_label")`` naming both ids."""
    if name in labels or name.startswith("lmk1"):
        return name
    matches = sorted(node_id for node_id, label in labels.items() if label == name)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise NotFound(
            f"label {name!r} names {len(matches)} nodes ({', '.join(matches)}): give the id",
            reason="ambiguous_label",
        )
    return name
