"""A strict HTML tree for the report tests, built by the standard library's parser.

    root = parse(page)                 # AssertionError on a stray or unclosed tag
    root.find_all("article", cls="card")[0].text()

Strict on purpose: every non-void element must be closed by its own end tag, in
order, so a string that escaped its escaping (an injected `<img>`, a stray `</li>`)
shows up as a tag the test did not expect, or as a broken tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

__all__ = ["Element", "parse"]

# HTML's void elements: no end tag.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None] = field(default_factory=dict)
    children: list[Element | str] = field(default_factory=list)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self) -> list[Element]:
        out = [self]
        for child in self.children:
            if isinstance(child, Element):
                out.extend(child.iter())
        return out

    def find_all(self, tag: str, cls: str | None = None) -> list[Element]:
        return [e for e in self.iter() if e.tag == tag and (cls is None or cls in e.classes())]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        open_tag = self.stack[-1].tag
        assert tag == open_tag, f"</{tag}> closes <{open_tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Element:
    builder = _Builder()
    builder.feed(page)
    builder.close()
    assert [e.tag for e in builder.stack] == ["#document"], "unclosed elements"
    return builder.root
