"""Reputation, trust, expertise and global trust, fed by events; no network or database calls."""
