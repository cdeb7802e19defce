"""Benchmarks: `python -m bench NAME` runs `bench/NAME.py` and prints one JSON object."""
