"""Declarative mechanics: validated data definitions (`definition.py`) selecting host-owned types
(`host.py`: `plate_gate.py`, `frail_floor.py`) that run at fixed lifecycle phases of the turn."""
