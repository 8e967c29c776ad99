"""Every private part of the Pulumi SDK and of pulumi_policy that the offline plan, the mocks and the policy
harness rely on, in one place.

Nothing else in the project touches them. `check()` names the first one an installed SDK no longer has, with
the fix; tests/test_pulumi_internals.py runs it, so an SDK upgrade that moves one fails one test, loudly,
instead of planning wrongly. constraints.txt pins the versions these were read against.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import importlib
import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, TypeVarTuple

import pulumi
from pulumi.runtime import mocks as _mocks
from pulumi.runtime import rpc as _rpc

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
READ_AGAINST = {"pulumi": "3.272.0", "pulumi-policy": "1.21.0"}
"""The versions whose source these names were read from (constraints.txt installs them)."""


class InternalsChanged(RuntimeError):
    """An installed Pulumi SDK no longer has a private name the plan, the mocks or the harness use."""


@dataclass(frozen=True)
class Internal:
    """One private name: where it lives, what we use it for, and the parameters a call passes by position."""

    module: str
    name: str
    use: str
    parameters: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()


INTERNALS: tuple[Internal, ...] = (
    Internal("pulumi.runtime.stack", "run_pulumi_func", "run __main__.py as the engine's language host would"),
    Internal("pulumi.runtime.sync_await", "_sync_await", "wait for the program and its outputs without a loop"),
    Internal("pulumi.runtime.mocks", "_sync_await", "serialize each mock answer without pumping the program's loop"),
    Internal("pulumi.runtime.settings", "get_root_resource", "read the stack outputs after the program ran"),
    Internal(
        "pulumi.runtime.settings", "SETTINGS", "reset the pending-outputs set between plans", attributes=("outputs",)
    ),
    Internal(
        "pulumi.runtime.mocks",
        "MockMonitor",
        "record every registration with its options",
        attributes=("RegisterResource", "RegisterResourceOutputs"),
    ),
    Internal("pulumi.runtime.settings", "get_monitor", "tell the offline plan's mock engine from a real preview"),
    Internal(
        "pulumi",
        "Output",
        "make an output a real preview shows as unknown",
        parameters=("resources", "future", "is_known"),
    ),
    Internal("pulumi.runtime.config", "CONFIG", "list the config keys the stack sets", attributes=("get",)),
    Internal("pulumi.runtime.config", "get_config_env", "list the config keys the engine passes by environment"),
    Internal("pulumi.runtime.config", "get_config", "read one config value by its full key"),
    Internal("pulumi.runtime.resource", "_get_stack_trace", "skip each resource's Python stack trace offline"),
    Internal("pulumi.output", "reduce", "union an Output.all's resources in place (output.py:662)"),
    Internal(
        "pulumi.log",
        "debug",
        "skip a debug line no logger would print",
        parameters=("msg", "resource", "stream_id", "ephemeral"),
    ),
    Internal("pulumi.runtime.settings", "get_engine", "find the mock engine's logger"),
    Internal(
        "pulumi.runtime.resource",
        "create_urn",
        "compute a URN from plain strings without an output chain",
        parameters=("name", "type_", "parent", "project", "stack"),
    ),
    Internal(
        "pulumi.runtime.resource_cycle_breaker",
        "_add_dep",
        "record a dependency edge in place offline",
        parameters=("from_resource", "to_resource"),
    ),
    Internal("pulumi.runtime.resource_cycle_breaker", "_DEPENDENCIES_PROPERTY", "find the recorded edges"),
    Internal(
        "pulumi.runtime.resource_cycle_breaker",
        "_reachable",
        "check for a cycle without a generator a node",
        parameters=("from_resource", "to_resource"),
    ),
    Internal("pulumi.runtime.rpc", "UNKNOWN", "recognise an unknown value in recorded inputs"),
    Internal("pulumi.runtime.rpc", "_special_sig_key", "recognise secrets and resource references in inputs"),
    Internal("pulumi.runtime.rpc", "_special_secret_sig", "recognise a secret in recorded inputs"),
    Internal("pulumi.runtime.rpc", "_special_resource_sig", "recognise a resource reference in recorded inputs"),
    Internal("pulumi_policy.deserialize", "SPECIAL_SIG_KEY", "keep secrets recognisable in stack rules"),
    Internal("pulumi_policy.deserialize", "SPECIAL_SECRET_SIG", "keep secrets recognisable in stack rules"),
    Internal("pulumi_policy.deserialize", "_deserialize_property", "decode assets as pulumi_policy does"),
    Internal("pulumi_policy.policy", "deserialize_properties", "the decoder the secret-keeping one replaces"),
    Internal("pulumi_policy.proxy", "UnknownValueError", "an unknown value read by a rule"),
    Internal(
        "pulumi_policy",
        "PolicyResourceOptions",
        "the options object the CLI hands each rule",
        parameters=(
            "protect",
            "ignore_changes",
            "delete_before_replace",
            "aliases",
            "custom_timeouts",
            "additional_secret_outputs",
            "parent",
        ),
    ),
    Internal(
        "pulumi_policy",
        "PolicyCustomTimeouts",
        "the timeouts inside those options",
        parameters=("create_seconds", "update_seconds", "delete_seconds"),
    ),
    Internal(
        "pulumi_policy",
        "ResourceValidationArgs",
        "what a resource rule receives",
        parameters=("resource_type", "props", "urn", "name", "opts", "provider", "config"),
    ),
    Internal(
        "pulumi_policy",
        "PolicyResource",
        "one resource of what a stack rule receives",
        parameters=(
            "resource_type",
            "props",
            "urn",
            "name",
            "opts",
            "provider",
            "parent",
            "dependencies",
            "property_dependencies",
        ),
    ),
    Internal("pulumi_policy", "StackValidationArgs", "what a stack rule receives", parameters=("resources", "config")),
)


def _changed(item: Internal, what: str) -> InternalsChanged:
    pins = ", ".join(f"{k}=={v}" for k, v in READ_AGAINST.items())
    return InternalsChanged(
        f"{item.module}.{item.name} {what} (used to {item.use}); install the pinned SDKs "
        f"(pip install -c constraints.txt -e '.[dev]': {pins}) or adapt components/pulumi_internals.py"
    )


def resolve(item: Internal) -> Any:
    """The object behind one entry, checked: present, with its attributes and positional parameters."""
    try:
        value = getattr(importlib.import_module(item.module), item.name)
    except (ImportError, AttributeError):
        raise _changed(item, "is gone") from None
    missing = [a for a in item.attributes if not hasattr(value, a)]
    if missing:
        raise _changed(item, f"has no {', '.join(missing)}")
    if item.parameters:
        found = tuple(p for p in inspect.signature(value).parameters if p != "self")
        if found[: len(item.parameters)] != item.parameters:
            raise _changed(item, f"takes ({', '.join(found)}), not ({', '.join(item.parameters)})")
    return value


def check() -> None:
    """Raise InternalsChanged naming the first private name that moved; return when all are as read."""
    for item in INTERNALS:
        resolve(item)
    _resource_union()


@functools.cache
def _named(module: str, name: str) -> Any:
    return resolve(next(i for i in INTERNALS if i.module == module and i.name == name))


# --- the Pulumi SDK: mocks and the program runner -----------------------------------------------------------

MockMonitor: type = _mocks.MockMonitor
UNKNOWN: str = _rpc.UNKNOWN
SIG_KEY: str = _rpc._special_sig_key
SECRET_SIG: str = _rpc._special_secret_sig
RESOURCE_SIG: str = _rpc._special_resource_sig


def run_program(program: Callable[[], None]) -> None:
    """Run `program` to completion under the current (mock) runtime settings, outputs included."""
    sync_await(_named("pulumi.runtime.stack", "run_pulumi_func")(program))


def sync_await(awaitable: Awaitable[T]) -> T:
    """Wait for one awaitable on the runtime's own loop."""
    return _named("pulumi.runtime.sync_await", "_sync_await")(awaitable)


