"""``lamarck registry ...``: the operator's tools for an admitted (non-``open``) network.

* ``operator-key create|show FILE``: the operator's Ed25519 key (PKCS#8 PEM, mode 0600). Its
  public key is what every node of the network takes as ``operator_public_key``.
* ``enroll``: an operator-signed enrollment token for one node (by id, key or home); the node
  presents ``<its home>/enrollment.json`` when it registers. How the first node of an
  ``endorsed`` network gets in, and how every node of an ``operator`` network does.
* ``endorse``: the node of ``--home`` (already admitted) vouches for a new node; the
  endorsement is published in that node's registry, where the new node picks it up at its
  next registration attempt (every heartbeat interval).
* ``revoke``: an operator-signed revocation, published in the registry of ``--home``.
* ``retract``: an operator-signed retraction of one record (by its content hash), published
  in the registry of ``--home``: every node that holds the record takes its lesson out of
  every prompt at its next taint sweep (``lamarck.consensus.taint``), the other lessons of
  the same source staying.
* ``peers``: the live peers, the revoked ids and the retracted records of the network of
  ``--home``.

The network of ``--home`` is the one its settings name (``load_settings``: ``LAMARCK_*``
variables, then ``<home>/lamarck.toml``): ``redis_url`` and ``redis_namespace``, or without a
``redis_url`` the embedded Redis of that home, which must be running (its node runs): the CLI
never starts one. Every registry write is checked by the registry's own rules before it is
stored, so a record the network would refuse is refused here, with the rule's reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from lamarck.cli.connect import running_node
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table, print_table
from lamarck.errors import CliError, ConfigError, InvalidRecord, RegistryError
from lamarck.node.config import NodeSettings, load_settings
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import (
    NodeIdentity,
    b64u_decode,
    is_node_id,
    node_id_for,
    public_key_from_b64,
)
from lamarck.proto.keys import load_private_key, save_private_key, show_keys
from lamarck.proto.labels import MAX_LABEL_CHARS, check_label
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import PeerInfo
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Retraction,
    sign_endorsement,
    sign_enrollment,
    sign_retraction,
    sign_revocation,
    sign_seal,
)

__all__ = [
    "app",
    "endorse",
    "enroll",
    "operator_key_app",
    "operator_key_create",
    "operator_key_show",
    "peer_json",
    "peers",
    "register",
    "retract",
    "retraction_json",
    "revoke",
]

#: How long records are valid by default: a token or endorsement is needed only for a node's
#: first registration (afterwards its pinned key admits it), so a short life limits the harm
#: of one that leaks.
_DEFAULT_DAYS = 7
_MAX_DAYS = 3650

_T = TypeVar("_T")

app = typer.Typer(
    name="registry",
    help="Run an admitted network: operator key, enroll, endorse, revoke, retract, list peers.",
    no_args_is_help=True,
)
operator_key_app = typer.Typer(
    name="operator-key",
    help="The operator's key: it signs enrollment tokens, revocations and retractions.",
    no_args_is_help=True,
)
app.add_typer(operator_key_app)

_KeyFileArgument = Annotated[
    Path, typer.Argument(metavar="FILE", help="The operator key file (PKCS#8 PEM, mode 0600).")
]
_OperatorKeyOption = Annotated[
    Path,
    typer.Option(
        "--operator-key",
        metavar="FILE",
        help="The operator key file (made by 'lamarck registry operator-key create').",
        show_default=False,
    ),
]
_DaysOption = Annotated[
    int,
    typer.Option("--days", min=1, max=_MAX_DAYS, help="Days until the record expires."),
]
_ReasonOption = Annotated[
    str,
    typer.Option(
        "--reason", metavar="TEXT", help="Why (kept with the record).", show_default=False
    ),
]
_PublicKeyOption = Annotated[
    str | None,
    typer.Option(
        "--public-key",
        metavar="KEY",
        help="The node's Ed25519 public key, base64url ('lamarck keys show').",
        show_default=False,
    ),
]


# -- checks on what the operator typed --------------------------------------------------------


def _checked_node_id(value: str) -> str:
    if not is_node_id(value):
        raise ConfigError(f"{value!r} is not a node id (lmk1...)", reason="invalid_node_id")
    return value


def _checked_public_key(value: str) -> str:
    try:
        raw = b64u_decode(value)
        node_id_for(raw)  # refuses anything but 32 bytes
    except InvalidRecord as e:
        raise ConfigError(
            f"{value!r} is not an Ed25519 public key in unpadded base64url",
            reason="invalid_public_key",
        ) from e
    return value


def _id_of(public_key: str) -> str:
    return node_id_for(b64u_decode(public_key))


def _matching(node_id: str, public_key: str) -> None:
    # A new identity's id is derived from its key (the registry refuses any other), so a
    # record naming an id and a key that do not go together could never admit anyone.
    if _id_of(public_key) != node_id:
        raise ConfigError(
            f"{node_id} is not the id of public key {public_key} (that is {_id_of(public_key)})",
            reason="identity_mismatch",
        )


# -- files --------------------------------------------------------------------------------


def _write_text(path: Path, text: str, *, force: bool) -> None:
    """Write a new file; an existing one only with ``force`` (replaced atomically)."""
    if not force:
        try:
            with path.open("x", encoding="utf-8") as f:
                f.write(text)
        except FileExistsError:
            raise CliError(
                f"{path} already exists (--force replaces it)", reason="exists"
            ) from None
        except OSError as e:
            raise CliError(f"cannot write {path}: {e.strerror or e}", reason="unwritable") from e
        return
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        # Atomic: the node never reads half a token, and a failure keeps the old one.
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise CliError(f"cannot write {path}: {e.strerror or e}", reason="unwritable") from e


def _record_text(wire: dict[str, Any]) -> str:
    # Any JSON layout verifies: the reader re-serializes the parsed record canonically.
    return json.dumps(wire, indent=2, sort_keys=True) + "\n"


# -- the registry of a home's network ----------------------------------------------------


async def _registry_url(home: Path, settings: NodeSettings) -> str:
    """The Redis URL of ``home``'s network; the embedded one only if it is running."""
    if settings.redis_url:
        return settings.redis_url
    # Imported here: only this path needs psutil and the embedded server's machinery.
    from lamarck.registry.embedded import EmbeddedRedis

    embedded = EmbeddedRedis(home)
    if not await embedded.is_running():
        try:
            info = running_node(home)
        except CliError:
            info = None
        if info is not None:
            # The node runs, only its registry server is down: "start the node" would
            # send the operator the wrong way.
            raise CliError(
                f"the node on {home} is running (pid {info.get('pid')}) but its embedded "
                f"registry is down (no server on {embedded.socket_path}); the node restarts "
                "it: retry shortly, and see `lamarck node status` if it stays down",
                reason="registry_down",
            )
        raise CliError(
            f"{home} has no redis_url and its embedded registry is not running "
            f"(no server on {embedded.socket_path}); start the node on {home} first",
            reason="registry_not_running",
        )
    if await embedded.server_pid() is None:
        raise RegistryError(
            f"the redis server on {embedded.socket_path} is not the one of {home}",
            reason="embedded_foreign",
        )
    return embedded.url


