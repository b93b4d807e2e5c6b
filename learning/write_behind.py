"""What the lesson service writes behind the agent's reply (``node/lessons/write_behind.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from lamarck.params_checks import check_finite, check_positive_int, check_rule

__all__ = ["WriteBehindParams"]


@dataclass(frozen=True, slots=True)
class WriteBehindParams:
    """What is written behind the agent's reply, and in what batches."""

    # A claim is stored without its vector, which is embedded behind the reply.
    defer_claim_embedding: bool = False
    # A lesson an outcome teaches is stored without its vector, which is embedded behind the
    # reply once the outcome has committed (RecordOutcome's agent waits for neither).
    defer_learned_embedding: bool = False
    # A recall's use marks are written behind the reply.
    defer_use_marks: bool = False
    # Most claims embedded in one model call. Integer >= 1.
    batch: int = 32
    # Most lessons ``recover`` re-embeds at start in one pass. Integer >= 1.
    recover_limit: int = 10_000
    # Seconds the queue must stay quiet (no write queued) before the drain embeds: a burst of
    # writes is embedded after it, in full batches, and the agent's next calls do not share
    # the cores with the model (a reader that needs the writes wakes the drain at once).
    # Finite, >= 0 (0: start at once).
    linger_s: float = 0.0
    # Vectors pending (claims aside) beyond which the drain embeds without waiting for quiet:
    # a node busy without a pause still keeps its vectors this close behind, and the first
    # recall after a burst waits for at most this many (in full batches). Integer >= 1.
    max_pending: int = 256
    # The same bound for claims' vectors, which only a recall that includes claims waits for:
    # a burst of claims does not make the model share the cores with the calls still coming.
    # Integer >= 1.
    max_pending_claims: int = 1024
    # Most queued vectors a recall embeds itself before it searches, the newest first (what
    # an agent just taught is what it recalls next); the older ones it does not wait for: it
    # searches what is indexed and says how many lessons are still being indexed. None: a
    # recall waits for every queued vector. Integer >= 0 or None.
    recall_settles_at_most: int | None = None
    # More queued vectors than this (of those the recall would search) are a burst: a recall
    # then embeds none of them itself. It searches what is indexed and says how many wait,
    # and the drain embeds them once the burst is over. Embedding the newest with the task
    # cost a recall right after 200 writes ~3x the steady time, for a lesson a burst's writer
    # rarely asks for at once.
    # None: no bound. Integer >= 0 or None.
    recall_burst_above: int | None = None

    def __post_init__(self) -> None:
        """Validate every field."""
        for name in ("defer_claim_embedding", "defer_learned_embedding", "defer_use_marks"):
            check_rule(isinstance(getattr(self, name), bool), name, "must be a bool")
        check_positive_int("batch", self.batch)
        check_positive_int("recover_limit", self.recover_limit)
        check_positive_int("max_pending", self.max_pending)
        check_positive_int("max_pending_claims", self.max_pending_claims)
        for name in ("recall_settles_at_most", "recall_burst_above"):
            value = getattr(self, name)
            check_rule(
                value is None
                or (isinstance(value, int) and not isinstance(value, bool) and value >= 0),
                name,
                "must be an integer >= 0 or None",
            )
        check_finite("linger_s", self.linger_s)
        check_rule(self.linger_s >= 0, "linger_s", "must be >= 0")
