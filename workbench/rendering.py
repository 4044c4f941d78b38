"""Model output and document text are untrusted: Markdown is rendered with raw HTML off, links
only to http(s) URLs and paths of this site, and no images (they would fetch from anywhere).
`<script>`, `onerror=` or `javascript:` in the text come out as text.

Obsidian's wikilinks — `[[Note]]`, `[[Note#Heading]]`, `[[Note|shown]]` — read as the text they
show (the alias, else the note's name). Where the page resolved the note (`links`: each
`WikiLink` to the source view of the note's chunk, a path of this site; see
workbench/pages/wikilinks.py) that text is a link to it; otherwise, or inside code, it stays
text. The target itself never becomes a URL, so `[[javascript:alert(1)]]` is only words."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

_SAFE_LINK = re.compile(r"^(https?://|/(?!/))", re.IGNORECASE)
# [n] markers of an answer, outside tags (the rendered HTML escapes every "<" of the text).
_CITATION_MARK = re.compile(r"\[(\d{1,3})\](?![^<]*>)")
# Obsidian's [[Note]], [[Note#Heading]] and [[Note|shown text]] on one line.
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_SITE_PATH = re.compile(r"^/(?![/\\])")


@dataclass(frozen=True)
class WikiLink:
    """What a wikilink names: a note (its name or path, as written) and maybe a heading in it."""

    note: str
    heading: str = ""


def wikilinks_in(text: str) -> list[WikiLink]:
    """The wikilinks of `text` outside code, in order of first appearance."""
    found: dict[WikiLink, None] = {}
    for block in _EXCERPT_MD.parse(text or ""):
        for token in block.children or []:
            if token.type == "wikilink" and token.meta["linked"]:
                found.setdefault(token.meta["link"])
    return list(found)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """`[[…]]` at the parser's position: one `wikilink` token holding its WikiLink and the text
    it shows."""
    if not state.src.startswith("[[", state.pos):
        return False
    match = _WIKILINK.match(state.src, state.pos)
    if match is None:
        return False
    # Inside a table a link's pipe is written `\|`, which leaves a backslash on the target.
    note = match.group(1).removesuffix("\\").strip()
    heading = (match.group(2) or "").removesuffix("\\").strip()
    shown = (match.group(3) or "").strip() or note or heading
    if not shown:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        # Inside a Markdown link's text it stays text: a link cannot hold another.
        token.meta = {"link": WikiLink(note=note, heading=heading), "shown": shown,
                      "linked": state.linkLevel == 0}
    state.pos = match.end()
    return True


def _wikilink_render(self: RendererHTML, tokens: Sequence[Token], idx: int,
                     options: OptionsDict, env: EnvType) -> str:
    meta = tokens[idx].meta
    shown = escape(meta["shown"])
    href = (env.get("wikilinks") or {}).get(meta["link"]) if meta["linked"] else None
    # Only a path of this site, as the page resolved it: never anything the text wrote.
    if not isinstance(href, str) or not _SITE_PATH.match(href):
        return str(shown)
    return f'<a class="wikilink" href="{escape(href)}">{shown}</a>'


def _link_allowed(url: str) -> bool:
    return bool(_SAFE_LINK.match(url.strip()))


class _SafeMarkdownIt(MarkdownIt):
    """Links only where `_link_allowed` says (markdown-it asks `validateLink` of every one)."""

    def validateLink(self, url: str) -> bool:
        return _link_allowed(url)


def _renderer() -> MarkdownIt:
    md = _SafeMarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable(["image", "html_block", "html_inline"])
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("wikilink", _wikilink_render)
    return md


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict,
               env: EnvType) -> str:
    # Links leave the page without our referrer or a handle on this window.
    token = tokens[idx]
    if not str(token.attrGet("href") or "").startswith("/"):
        token.attrSet("rel", "noopener noreferrer nofollow")
    return self.renderToken(tokens, idx, options, env)


_MD = _renderer()


def _excerpt_renderer() -> MarkdownIt:
    """The answer's renderer, with a note's headings as bold lines: a card is a small box inside
    the page's own outline, not a document with headings of its own."""
    md = _renderer()
    md.enable("table")
    md.add_render_rule("heading_open", lambda *args: '<p class="excerpt-heading"><strong>')
    md.add_render_rule("heading_close", lambda *args: "</strong></p>\n")
    return md


_EXCERPT_MD = _excerpt_renderer()
WikiLinks = Mapping[WikiLink, str]


def answer_html(text: str, *, citation_count: int, anchor: str = "source-",
                unverified: Collection[int] = (), links: WikiLinks | None = None) -> SafeString:
    """An answer as HTML: its Markdown rendered safely, its wikilinks to the notes in `links`,
    and each `[n]` of an existing citation a link to that citation's source card
    (`#source-n`; `anchor` names the cards of one answer among several on a page), marked as
    such when its citation is `unverified`."""
    html = _MD.render(text or "", {"wikilinks": links or {}})

    def link(match: re.Match) -> str:
        number = int(match.group(1))
        if not 1 <= number <= citation_count:
            return match.group(0)
        if number in unverified:
            title = escape(gettext("Unverified: its source does not support this sentence"))
            label = escape(gettext("[%(number)s], unverified") % {"number": number})
            return (f'<a class="cite cite-unverified" href="#{anchor}{number}" '
                    f'title="{title}" aria-label="{label}">[{number}]</a>')
        return f'<a class="cite" href="#{anchor}{number}">[{number}]</a>'

    return mark_safe(_CITATION_MARK.sub(link, html))


def excerpt_html(text: str, *, limit: int, markdown: bool) -> SafeString:
    """The first `limit` characters of a chunk as HTML: a Markdown note's text rendered as safely
    as an answer (headings as bold lines), any other format's as escaped plain text on one line.
    The cut falls on a space where one is near (text without spaces, such as Chinese, is cut at
    `limit`), so words and Markdown markers are rarely split."""
    text = (text or "").strip()
    cut = len(text) > limit
    if cut:
        text = text[:limit]
        space = max(text.rfind(" "), text.rfind("\n"))
        if space >= limit * 0.8:
            text = text[:space]
        text = text.rstrip() + "…"
    if not markdown:
        return mark_safe(f"<p>{escape(' '.join(text.split()))}</p>")
    return mark_safe(_EXCERPT_MD.render(text))


def quote_html(text: str, *, links: WikiLinks | None = None) -> SafeString:
    """A quoted span as inline HTML (no paragraph around it): its Markdown — bold, code, links
    — rendered as safely as an answer, its wikilinks to the notes in `links`."""
    return mark_safe(_MD.renderInline(" ".join((text or "").split()),
                                      {"wikilinks": links or {}}))
