"""The k3s bootstrap's scripts: their order, their content, and what they do when run against stub commands."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from components.mocks import MOCK_KUBECONFIG
from components.platform import k3s_bootstrap as kb

VERSION = "v1.36.2+k3s1"


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(script: str, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run a rendered step with `sudo` and every tool it calls replaced by the stubs in bin_dir."""
    _stub(bin_dir, "sudo", 'exec "$@"')
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(bin_dir / "calls")}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False)


def _calls(bin_dir: Path) -> list[str]:
    path = bin_dir / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _recording(bin_dir: Path, *names: str) -> None:
    for name in names:
        _stub(bin_dir, name, f'echo "{name} $*" >> "$CALLS"')


def test_toolkit_step_comes_before_k3s_and_config_before_first_start():
    steps = list(kb.STEPS)
    assert steps.index("driver") < steps.index("toolkit") < steps.index("k3s")
    assert steps.index("config") < steps.index("k3s")
    assert steps.index("k3s") < steps.index("checks") < steps.index("kubeconfig")


def test_k3s_config_has_the_exact_default_runtime_line():
    text = kb.render_k3s_config("hami-lab-rtx6000", {"gpu": "on"}, ["203.0.113.20"])
    assert "default-runtime: nvidia" in text.splitlines()


def test_k3s_config_holds_label_san_mode_and_node_name():
    text = kb.render_k3s_config("hami-lab-rtx6000", {"gpu": "on"}, ["203.0.113.20"])
    assert yaml.safe_load(text) == {
        "default-runtime": "nvidia",
        "node-name": "hami-lab-rtx6000",
        "node-label": ["gpu=on"],
        "tls-san": ["203.0.113.20"],
        "write-kubeconfig-mode": "600",
    }


def test_k3s_config_mode_is_a_quoted_string():
    # Unquoted 600 would be read as the integer 600, which k3s does not take as a file mode; 600: root only,
    # the admin credential is not world-readable on the host.
    text = kb.render_k3s_config("n", {"gpu": "on"}, ["192.0.2.1"])
    assert 'write-kubeconfig-mode: "600"' in text.splitlines()


def test_config_script_writes_the_rendered_file(tmp_path):
    text = kb.render_k3s_config("n", {"gpu": "on"}, ["192.0.2.1"])
    script = kb.render_config_script(text)
    assert f"cat > {kb.K3S_CONFIG_PATH}.new <<'K3S_CONFIG'\n{text}K3S_CONFIG" in script


def test_k3s_install_pins_the_version():
    script = kb.render_k3s_install_script(VERSION, "hami-lab-rtx6000")
    assert "want=v1.36.2+k3s1" in script
    assert 'INSTALL_K3S_VERSION="$want" sh -' in script


