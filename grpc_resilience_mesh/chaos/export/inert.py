"""User-written text (titles, hypotheses, file names, policy names) made inert for what Chaos
Toolkit's reporting does with a journal or an experiment: `chaos report` puts the title, the
description, the tags and every activity's name into Markdown and converts it with pandoc, which
passes raw HTML through and honours links, `{attributes}` and raw TeX. A title such as
`<img src=x onerror=alert(1)>` ran script five times in one exported HTML report.

What starts markup is written as an HTML entity, which pandoc reads back as that character in
plain text: a `<` before a letter, `/`, `!` or `?` (a tag, a comment, an autolink), `[` and `]`
(links, images, spans), `{` and `}` (attributes, raw blocks) and `\\` (TeX, escapes).
Whitespace runs become one space, so nothing starts a Markdown block (a heading, an HTML
block, a link definition) inside a title or a table cell. A `<` that starts nothing stays, so
a bound reads `<= 14` in the journal too.
"""

from __future__ import annotations

import re

_MARKUP = re.compile(r"<(?=[A-Za-z/!?])|[][{}\\]")
_ENTITY = {"<": "&lt;", "[": "&#91;", "]": "&#93;", "{": "&#123;", "}": "&#125;", "\\": "&#92;"}


def inert(text: str) -> str:
    """`text` on one line, every character that would start Markdown or HTML markup an
    entity."""
    return _MARKUP.sub(lambda m: _ENTITY[m[0]], " ".join(text.split()))
