"""Generated stubs of the lamarck wire schema (protobuf package ``lamarck.v1``).

Do not edit: the source is proto/lamarck/v1/*.proto; regenerate with ``make proto``.
"""
