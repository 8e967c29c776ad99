"""A stack file as `pulumi up` reads it: gopkg.in/yaml.v3's scalars, Pulumi's round trip to JSON, its key rules.

The CLI decodes Pulumi.<stack>.yaml with gopkg.in/yaml.v3 v3.0.1 (pulumi/pulumi sdk/go/common/encoding/marshal.go:27
and :115, pinned in sdk/go.mod), into `any` first, then re-encodes it and decodes `config:` into config.Map
(sdk/go/common/workspace/loaders.go:173-227); the program receives each value as text, structured ones as JSON
(sdk/go/common/resource/config/object.go:403 MarshalString). PyYAML's YAML 1.1 reads several scalars otherwise, so
the plan resolves them as yaml.v3 does (go-yaml/yaml v3.0.1 resolve.go):

- only true/True/TRUE and false/False/FALSE are booleans (resolve.go:52-53): `yes`, `no`, `on`, `off` stay text;
- `1:30` stays text: no sexagesimal numbers (resolve.go:165);
- integers are Go's `strconv.ParseInt(s, 0, 64)` with `_` removed (resolve.go:192): `0o17` is 15, `0x1F` is 31,
  `08` is the float 8; `017` is 15 too, where YAML 1.2 reads 17, so the plan refuses it (misread.py);
- a date or timestamp (resolve.go:185, :294) is a time.Time, which would reach the program as Go's `Time.String()`
  text, `2026-01-01 00:00:00 +0000 UTC` (object.go:490), so the plan refuses it (misread.py);
- `.inf` and `.nan` are floats JSON cannot hold: `pulumi up` stops reading the file (`json: unsupported value`);
- `!!binary` is its decoded text (decode.go:574); a key set twice in one mapping is an error (decode.go:776).

A stack-file key without a namespace gets the project's (loaders.go:61-89); `-c` keys follow the CLI's
`parseConfigKey` (pkg/cmd/pulumi/config/io.go:388) and config.ParseKey (sdk/go/common/resource/config/key.go:45).
"""

from __future__ import annotations

import base64
import binascii
import calendar
import math
import re
from decimal import Decimal
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import BaseResolver

from components.contracts.settings import NAMESPACE

PROJECT = NAMESPACE
"""The project name in Pulumi.yaml: the namespace a key without one is given."""

_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULL = ("", "~", "null", "Null", "NULL")
_FLOAT = {**dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan), **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf",
          "+.Inf", "+.INF"), math.inf), **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf)}  # fmt: skip
_RESOLVABLE = ("", "!!str", "!!bool", "!!int", "!!float", "!!null", "!!timestamp")
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")  # what Go's ParseFloat takes after a leading '.'
_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2}))"
    r"|(?: +(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,](\d+))?))?$"
)  # resolve.go:294's four layouts: RFC 3339 (T or t), space-separated without a zone (time.Parse takes a run of
# spaces for the layout's one), date only
_UINT64 = 2**64 - 1
_TAGS = {"!!null": "null", "!!bool": "bool", "!!int": "int", "!!float": "float", "!!timestamp": "timestamp",
         "!!str": "str"}  # fmt: skip


class YamlError(ValueError):
    """What yaml.v3 or Pulumi's config would refuse in a stack file or a `-c` value."""


class Stamp(str):
    """A scalar yaml.v3 reads as a date: its value is the Time.String() text the program gets, `written` the file's."""

    written: str


class LeadingZero(int):
    """An integer written with a leading 0 that yaml.v3 reads as octal (`017` is 15) and YAML 1.2 as decimal (17)."""

    written: str


_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")


def _octal_misread(text: str) -> int | None:
    """The octal value yaml.v3 gives a leading-zero integer whose decimal reading differs, else None (`08`, `00`)."""
    plain = text.replace("_", "")
    if not _LEADING_ZERO.match(plain):
        return None
    number = _go_parse_int(plain, 0)
    number = number if number is not None else _go_parse_uint(plain, 0)
    return number if number is not None and number != int(plain) else None


def _go_parse_uint(text: str, base: int) -> int | None:
    """strconv.ParseUint(text, base, 64), or None where Go returns an error."""
    if not text:
        return None
    if base == 0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in "box" and prefix:
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
    value = 0
    for char in text:
        digit = int(char, 36) if char.isascii() and char.isalnum() else 99
        if digit >= base:
            return None
        value = value * base + digit
        if value > _UINT64:
            return None
    return value


def _go_parse_int(text: str, base: int) -> int | None:
    """strconv.ParseInt(text, base, 64), or None where Go returns an error."""
    negative = text[:1] == "-"
    unsigned = _go_parse_uint(text[1:] if text[:1] in "+-" and text else text, base)
    if unsigned is None or unsigned > 2**63 - (0 if negative else 1):
        return None
    return -unsigned if negative else unsigned


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None  # Go's ParseFloat reports a range error for ±Inf


