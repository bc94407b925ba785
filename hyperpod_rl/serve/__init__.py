"""Serving trained adapters: local Ray Serve deployment and an OpenAI-style client."""
