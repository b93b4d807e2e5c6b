"""Params are built once, at the composition root, and passed down.

Every frozen ``*Params`` class of the library is constructed only where a process composes
itself: ``lamarck.node.params`` (the node's one ``NodeParams``, from its settings) and the
applications' own entry points (the CLI, the fleet launcher and the simulator each compose
their run, and build a node's params through ``node_params``). Any other module receives its
params through its constructor. A default declared as a dataclass field default
(``field(default_factory=SomeParams)``, or a module function named there) is the tree's default
value, not a construction elsewhere; so is a module-level ``DEFAULT_* = SomeParams()`` (no
arguments) in the module that defines ``SomeParams``, beside its class.

The scan reads the library's sources with ``ast`` (setup.py ``ROOTS`` maps the folders into
``lamarck.*``); an offender is printed as ``file:line: Name(...)``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: Folders (as setup.py maps them) whose every module is a composition root: the applications.
APPLICATION_ROOTS = ("cli", "fleet", "sim")
#: Single modules that compose the node's params tree.
ROOT_MODULES = frozenset({"node/params.py"})

#: Constructions not yet moved to the root, each with why; this map may only shrink (an entry
#: whose construction is gone fails ``test_the_pending_constructions_are_still_there``).
PENDING: dict[str, str] = {}


def _roots() -> dict[str, str]:
    """setup.py's ROOTS (package -> folder), read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "ROOTS" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict)
            return {str(k): str(v) for k, v in value.items()}
    raise AssertionError("setup.py has no ROOTS")


@functools.cache
def _sources() -> tuple[tuple[str, ast.Module], ...]:
    """Every library module, as (path relative to the repository, parsed tree)."""
    found = []
    for folder in sorted(set(_roots().values())):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("proto/v1/"):  # generated stubs
                continue
            found.append((rel, ast.parse(path.read_text("utf-8"), filename=rel)))
    return tuple(found)


def _params_classes(modules: Sequence[tuple[str, ast.Module]]) -> frozenset[str]:
    return frozenset(
        node.name
        for _, tree in modules
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name.endswith("Params")
    )


def _called(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _default_factories(tree: ast.AST) -> frozenset[str]:
    """The functions named as a dataclass field's ``default_factory`` (by name: a field of one
    module may name a function of another, as ``ImportParams.filters`` does)."""
    return frozenset(
        kw.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called(node) == "field"
        for kw in node.keywords
        if kw.arg == "default_factory" and isinstance(kw.value, ast.Name)
    )


def _constructions(
    tree: ast.Module, names: frozenset[str]
) -> Iterator[tuple[int, str, str | None]]:
    """(line, class, enclosing module-level function or None) of each ``*Params(...)`` call."""

    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[int, str, str | None]]:
        for child in ast.iter_child_nodes(node):
            inner = function
            if function is None and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Call) and _called(child) in names:
                yield child.lineno, str(_called(child)), function
            yield from walk(child, inner)

    yield from walk(tree, None)


