"""A ServiceAccount bound to a read-only ClusterRole: how every in-cluster helper Pod gets its API access."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi

from components.providers import ApiFields, k8s


def reader_account(
    parent: pulumi.Resource,
    name: str,
    *,
    account_name: str,
    namespace: pulumi.Input[str],
    role_name: str,
    rules: Sequence[ApiFields],
    labels: Mapping[str, str] | None = None,
    provider: k8s.Provider | None = None,
    after: Sequence[pulumi.Resource] = (),
) -> tuple[k8s.core.v1.ServiceAccount, k8s.rbac.v1.ClusterRoleBinding]:
    """`{name}-account`, `{name}-reader` (the ClusterRole, `rules` only) and `{name}-reader-binding`."""
    extra: k8s.meta.v1.ObjectMetaArgsDict = {"labels": dict(labels)} if labels else {}

    def opts(*extra: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[*after, *extra])

    account = k8s.core.v1.ServiceAccount(
        f"{name}-account",
        metadata={"name": account_name, "namespace": namespace, **extra},
        opts=opts(),
    )
    copies: list[ApiFields] = [dict(rule) for rule in rules]
    role = k8s.rbac.v1.ClusterRole(f"{name}-reader", metadata={"name": role_name, **extra}, rules=copies, opts=opts())
    role_ref: ApiFields = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name}
    subjects: list[ApiFields] = [{"kind": "ServiceAccount", "name": account_name, "namespace": namespace}]
    binding = k8s.rbac.v1.ClusterRoleBinding(
        f"{name}-reader-binding",
        metadata={"name": role_name, **extra},
        role_ref=role_ref,
        subjects=subjects,
        opts=opts(role, account),
    )
    return account, binding
