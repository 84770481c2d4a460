"""The sweep spec and everything derived from it alone.

The sweep spec: pydantic models (``_models``), the grid and its constraints, the
validation plan, THE config-id and seed rules (``_config_identity``), provenance records, and
the resolver (``_resolve``) that checks a spec against its strategy and data.

May import ``common`` and ``data``; never ``store``, ``engine`` or anything above.
"""
