"""Keep secrets recognisable in stack rules: without this, a plaintext kubeconfig output and a secret one look alike.

pulumi_policy unwraps secrets while it decodes the engine's request for Analyze/AnalyzeStack, so a rule
cannot see which outputs are secret. `keep_secret_markers()` swaps in a decoder that keeps each secret
as a `pulumi_policy.Secret`; `policies.rule.plain` then turns it into "[secret]" (Stack outputs) or its value.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Secret

from components.pulumi_internals import policy_decoder


def _decode(prop: Any, deserialize: Any) -> Any:
    if isinstance(prop, list):
        return [_decode(p, deserialize) for p in prop]
    if isinstance(prop, dict):
        if prop.get(deserialize.SPECIAL_SIG_KEY) == deserialize.SPECIAL_SECRET_SIG:
            return Secret(_decode(prop.get("value"), deserialize))
        if deserialize.SPECIAL_SIG_KEY in prop:
            return deserialize._deserialize_property(prop)  # assets and archives as pulumi_policy decodes them
        return {k: _decode(v, deserialize) for k, v in prop.items()}
    return prop


def keep_secret_markers() -> bool:
    """Install the marking decoder into pulumi_policy; False (and nothing changed) where its internals differ."""
    modules = policy_decoder()
    if modules is None:
        return False
    deserialize, policy_module = modules
    original = policy_module.deserialize_properties

    def deserialize_marking(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
        if proxy_secrets:  # remediation keeps pulumi_policy's own secret proxies
            return original(props, proxy_secrets)
        return {k: _decode(v, deserialize) for k, v in props.items()}

    policy_module.deserialize_properties = deserialize_marking
    return True
