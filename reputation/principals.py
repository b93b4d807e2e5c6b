"""Independence is counted by principal, not by key.

Every admitted identity carries the principal that admitted it (the operator key, or the root
of its endorsement chain, from the registry's admission proof). Fifty keys under one operator
confirming a lesson are one confirmation. The mapping node id -> principal is an input here
(the registry builds it from admission proofs); these are the pure counting rules.

Where the whole network has a single principal (every node admitted by one operator's
tokens), counting principals would make every quorum impossible, so identities are counted
instead: admission by that one operator is then the only Sybil gate there is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lamarck.reputation.params import PrincipalParams

__all__ = [
    "counts_by_principal",
    "distinct_principals",
    "endorsement_refusal",
    "independent_count",
    "one_per_principal",
]


def distinct_principals(node_ids: Iterable[str], principal_of: Mapping[str, str]) -> int:
    """How many distinct principals stand behind ``node_ids``.

    An id with no known principal is not admitted as far as this node knows, and counts for
    nothing (fail closed).
    """
    return len({principal_of[n] for n in set(node_ids) if principal_of.get(n)})


def counts_by_principal(principal_of: Mapping[str, str]) -> bool:
    """Whether independence is counted by principal: the network has more than one."""
    return len({p for p in principal_of.values() if p}) > 1


def independent_count(node_ids: Iterable[str], principal_of: Mapping[str, str]) -> int:
    """How many independent confirmations ``node_ids`` are.

    Distinct principals where the network (``principal_of``) has more than one; otherwise
    distinct admitted identities. Unknown ids count for nothing either way.
    """
    admitted = {n for n in set(node_ids) if principal_of.get(n)}
    if counts_by_principal(principal_of):
        return distinct_principals(admitted, principal_of)
    return len(admitted)


def one_per_principal(node_ids: Iterable[str], principal_of: Mapping[str, str]) -> tuple[str, ...]:
    """The first id (in the given order) of each principal; unknown ids are dropped.

    Where the network has a single principal, every admitted id is kept (see the module doc).
    """
    by_principal = counts_by_principal(principal_of)
    seen: set[str] = set()
    out: list[str] = []
    for node_id in node_ids:
        principal = principal_of.get(node_id)
        if not principal:
            continue
        key = principal if by_principal else node_id
        if key in seen:
            continue
        seen.add(key)
        out.append(node_id)
    return tuple(out)


def endorsement_refusal(
    endorser_id: str, already_admitted: int, params: PrincipalParams
) -> str | None:
    """Why ``endorser_id`` may not admit one more identity, or None if it may.

    ``already_admitted`` is how many identities the registry holds admitted by that endorser
    (revoked ones included: revoking an endorsee must not free a slot for a fresh Sybil).
    The reason is the snake_case ``reason=`` for ``AdmissionRefused``.
    """
    if already_admitted < 0:
        raise ValueError("already_admitted must not be negative")
    if not endorser_id:
        return "no_endorsement"
    if already_admitted >= params.max_identities_per_endorser:
        return "endorsement_cap"
    return None
