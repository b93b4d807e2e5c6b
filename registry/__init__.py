"""The peer directory: registration, admission, key pinning and liveness (Redis adapter + pure rules)."""
