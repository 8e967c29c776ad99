"""The tests, and the tools they keep (golden plans, facts, benchmarks): `python -m tests.<tool>`."""

from components import setup_hint

setup_hint.install()
