"""Markup removal: HTML, Pango and KUIT tags where they are markup, not metavariables.

Catalogs mix rich text ("<b>Warning:</b> ...", "<a href=...>", KDE's "<filename>%1
</filename>") with command-line usage that names arguments in angle brackets ("cp <file>
<dir>", "<command> [options]"). A tag is removed only where it is certainly markup: its
closing tag is present in the same string, it has attributes, it is self-closing, or it is
an HTML-only tag that no usage line would contain (<p>, <br>, <qt>, ...). Entities are
decoded only in strings that are markup: tags removed, or characters escaped for a markup
parser ("&lt;", "&amp;", "&#8482;"); elsewhere an '&' is text or an accelerator marker.
"""

import html
import re

# Tags that separate blocks of text become a space; inline tags vanish.
BLOCK_TAGS = frozenset("""
    p br div li ul ol dl dt dd hr h1 h2 h3 h4 h5 h6 table tr td th thead tbody blockquote
    pre center html body head title qt nl para list item note warning subtitle img
""".split())
INLINE_TAGS = frozenset("""
    a b i u s em strong tt code span font big small sub sup kbd cite strike del ins nobr
    markup application bcode command email emphasis envar filename icode interface link
    message numid placeholder resource shortcut
""".split())
KNOWN_TAGS = BLOCK_TAGS | INLINE_TAGS
# Never a usage metavariable: removed even without a closing tag or attributes.
HTML_ONLY_TAGS = frozenset("p br hr qt html body head li ul ol tr td th table nl".split())

# Characters escaped for a markup parser (Pango's "join &lt;room&gt;"): the text is markup
# even when it has no tags. A bare "&" or an unknown "&name;" says nothing.
_ESCAPED = re.compile(r"&(lt|gt|amp|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(\s[^<>]*?)?\s*(/?)>")


def _is_markup(match, closing_names):
    slash, name, attributes, self_closing = match.groups()
    name = name.lower()
    if name not in KNOWN_TAGS:
        return False
    return bool(slash or self_closing or name in HTML_ONLY_TAGS or name in closing_names
                or (attributes and "=" in attributes))


def strip_markup(text):
    """Text with its real markup tags removed and, if there were any, entities decoded."""
    if "<" not in text:
        return html.unescape(text) if _ESCAPED.search(text) else text
    closing_names = {m.group(2).lower() for m in _TAG.finditer(text) if m.group(1)}
    removed = False

    def replace(match):
        nonlocal removed
        if not _is_markup(match, closing_names):
            return match.group(0)
        removed = True
        return " " if match.group(2).lower() in BLOCK_TAGS else ""

    result = _TAG.sub(replace, text)
    return html.unescape(result) if removed or _ESCAPED.search(result) else result
