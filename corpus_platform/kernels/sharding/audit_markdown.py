"""The audit page as Markdown, for the Dagster UI (which renders Markdown metadata, not HTML).

Converted from the page itself (:func:`.audit_page.render_audit_page`),
so the UI says exactly what the page says: headings stay headings, definition lists become
bullet lists, tables become pipe tables and the replay commands a code block.
"""

from __future__ import annotations

from html.parser import HTMLParser

SKIPPED = {"head", "style", "title"}
BLOCKS = {"h1": "# ", "h2": "## ", "p": ""}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


class _Markdown(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.text: list[str] = []
        self.skipping = 0
        self.term = ""
        self.rows: list[list[str]] = []
        self.code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in SKIPPED:
            self.skipping += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag == "pre":
            self.code = []
        if tag in {*BLOCKS, "dt", "dd", "th", "td", "code"}:
            self.text = []

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.text.append(data)

    def _take(self) -> str:
        text, self.text = "".join(self.text), []
        return " ".join(text.split())

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED:
            self.skipping -= 1
        elif tag in BLOCKS:
            self.lines += [BLOCKS[tag] + self._take(), ""]
        elif tag == "dt":
            self.term = self._take()
        elif tag == "dd":
            self.lines.append(f"- **{self.term}**: {self._take()}")
        elif tag == "dl":
            self.lines.append("")
        elif tag in ("th", "td") and self.rows:
            self.rows[-1].append(_cell(self._take()))
        elif tag == "code" and self.code is not None:
            self.code.append(self._take())
        elif tag == "pre" and self.code is not None:
            self.lines += ["```", *self.code, "```", ""]
            self.code = None
        elif tag == "table":
            self._table()

    def _table(self) -> None:
        rows, self.rows = [r for r in self.rows if r], []
        if not rows:
            return
        head, body = rows[0], rows[1:]
        self.lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        self.lines += ["| " + " | ".join(r) + " |" for r in body]
        self.lines.append("")


def audit_markdown(page: str) -> str:
    """The audit page ``page`` (HTML) as Markdown."""
    parser = _Markdown()
    parser.feed(page)
    parser.close()
    return "\n".join(parser.lines).strip() + "\n"