def _no_stack_trace() -> Any:
    return _named("pulumi.runtime.resource", "_get_stack_trace").__globals__["source_pb2"].StackTrace()


def _urn_at_once(
    name: Any, type_: Any, parent: Any = None, project: str | None = None, stack: str | None = None
) -> Any:
    """create_urn's URN (pulumi/runtime/resource.py:520-556), known at once where every part is a plain string.

    Each registration computes it for an engine-less run only (resource.py:1327, unused with a monitor), through
    three chained outputs: a twentieth of a NodePatch's cost offline. Outputs and resources keep the SDK's path."""
    if not (isinstance(name, str) and isinstance(type_, str) and (parent is None or isinstance(parent, str))):
        return _named("pulumi.runtime.resource", "create_urn")(name, type_, parent, project, stack)
    if parent is not None:
        prefix = parent[0 : parent.rfind("::")] + "$"
    else:
        stack = stack if stack is not None else pulumi.get_stack()
        project = project if project is not None else pulumi.get_project()
        prefix = "urn:pulumi:" + stack + "::" + project + "::"
    return _named("pulumi", "Output").from_input(prefix + type_ + "::" + name)


def _debug_if_heard(
    msg: str, resource: Any = None, stream_id: int | None = None, ephemeral: bool | None = None
) -> None:
    """pulumi.log.debug, skipped where the mock engine's logger drops DEBUG (MockEngine.Log, runtime/mocks.py:398):
    four lines a resource, each a LogRequest built for nothing, a task too where it names a resource."""
    logger = getattr(_named("pulumi.runtime.settings", "get_engine")(), "logger", None)
    if isinstance(logger, logging.Logger) and not logger.isEnabledFor(logging.DEBUG):
        return
    _named("pulumi.log", "debug")(msg, resource, stream_id, ephemeral)


