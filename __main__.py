"""gpushare: a platform, a toolkit and a sharing system, composed; the proof last; its verdict exported.

| platform      | toolkit      | sharing | stack   |
|---------------|--------------|---------|---------|
| gke           | gke-managed  | kai     | gke     |
| k3s-vm        | host         | hami    | k3s     |
| existing      | gpu-operator | hami    | cluster |
"""

import pulumi

from components import config
from components.gpu import hami, kai_sharing, operator
from components.platform import existing, gke, k3s_vm
from components.verify import proof

PLATFORMS = {"gke": gke.from_config, "k3s-vm": k3s_vm.from_config,
             "existing-host": k3s_vm.from_config, "existing": existing.from_config}
SHARING = {"kai": kai_sharing.from_config, "hami": hami.from_config}

cfg = config.load()
cluster = PLATFORMS[cfg.platform](cfg)
toolkit = operator.from_config(cfg, cluster)
sharing = SHARING[cfg.sharing](cfg, cluster, toolkit)
verdict = proof.from_config(cfg, cluster, sharing)

for name, value in {**cluster.outputs, **toolkit.outputs, **sharing.outputs, **verdict.outputs}.items():
    pulumi.export(name, value)
