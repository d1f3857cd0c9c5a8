"""Tables, JSON, Markdown, HTML and SVG reports of replays, and rule coverage."""
