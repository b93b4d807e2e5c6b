"""``lamarck outcomes list``: the outcomes a node holds as evidence for its lessons.

AgentService (lamarck.v1) has no call listing outcome records, and the CLI reaches a node
only through that API (the node owns its store). What the API does expose is every lesson's
evidence (``evidence_outcome_ids``), so this lists the outcomes that back lessons, each with
the lessons it backs and their standing. Outcomes that taught nothing (no lesson names them)
are not visible here; listing those needs a ListOutcomes call in the agent API.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lamarck.cli.connect import client_for
from lamarck.cli.lessons import iter_pages
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, print_table

__all__ = ["app", "list_outcomes", "register"]

app = typer.Typer(name="outcomes", help="Outcomes a node holds as evidence.", no_args_is_help=True)


@app.command("list")
def list_outcomes(
    limit: Annotated[int, typer.Option(min=1, help="At most this many outcomes.")] = 50,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the outcomes that back lessons, with the lessons each backs."""
    backing: dict[str, list[dict[str, Any]]] = {}
    with client_for(resolve_home(home)) as client:
        for page in iter_pages(client):
            for lesson in page.lessons:
                for outcome_id in lesson.evidence_outcome_ids:
                    backing.setdefault(outcome_id, []).append(
                        {
                            "lesson_id": lesson.id,
                            "status": lesson.status,
                            "confidence": lesson.confidence,
                        }
                    )
    # Outcome ids carry no time through this API: order by id, so output is stable.
    chosen = sorted(backing)[:limit]
    if as_json:
        emit_json([{"outcome_id": o, "lessons": backing[o]} for o in chosen])
        return
    print_table(
        f"{len(chosen)} outcome(s) held as evidence",
        ["outcome", "lessons", "statuses"],
        (
            (
                o,
                ", ".join(str(x["lesson_id"]) for x in backing[o]),
                ", ".join(f"{x['status']} {x['confidence']:.2f}" for x in backing[o]),
            )
            for o in chosen
        ),
        no_wrap=("outcome",),
    )


def register(root: typer.Typer) -> None:
    """Add the ``outcomes`` group to the root app."""
    root.add_typer(app)