def _go_time_text(match: re.Match[str]) -> str | None:
    """A yaml.v3 timestamp as the program sees it: Go's Time.String() after Pulumi's round trip (UTC clock)."""
    year, month, day = (int(g) for g in match.group(1, 2, 3))
    days = (31, 29 if calendar.isleap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not (1 <= month <= 12 and 1 <= day <= days[month - 1]):
        return None
    clock = match.group(4, 5, 6, 7) if match.group(4) else match.group(9, 10, 11, 12)
    hour, minute, second = (int(g) for g in clock[:3]) if clock[0] else (0, 0, 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    fraction = (clock[3] or "")[:9].rstrip("0")
    zone = match.group(8) or "Z"
    if zone == "Z" or zone[1:] == "00:00":  # an RFC 3339 round trip writes offset 0 as Z: UTC
        offset = "+0000 UTC"
    else:
        if int(zone[1:3]) > 24 or int(zone[4:]) > 60:
            return None
        numeric = zone.replace(":", "")
        offset = f"{numeric} {numeric}"  # Go names a parsed offset zone by the offset itself
    return (
        f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        f"{'.' + fraction if fraction else ''} {offset}"
    )


def go_resolve(tag: str, text: str) -> tuple[str, Any]:
    """yaml.v3's resolve(tag, text) (resolve.go:143): the tag it settles on and the value, timestamps as text."""
    if tag not in _RESOLVABLE:
        return tag, text
    found = _resolve(tag, text)
    if tag in ("", found[0], "!!str"):
        return found
    if tag == "!!float" and found[0] == "!!int":
        return "!!float", float(found[1])
    raise YamlError(f"cannot decode {found[0]} `{text}` as a {tag}")


def _resolve(tag: str, text: str) -> tuple[str, Any]:
    if tag == "!!str":
        return "!!str", text
    first = text[:1]
    if text in _NULL:
        return "!!null", None
    if text in _BOOL:
        return "!!bool", _BOOL[text]
    if text in _FLOAT:
        return "!!float", _FLOAT[text]
    if text == "<<":
        return "!!merge", text
    if first == "." and _DOT_FLOAT.match(text):
        value = _finite(float(text))
        if value is not None:
            return "!!float", value
    if first and first in "+-0123456789":
        if tag in ("", "!!timestamp"):
            match = _TIMESTAMP.match(text)
            stamp = _go_time_text(match) if match else None
            if stamp is not None:
                return "!!timestamp", stamp
        plain = text.replace("_", "")
        for number in (_go_parse_int(plain, 0), _go_parse_uint(plain, 0)):
            if number is not None:
                return "!!int", number
        if _YAML_STYLE_FLOAT.match(plain):
            value = _finite(float(plain))
            if value is not None:
                return "!!float", value
        for prefix, base in (("0b", 2), ("0o", 8)):
            if plain.startswith(prefix):
                number = _go_parse_int(plain[2:], base)
                number = number if number is not None else _go_parse_uint(plain[2:], base)
                if number is not None:
                    return "!!int", number
            elif plain.startswith("-" + prefix):
                number = _go_parse_int("-" + plain[3:], base)
                if number is not None:
                    return "!!int", number
    return "!!str", text


class _Resolver(BaseResolver):
    """No YAML 1.1 implicit resolvers: a plain scalar's tag is the one yaml.v3 settles on."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            short = _resolve("", value)[0]
            return "tag:yaml.org,2002:" + ("merge" if short == "!!merge" else _TAGS[short])
        return super().resolve(kind, value, implicit)


class _Constructor(SafeConstructor):
    def construct_go_scalar(self, node: Any) -> Any:
        if not isinstance(node, yaml.ScalarNode):  # decode.go:506: a collection decodes by its kind, whatever its tag
            return self.construct_go_other(node)
        text = self.construct_scalar(node)
        try:
            tag, value = go_resolve("!!" + node.tag.rsplit(":", 1)[-1], text)
        except YamlError as err:
            raise ConstructorError(None, None, str(err), node.start_mark) from None
        marked: Stamp | LeadingZero
        if tag == "!!timestamp":
            marked = Stamp(value)
        elif tag in ("!!int", "!!float") and _octal_misread(text) is not None:
            marked = LeadingZero(value)  # `!!float 017` too: ParseInt's 15 first (resolve.go:192), then float
        else:
            return value
        marked.written = text
        return marked

    def construct_go_binary(self, node: Any) -> str:
        try:
            text = re.sub("[\r\n]", "", self.construct_scalar(node))  # Go's base64 skips \r and \n alone
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise ConstructorError(None, None, "!!binary value contains invalid base64 data", node.start_mark) from None

    def construct_go_other(self, node: Any) -> Any:
        """A tag yaml.v3 does not resolve (`!foo`, `!!set`): the node as it is, a scalar as its text."""
        if isinstance(node, yaml.MappingNode):
            return self.construct_yaml_map_flat(node)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_sequence(node, deep=True)
        return self.construct_scalar(node)

    def construct_yaml_map_flat(self, node: Any) -> dict[Any, Any]:
        return self.construct_mapping(node, deep=True)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[type, str], int] = {}
        for key_node, _ in node.value:
            identity = (type(key_node), key_node.value if isinstance(key_node, yaml.ScalarNode) else "")
            if identity in seen:  # decode.go:771-777: same kind, same text
                raise ConstructorError(
                    None,
                    None,
                    f"mapping key {key_node.value!r} already defined at line {seen[identity]}",
                    key_node.start_mark,
                )
            seen[identity] = key_node.start_mark.line + 1
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ConstructorError(None, None, "a mapping key that is not a single value", key_node.start_mark)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_Constructor.yaml_constructors = {
    k: v
    for k, v in SafeConstructor.yaml_constructors.items()
    if k is None or not str(k).startswith("tag:yaml.org,2002:")
}
for _name in ("null", "bool", "int", "float", "timestamp"):
    _Constructor.add_constructor(f"tag:yaml.org,2002:{_name}", _Constructor.construct_go_scalar)
_Constructor.add_constructor("tag:yaml.org,2002:str", _Constructor.construct_go_scalar)
_Constructor.add_constructor("tag:yaml.org,2002:seq", SafeConstructor.construct_yaml_seq)
_Constructor.add_constructor("tag:yaml.org,2002:map", SafeConstructor.construct_yaml_map)
_Constructor.add_constructor("tag:yaml.org,2002:binary", _Constructor.construct_go_binary)
_Constructor.add_constructor(None, _Constructor.construct_go_other)


_BREAKS = "\r\n\x85\u2028\u2029"


class _Scanner(yaml.scanner.Scanner):
    """PyYAML's scanner with libyaml's tab rules, which yaml.v3 ports (yaml.v3 scannerc.go)."""

    ESCAPE_REPLACEMENTS: ClassVar[dict[str, str]] = {
        k: v for k, v in yaml.scanner.Scanner.ESCAPE_REPLACEMENTS.items() if k != "/"
    }  # scannerc.go:2540-2560 knows no `\/` escape: "found unknown escape character"

    def scan_to_next_token(self) -> None:
        if self.index == 0 and self.peek() == "\ufeff":
            self.forward()
        while True:  # scannerc.go:1558: a tab separates tokens in flow context or where no simple key may start
            while self.peek() == " " or (
                self.peek() == "\t" and (self.flow_level or not self.allow_simple_key)  # type: ignore[has-type]
            ):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0" + _BREAKS:
                    self.forward()
            if not self.scan_line_break():
                return
            if not self.flow_level:
                self.allow_simple_key = True

    def scan_block_scalar_indentation(self) -> Any:
        chunks, max_indent, end_mark = super().scan_block_scalar_indentation()
        self._no_tab_in_indentation()
        return chunks, max_indent, end_mark

    def scan_block_scalar_breaks(self, indent: int) -> Any:
        chunks, end_mark = super().scan_block_scalar_breaks(indent)
        if self.column < indent:
            self._no_tab_in_indentation()
        return chunks, end_mark

    def _no_tab_in_indentation(self) -> None:
        if self.peek() == "\t":  # scannerc.go:2402
            raise yaml.scanner.ScannerError(
                "while scanning a block scalar",
                None,
                "found a tab character where an indentation space is expected",
                self.get_mark(),
            )

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> Any:
        """Blanks inside a plain scalar, tabs among them (scannerc.go:2777-2790)."""
        chunks: list[str] = []
        length = 0
        while self.peek(length) in " \t":
            length += 1
        whitespaces = self.prefix(length)
        self.forward(length)
        if self.peek() not in _BREAKS:
            return [whitespaces] if whitespaces else chunks
        line_break = self.scan_line_break()
        self.allow_simple_key = True
        breaks: list[str] = []
        while True:
            if self.column == 0 and self.prefix(3) in ("---", "...") and self.peek(3) in "\0 \t" + _BREAKS:
                return None
            if self.peek() == "\t" and self.column < indent:
                raise yaml.scanner.ScannerError(
                    "while scanning a plain scalar", start_mark, "found a tab character that violates indentation",
                    self.get_mark(),
                )  # fmt: skip
            if self.peek() in " \t":
                self.forward()
            elif self.peek() in _BREAKS:
                breaks.append(self.scan_line_break())
            else:
                break
        chunks.append(line_break if line_break != "\n" else "" if breaks else " ")
        return [*chunks, *breaks]

    def scan_flow_scalar(self, style: Any) -> Any:
        token = super().scan_flow_scalar(style)
        if any("\ud800" <= ch <= "\udfff" for ch in token.value):  # scannerc.go:2622: no surrogate escapes
            raise yaml.scanner.ScannerError(
                "while parsing a quoted scalar", token.start_mark, "found invalid Unicode character escape code",
                token.end_mark,
            )  # fmt: skip
        return token


class _Parser(yaml.parser.Parser):
    def process_directives(self) -> Any:
        found = super().process_directives()
        if self.yaml_version not in (None, (1, 1)):  # parserc.go:1195: only %YAML 1.1
            raise yaml.parser.ParserError(None, None, "found incompatible YAML document", None)
        return found


class _Composer(yaml.composer.Composer):
    """Anchors as yaml.v3's parser keeps them: a later `&x` replaces an earlier one (decode.go:143), and an alias
    inside its own anchor's value is refused (decode.go:536)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        composing: set[str] = self.__dict__.setdefault("_composing", set())
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            if event.anchor in composing:
                raise yaml.composer.ComposerError(
                    None, None, f"anchor '{event.anchor}' value contains itself", event.start_mark
                )
            return super().compose_node(parent, index)
        anchor = self.peek_event().anchor
        if anchor is None:
            return super().compose_node(parent, index)
        self.anchors.pop(anchor, None)
        composing.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            composing.discard(anchor)


class _Loader(yaml.reader.Reader, _Scanner, _Parser, _Composer, _Constructor, _Resolver):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        _Scanner.__init__(self)
        _Parser.__init__(self)
        _Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)


def load(text: str) -> Any:
    """The first YAML document of `text` as yaml.v3 decodes it into `any` (yaml.Unmarshal reads only the first)."""
    loader = _Loader(text)
    try:
        return loader.construct_document(loader.get_node()) if loader.check_node() else None
    finally:
        loader.dispose()


def key_text(key: Any) -> str:
    """A mapping key as Pulumi's config keeps it: fmt's %v of the decoded value (object.go:515)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "<nil>"
    if isinstance(key, float) and key.is_integer() and abs(key) < 1e21:
        return str(int(key))
    return str(key)


def as_program_sees(value: Any, where: str) -> Any:
    """A decoded value as the program receives it after Pulumi's JSON: keys text, whole floats whole numbers."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("secure"), str):
            return value  # a secret: config.CiphertextSecret (object.go:541)
        return {key_text(k): as_program_sees(v, f"{where}{key_step(key_text(k))}") for k, v in value.items()}
    if isinstance(value, list):
        return [as_program_sees(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (Stamp, LeadingZero)):
        return str(value) if isinstance(value, Stamp) else int(value)  # the value alone; misread() names the fault
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YamlError(
                f"{where}: {_yaml_float(value)} is not a number JSON can hold, and Pulumi keeps config as "
                "JSON: `pulumi up` stops reading the stack file (json: unsupported value); give a finite "
                "number"
            )
        if value.is_integer() and abs(value) < 1e21:
            return int(Decimal(repr(value)))  # encoding/json writes a whole float64 in its shortest digits: 8.0 as 8
    return value


def key_step(name: str) -> str:
    """`.name`, or `["a name"]` where a dot path cannot hold it: how a key's full name steps into a mapping."""
    return f".{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"[{name!r}]".replace("'", '"')


def _yaml_float(value: float) -> str:
    return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")


def parse_key(text: str) -> tuple[str, str]:
    """config.ParseKey (key.go:45): `namespace:name`, or the old `namespace:config:name`; anything else is refused."""
    parts = text.split(":")
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3 and parts[1] == "config" and parts[0] and parts[2]:
        return parts[0], parts[2]
    raise YamlError(
        f"could not parse {text} as a configuration key (configuration keys should be of the form `<namespace>:<name>`)"
    )


def stack_file_key(text: str) -> tuple[str, str]:
    """A stack file's config key: one without ':' gets the project's namespace (loaders.go:73-79)."""
    return parse_key(text if ":" in text else f"{PROJECT}:{text}")


def path_key(text: str) -> tuple[str, str]:
    """A `--path` key as the CLI reads it (io.go:388): the namespace rule on the first segment only."""
    cut = min((i for i in (text.find("["), text.find(".")) if i > 0), default=-1)
    if cut > 0:
        namespace, name = stack_file_key(text[:cut])
        return namespace, name + text[cut:]
    return stack_file_key(text)
