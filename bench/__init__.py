"""Benchmarks for tornado-mcp against the official Python SDK and a bare Tornado ceiling.

Run ``python -m bench`` (see docs/performance.md).
"""
