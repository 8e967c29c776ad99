"""gpushare's program and tools (docs/layout.md). A `python -m` run on a Python without the project's packages
says how to set up instead of printing a traceback (setup_hint.py)."""

from components import setup_hint

setup_hint.install()
