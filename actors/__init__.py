"""Actors: the runtime (`runtime.py`) and one package per world kind."""
