"""pydantic models for the typed-tool tests (importable only when pydantic is installed)."""

from __future__ import annotations

import pydantic


class Inner(pydantic.BaseModel):
    v: int = pydantic.Field(ge=0)


class Outer(pydantic.BaseModel):
    name: str = pydantic.Field(description="Who")
    inner: Inner
