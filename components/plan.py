"""The offline plan: the whole program under Pulumi's mock engine, no CLI, no cloud, no cluster.

    python -m components.plan STACK [--json | --markdown | --mermaid] [-c key=value ...] [--against PLAN]

Loads `Pulumi.STACK.yaml` as `pulumi up` reads it (components/config/stack_yaml.py), applies each `-c` (a YAML
value at a key path as `pulumi config set --path` takes it, components/key_path.py: `-c verify.sliceMiB=4000`,
`-c 'vm.allowedSourceRanges[0]=203.0.113.7/32'`, a key without namespace being the project's; `=null` removes
what the path names, as `pulumi config rm --path` does), runs `__main__.py` with realistic mock answers and
prints the resource tree. `--json` prints one deterministic object, versioned and described in docs/plan-json.md
(schema: components/plan_view/plan.schema.json): `{"version", "stack", "against", "resources", "deleted",
"outputs", "unknownOutputs"}`, where a resource's `unknownInputs` and the top-level `unknownOutputs` map the JSON
pointer of each value the mocks made up to why a real preview would not know it. `--markdown` prints a
pull-request summary (what changes against tests/golden/ first), `--mermaid` the dependency graph. Secrets
written by `pulumi config set --secret [--path]` (`{"secure": ...}`, at any depth) are checked for the ciphertext
form Pulumi writes and plan as mock values of the shape their key needs (components/config/secrets.py). Invalid
config, a stack file or `-c` value that is not YAML: exit 2, one line on stderr, nothing registered.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import difflib
import gc
import heapq
import json
import os
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from components import key_path

if TYPE_CHECKING:  # the mocks and the plan model load Pulumi: only a config that passes needs them
    from components.plan_view.model import Plan

__all__ = [
    "EXAMPLE_STACKS",
    "ROOT",
    "Plan",
    "PlanInputError",
    "main",
    "project_root",
    "read_stack_config",
    "run",
    "stacks",
]

_PACKAGED = Path(__file__).resolve().parent / "project"
ROOT = _PACKAGED if (_PACKAGED / "Pulumi.yaml").is_file() else Path(__file__).resolve().parent.parent
"""The project this package carries: the checkout itself, or an installed wheel's copy of its Pulumi.yaml, program,
example stacks and examples/ (components/project/, which setup.py fills)."""
PROJECT_FILE = "Pulumi.yaml"
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
"""The keys a Pulumi.<stack>.yaml holds (pulumi/automation/_stack_settings.py StackSettings; `environment`: ESC)."""
EXAMPLE_STACKS = ("cluster", "gke", "gke-mps", "gke-time-sharing", "k3s")
"""The committed stack files, examples to copy: a stack of a user's own (`Pulumi.mine.yaml`) beside them is
ignored by git (.gitignore), left out of the wheel (setup.py) and of the golden plans (docs/stacks.md)."""


def __getattr__(name: str) -> Any:
    """`Plan`, loaded on first use: a refused config never imports Pulumi."""
    if name == "Plan":
        from components.plan_view.model import Plan

        return Plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def project_root(start: Path | None = None) -> Path:
    """The project a plan reads: the nearest folder from `start` (the current one) up that holds Pulumi.yaml, as the
    Pulumi CLI finds its project (sdk/go/common/workspace/paths.go DetectProjectPathFrom), else the one this package
    carries (ROOT), so that the example stacks plan anywhere."""
    here = (start or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / PROJECT_FILE).is_file()), ROOT)


def stacks(root: Path = ROOT) -> list[str]:
    """The project's stacks: one per `Pulumi.<stack>.yaml` in `root`."""
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))


class PlanInputError(ValueError):
    """A stack file or `-c` override that cannot be read."""


_JSON_STRINGS = re.compile(r'[ \n]*\[[ \n]*(?:"[ !#-\[\]-~]*"[ \n]*(?:,[ \n]*"[ !#-\[\]-~]*"[ \n]*)*)?\][ \n]*')
"""A JSON list of printable-ASCII strings without escapes (`-c gpushare:cluster.gpuNodes=[...]`): as YAML, a flow
sequence of double-quoted scalars, which yaml.v3 reads as those strings; JSON reads it 500 times faster."""


_KEY_LINE = re.compile(r"( *)(?:- +)?('[^']*'|\"[^\"]*\"|[^\s#'\"][^#]*?) *:(?:[ \t]|$)")


