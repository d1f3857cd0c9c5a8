"""pytest fixtures for the simulators: fake_llm, fake_browser, fake_files, agent_loop (simulation work)."""
