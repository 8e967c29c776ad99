"""The existing cluster's kubeconfig, read and checked with the rest of config, before anything loads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from components.contracts.errors import InputError
from components.contracts.settings import key
from components.validate import _is_ip, file_problem, host_problem, may_hold_credential, quoted


def project_dir() -> Path:
    """The directory `pulumi up` runs the program in, which a relative chartSources path or kubeconfigPath is read
    from: the project's own (pulumi-language-python-exec chdirs into the engine's --pwd; the offline plan does too)."""
    return Path.cwd()


PATH_KEY = key("cluster", "kubeconfigPath")
TEXT_KEY = key("cluster", "kubeconfig")
CONTEXT_KEY = key("cluster", "context")
SECRET_SET = "pulumi config set --secret --path gpushare:cluster.kubeconfig < ~/.kube/config"


class ConfigError(InputError):
    """A config value that cannot work: `key` is the full config key, the message says the fix."""


def read_kubeconfig(path: str, root: Path | None = None) -> str:
    """The file at `path` (`~` expanded, relative to the project); a missing file is a ConfigError."""
    if may_hold_credential(path) or path.lstrip().startswith(("apiVersion", "{", "kind:")):
        raise ConfigError(
            PATH_KEY,
            "holds a kubeconfig itself (not shown: it may hold a token), not the path to one; "
            f"set the file as a secret instead: `{SECRET_SET}`, then `pulumi config rm --path "
            f"{PATH_KEY}`",
        )
    file = Path(path).expanduser() if len(path) < 4096 else Path(path)
    file = file if file.is_absolute() else (root or project_dir()) / file
    problem = file_problem(file)
    if problem is not None:
        raise ConfigError(
            PATH_KEY,
            f"{quoted(str(file))}: {problem}; point it at your kubeconfig, or set it as a secret with `{SECRET_SET}`",
        )
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            PATH_KEY, f"{quoted(str(file))} is not a text file; point it at the kubeconfig `kubectl` uses (YAML)"
        ) from None
    except OSError as err:
        raise ConfigError(
            PATH_KEY, f"{quoted(str(file))} cannot be read ({err.strerror}); check its permissions"
        ) from None


def _entries(doc: dict[str, Any], section: str, field: str, where: str, key_: str) -> dict[str, dict[str, Any]]:
    """`clusters`/`contexts`/`users` as name → body; a map where the list belongs is refused (kubectl's shape)."""
    items = doc.get(section) or []
    if not isinstance(items, list):
        raise ConfigError(
            key_,
            f"{where}: {section} is a {type(items).__name__}, not a list of `- name: …` entries; "
            "give the file `kubectl config view --raw` prints",
        )
    found: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get(field), dict):
            raise ConfigError(
                key_,
                f"{where}: every entry of {section} needs a name and a {field} mapping; give "
                "the file `kubectl config view --raw` prints",
            )
        found[item["name"]] = item[field]
    return found


def check_kubeconfig(text: str, context: str | None, key_: str) -> None:
    """The kubeconfig parses and names, for the context the provider will use, a cluster with a server."""
    where = "the kubeconfig"
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ConfigError(key_, "is not a kubeconfig (no clusters in it); give the file `kubectl` uses")
    clusters = _entries(doc, "clusters", "cluster", where, key_)
    contexts = _entries(doc, "contexts", "context", where, key_)
    names = ", ".join(sorted(contexts)) or "(none)"
    if context is None:
        current = doc.get("current-context")
        if not current:
            raise ConfigError(CONTEXT_KEY, f"the kubeconfig has no current-context; pick one of {names}")
        if current not in contexts:
            raise ConfigError(
                CONTEXT_KEY,
                f"the kubeconfig's current-context {quoted(current)} is not one of its "
                f"contexts ({names}); set this to one of them",
            )
        context = str(current)
    elif context not in contexts:
        raise ConfigError(CONTEXT_KEY, f"{quoted(context)} is not a context of the kubeconfig; it has {names}")
    cluster = contexts[context].get("cluster")
    if cluster not in clusters:
        raise ConfigError(
            key_,
            f"context {quoted(context)} names cluster {quoted(cluster)}, which the kubeconfig "
            "lacks; give the file `kubectl config view --raw` prints",
        )
    server = clusters[cluster].get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(
            key_,
            f"cluster {quoted(cluster)} has no server URL (https://host:6443); give the file "
            "`kubectl config view --raw` prints",
        )
    problem = _server_problem(server)
    if problem:
        fix = "" if ";" in problem else "; give the file `kubectl config view --raw` prints"
        raise ConfigError(key_, f"cluster {quoted(cluster)}'s server {problem}{fix}")


def _server_problem(server: str) -> str | None:
    """Why client-go could not dial `server`, or None: rest.DefaultServerURL (client-go rest/url_utils.go) reads it
    with Go's url.Parse, gives a bare host:port `https://`, keeps a path as a prefix; net/http dials only http and
    https, to a host and a port 1-65535 (tests/facts/server_url holds Go's own answers)."""
    scheme, sep, rest = server.partition("://")
    if not sep:
        scheme, rest = "https", server  # url_utils.go: not a URL with a host, so https:// goes in front
    if scheme.lower() not in ("https", "http"):  # url.Parse lower-cases the scheme: HTTPS:// is https://
        return f"{quoted(server)} is not an https:// URL (net/http speaks only http and https)"
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if netloc != netloc.strip() or " " in netloc:
        return f"{quoted(server)} has a space in its host"
    hostport = netloc.rpartition("@")[2]  # userinfo is allowed (Go sends it as basic auth)
    if not hostport.startswith("[") and hostport.count(":") > 1:
        return f"{quoted(server)} has an IPv6 address without brackets; write https://[::1]:6443"
    try:
        url = urlsplit(f"https://{netloc}")
        port = url.port
    except ValueError:
        return f"{quoted(server)} has a port outside 1-65535 or a malformed host"
    if port == 0:
        return f"{quoted(server)} has port 0, which no server listens on; give its real port, such as 6443"
    host = url.hostname or ""
    if hostport.startswith("["):
        if not re.fullmatch(r"\[[^\]]*\](:[0-9]*)?", hostport) or re.search(r"%(?!25)", hostport):
            return f"{quoted(server)} has a malformed IPv6 host; write https://[::1]:6443 (a zone as %25eth0)"
        host = unquote(host).partition("%")[0]  # url.Parse unescapes a zone's %25 (fe80::1%25eth0); the zone is no IP
        if not _is_ip(host):
            return f"{quoted(server)} has brackets around something that is no IPv6 address"
    if not host:
        return f"{quoted(server)} names no host (https://host:6443)"
    # Go's resolver takes '_' in a name and a final '.' (net/dnsclient.go isDomainName)
    return host_problem(host.removesuffix(".").replace("_", "-"))
