"""Self-contained HTML rendering: inline CSS, figures as base64 PNG, no scripts, no links out."""

from __future__ import annotations

import base64
import html

from sweep.report._blocks import Block, Bullets, Code, Figure, Heading, KeyValues, Paragraph, Table

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1150px;
margin:2em auto;padding:0 1.5em;color:#1f2328;line-height:1.45;background:#fff}
h1{border-bottom:2px solid #d0d7de;padding-bottom:.3em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.88em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f6f8fa}
table.kv td:first-child{font-weight:600;white-space:nowrap;background:#f6f8fa}
caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0;color:#57606a}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #d0d7de}
figcaption{font-style:italic;color:#57606a;font-size:.9em}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}
p.note{color:#57606a;font-size:.92em}
p.good,p.bad,p.neutral{padding:.7em 1em;border-left:6px solid;border-radius:3px}
p.good{background:#dafbe1;border-color:#1a7f37}p.bad{background:#ffebe9;border-color:#cf222e}
p.neutral{background:#fff8c5;border-color:#9a6700}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
"""


def _table(
    header: list[str] | None, rows: list[list[str]], caption: str = "", kv: bool = False
) -> str:
    parts = ['<table class="kv">' if kv else "<table>"]
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    if header:
        parts.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def render_html(blocks: list[Block], figures: dict[str, bytes], title: str) -> str:
    """Render blocks as one self-contained HTML page.

    Parameters
    ----------
    blocks : list of Block
        The report's content.
    figures : dict of str to bytes
        PNG bytes of each figure named by a :class:`Figure` block.
    title : str
        The page title.

    Returns
    -------
    str
        HTML5 with inline CSS and ``data:image/png;base64`` images; readable offline.
    """
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            cls = f' class="{block.style}"' if block.style else ""
            body.append(f"<p{cls}>{html.escape(block.text)}</p>")
        elif isinstance(block, KeyValues):
            body.append(_table(None, [[k, v] for k, v in block.rows], kv=True))
        elif isinstance(block, Table):
            body.append(_table(block.header, block.rows, block.caption))
        elif isinstance(block, Figure):
            data = base64.b64encode(figures[block.name]).decode("ascii")
            alt = html.escape(block.caption)
            body.append(
                f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">'
                f"<figcaption>{alt}</figcaption></figure>"
            )
        elif isinstance(block, Code):
            pre = f"<pre><code>{html.escape(block.text)}</code></pre>"
            if block.summary:
                pre = f"<details><summary>{html.escape(block.summary)}</summary>{pre}</details>"
            body.append(pre)
        elif isinstance(block, Bullets):
            body.append(
                "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block.items) + "</ul>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
