"""gpushare's policy pack: the labs' troubleshooting tables as preview-time rules.

Run with `pulumi preview --policy-pack policies`.

The rules read resource inputs only (chart names, Helm values, Pod specs, firewall ranges), never gpushare's
Python objects, so they also guard a program that composes the components differently. They depend on
`pulumi_policy`, the standard library, and components/pulumi_internals.py (the one module that names the
private parts of pulumi_policy the harness and the secret markers use). A `python -m policies.harness` run by a
Python without the project's packages says how to set up (components/setup_hint.py, standard library only).
"""

from components import setup_hint

setup_hint.install()
