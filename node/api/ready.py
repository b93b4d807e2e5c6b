"""Late-bound parts of a running node, read through narrow accessors.

The servers bind and answer before the store is migrated, and the network side starts after
it: a servicer is built with a :class:`Ready` (or a :data:`Provider` reading one) for each
such part, never with the part itself. ``Ready.get`` raises
``StoreUnavailable(reason="starting")`` (answered UNAVAILABLE) until the daemon publishes the
part and again once it withdraws it, so a servicer never sees a half-started node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from lamarck.errors import StoreUnavailable

__all__ = ["Provider", "Ready", "provider_of", "while_ready"]

_T = TypeVar("_T")
#: A zero-argument callable a servicer reads on each call (the daemon's store, service...).
Provider = Callable[[], _T]


def provider_of(value: _T | Provider[_T], kind: type[Any]) -> Provider[_T]:
    """``value`` as a provider: an instance of ``kind`` is wrapped, a callable kept as is."""
    if isinstance(value, kind):
        return lambda: value
    if callable(value):
        return value
    raise TypeError(f"expected a {kind.__name__} or a callable returning one")


class Ready(Generic[_T]):
    """One part the daemon publishes once it exists (``set``) and may withdraw (``clear``).

    ``what`` names the part in the refusal: ``"<what> is starting or stopping"``.
    """

    __slots__ = ("_value", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._value: _T | None = None

    def set(self, value: _T) -> None:
        """Publish the part: from now on ``get`` returns it."""
        self._value = value

    def clear(self) -> None:
        """Withdraw the part: ``get`` refuses again (the node is stopping)."""
        self._value = None

    @property
    def is_set(self) -> bool:
        """Whether the part is published."""
        return self._value is not None

    def get(self) -> _T:
        """The part; ``StoreUnavailable(reason="starting")`` while it is not published."""
        value = self._value
        if value is None:
            raise self.unavailable()
        return value

    def peek(self) -> _T | None:
        """The part, or ``None`` while it is not published (for readers that do without)."""
        return self._value

    def unavailable(self) -> StoreUnavailable:
        """The error a reader gets while the part is not published."""
        return StoreUnavailable(f"{self._what} is starting or stopping", reason="starting")


def while_ready(gate: Ready[Any], part: Ready[_T]) -> Provider[_T]:
    """``part``'s accessor that also refuses while ``gate`` is withdrawn: the network side
    is served only while the store is (it outlives the store's withdrawal at stop)."""

    def get() -> _T:
        value = part.peek()
        if value is None or not gate.is_set:
            raise part.unavailable()
        return value

    return get
