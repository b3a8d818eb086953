"""A real Jupyter Server with the tornado_mcp.jupyter extension (a package, so its
conftest does not shadow the suite's own)."""
