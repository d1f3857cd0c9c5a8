"""The trace format: load, dump, validate, stream JSONL, read collection headers, the JSON Schema, golden edits."""
