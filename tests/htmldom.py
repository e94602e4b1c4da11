"""A minimal HTML element index for tests: find elements by tag and attributes, read their text.

Used on the pages `splitaudit.report.html` renders and on the DOM headless Chromium dumps of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    """One element: its tag, attributes, the elements inside it and the text of everything inside it."""

    tag: str
    attrs: dict[str, str]
    inside: list[Element] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _Indexer(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        for outer in self.open:
            outer.inside.append(element)
        if tag not in _VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.open.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.parts.append(data)


def elements(page: str) -> list[Element]:
    """Every element of the page, in document order."""
    indexer = _Indexer()
    indexer.feed(page)
    indexer.close()
    return indexer.elements


def find(scope: list[Element] | Element, tag: str, **attrs: str) -> list[Element]:
    """The elements of a page, or inside one element, with this tag and these attributes (`data_topic` means
    `data-topic`, `class_` means `class`); an attribute given as "*" need only be present."""
    wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
    candidates = scope.inside if isinstance(scope, Element) else scope
    return [
        e
        for e in candidates
        if e.tag == tag and all(k in e.attrs and v in ("*", e.attrs[k]) for k, v in wanted.items())
    ]


def one(scope: list[Element] | Element, tag: str, **attrs: str) -> Element:
    """The single element with this tag and these attributes."""
    found = find(scope, tag, **attrs)
    assert len(found) == 1, f"{len(found)} <{tag}> elements with {attrs}"
    return found[0]
