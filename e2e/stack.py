"""A copy of the `cluster` stack in a folder of its own, pointed at the test control plane and the unpacked charts,
run through the real CLI (e2e/drive.py) on a local file backend."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.controlplane import bin_dir

REPO = Path(__file__).resolve().parent.parent
CHARTS = {"hami": "hami-2.10.0", "gpuOperator": "gpu-operator-v26.7.0"}
"""The cluster stack's releases and the unpacked chart of each (../shared/reference/chart-dirs/README.md)."""


def engine_env(state: Path) -> dict[str, str]:
    """The CLI offline: plugins from PATH only, no update check, the file backend, an empty passphrase."""
    env = dict(os.environ)
    env.update({
        "PATH": f"{bin_dir()}{os.pathsep}{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "PULUMI_BACKEND_URL": f"file://{state}",
        "PULUMI_HOME": str(state.parent / "pulumi-home"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_CONFIG_PASSPHRASE": "",
        "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
        "PYTHONPATH": str(REPO),
    })  # fmt: skip
    return env


@dataclass
class Stack:
    folder: Path
    name: str
    state: Path
    transcript: list[str]

    @classmethod
    def make(cls, folder: Path, name: str, state: Path, kubeconfig: Path, chart_dirs: Path,
             transcript: list[str], edit: dict[str, Any] | None = None) -> Stack:  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        state.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
        config = yaml.safe_load((REPO / "Pulumi.cluster.yaml").read_text())
        cfg = config["config"]
        cfg["gpushare:cluster"]["kubeconfigPath"] = str(kubeconfig)
        cfg["gpushare:chartSources"] = {k: {"path": str(chart_dirs / v)} for k, v in CHARTS.items()}
        # No container runs under kwok, so the verifier writes no verdict: export "not judged" instead of failing up.
        cfg["gpushare:verify"]["failOnViolation"] = False
        for key, value in (edit or {}).items():
            cfg[key] = value
        (folder / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        return cls(folder, name, state, transcript)

    def config(self) -> dict[str, Any]:
        return dict(yaml.safe_load((self.folder / f"Pulumi.{self.name}.yaml").read_text())["config"])

    def set_config(self, key: str, value: Any) -> None:
        path = self.folder / f"Pulumi.{self.name}.yaml"
        config = yaml.safe_load(path.read_text())
        config["config"][key] = value
        path.write_text(yaml.safe_dump(config, sort_keys=False))

    def command(self, op: str, *flags: str) -> list[str]:
        return [sys.executable, "-m", "e2e.drive", op, str(self.folder), self.name, *flags]

    def run(self, op: str, *flags: str, timeout: float = 900) -> dict[str, Any]:
        """The operation's JSON answer; its CLI output joins the transcript."""
        t0 = time.monotonic()
        proc = subprocess.run(
            self.command(op, *flags), cwd=REPO, env=engine_env(self.state), capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        lines = proc.stdout.strip().splitlines()
        try:
            result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        except json.JSONDecodeError:
            result = {}
        if not result:
            result = {"error": f"exit {proc.returncode}: {proc.stderr[-3000:]}", "steps": []}
        result["seconds"] = round(time.monotonic() - t0, 1)
        self.transcript.append(
            f"$ pulumi {op} {' '.join(flags)} --stack {self.name}   ({result['seconds']} s)\n"
            + (result.get("stdout") or "")
            + (f"\nerror: {result['error']}\n" if "error" in result else "")
        )
        return result

    def start(self, op: str, *flags: str) -> subprocess.Popen[str]:
        """The operation in the background, in its own process group (the interrupted `up`)."""
        return subprocess.Popen(
            self.command(op, *flags), cwd=REPO, env=engine_env(self.state), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip

    @staticmethod
    def kill(proc: subprocess.Popen[str]) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """The CLI itself (`pulumi stack export`, `pulumi cancel`...), in the stack's folder."""
        return subprocess.run(
            [str(bin_dir() / "pulumi"), *args, "--stack", self.name], cwd=self.folder, env=engine_env(self.state),
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