def _key_at(text: str, line: int) -> str | None:
    """The config key whose block holds line `line` (1-based) of a stack file, by indentation: a YAML error's
    key, named although the file did not parse."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    here = lines[line - 1]
    depth = len(here) - len(here.lstrip(" "))
    stack: list[tuple[int, str]] = []
    for text_line in lines[:line]:
        match = _KEY_LINE.match(text_line)
        if not match:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2).strip("'\"")))
    if not _KEY_LINE.match(here):  # a line that is no key belongs to the keys indented less
        stack = [s for s in stack if s[0] < depth] if depth else stack[:2]
    if len(stack) < 2 or stack[0] != (0, "config"):
        return None
    from components.config.stack_yaml import PROJECT

    top = stack[1][1] if ":" in stack[1][1] else f"{PROJECT}:{stack[1][1]}"
    return top + "".join(f".{name}" for _, name in stack[2:])


def _load_yaml(text: str, where: str) -> Any:
    """`text` as `pulumi up` decodes it (gopkg.in/yaml.v3: components/config/stack_yaml.py)."""
    if _JSON_STRINGS.fullmatch(text):
        return json.loads(text)
    from components.config.stack_yaml import load

    try:
        return load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "invalid YAML"
        held = _key_at(text, mark.line + 1) if mark and where.startswith("Pulumi.") else None
        where = f"{where} ({held})" if held else where
        if isinstance(err, yaml.constructor.ConstructorError):
            fix = "keep one" if "already defined" in str(problem) else "fix the value"
            raise PlanInputError(
                f"{where}: line {mark.line + 1 if mark else '?'}: {problem}, which `pulumi up` refuses too; {fix}"
            ) from None
        fix = (
            "indent with spaces, never tabs"
            if "tab" in str(problem) or "\\t" in str(problem)
            else "fix the quoting or indentation"
        )
        raise PlanInputError(f"{where}: not valid YAML{at} ({problem}); {fix}") from None


def _program_value(value: Any, full_key: str) -> Any:
    from components.config.misread import misread
    from components.config.stack_yaml import YamlError, as_program_sees

    try:
        seen = as_program_sees(value, full_key)
    except YamlError as err:
        raise PlanInputError(str(err)) from None  # the message leads with the full key, as every refusal does
    found = misread(value, full_key)
    if found:
        from components.config.kubeconfig import ConfigError

        raise ConfigError(*found)
    return seen


def _config_key(text: str, where: str, *, path: bool) -> tuple[str, str]:
    """(namespace, name) as the CLI parses the key; the empty namespace, which no program reads, is refused."""
    from components.config.stack_yaml import YamlError, path_key, stack_file_key

    try:
        namespace, name = path_key(text) if path else stack_file_key(text)
    except YamlError as err:
        raise PlanInputError(f"{where}: {err}") from None
    if not name:
        raise PlanInputError(f"{where}: {text!r} names no key; write it as gpushare:key, such as gpushare:platform")
    if not namespace:
        # config.ParseKey (sdk/go/common/resource/config/key.go:45) takes `:name` as namespace '', silently.
        raise PlanInputError(
            f"{where}: {text} has an empty namespace: `pulumi up` keeps it under namespace '', "
            f"where this program never reads it; write gpushare:{name}"
        )
    return namespace, name


def read_stack_config(stack: str, overrides: list[str], root: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The stack file's config as `pulumi up` reads it, with `-c` overrides applied, and the keys that hold secrets;
    the project is `root`, else the one found from the current folder (project_root)."""
    root = root or project_root()
    from components.config.stack_yaml import key_text

    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise PlanInputError(
            f"no stack file {path.name} in {root}; its stacks: {', '.join(stacks(root)) or 'none'} (a project of "
            "your own: run in its folder, or pass --root DIR)"
        )
    try:
        text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")  # the CLI strips a BOM (loaders.go:40)
    except (UnicodeDecodeError, OSError) as err:
        raise PlanInputError(f"{path.name}: cannot be read as text ({type(err).__name__}); save it as UTF-8") from None
    document = _load_yaml(text, path.name)
    if document is not None and not isinstance(document, dict):
        raise PlanInputError(
            f"{path.name}: the file must be a mapping with a config: key, not a {type(document).__name__}"
        )
    for name in document or {}:
        if name not in STACK_FILE_KEYS:
            close = difflib.get_close_matches(str(name), STACK_FILE_KEYS, n=1)
            raise PlanInputError(
                f"{path.name}: unknown key {name!r}{'; did you mean ' + repr(close[0]) + '?' if close else ''}"
            )
    raw_config = (document or {}).get("config") or {}
    if not isinstance(raw_config, dict):
        raise PlanInputError(
            f"{path.name}: config: must map keys to values (key: value), not a {type(raw_config).__name__}"
        )
    config: dict[str, Any] = {}
    written: dict[str, str] = {}
    for raw_key, raw_value in raw_config.items():
        written_key = key_text(raw_key)
        namespace, name = _config_key(written_key, path.name, path=False)
        full_key = f"{namespace}:{name}"
        if full_key in written:  # a key without namespace is the project's (loaders.go:73-79): one key twice
            raise PlanInputError(
                f"{path.name}: {written[full_key]} and {written_key} are one key, {full_key}; "
                "`pulumi up` keeps either: keep one"
            )
        written[full_key] = written_key
        config[full_key] = _program_value(raw_value, full_key)
    from components.config.secrets import mock_secrets, plain_secret_problem

    plain = plain_secret_problem(config)  # only the file's own values: `-c` is never written anywhere
    if plain:
        from components.config.kubeconfig import ConfigError

        raise ConfigError(*plain)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep:
            raise PlanInputError(f"-c {item!r}: write it as namespace:key=value, e.g. gpushare:verify.sliceMiB=4000")
        namespace, name = _config_key(key, f"-c {key}", path=True)
        try:
            steps = key_path.parse(name)
            key_path.top_key(steps)
        except key_path.KeyPathError as err:
            raise PlanInputError(f"-c {key}: {err}") from None
        where = key_path.key_text(namespace, steps)
        value = _program_value(_load_yaml(text, f"-c {key}"), where) if text else ""
        try:
            if value is None:  # `=null` removes it, as `pulumi config rm --path` would
                key_path.remove_value(config, namespace, steps)
            else:
                key_path.set_value(config, namespace, steps, value)
        except key_path.KeyPathError as err:
            raise PlanInputError(f"-c {where}: {err}") from None
    return mock_secrets(config, document or {})


