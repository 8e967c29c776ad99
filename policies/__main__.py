"""Entry point the Pulumi CLI runs for `pulumi preview --policy-pack policies`: serve every rule."""

import sys
from pathlib import Path

# The CLI runs this file as a script: its own folder first on sys.path would let helm.py & co. shadow
# top-level modules, so the repository root takes its place and the rules import as the `policies` package.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.pack import PACK_NAME, build_policies  # noqa: E402
from policies.secret_markers import keep_secret_markers  # noqa: E402

markers = keep_secret_markers()
if not markers:
    print(
        "gpushare policies: this pulumi_policy hides secrets; kubeconfig-output-is-secret will not apply",
        file=sys.stderr,
    )

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.ADVISORY, policies=build_policies(secret_markers=markers))
