"""gpushare: a platform, a toolkit and a sharing system, composed; the proof last; its verdict exported.

| platform | toolkit      | sharing      | stack            |
|----------|--------------|--------------|------------------|
| gke      | gke-managed  | kai          | gke              |
| gke      | gke-managed  | mps          | gke-mps          |
| gke      | gke-managed  | time-sharing | gke-time-sharing |
| k3s-vm   | host         | hami         | k3s              |
| existing | gpu-operator | hami         | cluster          |
"""

from components import config

cfg = config.load()  # first: a refusal needs neither the composition layer nor the providers

import pulumi  # noqa: E402

from components import compose  # noqa: E402
from components.versions import gpushare_version  # noqa: E402

cluster = compose.platform(cfg, config.google_auth())
toolkit = compose.toolkit(cfg, cluster)
sharing = compose.sharing(cfg, cluster, toolkit)
verdict = compose.proof(cfg, cluster, sharing)
guard = compose.guard(cfg, cluster)

for name, value in {**cluster.outputs, **toolkit.outputs, **sharing.outputs, **verdict.outputs, **guard}.items():
    pulumi.export(name, value)
for name, value in compose.images(cfg, toolkit.images, sharing.images, verdict.images).items():
    pulumi.export(name, value)
pulumi.export("gpushareVersion", gpushare_version())  # which release made this stack, as `pulumi stack output` reads it