def _run_on_registry(
    home: Path, settings: NodeSettings, work: Callable[[Any], Awaitable[_T]]
) -> _T:
    """Run ``work(directory)`` against the registry of ``home``'s network, then close it."""
    # Imported here: redis is needed by these commands only, not by every `lamarck` start.
    from lamarck.registry.redis_directory import RedisPeerDirectory

    async def run() -> _T:
        directory = RedisPeerDirectory.from_url(
            await _registry_url(home, settings),
            namespace=settings.redis_namespace,
            params=RegistryParams(admission=AdmissionMode(settings.admission)),
            clock=SystemClock(),
            operator_public_key=settings.operator_public_key or None,
            password=settings.redis_password.get_secret_value() if settings.redis_url else "",
            ca_file=settings.redis_ca_file if settings.redis_url else "",
        )
        try:
            return await work(directory)
        finally:
            await directory.aclose()

    return asyncio.run(run())


# -- operator key -------------------------------------------------------------------------


def _operator_facts(path: Path, identity: NodeIdentity) -> dict[str, str]:
    return {
        "path": str(path),
        "public_key": identity.public_key_b64,
        "config": f'operator_public_key = "{identity.public_key_b64}"',
    }


@operator_key_app.command("create")
def operator_key_create(path: _KeyFileArgument, as_json: JsonOption = False) -> None:
    """Create an operator key file (mode 0600, never overwritten); print its public key."""
    identity = NodeIdentity.generate()
    save_private_key(path, identity)
    facts = _operator_facts(path, identity)
    if as_json:
        emit_json(facts)
    else:
        key_value_table("created operator key (keep the file secret)", facts)