def test_k3s_install_is_skipped_when_that_version_runs(tmp_path):
    _recording(tmp_path, "curl")
    _stub(tmp_path, "systemctl", "exit 0")
    _stub(tmp_path, "k3s", f'[ "$1" = --version ] && echo "k3s version {VERSION} (abc123)"; exit 0')
    result = _run(kb.render_k3s_install_script(VERSION, "n"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "already runs" in result.stdout
    assert not [c for c in _calls(tmp_path) if c.startswith("curl")]


def test_k3s_install_runs_the_installer_for_another_version(tmp_path):
    _stub(tmp_path, "curl", 'echo "curl $*" >> "$CALLS"; echo "echo installer ran"')
    _stub(tmp_path, "systemctl", "exit 0")
    _stub(tmp_path, "k3s", '[ "$1" = --version ] && echo "k3s version v1.35.1+k3s1 (old)"; exit 0')
    result = _run(kb.render_k3s_install_script(VERSION, "n"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "installer ran" in result.stdout
    assert any(c.startswith("curl -sfL https://get.k3s.io") for c in _calls(tmp_path))


def test_driver_step_stops_when_nvidia_smi_works(tmp_path):
    _stub(tmp_path, "nvidia-smi", 'echo "GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition"')
    _recording(tmp_path, "apt-get", "curl", "dpkg")
    result = _run(kb.render_driver_script(install_driver=True), tmp_path)
    assert result.returncode == 0, result.stderr
    assert _calls(tmp_path) == []


def test_driver_step_fails_clearly_without_driver_when_install_is_off(tmp_path):
    _stub(tmp_path, "nvidia-smi", "exit 9")
    _recording(tmp_path, "apt-get", "curl", "dpkg")
    result = _run(kb.render_driver_script(install_driver=False), tmp_path)
    assert result.returncode == 1
    assert "k3s.installDriver is false" in result.stderr
    assert _calls(tmp_path) == []


def test_driver_step_installs_nvidia_open_from_the_cuda_repo_when_missing(tmp_path):
    # nvidia-smi fails until apt-get has installed the package.
    _stub(tmp_path, "nvidia-smi", '[ -f "$CALLS.installed" ] && echo "GPU 0: ok" && exit 0; exit 9')
    _stub(tmp_path, "apt-get", 'echo "apt-get $*" >> "$CALLS"; [ "$1" = install ] && touch "$CALLS.installed"; true')
    _recording(tmp_path, "curl", "dpkg", "modprobe")
    result = _run(kb.render_driver_script(install_driver=True, driver_package="nvidia-open"), tmp_path)
    assert result.returncode == 0, result.stderr
    calls = _calls(tmp_path)
    assert any("developer.download.nvidia.com/compute/cuda/repos/" in c for c in calls)
    installs = [c for c in calls if c.startswith("apt-get install")]
    assert installs and installs[0].split()[-1] == "nvidia-open"


def test_toolkit_step_installs_from_nvidia_repo_with_keyring():
    script = kb.render_toolkit_script()
    assert "https://nvidia.github.io/libnvidia-container/gpgkey" in script
    assert "signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg" in script
    assert "apt-get install -y nvidia-container-toolkit" in script
    assert "get.k3s.io" not in script


def test_toolkit_step_is_skipped_when_installed(tmp_path):
    _stub(tmp_path, "dpkg", "exit 0")
    _stub(tmp_path, "nvidia-ctk", 'echo "NVIDIA Container Toolkit CLI version 1.19.0"')
    _recording(tmp_path, "apt-get", "curl")
    result = _run(kb.render_toolkit_script(), tmp_path)
    assert result.returncode == 0, result.stderr
    assert _calls(tmp_path) == []


def test_checks_fail_with_a_clear_message_without_the_nvidia_runtime_class(tmp_path):
    _stub(tmp_path, "k3s", "exit 1")
    result = _run(kb.render_checks_script(wait_s=0), tmp_path)
    assert result.returncode == 1
    assert "RuntimeClass nvidia is missing" in result.stderr


def test_checks_look_for_the_default_runtime_in_containerd_config():
    script = kb.render_checks_script()
    assert "k3s kubectl get runtimeclass nvidia" in script
    assert f"grep -F 'default_runtime_name = \"nvidia\"' {kb.CONTAINERD_CONFIG_PATH}" in script


def _kubeconfig_read_with(tmp_path: Path, cat_body: str) -> subprocess.CompletedProcess[str]:
    _stub(tmp_path, "cat", cat_body)
    script = kb.render_kubeconfig_read().replace("$(cat <<", "$(/bin/cat <<")  # the heredoc wrapper keeps real cat
    return _run(script, tmp_path)


def test_kubeconfig_read_prints_the_k3s_file_whole(tmp_path):
    assert kb.K3S_KUBECONFIG_PATH in kb.render_kubeconfig_read()
    result = _kubeconfig_read_with(tmp_path, f"printf '%s' {shlex.quote(MOCK_KUBECONFIG)}")
    assert result.returncode == 0 and result.stdout.strip() == MOCK_KUBECONFIG.strip()


@pytest.mark.parametrize(
    "cat_body",
    [
        'printf "apiVersion: v1\\nusers:\\n- token: half"; exit 1',  # the read fails after part of the file
        'printf "apiVersion: v1\\nclusters: []"',  # k3s has not written the whole file yet
    ],
)
def test_a_failing_kubeconfig_step_prints_nothing_its_error_could_carry(tmp_path, cat_body):
    # pulumi-command v1.2.1 provider/pkg/provider/remote/commandOutputs.go:101: a failing step's error has its stdout.
    result = _kubeconfig_read_with(tmp_path, cat_body)
    assert result.returncode != 0 and result.stdout == ""


def test_kubeconfig_server_points_at_the_external_ip():
    rewritten = yaml.safe_load(kb.point_kubeconfig_at(MOCK_KUBECONFIG, kb.api_server("203.0.113.20")))
    assert [c["cluster"]["server"] for c in rewritten["clusters"]] == ["https://203.0.113.20:6443"]
    original = yaml.safe_load(MOCK_KUBECONFIG)
    assert rewritten["users"] == original["users"]
    ca = original["clusters"][0]["cluster"]["certificate-authority-data"]
    assert rewritten["clusters"][0]["cluster"]["certificate-authority-data"] == ca


def test_api_server_brackets_ipv6():
    assert kb.api_server("2001:db8::5") == "https://[2001:db8::5]:6443"


def test_uninstall_runs_k3s_uninstall_only_when_present(tmp_path):
    script = kb.render_uninstall_script()
    assert "/usr/local/bin/k3s-uninstall.sh" in script
    result = _run(script, tmp_path)  # no k3s here: nothing to remove, and no failure
    assert result.returncode == 0


@pytest.mark.parametrize("step", ["driver", "toolkit", "config", "k3s", "checks"])
def test_every_root_step_is_valid_bash(step):
    scripts = {
        "driver": kb.render_driver_script(True),
        "toolkit": kb.render_toolkit_script(),
        "config": kb.render_config_script(kb.render_k3s_config("n", {"gpu": "on"}, ["192.0.2.1"])),
        "k3s": kb.render_k3s_install_script(VERSION, "n"),
        "checks": kb.render_checks_script(),
    }
    inner = scripts[step].split("<<'GPUSHARE_STEP'\n", 1)[1].rsplit("\nGPUSHARE_STEP\n", 1)[0]
    result = subprocess.run(["bash", "-n"], input=inner, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