@functools.cache
def _resource_union() -> Any:
    """The code of Output.all's `lambda acc, d: acc | d.resources` (pulumi/output.py:662-664)."""

    def named(code: Any, name: str) -> list[Any]:
        return [c for c in code.co_consts if getattr(c, "co_name", "") == name]

    found = [c for g in named(_named("pulumi", "Output").all.__code__, "gather_data") for c in named(g, "<lambda>")]
    if len(found) != 1 or found[0].co_varnames[:2] != ("acc", "d") or found[0].co_names != ("resources",):
        raise _changed(next(i for i in INTERNALS if i.name == "reduce"), "no longer unions resources as read")
    return found[0]


def _reduce_unions_in_place(function: Callable[[Any, Any], Any], iterable: Any, *initial: Any) -> Any:
    """functools.reduce, but Output.all's resource union grows one set: the SDK's builds a new set per input, so an
    Output.all over thousands of outputs (one per NodePatch) copied millions of entries."""
    if getattr(function, "__code__", None) is not _resource_union() or len(initial) != 1 or type(initial[0]) is not set:
        return functools.reduce(function, iterable, *initial)
    union = set(initial[0])
    for data in iterable:
        union |= data.resources  # `|=` takes the sets `|` takes (a set or frozenset), the same members
    return union


def _add_dep_in_place(from_resource: Any, to_resource: Any) -> None:
    edges = _named("pulumi.runtime.resource_cycle_breaker", "_DEPENDENCIES_PROPERTY")
    found = getattr(from_resource, edges, None)
    if found is None:
        setattr(from_resource, edges, {to_resource})
    else:
        found.add(to_resource)


def _reachable_iteratively(from_resource: Any, to_resource: Any) -> bool:
    edges = _named("pulumi.runtime.resource_cycle_breaker", "_DEPENDENCIES_PROPERTY")
    if not getattr(from_resource, edges, None):  # a resource that depends on nothing reaches only itself
        return bool(from_resource == to_resource)
    frontier, seen = {from_resource}, {from_resource}
    while frontier:  # level by level: the sets do the work per node (thousands of patches behind one resource)
        if to_resource in frontier:
            return True
        frontier = set().union(*(getattr(resource, edges, ()) for resource in frontier)) - seen
        seen |= frontier
    return False