@operator_key_app.command("show")
def operator_key_show(path: _KeyFileArgument, as_json: JsonOption = False) -> None:
    """Print the public key of an operator key file (the nodes' operator_public_key)."""
    facts = _operator_facts(path, load_private_key(path))
    if as_json:
        emit_json(facts)
    else:
        key_value_table("operator key", facts)


# -- enroll -------------------------------------------------------------------------------


@app.command()
def enroll(
    operator_key: _OperatorKeyOption,
    node_id: Annotated[
        str | None,
        typer.Option("--node-id", metavar="ID", help="The node's id.", show_default=False),
    ] = None,
    public_key: _PublicKeyOption = None,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            file_okay=False,
            help="Enroll the node of this home (its id and key); writes <home>/enrollment.json.",
            show_default=False,
        ),
    ] = None,
    days: _DaysOption = _DEFAULT_DAYS,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            dir_okay=False,
            help="Write the token here [default: stdout, or <home>/enrollment.json with --home].",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            metavar="TEXT",
            help="The node's human label (e.g. node3), shown beside its id everywhere: "
            f"1-{MAX_LABEL_CHARS} printable characters.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Sign an enrollment token admitting one node; it goes to <node home>/enrollment.json."""
    if label is not None:
        check_label(label)
    if home is not None:
        if node_id is not None or public_key is not None:
            raise ConfigError(
                "--home names the node already; give it, or --node-id/--public-key, not both",
                reason="conflicting_options",
            )
        info = show_keys(home.expanduser())
        # The id the node registers under (unchanged by key rotations) and its current key.
        node_id, public_key = info.original_node_id, info.public_key
        if out is None:
            # Imported here: the node's sharing side is heavy, and only this path needs it.
            from lamarck.node.sharing import ENROLLMENT_FILE

            out = home.expanduser() / ENROLLMENT_FILE
    elif node_id is None and public_key is None:
        raise ConfigError(
            "name the node to enroll: --node-id, --public-key or --home", reason="missing_identity"
        )
    else:
        if node_id is not None:
            _checked_node_id(node_id)
        if public_key is not None:
            _checked_public_key(public_key)
            if node_id is not None:
                _matching(node_id, public_key)
    operator = load_private_key(operator_key)
    now = SystemClock().now()
    token = sign_enrollment(
        operator,
        issued_at=now,
        expires_at=now + timedelta(days=days),
        node_id=node_id,
        public_key=public_key,
        label=label,
    )
    text = _record_text(token.wire())
    if out is None:
        typer.echo(text, nl=False)  # the token itself is the output
        return
    _write_text(out, text, force=force)
    facts = {
        "path": str(out),
        "node_id": token.node_id,
        "public_key": token.public_key,
        "label": token.label or "",
        "operator_public_key": operator.public_key_b64,
        "expires_at": token.expires_at,
    }
    if as_json:
        emit_json(facts)
    else:
        key_value_table("wrote enrollment token", facts)


