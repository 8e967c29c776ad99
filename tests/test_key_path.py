"""`-c` keys take the paths `pulumi config set --path` takes: the cases below are Pulumi's own
(sdk/go/common/resource/properties_path_test.go TestPropertyPath, config/map_test.go TestSetSuccess, TestSetFail)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components import key_path
from components.key_path import KeyPathError
from components.plan import PlanInputError, main, read_stack_config


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("root", ["root"]),
        ("root.nested", ["root", "nested"]),
        ('root["nested"]', ["root", "nested"]),
        ('root["double"]["nest"]', ["root", "double", "nest"]),
        ("root.array[0]", ["root", "array", 0]),
        ("root.array2[0][1].nested", ["root", "array2", 0, 1, "nested"]),
        ("root.nested.array[0].double[1]", ["root", "nested", "array", 0, "double", 1]),
        (r'root["key with \"escaped\" quotes"]', ["root", 'key with "escaped" quotes']),
        ('root["key with a ."]', ["root", "key with a ."]),
        (r'["root key with \"escaped\" quotes"].nested', ['root key with "escaped" quotes', "nested"]),
        ('["root key with a ."][1]', ["root key with a .", 1]),
        ('root["*"].field[1]', ["root", "*", "field", 1]),
        ("root[*].field[2]", ["root", "*", "field", 2]),
        ("root.foo-bar[0]", ["root", "foo-bar", 0]),
        ("naïve", ["naïve"]),
        (r'root["a\b"]', ["root", "a\\b"]),  # only \" is an escape
        ("root[+1]", ["root", 1]),  # strconv.ParseInt takes a sign
    ],
)
def test_a_path_parses_as_pulumi_parses_it(path: str, steps: list[Any]) -> None:
    assert key_path.parse(path) == steps


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("root[", "no closing ']'"),
        ('root["nested]', "no closing quote"),
        ('root["nested"x', "no ']' after the quoted key"),
        ("root.array[abc]", "[abc] is no list index"),
        ("root.array[]", "[] is no list index"),
        ("root.array[0x1]", "[0x1] is no list index"),
        ("root.array[99999999999999999999]", "is no list index"),
        ("root.", "ends with '.'"),
        (".root", "starts with '.'"),
        ("root.array.[1]", "'.' before '['"),  # strict: ParsePropertyPathStrict refuses what providers emit
        ('root.["key with a ."]', "'.' before '['"),
    ],
)
def test_a_path_pulumi_refuses_is_refused_saying_the_fix(path: str, said: str) -> None:
    with pytest.raises(KeyPathError, match=f".*{re.escape(said)}.*; "):
        key_path.parse(path)


def _set(config: dict[str, Any], path: str, value: Any = "value") -> dict[str, Any]:
    key_path.set_value(config, "my", key_path.parse(path), value)
    return config


@pytest.mark.parametrize(
    ("config", "path", "expected"),
    [
        ({}, 'nested["test.Key"]', {"my:nested": {"test.Key": "value"}}),
        ({}, "outer.inner", {"my:outer": {"inner": "value"}}),
        ({"my:outer": "value"}, "outer.inner", {"my:outer": {"inner": "value"}}),  # the top level is replaced
        ({}, "names[0]", {"my:names": ["value"]}),
        ({}, "names[2]", {"my:names": [None, None, "value"]}),  # a new list of N+1, as newContainer makes it
        ({"my:names": ["a"]}, "names[1]", {"my:names": ["a", "value"]}),  # at the length: appended
        ({"my:names": ["a", "b"]}, "names[0]", {"my:names": ["value", "b"]}),
        ({}, "a.b[1].c", {"my:a": {"b": [None, {"c": "value"}]}}),
        ({"my:a": {"b": [{"c": 1}, {"c": 2}]}}, "a.b[1].c", {"my:a": {"b": [{"c": 1}, {"c": "value"}]}}),
        ({"my:s": {"secure": "AAAB"}}, "s.x", {"my:s": {"x": "value"}}),  # a secret is a plain value to Map.Set
    ],
)
def test_a_value_lands_where_config_set_path_puts_it(config: dict[str, Any], path: str, expected: Any) -> None:
    assert _set(config, path) == expected


@pytest.mark.parametrize(
    ("config", "path", "said"),
    [
        ({}, '[""]', "names no key"),
        ({}, "[0]", "starts with the index [0]"),
        ({}, "name[-1]", "index -1 is out of range"),
        ({"my:name": ["a", "b", "c"]}, "name[4]", "my:name has 3 items; use an index from 0 to 3"),
        ({}, "key.secure", "how Pulumi writes a secret"),
        ({}, "super.nested.map.secure", "how Pulumi writes a secret"),
        ({"my:outer": [1, 2, 3]}, "outer.inner", "my:outer is a list, which takes an index"),
        ({"my:array": {"inner": "value"}}, "array[0]", "my:array is a map, which takes a key, not an index"),
        ({"my:outer": {"inner": "value"}}, "outer.inner.nested", "my:outer.inner holds the string 'value', not a map"),
        ({"my:outer": {"inner": "value"}}, "outer.inner[0]", "my:outer.inner holds the string 'value', not a list"),
    ],
)  # fmt: skip
def test_a_value_config_set_path_refuses_is_refused_naming_the_key(
    config: dict[str, Any], path: str, said: str
) -> None:
    with pytest.raises(KeyPathError, match=re.escape(said)):
        _set(config, path)


@pytest.mark.parametrize(
    ("config", "path", "expected"),
    [
        ({"my:a": {"b": 1, "c": 2}}, "a.b", {"my:a": {"c": 2}}),
        ({"my:a": ["x", "y", "z"]}, "a[1]", {"my:a": ["x", "z"]}),  # the gap closes
        ({"my:a": ["x"]}, "a[5]", {"my:a": ["x"]}),  # nothing there: nothing removed
        ({"my:a": {"b": 1}}, "a.c.d", {"my:a": {"b": 1}}),
        ({}, "a.b", {}),
        ({"my:a": {"b": 1}}, "a", {}),
    ],
)
def test_null_removes_what_config_rm_path_removes(config: dict[str, Any], path: str, expected: Any) -> None:
    key_path.remove_value(config, "my", key_path.parse(path))
    assert config == expected


def test_removing_all_but_secure_is_refused() -> None:
    with pytest.raises(KeyPathError, match="how Pulumi writes a secret"):
        key_path.remove_value({"my:a": {"secure": "x", "b": 1}}, "my", key_path.parse("a.b"))


def test_the_readme_source_range_override_replaces_the_first_range() -> None:
    config, _ = read_stack_config("k3s", ["gpushare:vm.allowedSourceRanges[0]=203.0.113.7/32"])
    assert config["gpushare:vm"]["allowedSourceRanges"] == ["203.0.113.7/32"]


def test_an_index_at_the_end_appends_a_gpu_node() -> None:
    config, _ = read_stack_config("cluster", ["gpushare:cluster.gpuNodes[1]=node-2"])
    assert config["gpushare:cluster"]["gpuNodes"] == ["node", "node-2"]


def test_a_quoted_key_names_a_registry_with_dots() -> None:
    config, _ = read_stack_config("gke", ['gpushare:registryMirrors["docker.io"]=harbor.example.com/dockerhub'])
    assert config["gpushare:registryMirrors"] == {"docker.io": "harbor.example.com/dockerhub"}


def test_an_index_past_the_end_is_refused_before_planning(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["k3s", "-c", "gpushare:vm.allowedSourceRanges[3]=203.0.113.7/32"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: -c gpushare:vm.allowedSourceRanges[3]: index 3 is out of range: gpushare:vm.allowedSourceRanges has "
        "1 item; use an index from 0 to 1 (the next one appends)\n"
    )


def test_a_path_into_a_string_names_the_key_and_the_fix() -> None:
    with pytest.raises(PlanInputError, match=r"^-c gpushare:vm\.zone\.name: gpushare:vm\.zone holds the string"):
        read_stack_config("k3s", ["gpushare:vm.zone.name=x"])


def test_a_bad_index_names_the_key_as_written() -> None:
    with pytest.raises(PlanInputError, match=r"^-c gpushare:vm\.allowedSourceRanges\[x\]: \[x\] is no list index"):
        read_stack_config("k3s", ["gpushare:vm.allowedSourceRanges[x]=1.2.3.4/32"])
