"""The protocol: interchange models, canonical bytes, signatures, identities and the wire schema.

Owns no I/O (beyond reading a key file on request).
"""
