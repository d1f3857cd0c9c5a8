"""pytest plugin: collects trace files as tests (filled in by the plugin work)."""
