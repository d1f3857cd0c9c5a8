"""Simulators: a scriptable fake LLM, fake browser and fake file system, and the agent loop that runs them."""
