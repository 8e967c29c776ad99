"""The README and the docs/ pages as the tests read them: their text, commands, sections and links."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
"""Every page a reader is sent to; docs/host-proof/ holds generated records, not instructions."""


def text(page: Path) -> str:
    return page.read_text()


def joined(page: Path) -> str:
    """The page with shell line continuations joined, so a command reads as one line."""
    return re.sub(r"\\\n\s*", " ", page.read_text())


def commands(pattern: str) -> list[tuple[str, str]]:
    """(page, the rest of the line) for each line of any page starting with `pattern`, a trailing comment dropped."""
    found = []
    for page in PAGES:
        for rest in re.findall(rf"^{pattern}(.+?)(?:\s+#.*)?$", joined(page), re.M):
            found.append((str(page.relative_to(ROOT)), rest))
    return found


def section(page_text: str, title: str, level: int = 2) -> str:
    """A section of a page, from its heading to the next heading of the same level or above."""
    marks = "#" * level
    start = page_text.index(f"\n{marks} {title}") + 1
    body = page_text.index("\n", start)
    end = re.search(rf"^#{{1,{level}}} ", page_text[body:], re.M)
    return page_text[start : body + end.start()] if end else page_text[start:]


def outside_code(page_text: str) -> str:
    """The page without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", page_text, flags=re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", outside_code(page.read_text()), re.M)}


def links(page: Path) -> list[str]:
    """Every link and image target of a page outside code, but web addresses."""
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", outside_code(page.read_text()))
    return [t for t in targets if not re.match(r"[a-z]+:", t)]
