"""The small HTML vocabulary of the audit page: escaped values, tables whose rows carry
``data-*`` attributes, definition lists, sections, and the page's inline CSS. Every value is
HTML-escaped; numbers get thousands separators; hashes a monospace font."""

from __future__ import annotations

import html
import re
from typing import Any

HASH = re.compile(r"[0-9a-f-]{16,}(\.dir)?( \+dirty)?")  # shown in a monospace font
CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:1.8em}th{background:#f2f2f2}
table{border-collapse:collapse;width:100%}dt{font-weight:bold}dd{margin:0}.na{background:#eee}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.PASS,.FAIL{font-weight:bold}
code,.h{font-family:ui-monospace,monospace;font-size:.88em;word-break:break-all}
.PASS{background:#dff5df}.FAIL{background:#fbdcdc}dl{display:grid;gap:.2em 1em}
.warn{background:#fff3cd;padding:.4em .6em;border-left:4px solid #e0a800}
dl{grid-template-columns:max-content auto}"""


def esc(value: Any) -> str:
    """``value`` as escaped HTML text (quotes included, for attributes)."""
    return html.escape(str(value), quote=True)


def num(value: Any) -> str:
    """A count with thousands separators; anything else as it is; None as a dash."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if float(value).is_integer() else f"{value:,.6g}"


def _attrs(data: dict[str, Any], cls: str = "") -> str:
    out = "".join(f' {k.replace("_", "-")}="{esc(v)}"' for k, v in data.items())
    return out + (f' class="{cls}"' if cls else "")


def cell(value: Any) -> str:
    """A cell: a value, ``(value, field)`` for a ``data-field`` cell or ``(value, field,
    class)``. Numbers are right-aligned, hashes monospace."""
    value, field, cls = (*value, "")[:3] if isinstance(value, tuple) else (value, "", "")
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    cls = cls or ("n" if numeric else "h" if HASH.fullmatch(str(value)) else "")
    return f"<td{_attrs({'data_field': field} if field else {}, cls)}>{esc(num(value))}</td>"


def row(data: dict[str, Any], *cells: Any) -> str:
    """A table row whose ``data`` become ``data-*`` attributes."""
    named = {f"data_{k}": v for k, v in data.items()}
    return f"<tr{_attrs(named)}>{''.join(map(cell, cells))}</tr>"


def tagged(**values: Any) -> list[tuple[Any, str]]:
    """Cells with a ``data-field`` each, in keyword order."""
    return [(v, k) for k, v in values.items()]


def table(head: str, rows: list[str]) -> str:
    """A table; ``head`` names the columns, separated by ``|``."""
    header = "".join(f"<th>{esc(h)}</th>" for h in head.split("|"))
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def span(value: Any, ident: str) -> str:
    """A value with an id (hashes and ids in a monospace font)."""
    cls = "h" if HASH.fullmatch(str(value)) else ""
    return f"<span{_attrs({'id': ident}, cls)}>{esc(num(value))}</span>"


def items(*entries: tuple[str, Any, str]) -> str:
    """A definition list of (label, value, id)."""
    pairs = "".join(f"<dt>{esc(k)}</dt><dd>{span(v, i)}</dd>" for k, v, i in entries)
    return f"<dl>{pairs}</dl>"


def section(ident: str, title: str, *parts: str) -> str:
    return f'<section id="{esc(ident)}"><h2>{esc(title)}</h2>{"".join(parts)}</section>'


def para(text: str, cls: str = "", ident: str = "") -> str:
    return f"<p{_attrs({'id': ident} if ident else {}, cls)}>{esc(text)}</p>"
