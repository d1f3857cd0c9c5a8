"""Writing test inputs: a file with its folders, from text (UTF-8) or raw bytes (for undecodable input)."""

from __future__ import annotations

from pathlib import Path


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path
