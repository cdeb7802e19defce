"""Op declarations, one module per world kind; each module exposes `OPS` (see registry.py)."""
