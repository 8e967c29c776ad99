"""Configs no one wrote by hand: values of every YAML type at every key of every platform. Each config either
passes or is refused with one ConfigError naming a key that exists (or the unknown key that was set) — never
another exception; and what passes, plans."""

from __future__ import annotations

import re
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from components.config import VARIANTS, ConfigError, alias, check_stack_config, model_of
from components.plan import main
from tests.conftest import ROOT
from tests.test_config_defaults import MINIMAL

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "true",
            "null",
            "2.9",
            "1.35.",
            "v1.35.6",
            "oci://",
            "docker.io",
            "kube-system",
            "default",
            "gpushare-proof",
            "nvidia-l4",
            "g2-standard-4",
            "https://u:p@h.example/c",
            "harbor.example.com:99999/x",
            "0.0.0.0/0",
        ]
    ),
    st.dates(),
    st.datetimes(),
    st.binary(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def key_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key of a variant as a path of camelCase names, sections and their fields."""
    paths: list[tuple[str, ...]] = []
    for name, field in model.model_fields.items():
        path = (*prefix, alias(name))
        paths.append(path)
        section = model_of(field.annotation)
        if section is not None:
            paths += key_paths(section, path)
    return paths


PATHS = {platform: key_paths(variant) for platform, variant in VARIANTS.items()}
TYPOS = [("verify", "sliceMb"), ("gke", "zones"), ("platfrom",), ("hami", "versoin"), ("registrymirrors",)]


def set_path(config: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    top, *rest = path
    node: Any = config
    name = f"gpushare:{top}"
    if not rest:
        config[name] = value
        return
    if not isinstance(node.get(name), dict):
        node[name] = {}
    node = node[name]
    for part in rest[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[rest[-1]] = value


def names_a_real_key(platform: str, full_key: str, set_paths: list[tuple[str, ...]], config: dict[str, Any]) -> bool:
    """The key as `pulumi config set --path` writes it walks the variant's fields (any entry of a map or list),
    or is one the config holds."""
    if not full_key.startswith("gpushare:"):
        return full_key.split(":")[0] != "gpushare" and ":" in full_key
    parts = [p for p in re.findall(r'\["([^"]*)"\]|\[(\d+)\]|([^.\[\]]+)', full_key.removeprefix("gpushare:"))]
    names = [a or b or c for a, b, c in parts]
    if any(tuple(names[: len(p)]) == p for p in set_paths) or _holds(config, names):
        return True  # the key that was set, or one inside the value set there
    model: type[BaseModel] | None = VARIANTS.get(platform)
    if model is None:
        return names == ["platform"]
    for name in names:
        if model is None:
            return True  # inside a map or list: any entry
        field = next((f for n, f in model.model_fields.items() if alias(n) == name), None)
        if field is None:
            return False
        model = model_of(field.annotation)
    return True


def _holds(config: dict[str, Any], names: list[str]) -> bool:
    node: Any = config
    for depth, name in enumerate(names):
        wanted = f"gpushare:{name}" if depth == 0 else name
        if isinstance(node, dict) and wanted in node:
            node = node[wanted]
        elif isinstance(node, list) and name.isdigit() and int(name) < len(node):
            node = node[int(name)]
        else:
            return False
    return True


@st.composite
def configs(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[tuple[str, ...]]]:
    variant = draw(st.sampled_from(sorted(MINIMAL)))
    config: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in MINIMAL[variant].items()}
    config = {k: v for k, v in config.items() if "{kubeconfig}" not in str(v)}
    platform = str(config["gpushare:platform"])
    if platform == "existing":
        config["gpushare:cluster"] = {
            "kubeconfig": "apiVersion: v1\nclusters: [{name: c, cluster: {server: "
            "'https://203.0.113.1:6443'}}]\ncontexts: [{name: a, context: "
            "{cluster: c}}]\ncurrent-context: a\n"
        }
    set_paths: list[tuple[str, ...]] = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS[platform] + TYPOS))
        set_path(config, path, draw(VALUES))
        set_paths.append(path)
    return platform, config, set_paths


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_any_config_passes_or_is_refused_naming_a_real_key(case: tuple[str, dict[str, Any], list]) -> None:
    platform, config, set_paths = case
    try:
        check_stack_config(config)
    except ConfigError as err:
        assert names_a_real_key(str(config.get("gpushare:platform", platform)), err.key, set_paths, config), str(err)
        assert "\n" not in str(err)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(case=configs())
def test_any_config_plans_or_exits_2_with_one_error_line(
    case: tuple[str, dict[str, Any], list], tmp_path_factory, capsys
) -> None:
    _, config, _ = case
    root = tmp_path_factory.mktemp("fuzz")
    (root / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    (root / "Pulumi.fuzz.yaml").write_text(yaml.safe_dump({"config": config}))
    code = main(["fuzz", "--root", str(root)])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: gpushare:"), err
    assert "Traceback" not in err


PLAUSIBLE = st.sampled_from(
    [
        True,
        False,
        1,
        2,
        3,
        4,
        8,
        16,
        0.5,
        2.5,
        4096,
        7680,
        8000,
        15360,
        90000,
        "1.35.",
        "1.36.",
        "v1.35.6",
        "n1-standard-4",
        "g2-standard-4",
        "g4-standard-48",
        "a2-highgpu-1g",
        "nvidia-tesla-t4",
        "nvidia-l4",
        "nvidia-rtx-pro-6000",
        "us-central1-b",
        "kube-system",
        "default",
        "gpushare-proof",
        "hami-system",
        "2.9.0",
        "2.10.0",
        "v0.17.0",
        "DEFAULT",
        "mps",
        "kai",
        "hami",
        "host",
        "[2, 4, 8, 10]",
        [2, 4, 8, 10],
        [3, 16],
        {"docker.io": "harbor.example.com/dockerhub"},
        {"gpu": "on"},
        ["198.51.100.7/32"],
        None,
    ]
)
"""Values a user would plausibly type: most configs built from them pass, and then must plan."""


def field_at(platform: str, path: tuple[str, ...]) -> Any:
    model: Any = VARIANTS[platform]
    field = None
    for name in path:
        field = next(f for n, f in model.model_fields.items() if alias(n) == name)
        model = model_of(field.annotation)
    return field


def near(field: Any) -> st.SearchStrategy[Any]:
    """A value a user would type for this field: its default, a neighbour of it, or a plausible one."""
    default = field.get_default(call_default_factory=True) if not field.is_required() else None
    if isinstance(default, BaseModel):
        return st.just({})
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.sampled_from([default, default + 1, max(default - 1, 0), default * 2, default // 2])
    if isinstance(default, float):
        return st.sampled_from([default, default * 2, default / 2])
    if isinstance(default, str) and default:
        return st.sampled_from([default, default.upper(), f"{default}x"]) | PLAUSIBLE
    return PLAUSIBLE


@st.composite
def plausible_configs(draw: st.DrawFn) -> dict[str, Any]:
    variant = draw(st.sampled_from([v for v in sorted(MINIMAL) if "{kubeconfig}" not in str(MINIMAL[v])]))
    base = {k: (dict(v) if isinstance(v, dict) else v) for k, v in MINIMAL[variant].items()}
    platform = str(base["gpushare:platform"])
    paths = [p for p in PATHS[platform] if p != ("platform",)]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        set_path(base, path, draw(near(field_at(platform, path))))
    return base


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(config=plausible_configs())
def test_a_plausible_config_plans_or_exits_2_with_one_error_line(
    config: dict[str, Any], tmp_path_factory, capsys
) -> None:
    root = tmp_path_factory.mktemp("plausible")
    (root / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    (root / "Pulumi.fuzz.yaml").write_text(yaml.safe_dump({"config": config}))
    code = main(["fuzz", "--root", str(root)])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    assert (code == 0 and "verification" in out) or (out == "" and len(err.strip().splitlines()) == 1), err
