"""Wikilinks of an answer and of its cards' quotes, as links to the notes' source views.

A quote's `[[Note]]` names a note of the quoted document's own knowledge base; an answer's, a
note of a base its sources come from (the first source's base that has it, in card order).
Only the bases of cards that link to their chunk count: those the person may read (a stored
answer's chunk that changed or that the person can no longer read gives none). The note is
resolved as knowledge/wikilinks.py reads a wikilink; a link nothing answers to stays text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.urls import reverse

from knowledge.models import KnowledgeBase
from knowledge.wikilinks import wikilink_chunks
from workbench.rendering import WikiLink, quote_html, wikilinks_in


def linked_answer(cards: Sequence[dict[str, Any]], *,
                  answer: str) -> tuple[list[dict[str, Any]], dict[WikiLink, str]]:
    """The cards with `quote_html` (the quote as the document writes it, rendered, its
    wikilinks resolved in the card's base), and the answer's wikilinks resolved."""
    bases = list(dict.fromkeys(card["knowledge_base"] for card in cards
                               if card.get("chunk_id") and card.get("knowledge_base")))
    quotes = [_quote_text(card) for card in cards]
    texts = {base: [answer, *(quote for card, quote in zip(cards, quotes, strict=True)
                              if card.get("knowledge_base") == base)]
             for base in bases}
    links = _links_by_base(texts)
    answer_links: dict[WikiLink, str] = {}
    for base in bases:
        for link, href in links.get(base, {}).items():
            answer_links.setdefault(link, href)
    linked = [{**card, "quote_html": quote_html(quote, links=links.get(card.get(
                   "knowledge_base") or "", {})) if quote else ""}
              for card, quote in zip(cards, quotes, strict=True)]
    return linked, answer_links


def _quote_text(card: dict[str, Any]) -> str:
    # `quote_raw` is the span as written; an answer stored before it existed quoted that span
    # in `quote` itself.
    return card.get("quote_raw") or card.get("quote") or ""


def _links_by_base(texts: dict[str, list[str]]) -> dict[str, dict[WikiLink, str]]:
    """For each base (slug), the source view of each wikilink of its texts that names one of
    its notes."""
    wanted = {base: list(dict.fromkeys(link for text in base_texts
                                       for link in wikilinks_in(text)))
              for base, base_texts in texts.items()}
    wanted = {base: found for base, found in wanted.items() if found}
    if not wanted:
        return {}
    ids = dict(KnowledgeBase.objects.filter(slug__in=list(wanted)).values_list("slug", "id"))
    resolved: dict[str, dict[WikiLink, str]] = {}
    for base, found in wanted.items():
        if base not in ids:
            continue
        chunks = wikilink_chunks(knowledge_base_id=ids[base],
                                 links=[(link.note, link.heading) for link in found])
        resolved[base] = {link: reverse("workbench:source", args=[chunks[(link.note,
                                                                          link.heading)]])
                          for link in found if (link.note, link.heading) in chunks}
    return resolved
