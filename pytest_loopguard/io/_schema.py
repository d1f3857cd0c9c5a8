"""The JSON Schema of the trace format (version 1), shipped as package data for editors and other tools.

The loader (`traceio`) stays the authority — it also checks what a schema cannot say (a policy that
resolves, a clock that never runs backwards); the schema gives editors completion and early errors.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Final

__all__ = ["SCHEMA_FILE", "schema_text", "trace_schema"]

SCHEMA_FILE: Final = "trace.schema.json"


def schema_text() -> str:
    """The schema file's text, as shipped in the package."""
    return (resources.files("pytest_loopguard.io") / SCHEMA_FILE).read_text(encoding="utf-8")


def trace_schema() -> dict[str, Any]:
    """The schema as a mapping."""
    schema: dict[str, Any] = json.loads(schema_text())
    return schema
