"""Serving trained adapters.

- :mod:`.preflight`: refuse or warn about bad adapters before any server loads them.
- :mod:`.local`: Ray Serve deployment on the local cluster (transformers + peft, CPU).
- :mod:`.cluster`: vLLM (detached Ray job) and Ray Serve LLM configs for GPU clusters.
- :mod:`.client`: ``chat`` (one request) and ``solve`` (play a maze turn by turn).
"""