def _answer_inline(awaitable: Awaitable[T]) -> T:
    """A mock answer's serialization run to its end on the spot; one that waits on the loop goes to the SDK's pump.

    The mock monitor serializes each answer with `_sync_await` (pulumi/runtime/mocks.py:330), which on the thread
    of a running loop pumps that loop re-entrantly (pulumi/runtime/sync_await.py:47): answered inline, every
    registration it pumps would nest the next one, a frame deeper each, until RecursionError left a resource
    unresolved and the plan hung. Plain answers never wait, so they need no loop at all.
    """
    if not inspect.iscoroutine(awaitable) or not _loop_running():
        return sync_await(awaitable)
    try:
        waiting_on = awaitable.send(None)
    except StopIteration as done:
        return done.value
    return sync_await(_resumed(awaitable, waiting_on))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _resumed(coroutine: Coroutine[Any, Any, T], waiting_on: Any) -> T:
    """The rest of a coroutine that stopped on `waiting_on`, resumed each time what it waits on is done."""
    while True:
        if waiting_on is None:  # a bare yield (asyncio.sleep(0)): one turn of the loop
            await asyncio.sleep(0)
        else:
            await asyncio.wait([waiting_on])  # its result or error reaches the coroutine when resumed
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value


class _InlineLoop(asyncio.SelectorEventLoop):
    """An event loop whose default executor is the caller: each engine call runs at once on the loop's thread.

    The SDK hands every monitor call to `run_in_executor(None, ...)` (pulumi/runtime/resource.py:1344); the mock
    engine answers in microseconds, and a worker thread per call cost a hand-off, a wake-up of this loop, a second
    event loop in the worker and GIL switches each."""

    def run_in_executor(
        self, executor: concurrent.futures.Executor | None, func: Callable[[*Ts], T], *args: *Ts
    ) -> asyncio.Future[T]:
        if executor is not None:
            return super().run_in_executor(executor, func, *args)
        answered: asyncio.Future[T] = self.create_future()
        try:
            answered.set_result(func(*args))
        except Exception as err:  # the awaiting task raises it, as it would a worker thread's
            answered.set_exception(err)
        return answered


@contextlib.contextmanager
def _inline_loop() -> Iterator[None]:
    """A fresh event loop for one plan whose engine calls run inline; the caller's loop is set back after."""
    if _loop_running():
        yield  # inside a running loop (a test's own): plan on it, with the SDK's worker threads
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            previous: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
        except RuntimeError:
            previous = None
    loop = _InlineLoop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        try:
            _cancel_the_rest(loop)
        finally:
            asyncio.set_event_loop(previous)
            loop.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the plan left running (outputs nobody awaits), as asyncio.run does: a closed loop's pending
    tasks would each log 'Task was destroyed but it is pending!' when collected."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


@contextlib.contextmanager
def offline_shortcuts() -> Iterator[None]:
    """The offline plan's cheaper SDK internals, undone on exit; a real `pulumi up` never enters this.

    Enter it before `set_mocks`: the plan's loop is new, and the root stack resource's outputs belong to it.
    """
    shortcuts = (
        # The stack trace only feeds the engine's diagnostics (where a resource was declared); mocks drop it.
        ("pulumi.runtime.resource", "_get_stack_trace", _no_stack_trace),
        # The SDK copies a resource's whole edge set per new edge (quadratic for one depending on thousands of
        # patches); the same edges, added in place: nothing else holds the set.
        ("pulumi.runtime.resource_cycle_breaker", "_add_dep", _add_dep_in_place),
        # The SDK's cycle check walks a resource's dependencies through one nested generator per node (millions of
        # frames behind thousands of patches); the same walk, the same answer, with a list.
        ("pulumi.runtime.resource_cycle_breaker", "_reachable", _reachable_iteratively),
        # Output.all's resource union, quadratic in its inputs: the same set, grown in place.
        ("pulumi.output", "reduce", _reduce_unions_in_place),
        # Debug lines go to the mock engine's logger, which drops them unless set to DEBUG.
        ("pulumi.log", "debug", _debug_if_heard),
        # The URN of an engine-less run, from plain strings: the same string, known at once.
        ("pulumi.runtime.resource", "create_urn", _urn_at_once),
        # Mock answers are plain data: serialized without the loop, so the engine calls can run inline.
        ("pulumi.runtime.mocks", "_sync_await", _answer_inline),
    )
    saved = [(importlib.import_module(module), name, _named(module, name)) for module, name, _ in shortcuts]
    try:
        for (_, name, fast), (owner, *_) in zip(shortcuts, saved, strict=True):
            setattr(owner, name, fast)
        with _inline_loop():
            yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def root_resource() -> Any:
    """The stack resource of the program that just ran (its `outputs` are the stack outputs)."""
    return _named("pulumi.runtime.settings", "get_root_resource")()


