"""The node: daemon, lesson store adapters, import pipeline wiring, gossip, agent API, CLI."""