def _as_pulumi_config(config: dict[str, Any]) -> dict[str, str]:
    """Config as the engine hands it to a program: strings, structured values as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v, default=str) for k, v in config.items()}


def _order(registrations: list[Any]) -> list[Any]:
    """Parents before children, dependencies and providers before dependents, ties by name: deterministic."""
    by_urn = {r.urn: r for r in registrations}
    children: dict[str, list[str]] = {}
    for r in registrations:
        children.setdefault(r.parent, []).append(r.urn)
    subtrees: dict[str, frozenset[str]] = {}
    for r in reversed(registrations):  # a child registers after its parent: children are done first
        subtrees[r.urn] = frozenset({r.urn}).union(*(subtrees[c] for c in children.get(r.urn, [])))

    # A component waits for whatever its children wait for outside it, so the tree reads in deployment order.
    edges: dict[str, set[str]] = {r.urn: set() for r in registrations}
    indegree = dict.fromkeys(by_urn, 0)
    for r in registrations:
        inside = subtrees[r.urn]
        outside = {d for u in inside for d in _waits_on(by_urn[u])} - inside
        waits_for = {r.parent, *outside} - {u for u in outside if u in subtrees and r.urn in subtrees[u]}
        for before in waits_for:
            if before in by_urn and r.urn not in edges[before]:
                edges[before].add(r.urn)
                indegree[r.urn] += 1
    ready = [(by_urn[u].name, by_urn[u].type, u) for u, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        *_, urn = heapq.heappop(ready)
        ordered.append(by_urn[urn])
        for nxt in edges[urn]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, (by_urn[nxt].name, by_urn[nxt].type, nxt))
    placed = {r.urn for r in ordered}
    # Two components waiting on each other's children form a cycle at component level: list those by name.
    return ordered + sorted((r for r in registrations if r.urn not in placed), key=lambda r: (r.name, r.type))


def _waits_on(registration: Any) -> list[str]:
    """What the engine creates first: the dependencies, and the explicit provider."""
    return [*registration.dependencies, *([registration.provider] if registration.provider else [])]


def _kind(registration: Any) -> str:
    if registration.type.startswith("pulumi:providers:"):
        return "provider"
    return "resource" if registration.custom else "component"


async def _resolve(value: Any) -> Any:
    import pulumi

    out = pulumi.Output.from_input(value)
    if not await out.is_known():
        return "[unknown]"
    if await out.is_secret():
        return "[secret]"
    return await out.future()


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cycle collector paused while the program runs: with thousands of resources alive its full passes make
    the plan quadratic (4,000 nodes: 12 s of CPU against 5 s), and a plan's garbage is freed when it ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run(
    stack: str,
    overrides: list[str] | None = None,
    *,
    preview: bool = True,
    mocks: Any = None,
    root: Path | None = None,
) -> Plan:
    """Plan a stack in a fresh Pulumi runtime state, in the project `root` (else project_root()); raises ConfigError
    for invalid config. The program runs in the project's folder, as `pulumi up` runs it (the language host chdirs
    into the project: pulumi-language-python-exec, `os.chdir(args.pwd)`), so relative paths in config read alike."""
    root = root or project_root()
    config, secret_keys = read_stack_config(stack, overrides or [], root)
    from components.config import check_stack_config  # refuse bad config before Pulumi and the program load

    with contextlib.chdir(root):
        check_stack_config(config)
        with _no_cyclic_gc():
            return contextvars.Context().run(_run_in_fresh_context, stack, config, secret_keys, preview, mocks, root)


def _run_in_fresh_context(
    stack: str, config: dict[str, Any], secret_keys: list[str], preview: bool, mocks: Any, root: Path
) -> Plan:
    import pulumi

    from components import pulumi_internals as sdk
    from components.mocks import GpushareMocks, Invented, RecordingMonitor
    from components.plan_view.model import Plan
    from components.plan_view.unknowns import unknown_paths

    mocks = mocks or GpushareMocks()
    invented = getattr(mocks, "invented", None) or Invented()
    monitor = RecordingMonitor(mocks)

    def program() -> None:
        runpy.run_path(str(root / "__main__.py"), run_name="__main__")

    with sdk.offline_shortcuts():
        pulumi.runtime.set_all_config(_as_pulumi_config(config), secret_keys)
        pulumi.runtime.set_mocks(mocks, project="gpushare", stack=stack, preview=preview, monitor=monitor)
        sdk.reset_pending_outputs()
        sdk.run_program(program)
        stack_resource = sdk.root_resource()
        outputs = {name: sdk.sync_await(_resolve(v)) for name, v in sorted(stack_resource.outputs.items())}

    names = {r.urn: r.name for r in monitor.registrations}
    resources = [
        {
            "type": r.type,
            "name": r.name,
            "parent": names.get(r.parent),
            "dependsOn": sorted({names[d] for d in r.dependencies if d in names}),
            "inputs": r.inputs,
            "options": r.options,
            "unknownInputs": unknown_paths(r.inputs, invented),
        }
        for r in _order(monitor.registrations)
    ]
    component_outputs = {names.get(urn, urn): outs for urn, outs in monitor.component_outputs.items()}
    plain_outputs = json.loads(json.dumps(outputs, default=str))
    return Plan(
        stack,
        resources,
        plain_outputs,
        component_outputs,
        unknown_outputs=unknown_paths(plain_outputs, invented),
        invented=invented,
        kinds={r.name: _kind(r) for r in monitor.registrations},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.plan", description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="stack name: the STACK of Pulumi.STACK.yaml")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="print one deterministic JSON object")
    view.add_argument("--markdown", action="store_true", help="print a Markdown summary for a pull request")
    view.add_argument("--mermaid", action="store_true", help="print the dependency graph as a Mermaid diagram")
    parser.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config value at a key path as `pulumi config set --path` takes it (a.b[0]); =null removes it",
    )
    parser.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="the project: the folder of Pulumi.STACK.yaml and __main__.py (default: the nearest folder up from here "
        f"that holds {PROJECT_FILE}, else the example project this package carries, {ROOT})",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="PLAN",
        help="a golden plan (file, or folder of STACK.json) to compare with: --json then gives each "
        "resource's operation against it; --markdown compares with tests/golden/ by default",
    )
    args = parser.parse_args(argv)
    root = args.root or project_root()
    sys.path.insert(0, str(root))  # the program's own folder first, as runpy.run_path of the project puts it
    from components.contracts.errors import input_error_in

    try:
        plan = run(args.stack, args.config, root=root)
    except PlanInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        # An input found wrong inside an apply arrives wrapped in Pulumi's errors: report the cause, in one line.
        cause = input_error_in(err)
        if cause is None:
            raise
        print(f"error: {cause}", file=sys.stderr)
        return 2
    from components.plan_view import golden, markdown, mermaid, text

    against = args.against or golden.GOLDEN_DIR
    against_name = str(args.against) if args.against else f"tests/golden/{args.stack}.json"
    if args.json:
        document = plan.as_dict()
        if args.against:
            from components.plan_view.diff import annotate

            base = golden.golden_plan(args.stack, against)
            if base is None:
                print(f"error: --against {args.against}: no plan of {args.stack} there", file=sys.stderr)
                return 2
            document = annotate(document, markdown.stack_diff(plan, base, against_name))  # type: ignore[arg-type]
        shown = json.dumps(document, indent=2, sort_keys=True)
    elif args.markdown:
        shown = markdown.render(plan, golden=golden.golden_plan(args.stack, against), golden_name=against_name)
    elif args.mermaid:
        shown = mermaid.render(plan)
    else:
        shown = text.render(plan)
    try:
        print(shown, flush=True)
    except BrokenPipeError:
        # A reader that stops early (`| head`) is no error; stdout goes to devnull so exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _exit_now(code: int) -> None:
    """End the process without tearing down its heap: with thousands of resources alive, the interpreter's final
    collection and freeing cost more than a second, and the operating system frees the memory at once."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    gc.disable()  # a one-shot process: the views walk one large live plan, and exit frees it all
    _exit_now(main())