# -- endorse ------------------------------------------------------------------------------


@app.command()
def endorse(
    node_id: Annotated[str, typer.Argument(metavar="NODE_ID", help="The node to admit.")],
    public_key: Annotated[
        str,
        typer.Option(
            "--public-key",
            metavar="KEY",
            help="Its Ed25519 public key, base64url ('lamarck keys show' on its home).",
            show_default=False,
        ),
    ],
    days: _DaysOption = _DEFAULT_DAYS,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """The node of --home (admitted) vouches for NODE_ID; published in its registry."""
    _checked_node_id(node_id)
    _checked_public_key(public_key)
    _matching(node_id, public_key)
    where = resolve_home(home)
    settings = load_settings(home=where)
    if settings.admission == "operator":
        raise ConfigError(
            f"the network of {where} admits by operator token only; use 'lamarck registry enroll'",
            reason="wrong_admission",
        )
    info = show_keys(where)
    endorser = load_private_key(info.path)
    now = SystemClock().now()
    endorsement = sign_endorsement(
        endorser,
        endorser_id=info.original_node_id,
        endorsee_id=node_id,
        endorsee_public_key=public_key,
        created_at=now,
        expires_at=now + timedelta(days=days),
    )

    async def publish(directory: Any) -> None:
        await directory.endorse(endorsement)

    _run_on_registry(where, settings, publish)
    facts = {
        "endorser_id": endorsement.endorser_id,
        "endorsee_id": endorsement.endorsee_id,
        "endorsee_public_key": endorsement.endorsee_public_key,
        "expires_at": endorsement.expires_at,
        "namespace": settings.redis_namespace,
    }
    if as_json:
        emit_json(facts)
    else:
        key_value_table(
            "published endorsement (the node is admitted at its next registration attempt)", facts
        )


# -- revoke -------------------------------------------------------------------------------


def _checked_reason(reason: str) -> str:
    if not reason.strip() or len(reason) > 256:
        raise ConfigError("--reason is 1 to 256 characters", reason="invalid_reason")
    return reason


def _checked_content_hash(value: str) -> str:
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ConfigError(
            f"{value!r} is not a content hash (64 lowercase hex digits, as `lamarck quarantine "
            "list` and `lamarck lessons show` print it)",
            reason="invalid_content_hash",
        )
    return value


def _network_operator(where: Path, settings: NodeSettings, operator_key: Path) -> NodeIdentity:
    """The operator key of ``operator_key``, refused unless it is the network's own."""
    operator = load_private_key(operator_key)
    # The registry checks operator statements against the network's operator key: say which
    # key is wrong rather than let it answer "bad signature".
    if not settings.operator_public_key:
        raise ConfigError(
            f"the network of {where} names no operator_public_key; set it to "
            f"{operator.public_key_b64} in every node's config first",
            reason="no_operator_key",
        )
    if settings.operator_public_key != operator.public_key_b64:
        raise ConfigError(
            f"{operator_key} is not the operator key of the network of {where} "
            f"(its key is {operator.public_key_b64}; the network's is "
            f"{settings.operator_public_key})",
            reason="operator_key_mismatch",
        )
    return operator


@app.command()
def revoke(
    node_id: Annotated[str, typer.Argument(metavar="NODE_ID", help="The node to revoke.")],
    reason: _ReasonOption,
    operator_key: _OperatorKeyOption,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke NODE_ID for good: the registry unlists it and refuses it from now on."""
    _checked_node_id(node_id)
    _checked_reason(reason)
    where = resolve_home(home)
    settings = load_settings(home=where)
    operator = _network_operator(where, settings, operator_key)
    revocation = sign_revocation(
        operator, node_id=node_id, reason=reason, created_at=SystemClock().now()
    )

    async def publish(directory: Any) -> int:
        await directory.revoke(revocation)
        # Sealed at once: deleting the revocation from Redis then un-revokes nobody.
        return await _publish_next_seal(directory, operator, settings.redis_namespace)

    seq = _run_on_registry(where, settings, publish)
    facts = {
        "node_id": revocation.node_id,
        "reason": revocation.reason,
        "created_at": revocation.created_at,
        "namespace": settings.redis_namespace,
        "seal": seq,
    }
    if as_json:
        emit_json(facts)
    else:
        key_value_table("revoked", facts)


# -- seal ---------------------------------------------------------------------------------


async def _publish_next_seal(
    directory: Any,
    operator: NodeIdentity,
    namespace: str,
    revoked_keys: dict[str, datetime] | None = None,
) -> int:
    """Seal what the registry serves now, on top of the kept seal (never dropping what it
    sealed), with ``revoked_keys`` added, as the next ``seq``; return that ``seq``."""
    kept = await directory.seal()
    keys = {k: parse_ts(t) for k, t in (kept.revoked_keys if kept else {}).items()}
    for key, since in (revoked_keys or {}).items():
        keys[key] = min(since, keys.get(key, since))  # the earliest compromise counts
    revoked = set(await directory.revoked_ids()) | set(kept.revoked if kept else ())
    pins = dict(kept.pins) if kept is not None else {}
    for peer in await directory.live_peers():
        pins[peer.node_id] = peer.public_key
    for node_id in list(pins):
        current = await directory.pinned_key(node_id)
        if current is not None:
            pins[node_id] = current  # a rotation since moved it
    endorsees = {e: set(ids) for e, ids in (kept.endorsees if kept else {}).items()}
    for node_id in sorted(set(pins) | revoked):
        admitted = await directory.endorsees(node_id)
        if admitted:
            endorsees.setdefault(node_id, set()).update(admitted)
    seal = sign_seal(
        operator,
        namespace=namespace,
        seq=(kept.seq if kept is not None else 0) + 1,
        created_at=SystemClock().now(),
        revoked=revoked,
        endorsees=endorsees,
        pins={i: k for i, k in pins.items() if i not in revoked},
        revoked_keys=keys,
    )
    await directory.publish_seal(seal)
    return seal.seq


@app.command()
def seal(
    operator_key: _OperatorKeyOption,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Seal the registry: sign what it must keep (revocations, endorsees, admitted pins) as the
    next sequence number; every node holds the registry to the highest seal it has seen."""
    where = resolve_home(home)
    settings = load_settings(home=where)
    operator = _network_operator(where, settings, operator_key)

    async def publish(directory: Any) -> int:
        return await _publish_next_seal(directory, operator, settings.redis_namespace)

    seq = _run_on_registry(where, settings, publish)
    facts = {"seal": seq, "namespace": settings.redis_namespace}
    if as_json:
        emit_json(facts)
    else:
        key_value_table("sealed", facts)


@app.command("revoke-key")
def revoke_key(
    public_key: Annotated[
        str, typer.Argument(metavar="PUBLIC_KEY", help="The compromised key (base64url).")
    ],
    operator_key: _OperatorKeyOption,
    since: Annotated[
        str,
        typer.Option(
            "--since",
            help="RFC 3339 UTC instant from which the key counts as compromised; what it "
            "signed before stays valid (default: now).",
        ),
    ] = "",
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a compromised key (sealed): whatever it signed from --since on is refused
    everywhere, what it signed before keeps verifying; the node re-joins with a new key."""
    where = resolve_home(home)
    settings = load_settings(home=where)
    operator = _network_operator(where, settings, operator_key)
    try:
        public_key_from_b64(public_key)
        at = parse_ts(since) if since else SystemClock().now()
    except (InvalidRecord, ValueError) as e:
        raise ConfigError(f"bad key or --since: {e}", reason="invalid_public_key") from e

    async def publish(directory: Any) -> int:
        return await _publish_next_seal(
            directory, operator, settings.redis_namespace, revoked_keys={public_key: at}
        )

    seq = _run_on_registry(where, settings, publish)
    facts = {"public_key": public_key, "since": format_ts(at), "seal": seq}
    if as_json:
        emit_json(facts)
    else:
        key_value_table("key revoked", facts)


# -- retract ------------------------------------------------------------------------------


def retraction_json(retraction: Retraction) -> dict[str, Any]:
    """A retraction as plain JSON: what it retracts, why, when, and who signed it."""
    return {
        "content_hash": retraction.content_hash,
        "reason": retraction.reason,
        "created_at": retraction.created_at,
        "signed_by": retraction.signed_by,
    }


@app.command()
def retract(
    content_hash: Annotated[
        str,
        typer.Option(
            "--content-hash",
            metavar="HASH",
            help="The record's content hash (sha256 hex of its signed bytes).",
            show_default=False,
        ),
    ],
    reason: _ReasonOption,
    operator_key: _OperatorKeyOption,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retract one record for good: every node holding it takes its lesson out of every prompt
    and re-quarantines it ``retracted_record``; the source's other lessons stay."""
    _checked_content_hash(content_hash)
    _checked_reason(reason)
    where = resolve_home(home)
    settings = load_settings(home=where)
    operator = _network_operator(where, settings, operator_key)
    retraction = sign_retraction(
        operator, content_hash=content_hash, reason=reason, created_at=SystemClock().now()
    )

    async def publish(directory: Any) -> None:
        await directory.retract(retraction)

    _run_on_registry(where, settings, publish)
    facts = {**retraction_json(retraction), "namespace": settings.redis_namespace}
    if as_json:
        emit_json(facts)
    else:
        key_value_table(
            "published retraction (each node takes the lesson out at its next taint sweep)", facts
        )


# -- peers --------------------------------------------------------------------------------


def peer_json(peer: PeerInfo) -> dict[str, Any]:
    """A live peer as plain JSON (timestamps RFC 3339)."""
    return {
        "node_id": peer.node_id,
        "address": peer.address,
        "domains": list(peer.domains),
        "version": peer.version,
        "registered_at": format_ts(peer.registered_at),
        "public_key": peer.public_key,
    }


@app.command()
def peers(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """The live peers, the revoked ids and the retracted records, as the registry of --home's
    network shows them."""
    where = resolve_home(home)
    settings = load_settings(home=where)

    async def read(
        directory: Any,
    ) -> tuple[list[PeerInfo], frozenset[str], tuple[Retraction, ...]]:
        return (
            await directory.live_peers(),
            await directory.revoked_ids(),
            await directory.retractions(),
        )

    live, revoked, retracted = _run_on_registry(where, settings, read)
    if as_json:
        emit_json(
            {
                "namespace": settings.redis_namespace,
                "admission": settings.admission,
                "peers": [peer_json(p) for p in live],
                "revoked": sorted(revoked),
                "retracted": [retraction_json(r) for r in retracted],
            }
        )
        return
    print_table(
        f"{len(live)} live peer(s) in namespace {settings.redis_namespace} "
        f"(admission {settings.admission})",
        ["node id", "address", "domains", "version", "registered at"],
        (
            (p.node_id, p.address, ", ".join(p.domains), p.version, format_ts(p.registered_at))
            for p in live
        ),
        no_wrap=("node id", "address", "registered at"),
    )
    if revoked:
        print_table(f"{len(revoked)} revoked id(s)", ["node id"], ((i,) for i in sorted(revoked)))
    if retracted:
        print_table(
            f"{len(retracted)} retracted record(s)",
            ["content hash", "created at", "reason"],
            ((r.content_hash, r.created_at, r.reason) for r in retracted),
            no_wrap=("content hash", "created at"),
        )


def register(root: typer.Typer) -> None:
    """Add the ``registry`` group to the root app."""
    root.add_typer(app)