def offline_plan() -> bool:
    """True under the offline plan's mock engine (components/plan.py); False under a real engine's preview or up."""
    return isinstance(_named("pulumi.runtime.settings", "get_monitor")(), MockMonitor)


def unknown_output() -> Any:
    """An output a preview shows as unknown (`output<string>`), as it shows any value known only after `up`."""
    loop = asyncio.get_event_loop()
    value, known = loop.create_future(), loop.create_future()
    value.set_result(None)
    known.set_result(False)
    return _named("pulumi", "Output")(set(), value, known)


def reset_pending_outputs() -> None:
    """MockSettings shares the pending-outputs set: a plan that raised would leak its tasks into the next."""
    _named("pulumi.runtime.settings", "SETTINGS").outputs = set()


def config_values(namespace: str) -> dict[str, str]:
    """Every config value of the stack under `namespace:`, as the engine passed them (strings, JSON)."""
    stored, passed = _named("pulumi.runtime.config", "CONFIG"), _named("pulumi.runtime.config", "get_config_env")
    keys = sorted(set(stored.get()) | set(passed()))  # sorted: the same fault is reported first on every run
    read = _named("pulumi.runtime.config", "get_config")
    return {k: read(k) for k in keys if k.startswith(f"{namespace}:")}


# --- pulumi_policy: the objects the CLI builds for each rule ------------------------------------------------


def policy_options(parent: str | None = None) -> Any:
    """Empty PolicyResourceOptions (the plan gives a rule inputs, not options), under `parent`."""
    timeouts = _named("pulumi_policy", "PolicyCustomTimeouts")(0, 0, 0)
    return _named("pulumi_policy", "PolicyResourceOptions")(False, [], None, [], timeouts, [], parent)


def resource_validation_args(type_: str, props: Any, urn: str, name: str, config: Any) -> Any:
    return _named("pulumi_policy", "ResourceValidationArgs")(type_, props, urn, name, policy_options(), None, config)


def policy_resource(type_: str, props: Any, urn: str, name: str) -> Any:
    return _named("pulumi_policy", "PolicyResource")(type_, props, urn, name, policy_options(), None, None, [], {})


def stack_validation_args(resources: list[Any], config: Any) -> Any:
    return _named("pulumi_policy", "StackValidationArgs")(resources, config)


def unknown_value_error() -> type[Exception]:
    """The exception pulumi_policy raises when a rule reads an unknown value."""
    return _named("pulumi_policy.proxy", "UnknownValueError")


def policy_decoder() -> tuple[Any, Any] | None:
    """(pulumi_policy.deserialize, pulumi_policy.policy) when their decoder can be swapped; None where it changed."""
    try:
        for name in ("SPECIAL_SIG_KEY", "SPECIAL_SECRET_SIG", "_deserialize_property"):
            _named("pulumi_policy.deserialize", name)
        _named("pulumi_policy.policy", "deserialize_properties")
    except InternalsChanged:
        return None
    return importlib.import_module("pulumi_policy.deserialize"), importlib.import_module("pulumi_policy.policy")
