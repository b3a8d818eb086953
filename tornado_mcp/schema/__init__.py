"""Tool contracts: Python types to JSON Schema 2020-12 (:mod:`.from_types`,
:mod:`.from_marshmallow`, :mod:`.docstrings`), validation by the ``jsonschema`` library with a
fail-closed fast path (:mod:`.validate`, :mod:`.fastpath`), and argument conversion
(:mod:`.convert`).  Imports only :mod:`tornado_mcp.protocol`.
"""
