"""The pytest plugin: hooks, trace-file items, fixtures and hypothesis strategies."""
