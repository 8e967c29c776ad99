"""The provider SDKs as the program uses them: `gcp`, `k8s`, `command`, each group of theirs (`gcp.compute`,
`k8s.core.v1`) loading only the modules the program names.

The SDKs make each group lazy (`compute = _utilities.lazy_import(...)`, pulumi_gcp/__init__.py:356), but the first
name read from it runs the group's whole __init__.py (pulumi/_utils.py:291), which imports every module of the
group: pulumi_gcp/compute/__init__.py imports 288 of them (0.45 s of the k3s plan's 1.8 s) for the three resources
the k3s stack declares. Here a group answers a name from the one module that defines it, by the layout the SDK
generator gives every group: a resource or function in its own module (`Instance` in instance.py,
`get_engine_versions_output` in get_engine_versions.py, `Pod` in Pod.py), an input type in _inputs.py, an enum in
_enums.py, a subgroup (`k8s.core.v1`) as a group again. A name it cannot place loads the group whole, as its
__init__.py would. Every name is the object the group's own __init__.py binds (tests/test_providers.py compares
them all); only the work done before it is less.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types
from importlib.machinery import ModuleSpec
from typing import Any

import pulumi_command as command
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

__all__ = ["ApiFields", "Group", "command", "gcp", "group", "k8s", "loaded_whole", "module_names"]

ApiFields = Any
"""A part of a Kubernetes object written in the API's own field names (`restartPolicy`), as every object here is.
pulumi_kubernetes' input TypedDicts spell fields by their Python names (`restart_policy`, core/v1/_inputs.py) and
so refuse the API's, which the SDK sends as written (pulumi/runtime/rpc.py serialize_property: `py_name_to_pulumi_name
.get(k) or k`): such a part reaches the SDK untyped, and tests check it against Kubernetes' own schema instead
(tests/helpers/k8s_schema.py)."""

INPUTS, ENUMS, OUTPUTS, INIT = "_inputs", "_enums", "outputs", "__init__.py"
_SUFFIX = re.compile(r"(ArgsDict|Args|Result|_output)$")
_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def module_names(name: str) -> list[str]:
    """The modules of a group that may define `name`, likeliest first (the SDK generator's file names)."""
    base = _SUFFIX.sub("", name.removeprefix("Awaitable"))
    found = [name, _WORD.sub("_", name).lower(), base, _WORD.sub("_", base).lower()]
    if name.endswith(("Args", "ArgsDict")):
        found.append(INPUTS)
    return [*dict.fromkeys(found), ENUMS]


class Group(types.ModuleType):
    """One group package of a provider SDK, whose names load from their own modules on first use."""

    def __init__(self, spec: ModuleSpec):
        super().__init__(spec.name)
        self.__spec__ = spec
        self.__loader__ = spec.loader
        self.__file__ = spec.origin
        self.__path__ = list(spec.submodule_search_locations or ())
        self.__package__ = spec.name

    def __getattr__(self, name: str) -> Any:
        """Only a name not bound yet arrives here."""
        if name.startswith("__") and name.endswith("__"):
            if name == "__all__":  # `from group import *`: the names a whole load binds
                self.load_whole()
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        if not self.place(name):
            self.load_whole()
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None

    def place(self, name: str) -> bool:
        """Bind `name` from the module of this group that defines it; False where none by the generator's names does."""
        files, folders = _listing(self)
        for module in module_names(name):
            if module in folders:
                setattr(self, module, group(f"{self.__name__}.{module}"))
            elif module in files:
                self._bind(module)
            if name in self.__dict__:
                return True
        return False

    def __dir__(self) -> list[str]:
        self.load_whole()
        return sorted(self.__dict__)

    def _bind(self, module_name: str) -> None:
        """What the group's __init__.py binds of one module: `from .X import *`, or `from . import outputs`. No two
        modules of a group export one name (tests/test_providers.py), so the order they load in changes nothing."""
        module = importlib.import_module(f"{self.__name__}.{module_name}")
        setattr(self, module_name, module)
        if module_name != OUTPUTS:
            for name in getattr(module, "__all__", ()):
                if name in vars(module):  # a module still being imported has only its first names
                    setattr(self, name, vars(module)[name])

    def load_whole(self) -> None:
        """Run the group's own __init__.py here: every name it binds, bound as it binds them."""
        if self.__name__ in _WHOLE:
            return
        _WHOLE.add(self.__name__)
        for folder in _listing(self)[1]:  # its subgroups stay groups: the SDK's lazy_import returns what is there
            group(f"{self.__name__}.{folder}")
        exec(self.__spec__.loader.get_code(self.__name__), self.__dict__)  # type: ignore[union-attr]


_LISTINGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
_WHOLE: set[str] = set()


def loaded_whole() -> list[str]:
    """The groups loaded whole so far: a name read from one that no module by the generator's names defines."""
    return sorted(_WHOLE)


def _listing(package: Group) -> tuple[frozenset[str], frozenset[str]]:
    """(module names, subpackage names) of a group's folder, read once."""
    found = _LISTINGS.get(package.__name__)
    if found is None:
        folder = package.__path__[0]
        entries = os.listdir(folder)
        files = frozenset(e[:-3] for e in entries if e.endswith(".py") and e != INIT)
        folders = frozenset(e for e in entries if "." not in e and os.path.isfile(os.path.join(folder, e, INIT)))
        found = _LISTINGS[package.__name__] = (files, folders)
    return found


def group(name: str) -> types.ModuleType:
    """The group package `name` (its parent imported), made a Group unless something already loaded it whole."""
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules[parent_name]
    current = sys.modules.get(name)
    if isinstance(current, Group) or type(current) is types.ModuleType:  # a plain module: loaded already
        return current
    # Not imported yet, or the SDK's lazy module, not loaded yet: replaced before anything reads a name from it.
    folder = os.path.join(parent.__path__[0], child)
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, INIT), submodule_search_locations=[folder])
    if spec is None:  # a .py path always has a loader: only a broken install gets here
        raise ImportError(f"no {INIT} for {name} in {folder}")
    made = Group(spec)
    sys.modules[name] = made
    setattr(parent, child, made)
    return made


def _install(provider: types.ModuleType) -> None:
    """Each group the SDK's __init__.py made lazy, unloaded so far, becomes a Group."""
    for name, value in list(vars(provider).items()):
        if isinstance(value, types.ModuleType) and type(value) is not types.ModuleType and not isinstance(value, Group):
            group(f"{provider.__name__}.{name}")


for _provider in (gcp, k8s, command):
    _install(_provider)
