"""The single-value checks: each accepts what the API accepts and refuses the rest with the fix."""

from __future__ import annotations

import pytest

from components import validate

GOOD_AND_BAD = [
    # (check, accepted, refused)
    (validate.dns_label, ["a", "gpushare-proof", "a" * 63, "0abc"], ["", "Proof_NS", "-a", "a-", "a.b", "a" * 64]),
    (validate.dns_subdomain, ["node", "gpu-1.example.com", "a" * 253], ["", "Node-1", "node one", "a..b", "a" * 254]),
    (validate.label_key, ["gpu", "nvidia.com/gpu.present", "a_b.c"], ["", "-gpu", "Bad_Prefix/x", "x/", "a" * 64]),
    (validate.label_value, ["", "on", "a" * 63, "A_b.c"], ["-on", "on-", "a b", "a" * 64]),
    (validate.gce_zone, ["us-central1-b", "asia-northeast1-a", "northamerica-northeast2-c"],
     ["", "us-central1", "US-CENTRAL1-B", "us-central1-b ", "central"]),
    (validate.gce_machine_type, ["n1-standard-2", "g4-standard-48", "a3-highgpu-8g"], ["", "N1-standard", "big"]),
    (validate.accelerator, ["nvidia-tesla-t4", "nvidia-rtx-pro-6000"], ["", "NVIDIA T4", "nvidia_t4"]),
    (validate.image_reference,
     ["python:3.12-slim", "nvidia/cuda:12.4.1-base-ubuntu22.04", "registry.example.com:5000/team/app:1.0",
      "ghcr.io/org/app@sha256:" + "a" * 64],
     ["", "Python:3.12", "my image:1", "https://ghcr.io/org/app", "app:", "app@sha256:xyz"]),
    (validate.registry, ["harbor.example.com/mirror", "registry.example.internal:5000", "localhost:5000/a/b"],
     ["", "https://harbor.example.com", "my registry", "harbor.example.com/Mirror"]),
    (validate.linux_user, ["ubuntu", "gpu_admin", "a-b"], ["", "Ubuntu", "root user", "a" * 33]),
    (validate.host_address, ["192.0.2.50", "2001:db8::1", "gpu-host.lan"], ["", "gpu host", "-host", "a..b"]),
    (validate.absolute_path, ["/home/kubernetes/bin", "/"], ["", "relative/path", "/a b", "/a/../b"]),
    (validate.k3s_version, ["v1.36.2+k3s1", "v1.35.6+k3s12"], ["", "latest", "v1.36.2", "1.36.2+k3s1"]),
    (validate.kubernetes_version, ["v1.35.6", "v1.36.2+k3s1", "v1.35.6-eks-abc"], ["", "latest", "1.35.6", "v1.35"]),
    (validate.gke_version, ["1.35.", "1.35.6-gke.1250000"], ["", "latest", "1.35", "1.35.6", "v1.35.6"]),
    (validate.port, [1, 22, 65535], [0, -1, 65536]),
    (validate.finite, [0.5, 3.0], [float("inf"), float("-inf"), float("nan")]),
]  # fmt: skip


@pytest.mark.parametrize(("check", "good", "bad"), GOOD_AND_BAD, ids=[c.__name__ for c, _, _ in GOOD_AND_BAD])
def test_each_check_accepts_the_apis_shape_and_refuses_the_rest(check, good, bad) -> None:
    for value in good:
        assert check(value) == value
    for value in bad:
        with pytest.raises(ValueError):
            check(value)


def test_a_region_given_as_a_zone_is_refused_with_a_zone_in_it() -> None:
    with pytest.raises(ValueError, match="is a region, not a zone; give a zone in it such as us-central1-a"):
        validate.gce_zone("us-central1")


def test_a_gke_cluster_name_is_at_most_40_characters() -> None:
    assert validate.gce_name("a" * 40, "GKE cluster name", 40) == "a" * 40
    with pytest.raises(ValueError, match="1–40"):
        validate.gce_name("a" * 41, "GKE cluster name", 40)
    with pytest.raises(ValueError):
        validate.gce_name("Kai_Cluster")


@pytest.mark.parametrize(
    ("version", "example", "leading_v", "ok"),
    [("v0.17.0", "v0.17.0", True, True), ("0.17.0", "v0.17.0", True, False), ("2.9.0", "2.10.0", False, True),
     ("v2.9.0", "2.10.0", False, False), ("1.1.0-chart", "1.1.0-chart", False, True), ("latest", "3.8.2", False, False),
     (">=2.9.0", "2.10.0", False, False), ("2.x", "2.10.0", False, False)],
)  # fmt: skip
def test_chart_versions_are_pinned_in_the_charts_own_shape(version, example, leading_v, ok) -> None:
    if ok:
        assert validate.pinned_chart(version, example, leading_v) == version
    else:
        with pytest.raises(ValueError):
            validate.pinned_chart(version, example, leading_v)


