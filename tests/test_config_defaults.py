"""Every stack with only `platform` (and what that platform requires) plans with all defaults: a default always
follows from the other values and passes their checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.config import parse
from components.mocks import MOCK_KUBECONFIG
from components.plan import main
from tests.conftest import ROOT

MINIMAL: dict[str, dict[str, object]] = {
    "gke": {"gpushare:platform": "gke"},
    "gke-mps": {"gpushare:platform": "gke", "gpushare:sharing": "mps"},
    "gke-time-sharing": {"gpushare:platform": "gke", "gpushare:sharing": "time-sharing"},
    "k3s-vm": {"gpushare:platform": "k3s-vm", "gpushare:vm": {"allowedSourceRanges": ["198.51.100.7/32"]}},
    "existing-host": {
        "gpushare:platform": "existing-host",
        "gpushare:host": {"address": "192.0.2.50", "privateKey": {"secure": "AAAA"}},
    },
    "existing": {"gpushare:platform": "existing", "gpushare:cluster": {"kubeconfigPath": "{kubeconfig}"}},
    "existing-toolkit-host": {
        "gpushare:platform": "existing",
        "gpushare:toolkit": "host",
        "gpushare:cluster": {"kubeconfigPath": "{kubeconfig}"},
    },
}
"""What a new user must set for each platform variant, and nothing more."""


def _stack_file(root: Path, name: str, config: dict[str, object]) -> None:
    text = yaml.safe_dump({"config": config}).replace("{kubeconfig}", str(root / "kubeconfig.yaml"))
    (root / f"Pulumi.{name}.yaml").write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    (tmp_path / "kubeconfig.yaml").write_text(MOCK_KUBECONFIG)
    return tmp_path


@pytest.mark.parametrize("variant", sorted(MINIMAL))
def test_a_stack_with_only_its_platform_plans_with_every_default(variant: str, project: Path, capsys) -> None:
    _stack_file(project, variant, MINIMAL[variant])
    code = main([variant, "--root", str(project)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "verification" in out


def test_minimal_gke_mps_extra_passes_the_mps_limit_by_default() -> None:
    cfg = parse({"gpushare:platform": "gke", "gpushare:sharing": "mps"})
    assert round((cfg.hold_gib + cfg.extra_gib) * 1024) > cfg.slice_mib == 7680


@pytest.mark.parametrize("platform", ["k3s-vm", "existing-host"])
def test_minimal_k3s_sweep_reaches_past_the_8000_mib_quota_by_default(platform: str) -> None:
    extra = {
        "k3s-vm": {"gpushare:vm": '{"allowedSourceRanges": ["198.51.100.7/32"]}'},
        "existing-host": {"gpushare:host": '{"address": "192.0.2.50", "privateKey": "k"}'},
    }[platform]
    cfg = parse({"gpushare:platform": platform, **extra})
    assert cfg.quota_mib == 8000
    assert max(cfg.sweep_gib) * 1024 > 8000 and cfg.sweep_gib[:6] == (2, 3, 3.8, 4.0, 4.5, 6)
    assert round((cfg.hold_gib + cfg.extra_gib) * 1024) > 8000


@pytest.mark.parametrize("memory_mib", [4096, 6144, 8192, 12000, 24576, 49140, 97887, 196608])
@pytest.mark.parametrize("sharing", ["kai", "mps"])
def test_defaults_follow_any_card_size(memory_mib: int, sharing: str) -> None:
    cfg = parse(
        {
            "gpushare:platform": "gke",
            "gpushare:sharing": sharing,
            "gpushare:gpu": f'{{"type": "nvidia-tesla-t4", "memoryMiB": {memory_mib}}}',
        }
    )
    hold, extra = round(cfg.hold_gib * 1024), round(cfg.extra_gib * 1024)
    assert hold < cfg.quota_mib < hold + extra
    if sharing == "kai":
        assert any(size * 1024 > cfg.quota_mib for size in cfg.sweep_gib)
