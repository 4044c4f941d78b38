"""The workbench shows a citation where its quote is: a card of a block merged from a PDF's
pages names the page and section of the chunk holding its quote and opens the source view at
that chunk, with the quote marked there — on the Ask page, streamed, and in a stored
conversation. Quotes and answers render their Markdown safely, wikilinks as links to the note's
source view."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from conversations.models import Message
from knowledge.models import Chunk
from tests.answering.battery_manual import ANSWER, QUESTION, SAFETY, manual_write
from tests.api.http import IN_DOMAIN, INDEX_QUESTION, sse_events


@pytest.fixture
def manual(db, tmp_path):
    manual_write(tmp_path / "vault")


def card_of(page: str, number: int, anchor: str = "source-") -> str:
    start = page.index(f'id="{anchor}{number}"')
    return page[start:page.index("</li>", start)]


def quote_link(card: str) -> tuple[int, int, int]:
    link = re.search(r'class="card-title" href="/workbench/chunks/(\d+)/\?quote_start=(\d+)'
                     r'&amp;quote_end=(\d+)"', card)
    assert link is not None, card
    chunk_id, start, end = (int(value) for value in link.groups())
    return chunk_id, start, end


def assert_opens_the_quote_on_page_one(reader, card: str) -> None:
    safety = Chunk.objects.get(relative_path="battery.pdf", chunk_index=0)
    chunk_id, start, end = quote_link(card)
    assert chunk_id == safety.pk and safety.content[start:end] == SAFETY
    # The card names the page and section of the quote, not of the block's best chunk (p. 3).
    assert '<div class="card-meta">battery.pdf › Safety · p. 1 · default</div>' in card
    # ... and shows that chunk's text.
    excerpt = card[card.index('<div class="excerpt">'):]
    excerpt = excerpt[:excerpt.index("</div>")]
    assert "taken out of service" in excerpt and "supplied charger" not in excerpt
    source = reader.get(f"/workbench/chunks/{chunk_id}/?quote_start={start}"
                        f"&quote_end={end}").content.decode()
    current = source[source.index('<div class="chunk current"'):]
    current = current[:current.index("</div>")]
    assert (f'<mark class="quote" id="quote" data-scroll-into-view>{SAFETY}</mark>'
            in current)
    assert "<dt>Pages</dt><dd>p. 1</dd>" in source and "<dt>Section</dt><dd>Safety</dd>" in source


@pytest.mark.parametrize("path", ["/workbench/ask/", "/workbench/ask/stream"])
def test_a_card_opens_the_chunk_holding_its_quote_at_the_quote(reader, manual, stub_llm, path):
    stub_llm.deltas = [ANSWER]
    response = reader.post(path, {"question": QUESTION})
    page = (sse_events(response)[-1][1]["html"] if path.endswith("stream")
            else response.content.decode())
    card = card_of(page, 1)
    assert f"Quoted:</span> “{SAFETY}”" in card
    best = Chunk.objects.get(relative_path="battery.pdf", chunk_index=2)
    assert f"/workbench/chunks/{best.pk}/" not in card  # the block's best chunk, page 3
    assert_opens_the_quote_on_page_one(reader, card)


def test_a_stored_conversation_answer_opens_the_chunk_holding_its_quote(reader, manual,
                                                                       stub_llm):
    from tests.workbench.test_conversations import start

    stub_llm.behaviour, stub_llm.answer = "json", ANSWER
    conversation_id = start(reader)
    reader.post(f"/workbench/conversations/{conversation_id}/", {"question": QUESTION})
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    assert answer.citations[0]["page_start"] == 1 and answer.citations[0]["quote_chunk_index"] == 0
    page = reader.get(f"/workbench/conversations/{conversation_id}/").content.decode()
    assert_opens_the_quote_on_page_one(reader, card_of(page, 1, f"m{answer.pk}-source-"))


def test_quotes_and_answers_show_markdown_and_link_wikilinks_to_the_note(reader, sample_index):
    # The fake model writes the first sentence of each top block: for this question, the index
    # note's "[[Data Handling Policy]]：数据分级…", a note of the same base.
    page = reader.post("/workbench/ask/", {"question": INDEX_QUESTION}).content.decode()
    policy = Chunk.objects.get(relative_path="policies/Data Handling Policy.md", chunk_index=0)
    link = f'<a class="wikilink" href="/workbench/chunks/{policy.pk}/">Data Handling Policy</a>'
    body = page[page.index('<div class="answer-body">'):page.index('<h2 class="sources-title"')]
    assert link in body
    quotes = re.findall(r'<p class="card-quote">(.*?)</p>', page, flags=re.S)
    assert any(link in quote for quote in quotes), quotes
    assert "[[" not in body and not any("[[" in quote for quote in quotes)


def test_bold_and_code_in_a_quote_are_rendered(reader, sample_index, stub_llm):
    stub_llm.deltas = ["P2 核心功能严重受损但有绕过方案 [1]。"]
    page = reader.post("/workbench/ask/",
                       {"question": "P2 High 核心功能严重受损 绕过方案"}).content.decode()
    quotes = re.findall(r'<p class="card-quote">(.*?)</p>', page, flags=re.S)
    assert any("<strong>P2（High）</strong>：核心功能严重受损但有绕过方案" in quote
               for quote in quotes), quotes
    assert not any("**" in quote for quote in quotes)


def test_unresolvable_and_hostile_wikilinks_and_markup_in_an_answer_stay_text(
        reader, sample_index, stub_llm):
    stub_llm.deltas = ["See [[No Such Note]], [[javascript:alert(1)]] and "
                       "[[Data Handling Policy|the policy]]. <script>alert(1)</script> "
                       "**Escalate** with `rag ask` [1]."]
    page = reader.post("/workbench/ask/", {"question": IN_DOMAIN}).content.decode()
    body = page[page.index('<div class="answer-body">'):page.index('<h2 class="sources-title"')]
    policy = Chunk.objects.get(relative_path="policies/Data Handling Policy.md", chunk_index=0)
    assert f'<a class="wikilink" href="/workbench/chunks/{policy.pk}/">the policy</a>' in body
    assert "See No Such Note, javascript:alert(1) and" in body
    assert body.count("<a ") == 2  # the policy and the [1] marker
    assert "<script" not in body and html_lib.escape("<script>alert(1)</script>") in body
    assert "<strong>Escalate</strong> with <code>rag ask</code>" in body
