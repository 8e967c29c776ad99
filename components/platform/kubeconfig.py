"""Kubeconfig rendering for GKE: pure, so the exec-plugin user is unit-tested without a cluster."""

from __future__ import annotations

import yaml

GKE_AUTH_PLUGIN = "gke-gcloud-auth-plugin"
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
INSTALL_HINT = (
    "Install gke-gcloud-auth-plugin for use with kubectl and Pulumi: gcloud components install gke-gcloud-auth-plugin"
)


def gke_kubeconfig(context: str, endpoint: str, ca_certificate_b64: str) -> str:
    """A one-context kubeconfig that authenticates through `gke-gcloud-auth-plugin`.

    The plugin turns the caller's gcloud credentials into a short-lived token, so the stack stores no
    long-lived credential; `ca_certificate_b64` is the cluster CA as GKE returns it (base64 PEM).
    """
    if not endpoint:
        raise ValueError("the cluster endpoint is empty; the cluster has no reachable control plane yet")
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_certificate_b64},
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "preferences": {},
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": EXEC_API_VERSION,
                        "command": GKE_AUTH_PLUGIN,
                        "installHint": INSTALL_HINT,
                        "provideClusterInfo": True,
                        "interactiveMode": "IfAvailable",
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(document, sort_keys=False)
