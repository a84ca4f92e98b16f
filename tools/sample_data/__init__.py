"""Deterministic generator of simulated ASR decoder sample data.

Run `python3 -m tools.sample_data --help` from the repository root; see
docs/sample-data.md.
"""
