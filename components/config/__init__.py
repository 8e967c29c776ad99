"""Typed stack configuration: the only code that reads `pulumi.Config` (through `load`).

A stack's config is one platform choice: `gpushare:platform` picks a variant (gke.py; k3s.py for k3s-vm and
existing-host; existing.py), and each variant composes exactly its own sections, one GPU description
(`gpushare:gpu`), and the toolkit and sharing choices it allows, with the labs' defaults (shared.py holds what
every variant has). A section a component takes is declared once, beside that component
(`components/<layer>/settings.py`), and composed here. Validation runs before Pulumi is imported and fails with
one line that names the full key and the fix (`ConfigError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.config.existing import ExistingChartSources, ExistingStack
from components.config.gke import GKE_NATIVE, GkeChartSources, GkeSharing, GkeStack
from components.config.k3s import ExistingHostStack, K3sStack, K3sVmStack
from components.config.kubeconfig import ConfigError
from components.config.read import (
    MOVED_KEYS,
    PLATFORMS,
    REPLACED_KEYS,
    VARIANTS,
    StackConfig,
    check_stack_config,
    model_of,
    parse,
)
from components.config.shared import CHART_NAMES, GpuConfig, HamiChartSources, HostGpuConfig, Stack
from components.contracts.settings import NAMESPACE, alias
from components.gpu.settings import (
    ChartSourceConfig,
    GkeCdiConfig,
    GkeSharingConfig,
    GpuOperatorConfig,
    HamiConfig,
    IsolatorConfig,
    KaiConfig,
)
from components.platform.settings import ClusterConfig, GkeConfig, HostConfig, K3sConfig, VmConfig
from components.verify.settings import VerifyConfig

if TYPE_CHECKING:  # imported when called: a refusal loads no Pulumi
    from components.contracts.cluster import GoogleAuth

__all__ = [
    "CHART_NAMES",
    "GKE_NATIVE",
    "MOVED_KEYS",
    "NAMESPACE",
    "PLATFORMS",
    "REPLACED_KEYS",
    "VARIANTS",
    "ChartSourceConfig",
    "ClusterConfig",
    "ConfigError",
    "ExistingChartSources",
    "ExistingHostStack",
    "ExistingStack",
    "GkeCdiConfig",
    "GkeChartSources",
    "GkeConfig",
    "GkeSharing",
    "GkeSharingConfig",
    "GkeStack",
    "GpuConfig",
    "GpuOperatorConfig",
    "HamiChartSources",
    "HamiConfig",
    "HostConfig",
    "HostGpuConfig",
    "IsolatorConfig",
    "K3sConfig",
    "K3sStack",
    "K3sVmStack",
    "KaiConfig",
    "Stack",
    "StackConfig",
    "VerifyConfig",
    "VmConfig",
    "alias",
    "check_stack_config",
    "google_auth",
    "load",
    "model_of",
    "parse",
]


def google_auth() -> GoogleAuth:
    """The Google provider's credentials as the stack sets them (`gcp:credentials`, `gcp:accessToken`), secret."""
    import pulumi  # here: the models import without the runtime

    from components.contracts.cluster import GoogleAuth

    provider = pulumi.Config("gcp")
    return GoogleAuth(credentials=provider.get_secret("credentials"), access_token=provider.get_secret("accessToken"))


def load() -> StackConfig:
    """This stack's `gpushare:` config, from the Pulumi runtime, validated."""
    from components.pulumi_internals import config_values  # here: the models import without the runtime

    return parse(config_values(NAMESPACE))