@pytest.mark.parametrize(
    ("ranges", "whole"),
    [(["0.0.0.0/0"], True), (["0.0.0.0/1", "128.0.0.0/1"], True), (["::/0"], True), (["::/1", "8000::/1"], True),
     (["0.0.0.0/1"], False), (["203.0.113.7/32", "198.51.100.0/24"], False),
     (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"], True)],
)  # fmt: skip
def test_the_internet_in_pieces_is_still_the_internet(ranges, whole) -> None:
    assert validate.covers_whole_internet(ranges) is whole


def test_labels_check_every_key_and_value() -> None:
    assert validate.labels({"gpu": "on", "example.com/pool": "a"}) == {"gpu": "on", "example.com/pool": "a"}
    with pytest.raises(ValueError):
        validate.labels({"gpu": "o n"})
    with pytest.raises(ValueError):
        validate.labels({"GPU pool": "on"})


def test_cidrs_name_the_range_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="'my-laptop' is not a CIDR"):
        validate.cidrs(["203.0.113.7/32", "my-laptop"])


def _blob(kind: bytes, *fields: bytes) -> str:
    """An SSH public key blob (RFC 4253 §6.6): each field length-prefixed."""
    import base64

    return base64.b64encode(b"".join(len(f).to_bytes(4, "big") + f for f in (kind, *fields))).decode()


EC_POINT, EXPONENT, ZERO = b"\x04" + b"p" * 64, b"\x01\x00\x01", b"\x00"


@pytest.mark.parametrize(
    ("line", "ok"),
    [("ssh-ed25519 " + _blob(b"ssh-ed25519", b"k" * 32), True),
     ("203.0.113.9 ssh-ed25519 " + _blob(b"ssh-ed25519", b"k" * 32), True),
     ("ecdsa-sha2-nistp256 " + _blob(b"ecdsa-sha2-nistp256", b"nistp256", EC_POINT), True),
     ("ssh-rsa " + _blob(b"ssh-rsa", EXPONENT, ZERO + b"n" * 256), True),
     ("ssh-ed25519 AAAA", False),  # 3 bytes
     ("ssh-ed25519 " + _blob(b"ssh-ed25519", b"k" * 31), False),  # one byte short of a point
     ("ssh-rsa " + _blob(b"ssh-ed25519", b"k" * 32), False),  # the type inside is another
     ("ssh-rsa " + _blob(b"ssh-rsa", EXPONENT, b"n" * 64), False),  # a 512-bit modulus
     ("ssh-ed25519 not*base64", False),
     ("ssh-dss " + _blob(b"ssh-dss", b"x" * 40), False)],
)  # fmt: skip
def test_a_host_key_parses_as_a_public_key_of_its_type_and_length(line: str, ok: bool) -> None:
    if ok:
        assert validate.ssh_host_key(line) == " ".join(line.split()[-2:])
    else:
        with pytest.raises(ValueError, match="ssh-keyscan"):
            validate.ssh_host_key(line)


@pytest.mark.parametrize(
    ("repository", "problem"),
    [("oci://harbor.example.com/charts", None), ("https://charts.example.com", None),
     ("oci://harbor.example.com:8443/charts", None), ("oci://", "names no registry host"),
     ("oci://harbor.example.com/charts:v0.17.0", "carries a tag"), ("oci://h.example.com/c@sha256:abc", "digest"),
     ("https://robot:s3cret@charts.example.com", "credentials"), ("oci://robot@harbor.example.com/c", "credentials"),
     ("oci://harbor.example.com:99999/charts", "1-65535"), ("ftp://charts.example.com", "neither")],
)  # fmt: skip
def test_a_chart_repository_is_one_url_without_tag_credentials_or_a_port_past_65535(repository, problem) -> None:
    if problem is None:
        assert validate.chart_repository(repository) == repository
    else:
        with pytest.raises(ValueError, match=problem) as caught:
            validate.chart_repository(repository)
        assert "s3cret" not in str(caught.value)


def test_a_quoted_value_that_may_hold_a_credential_is_never_shown() -> None:
    from components.validate import quoted

    for secret in (
        "apiVersion: v1\nusers: [{user: {token: t0k}}]",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "line one\nline two",
        "my-token-value",
    ):
        assert "t0k" not in quoted(secret) and "BEGIN" not in quoted(secret) and "not shown" in quoted(secret)


def test_a_long_quoted_value_is_cut_to_sixty_characters() -> None:
    from components.validate import SHOWN_CHARACTERS, quoted

    assert quoted("gpu-pool") == "'gpu-pool'"
    cut = quoted("q" * 5000)
    assert len(cut) <= SHOWN_CHARACTERS and cut.endswith("…'")


def test_a_path_too_long_for_a_file_name_is_a_problem_not_an_error(tmp_path) -> None:
    from components.validate import file_problem

    assert file_problem(tmp_path / ("a" * 5000)) == "File name too long"
    assert file_problem(tmp_path / "absent") == "no such file" and file_problem(tmp_path) == "a folder, not a file"


def test_the_newest_gke_minor_the_mocks_offer_is_no_newer_than_upstream_kubernetes() -> None:
    from components.mocks import ALTERNATE_ANSWERS, ANSWERS
    from components.validate import NEWEST_KUBERNETES_MINOR

    offered = {tuple(int(p) for p in v.split(".")[:2]) for a in (ANSWERS, ALTERNATE_ANSWERS) for v in a.gke_versions}
    assert max(offered) <= NEWEST_KUBERNETES_MINOR
