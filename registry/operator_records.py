"""The operator-signed records a ``RecordDirectory`` serves: revocations, the registry seal
and retractions, each trusted only when it verifies against the directory's operator key.

``OperatorRecords`` is a mixin of ``RecordDirectory`` (``lamarck.registry.record_directory``),
which sets the attributes it declares.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

from lamarck.errors import InvalidRecord, RegistryError
from lamarck.proto.clock import Clock
from lamarck.registry.directory_records import DirectoryRecords
from lamarck.registry.params import RegistryParams
from lamarck.registry.proofs import IdFacts, ProofMemo, ProofPolicy, revocation_holds
from lamarck.registry.records import RegistrySeal, Retraction, Revocation, parse_record_ts
from lamarck.registry.rules import check_retraction, check_revocation, check_seal

__all__ = ["OperatorRecords"]

log = logging.getLogger("lamarck.registry.record_directory")


class OperatorRecords:
    """Revocations, the seal and retractions over ``DirectoryRecords``: writes are checked
    against the operator key, reads re-verify (a verdict memoised for the memo's lifetime)."""

    _records: DirectoryRecords
    _params: RegistryParams
    _clock: Clock
    _operator_key: str | None
    _policy: ProofPolicy
    _memo: ProofMemo

    def _revoked(self, own: IdFacts, now: datetime) -> bool:
        # A verified revocation stays verified: the directory's memo is safe for writes too.
        return revocation_holds(own, self._policy, now, self._memo)

    async def revoke(self, revocation: Revocation) -> None:
        """Revoke (operator-signed): add to the index, keep the record, unlist the peer."""
        check_revocation(
            revocation,
            operator_public_key=self._operator_key,
            params=self._params,
            now=self._clock.now(),
        )
        await self._records.put_revocation(revocation.node_id, json.dumps(revocation.wire()))
        log.warning("node revoked", extra={"node_id": revocation.node_id})

    async def is_revoked(self, node_id: str) -> bool:
        """Whether an operator-signed revocation of ``node_id`` is on record (the index is not
        consulted: removing an id from it un-revokes nobody, adding one revokes nobody)."""
        raw = await self._records.revocation(node_id)
        own = IdFacts(node_id, None, None, revocation=raw)
        if self._revoked(own, self._clock.now()):
            return True
        seal = await self.seal()
        return seal is not None and node_id in seal.revoked

    async def revoked_ids(self) -> frozenset[str]:
        """The ids of the revoked index whose revocation record verifies.

        An id removed from the index by hand is missed here, not by ``is_revoked``,
        ``get_peer`` or ``live_peers``, which read its record.
        """
        index = await self._records.revoked_index()
        now = self._clock.now()
        seal = await self.seal()
        return frozenset(
            i
            for i, raw in index
            if raw is not None and self._revoked(IdFacts(i, None, None, revocation=raw), now)
        ) | frozenset(seal.revoked if seal is not None else ())

    async def seal(self) -> RegistrySeal | None:
        """The operator's seal kept here if it is the operator's, for this network (a seal
        that does not verify seals nothing, logged once per memo lifetime)."""
        raw = await self._records.seal_record()
        if raw is None:
            return None
        now = self._clock.now()
        key = ("seal", raw, self._operator_key)
        known = self._memo.get(key, now)
        if known is False:
            return None
        try:
            seal = RegistrySeal.from_wire(json.loads(raw))
            if known is not True:
                check_seal(
                    seal,
                    namespace=self._records.namespace,
                    operator_public_key=self._operator_key,
                    params=self._params,
                    now=now,
                )
        except (ValueError, InvalidRecord, RegistryError) as e:
            log.warning("ignoring a seal that does not verify", extra={"error": str(e)})
            self._memo.put(key, False, now)
            return None
        if known is not True:
            self._memo.put(key, True, now)
        return seal

    async def key_revoked_since(self, key: str) -> datetime | None:
        """Since when the operator's seal revokes ``key`` as compromised (``None``: never)."""
        seal = await self.seal()
        since = seal.revoked_keys.get(key) if seal is not None else None
        return parse_record_ts(since) if since is not None else None

    async def publish_seal(self, seal: RegistrySeal) -> None:
        """Publish the operator's next seal: checked (``bad_seal``), and its ``seq`` above the
        kept one's (``stale_seal``: a seal never goes back)."""
        check_seal(
            seal,
            namespace=self._records.namespace,
            operator_public_key=self._operator_key,
            params=self._params,
            now=self._clock.now(),
        )
        kept = await self.seal()
        if kept is not None and seal.seq <= kept.seq:
            raise RegistryError(
                f"seal {seal.seq} is not newer than the kept seal {kept.seq}", reason="stale_seal"
            )
        await self._records.put_seal(json.dumps(seal.wire()))
        log.info("registry sealed", extra={"seq": seal.seq})

    async def retract(self, retraction: Retraction) -> None:
        """Publish an operator-signed retraction (checked first, ``bad_retraction``)."""
        check_retraction(
            retraction,
            operator_public_key=self._operator_key,
            params=self._params,
            now=self._clock.now(),
        )
        await self._records.put_retraction(retraction.content_hash, json.dumps(retraction.wire()))
        log.warning("record retracted", extra={"content_hash": retraction.content_hash})

    async def retractions(self) -> tuple[Retraction, ...]:
        """The retractions on record that verify against this directory's operator key, by
        content hash; any other record (unsigned, another key's, kept under another hash) is
        logged once per memo lifetime and retracts nothing."""
        now = self._clock.now()
        found = []
        for content_hash, raw in await self._records.retraction_records():
            retraction = self._retraction_holds(content_hash, raw, now)
            if retraction is not None:
                found.append(retraction)
        return tuple(found)

    def _retraction_holds(self, content_hash: str, raw: str, now: datetime) -> Retraction | None:
        """The retraction ``raw`` if it is the operator's, of ``content_hash``; else ``None``."""
        key = ("retraction", content_hash, raw, self._operator_key)
        known = self._memo.get(key, now)
        if known is False:
            return None
        try:
            retraction = Retraction.from_wire(json.loads(raw))
            # Verified within the memo's lifetime: the Ed25519 check is not repeated.
            if known is not True:
                if retraction.content_hash != content_hash:
                    raise RegistryError(
                        "retraction kept under another hash", reason="bad_retraction"
                    )
                check_retraction(
                    retraction, operator_public_key=self._operator_key, params=self._params, now=now
                )
        except (ValueError, InvalidRecord, RegistryError) as e:
            log.warning(
                "ignoring a retraction that does not verify",
                extra={"content_hash": content_hash, "error": str(e)},
            )
            # Keyed by the exact record: a refusal is judged again once the memo expires (a
            # record dated slightly ahead becomes valid), and logged once per judgement.
            self._memo.put(key, False, now)
            return None
        if known is not True:
            self._memo.put(key, True, now)
        return retraction
