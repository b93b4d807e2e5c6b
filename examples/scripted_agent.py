"""A scripted agent that records its run with ``lamarck.agent.RunRecorder``.

Run against the node of a home::

    python examples/scripted_agent.py --home ~/.lamarck [--project DIR]

The "tools" are scripted so the example is deterministic: ``pytest tests/`` fails (the
conftest sits at the root), ``pytest`` from the root passes. The recorder turns that into an
outcome by the node's own rules, and the node learns "prefer `pytest` over `pytest tests/`".
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from lamarck.agent import RunRecorder, project_digest
from lamarck.client import Client

BAD, GOOD = "shell:pytest tests/", "shell:pytest"
TARGET = "test suite"


def scripted_pytest(operation: str) -> bool:
    """The scripted tool: only pytest from the root finds the root conftest."""
    return operation == GOOD


def main() -> None:
    """Recall, act, record; print what the node learned."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", default="~/.lamarck", help="the node's home")
    parser.add_argument("--project", default=".", help="the project checkout")
    args = parser.parse_args()

    task = "make the test suite pass"
    project = project_digest(Path(args.project))
    session = f"scripted-{uuid.uuid4()}"
    with Client.from_home(args.home) as client:
        recalled = client.recall(task, session_id=session, project_digest=project)
        print(recalled.section or "(no lessons yet)")

        rec = RunRecorder(session_id=session, goal=task, project=project)
        rec.lessons_in_play(recalled.lessons)
        rec.predict("pass", 0.6)
        # Try what a recalled lesson prefers first, else the usual command.
        order = [GOOD] if GOOD in recalled.section else [BAD, GOOD]
        for operation in order:
            check = client.check_operation(operation, session_id=session, project_digest=project)
            if check.preamble:
                print(check.preamble)
            passed = scripted_pytest(operation)
            rec.check("test", passed=passed, operation=operation, target=TARGET)
            if passed:
                break
        result = rec.finish()
        recorded = client.record_outcome(result.outcome)

    print(f"outcome {recorded.outcome_id}: passed={result.outcome.passed}")
    for change in recorded.changes:
        print(f"  {change.kind} {change.lesson_id} ({change.confidence_after:.2f})")
    if recorded.nothing_learned:
        # The node says why no lesson moved (lamarck.learning.why).
        print(f"  nothing learned: {recorded.nothing_learned}")


if __name__ == "__main__":
    main()
