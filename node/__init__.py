"""The node: daemon, lesson store adapters, import pipeline wiring, gossip, agent API, CLI."""

import os

# Set before anything here imports grpc. The embedded Postgres runs pg_ctl as its own user
# when the node runs as root, which makes subprocess use a full fork(); grpc's fork handlers
# then abort the child ("Other threads are currently calling into gRPC, skipping fork()
# handlers", grpc/grpc#43055). No child of a node ever uses gRPC: each one execs at once.
# A value the operator set is kept.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
