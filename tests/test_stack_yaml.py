"""The plan reads a stack file as `pulumi up` does: gopkg.in/yaml.v3 v3.0.1's scalars, Pulumi's JSON, its keys.

Each expected value is yaml.v3's (go-yaml/yaml v3.0.1 resolve.go, decode_test.go) after Pulumi's round trip
(pulumi/pulumi sdk/go/common/resource/config/object.go), not PyYAML's YAML 1.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config.stack_yaml import YamlError, as_program_sees, go_resolve, load, parse_key, path_key
from components.plan import PlanInputError, main, read_stack_config
from tests.conftest import ROOT

SCALARS = [
    # (YAML, what the program receives, where yaml.v3 decides it)
    ("2026-01-01", "2026-01-01 00:00:00 +0000 UTC", "resolve.go:185 timestamp; object.go:490 Time.String()"),
    ("2015-02-24T18:19:39.12Z", "2015-02-24 18:19:39.12 +0000 UTC", "decode_test.go:675"),
    ("2015-2-3T3:4:5Z", "2015-02-03 03:04:05 +0000 UTC", "decode_test.go:680: short date fields"),
    ("2015-02-24 18:19:39", "2015-02-24 18:19:39 +0000 UTC", "decode_test.go:690: space, no zone"),
    ("2015-02-24T18:19:39", "2015-02-24T18:19:39", "no zone after T: none of resolve.go:294's layouts"),
    ("2026-13-01", "2026-13-01", "month 13: time.Parse fails, text"),
    ("'2026-01-01'", "2026-01-01", "quoted: indicatedString"),
    ("1:30", "1:30", "resolve.go:165: no sexagesimal"),
    ("190:20:30", "190:20:30", "decode_test.go:186: unsupported"),
    ("yes", "yes", "resolve.go:52-53: only true/false"),
    ("no", "no", "resolve.go:52-53"),
    ("on", "on", "resolve.go:52-53"),
    ("off", "off", "resolve.go:52-53"),
    ("Y", "Y", "resolve.go:52-53"),
    ("TRUE", True, "resolve.go:52"),
    ("False", False, "resolve.go:53"),
    ("0o17", 15, "resolve.go:192 strconv.ParseInt base 0"),
    ("017", 15, "ParseInt base 0: a leading 0 is octal"),
    ("0x1F", 31, "ParseInt base 0"),
    ("0X1F", 31, "ParseInt base 0 takes 0X too"),
    ("0b101", 5, "ParseInt base 0"),
    ("-0b101", -5, "ParseInt base 0 with a sign"),
    ("1_000", 1000, "resolve.go:191: underscores removed"),
    ("08", 8, "not octal, not an int: yamlStyleFloat 8.0, written by encoding/json as 8"),
    ("1e3", 1000, "resolve.go:204 yamlStyleFloat; encoding/json writes 1000"),
    ("1.5", 1.5, "resolve.go:204"),
    (".5", 0.5, "resolve.go:173"),
    ("1.35.", "1.35.", "no float"),
    ("~", None, "resolve.go:54"),
    ("null", None, "resolve.go:54"),
    ("", None, "resolve.go:54"),
    ("!!binary cnVuLTE=", "run-1", "decode.go:574"),
    ("!!str 0x1F", "0x1F", "an explicit !!str"),
    ("!!float 1", 1, "resolve.go:148: an int read as a float, written by encoding/json as 1"),
    ("18446744073709551615", 18446744073709551615, "resolve.go:200 ParseUint"),
    ("99999999999999999999", 100000000000000000000, "past uint64: yamlStyleFloat 1e20"),
]


@pytest.mark.parametrize(("text", "expected", "source"), SCALARS, ids=[s[0] or "(empty)" for s in SCALARS])
def test_a_scalar_reads_as_yaml_v3_reads_it(text: str, expected: object, source: str) -> None:
    value = as_program_sees(load(f"v: {text}\n"), "gpushare:x")["v"]
    assert value == expected and type(value) is type(expected), source


@pytest.mark.parametrize("text", [".inf", "-.inf", ".NaN", "+.INF"])
def test_an_infinite_number_is_refused_as_pulumi_cannot_store_it_as_json(text: str) -> None:
    with pytest.raises(YamlError, match=r"gpushare:verify\.holdGiB: .*json: unsupported value"):
        as_program_sees(load(f"holdGiB: {text}\n"), "gpushare:verify")


@pytest.mark.parametrize(("text", "problem"), [
    ("v: !!bool yes", "cannot decode !!str `yes` as a !!bool"),
    ("v: !!int 1.5", "cannot decode !!float `1.5` as a !!int"),
    ("v: !!binary '***'", "invalid base64"),
    ("v: 1\nv: 2\n", "already defined at line 1"),
    ("{a: 1, 'a': 2}", "already defined"),
])  # fmt: skip
def test_what_yaml_v3_refuses_is_refused(text: str, problem: str) -> None:
    with pytest.raises(Exception, match=problem.replace("!", r"\!").replace("`", ".").replace("*", r"\*")):
        load(text)


def test_go_resolve_keeps_an_explicit_tag_it_cannot_resolve_as_text() -> None:
    assert go_resolve("!foo", "bar") == ("!foo", "bar")
    assert load("v: !foo 12\n") == {"v": "12"}


def test_only_the_first_document_is_read_as_yaml_unmarshal_does() -> None:
    assert load("v: 1\n---\nv: [\n") == {"v": 1}


@pytest.mark.parametrize(("key", "parsed"), [
    ("gpushare:platform", ("gpushare", "platform")),
    ("gpushare:config:platform", ("gpushare", "platform")),  # key.go:53-61: the old config-module form
    (":verify", ("", "verify")),
])  # fmt: skip
def test_a_config_key_parses_as_config_parse_key(key: str, parsed: tuple[str, str]) -> None:
    assert parse_key(key) == parsed


@pytest.mark.parametrize("key", ["a:b:c", "a:b:c:d", "gpushare:x:config"])
def test_a_key_with_more_colons_is_refused_as_config_parse_key_refuses_it(key: str) -> None:
    with pytest.raises(YamlError, match="could not parse"):
        parse_key(key)


def test_a_path_key_takes_the_projects_namespace_on_its_first_segment() -> None:
    # pkg/cmd/pulumi/config/io.go:388: the namespace rule applies to the top segment only.
    assert path_key("verify.sliceMiB") == ("gpushare", "verify.sliceMiB")
    assert path_key("gpushare:verify.sliceMiB") == ("gpushare", "verify.sliceMiB")
    assert path_key(":verify.sliceMiB") == ("", "verify.sliceMiB")


def _stack(tmp_path: Path, text: str) -> Path:
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    return tmp_path


def test_a_stack_file_key_without_namespace_is_the_projects_and_is_refused_when_unknown(tmp_path: Path, capsys) -> None:
    root = _stack(tmp_path, "config:\n  gpushare:platform: gke\n  sliceMiB: 999999\n")
    assert main(["s", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gpushare:sliceMiB: unknown key") and len(err.splitlines()) == 1


def test_a_key_written_with_and_without_namespace_is_one_key_twice(tmp_path: Path) -> None:
    root = _stack(tmp_path, "config:\n  gpushare:platform: gke\n  platform: k3s-vm\n")
    with pytest.raises(PlanInputError, match="are one key, gpushare:platform"):
        read_stack_config("s", [], root)


def test_a_stack_file_key_in_the_empty_namespace_is_refused(tmp_path: Path) -> None:
    root = _stack(tmp_path, "config:\n  gpushare:platform: gke\n  ':verify': {sliceMiB: 1}\n")
    with pytest.raises(PlanInputError, match=r"empty namespace.*write gpushare:verify"):
        read_stack_config("s", [], root)


def _refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> str:
    """The one line `python -m components.plan` prints for a gke stack file with `body` under config:."""
    root = _stack(tmp_path, "config:\n  gpushare:platform: gke\n" + body)
    assert main(["s", "--root", str(root)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    return err.removeprefix("error: ").rstrip("\n")


# resolve.go:185/:294 makes a plain date a time.Time; object.go:490 hands the program its Time.String() text.
@pytest.mark.parametrize(("body", "key", "written"), [
    ("  gpushare:verify:\n    runId: 2026-12-07\n", "gpushare:verify.runId", "2026-12-07"),
    ("  gpushare:verify:\n    runId: 2026-12-07T10:00:00Z\n", "gpushare:verify.runId", "2026-12-07T10:00:00Z"),
    ("  gpushare:verify:\n    runId: 2026-1-1\n", "gpushare:verify.runId", "2026-1-1"),
    ("  gpushare:verify:\n    runId: !!timestamp 2026-12-07\n", "gpushare:verify.runId", "2026-12-07"),
    ("  gpushare:verify:\n    podPrefix: 2026-12-07\n", "gpushare:verify.podPrefix", "2026-12-07"),
    ("  gpushare:guard:\n    exemptNamespaces: [team-a, 2026-12-07]\n", "gpushare:guard.exemptNamespaces[1]",
     "2026-12-07"),
    ("  verify: {runId: 2026-12-07}\n", "gpushare:verify.runId", "2026-12-07"),
])  # fmt: skip
def test_unquoted_date_is_refused_at_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, key: str, written: str
) -> None:
    line = _refusal(tmp_path, capsys, body)
    assert line.startswith(f"{key}: {written} is a date to `pulumi up`"), line
    assert f"quote it ('{written}')" in line and " +0000 UTC`" in line


# resolve.go:192 strconv.ParseInt(s, 0, 64): a leading 0 is octal, where YAML 1.2's core schema reads decimal.
@pytest.mark.parametrize(("body", "key", "reading"), [
    ("  gpushare:verify:\n    holdSeconds: 017\n", "gpushare:verify.holdSeconds", "017 is octal 15"),
    ("  gpushare:verify:\n    holdSeconds: 0_30\n", "gpushare:verify.holdSeconds", "0_30 is octal 24"),
    ("  gpushare:verify:\n    holdSeconds: !!int '017'\n", "gpushare:verify.holdSeconds", "017 is octal 15"),
    ("  gpushare:verify:\n    runId: 0100\n", "gpushare:verify.runId", "0100 is octal 64"),
    ("  gpushare:kai:\n    queue: 017\n", "gpushare:kai.queue", "017 is octal 15"),
    ("  gpushare:verify:\n    sweepGiB: [2, -04, 010]\n", "gpushare:verify.sweepGiB[2]", "010 is octal 8"),
])  # fmt: skip
def test_leading_zero_number_is_refused_at_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, key: str, reading: str
) -> None:
    line = _refusal(tmp_path, capsys, body)
    decimal = int(reading.split(" ")[0].replace("_", ""))  # what YAML 1.2 reads: the fix writes it so
    assert line.startswith(f"{key}: {reading} to `pulumi up`"), line
    assert f"write it without the leading zero ({decimal})" in line and "0o" in line


# 0900: 9 is no octal digit, so yaml.v3 reads the float 900; -04 is -4 in either reading.
@pytest.mark.parametrize(("text", "read"), [
    ("0o17", 15), ("'017'", "017"), ('"2026-12-07"', "2026-12-07"), ("!!str 2026-12-07", "2026-12-07"),
    ("0x1F", 31), ("08", 8), ("0900", 900), ("00", 0), ("-04", -4), ("017.5", 17.5), ("2026-13-01", "2026-13-01"),
])  # fmt: skip
def test_a_number_or_text_yaml_v3_reads_as_written_still_plans(tmp_path: Path, text: str, read: object) -> None:
    root = _stack(tmp_path, f"config:\n  gpushare:platform: gke\n  gpushare:verify:\n    runId: {text}\n")
    config, _ = read_stack_config("s", [], root)
    assert config["gpushare:verify"]["runId"] == read and type(config["gpushare:verify"]["runId"]) is type(read)


def test_a_byte_order_mark_is_stripped_as_the_cli_strips_it(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.s.yaml").write_bytes(b"\xef\xbb\xbfconfig:\n  gpushare:platform: gke\n")
    config, _ = read_stack_config("s", [], tmp_path)
    assert config == {"gpushare:platform": "gke"}