def _declared_defaults(tree: ast.Module) -> frozenset[int]:
    """Lines of ``DEFAULT_* = SomeParams()`` at module level, ``SomeParams`` defined here."""
    here = frozenset(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    return frozenset(
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
        and target.id.startswith("DEFAULT_")
        and isinstance(node.value, ast.Call)
        and _called(node.value) in here
        and not node.value.args
        and not node.value.keywords
    )


def _is_root(path: str) -> bool:
    return path in ROOT_MODULES or path.split("/", 1)[0] in APPLICATION_ROOTS


def _offenders() -> dict[str, list[str]]:
    """Constructions outside the composition roots, by file (``file:line: Name(...)``)."""
    modules = _sources()
    names = _params_classes(modules)
    factories = frozenset().union(*(_default_factories(tree) for _, tree in modules))
    found: dict[str, list[str]] = {}
    for path, tree in modules:
        if _is_root(path):
            continue
        defaults = _declared_defaults(tree)
        for line, name, function in _constructions(tree, names):
            if function is not None and function in factories:
                continue  # a field's default value
            if function is None and line in defaults:
                continue  # the tree's default value, declared beside its class
            found.setdefault(path, []).append(f"{path}:{line}: {name}(...)")
    return found


def test_params_are_built_only_at_the_composition_root() -> None:
    offenders = [
        hit for path, hits in sorted(_offenders().items()) if path not in PENDING for hit in hits
    ]
    assert not offenders, (
        "params built outside the composition root (build them in lamarck.node.params, or in "
        "the application's entry point, and pass them down):\n" + "\n".join(offenders)
    )


def test_the_pending_constructions_are_still_there() -> None:
    """Once a pending construction moves to the root its entry goes, so it cannot come back."""
    offenders = _offenders()
    assert sorted(p for p in PENDING if p not in offenders) == []


def test_node_params_is_built_only_by_node_params() -> None:
    """Applications build a node's params through the one function, never field by field."""
    calls = [
        f"{path}:{line}"
        for path, tree in _sources()
        for line, _, function in _constructions(tree, frozenset({"NodeParams"}))
        if (path, function) != ("node/params.py", "node_params")
    ]
    assert calls == []


def test_the_scan_sees_the_library() -> None:
    """The scan finds the params classes and the root's constructions (a wrong layout would
    pass the other tests empty)."""
    modules = _sources()
    names = _params_classes(modules)
    assert {"NodeParams", "LearningParams", "ImportParams", "ReputationParams"} <= names
    root = dict(modules)["node/params.py"]
    built = {name for _, name, _ in _constructions(root, names)}
    assert {"NodeParams", "LearningParams", "GossipParams"} <= built


def test_a_construction_outside_the_root_is_reported_with_its_place() -> None:
    tree = ast.parse(
        "from dataclasses import dataclass, field\n"
        "def _default():\n"
        "    return GossipParams()\n"
        "@dataclass\n"
        "class Holder:\n"
        "    gossip: object = field(default_factory=_default)\n"
        "def make():\n"
        "    return Service(params=LearningParams())\n"
    )
    names = frozenset({"GossipParams", "LearningParams"})
    hits = list(_constructions(tree, names))
    assert hits == [(3, "GossipParams", "_default"), (8, "LearningParams", "make")]
    assert _default_factories(tree) == {"_default"}


def _unread_fields(modules: Sequence[tuple[str, ast.Module]]) -> list[str]:
    """Fields of a ``*Params`` class no code reads (as ``.field``) outside a ``__post_init__``:
    a setting that changes nothing. By name over the whole library, so a field is "read" when
    any attribute of that name is; what this catches is a name nothing reads at all."""
    fields: list[tuple[str, str, str]] = []
    validation: dict[str, list[tuple[int, int]]] = {}
    for path, tree in modules:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Params")):
                continue
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    if not item.target.id.startswith("_"):
                        fields.append((path, node.name, item.target.id))
                elif isinstance(item, ast.FunctionDef) and item.name == "__post_init__":
                    validation.setdefault(path, []).append((item.lineno, item.end_lineno or 0))
    read: set[str] = set()
    for path, tree in modules:
        spans = validation.get(path, [])
        read.update(
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and not any(a <= node.lineno <= b for a, b in spans)
        )
    return [f"{path}: {cls}.{name}" for path, cls, name in fields if name not in read]


def test_every_params_field_is_read_somewhere() -> None:
    unread = _unread_fields(_sources())
    assert not unread, "params fields nothing reads (remove them or read them):\n" + "\n".join(
        unread
    )


def test_a_field_read_only_by_its_own_validation_is_reported() -> None:
    tree = ast.parse(
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class DemoParams:\n"
        "    used_here_zq: int = 1\n"
        "    only_validated_zq: int = 2\n"
        "    def __post_init__(self):\n"
        "        assert self.only_validated_zq > 0\n"
        "def reader(p):\n"
        "    return p.used_here_zq\n"
    )
    assert _unread_fields([("demo.py", tree)]) == ["demo.py: DemoParams.only_validated_zq"]
