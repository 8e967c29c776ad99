"""The existing cluster's kubeconfig, read and checked before any resource is registered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.config import PROJECT_ROOT, ConfigError


def read_kubeconfig(path: str, root: Path = PROJECT_ROOT) -> str:
    """The file at `path` (`~` expanded, relative to the project); a missing file is a ConfigError."""
    file = Path(path).expanduser()
    file = file if file.is_absolute() else root / file
    if not file.is_file():
        raise ConfigError(
            "gpushare:cluster.kubeconfigPath",
            f"no file at {file}; point it at your kubeconfig, or set it as a secret with "
            "`pulumi config set --secret --path gpushare:cluster.kubeconfig < ~/.kube/config`",
        )
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("gpushare:cluster.kubeconfigPath", f"{file} is not a text file; point it at the kubeconfig "
                                                             "`kubectl` uses (YAML)") from None
    except OSError as err:
        raise ConfigError("gpushare:cluster.kubeconfigPath", f"{file} cannot be read ({err.strerror}); check its "
                                                             "permissions") from None


def check_kubeconfig(text: str, context: str | None, key: str) -> None:
    """The kubeconfig parses, and names the context the provider will use."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ConfigError(key, "is not a kubeconfig (no clusters in it); give the file `kubectl` uses")
    contexts = sorted(c.get("name", "") for c in doc.get("contexts") or [] if isinstance(c, dict))
    if context is None:
        if not doc.get("current-context"):
            raise ConfigError("gpushare:cluster.context", f"the kubeconfig has no current-context; pick one of "
                                                          f"{', '.join(contexts) or '(none)'}")
        return
    if context not in contexts:
        raise ConfigError("gpushare:cluster.context",
                          f"{context!r} is not a context of the kubeconfig; it has {', '.join(contexts) or '(none)'}")


def cluster_identity(text: str, context: str | None) -> str:
    """`existing:<cluster>`, the kubeconfig cluster the context names: stable across a CA rotation or a new server
    address (a load balancer in front), which change the kubeconfig but not which cluster it is."""
    doc = yaml.safe_load(text) or {}
    name = context or doc.get("current-context") or ""
    entry = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == name), {})
    return f"existing:{entry.get('cluster') or name}"
