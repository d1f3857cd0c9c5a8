"""Importers: turn the logs agent frameworks keep into loopguard traces."""
