"""What `pulumi up` would hand the program otherwise than the stack file writes it, found before any resource.

yaml.v3 reads a plain date as a time.Time (resolve.go:185, :294), which the program receives as Go's Time.String()
text (object.go:490), and a leading-zero integer as octal (resolve.go:192, strconv.ParseInt base 0) where YAML 1.2
reads decimal: stack_yaml.load marks both (Stamp, LeadingZero), and the plan refuses them at their key.
"""

from __future__ import annotations

from typing import Any

from components.config.stack_yaml import LeadingZero, Stamp, key_step, key_text


def misread(value: Any, where: str) -> tuple[str, str] | None:
    """The first value `pulumi up` would hand the program otherwise than written (a date, a leading-zero integer),
    as (its full key, the problem and fix), or None: `value` as load() decoded it, found at key `where`."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("secure"), str):
            return None
        found = (misread(v, f"{where}{key_step(key_text(k))}") for k, v in value.items())
        return next((f for f in found if f), None)
    if isinstance(value, list):
        return next((f for f in (misread(v, f"{where}[{i}]") for i, v in enumerate(value)) if f), None)
    if isinstance(value, Stamp):
        return where, (
            f"{value.written} is a date to `pulumi up` (gopkg.in/yaml.v3), which hands the program "
            f"`{value}` instead; quote it ('{value.written}') to keep it as written"
        )
    if isinstance(value, LeadingZero):
        decimal = int(value.written.replace("_", ""))
        return where, (
            f"{value.written} is octal {int(value)} to `pulumi up` (gopkg.in/yaml.v3 reads a leading 0 as octal), "
            f"where YAML 1.2 reads {decimal}; write it without the leading zero ({decimal}), or as "
            f"{'-' if value < 0 else ''}0o{abs(int(value)):o} for octal"
        )
    return None
