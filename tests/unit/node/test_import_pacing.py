"""A long bundle goes as several Import calls, each within the deadline, with progress."""

from __future__ import annotations

import itertools

import pytest

from lamarck.client import ImportPacing
from lamarck.errors import ConfigError
from tests.unit.node.agent_node import Node, learn


async def test_a_long_bundle_is_acknowledged_line_by_line_across_calls(
    node: Node,
    other: Node,
) -> None:
    """Acks keep their bundle line numbers across calls; progress is told after each call."""
    await learn(node)
    good = (await node.client.export_bundle(statuses="active")).splitlines()[0]
    lines = [b"{not json %d" % i for i in range(11)] + [b"", good]
    seen: list[tuple[int, int]] = []
    result = await other.client.import_bundle(
        b"\n".join(lines) + b"\n",
        pacing=ImportPacing(first_lines=3, min_lines=2, max_lines=4),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert [a.index for a in result.acks] == [*range(11), 12]
    assert [a.status for a in result.acks] == ["rejected"] * 11 + ["accepted"]
    assert len(seen) >= 3 and seen[0] == (3, 13) and seen[-1] == (13, 13)
    assert [d for d, _ in seen] == sorted({d for d, _ in seen})
    assert all(4 >= b - a >= 2 for (a, _), (b, _) in itertools.pairwise(seen))


async def test_an_empty_bundle_is_one_call_with_no_acks(node: Node) -> None:
    assert (await node.client.import_bundle(b"")).acks == ()


@pytest.mark.parametrize(
    "fields",
    [{"first_lines": 0}, {"min_lines": 5, "max_lines": 4}, {"budget_share": 0.0}],
)
def test_import_pacing_refuses_unusable_values(fields: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="ImportPacing"):
        ImportPacing(**fields)  # type: ignore[arg-type]
