"""A clone of the repository alone is complete: its docs, tests and benchmarks reach nothing
outside it, and the README's layout names only folders that exist."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: Markdown files a reader of the repository follows.
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: A path that climbs out of the file's folder and then names a sibling of the repository.
OUTSIDE = re.compile(r"\.\./shared\b|/work/shared\b")


def test_readme_layout_lists_only_folders_that_exist() -> None:
    text = (REPO / "README.md").read_text()
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    folders = [f for row in rows for f in re.findall(r"`([\w.-]+)/`", row.split("|")[1])]
    assert folders, "the layout table lists no folder"
    missing = [f for f in folders if not (REPO / f).is_dir()]
    assert missing == []


def test_docs_link_nothing_outside_the_repository() -> None:
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#]+)", doc.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (doc.parent / target).resolve()
            assert resolved.is_relative_to(REPO), f"{doc.name} links {target}"
        assert not OUTSIDE.search(doc.read_text()), f"{doc.name} names a path outside the repo"


def test_tests_and_benchmarks_read_no_data_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    sources = [p for d in ("tests", "bench") for p in (REPO / d).rglob("*.py") if p != here]
    readers = [str(p.relative_to(REPO)) for p in sources if OUTSIDE.search(p.read_text())]
    assert readers == []
    assert (REPO / "tests" / "data" / "rfc8032-ed25519.json").is_file()


def test_no_two_test_modules_share_a_basename() -> None:
    """The test folders are not packages: pytest imports each module by its basename, so two
    modules of one name stop the whole suite at collection."""
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
