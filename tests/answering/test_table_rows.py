"""A question about one row of a table, end to end through the ask service with the fake
embedder: the row's chunk is found, cited, and answered from (issue #39)."""

from __future__ import annotations

import pytest
from django.db import connection

from access.callers import scope_all
from answering.modes import MODE_NO_ANSWER, MODE_RAG
from answering.services import AnswerRequest, ask_prepare
from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest

PEOPLE = [
    ("Aiko Tanaka", "Perception lead", "Tokyo"), ("Marcus Webb", "Platform engineer", "Berlin"),
    ("Priya Raman", "Product manager", "Bangalore"), ("Lena Fischer", "Data scientist", "Munich"),
    ("Tom Okafor", "Site reliability engineer", "Lagos"),
    ("Sofia Marquez", "Design lead", "Madrid"),
    ("Chen Wei", "Localization lead", "Shanghai"), ("Olivia Brown", "Recruiter", "London"),
    ("Jonas Berg", "Security engineer", "Stockholm"), ("Hana Kim", "Mobile engineer", "Seoul"),
    ("Diego Alvarez", "Sales director", "Mexico City"),
    ("Fatima Zahra", "Finance manager", "Casablanca"),
    ("Noah Levi", "Backend engineer", "Tel Aviv"),
    ("Emma Dubois", "Support lead", "Paris"), ("Ravi Shah", "ML engineer", "Pune"),
    ("Grace Liu", "QA engineer", "Taipei"), ("Mateo Rossi", "Controls engineer", "Milan"),
    ("Sara Nilsen", "Office manager", "Oslo"), ("Kwame Mensah", "Hardware lead", "Accra"),
    ("Isabel Costa", "Legal counsel", "Lisbon"),
]
OTHER_NOTES = {
    "Onboarding.md": "# Onboarding\n\nNew hires get a laptop on their first day and meet their "
                     "buddy. Accounts are created by IT before the start date.\n",
    "Travel Policy.md": "# Travel policy\n\nBook flights two weeks ahead through the portal. "
                        "Economy class for flights under six hours.\n",
    "Office Hours.md": "# Office hours\n\nThe office opens at 8:00 and closes at 19:00. Visitors "
                       "sign in at reception.\n",
    "Release Process.md": "# Release process\n\nReleases ship every second Tuesday. The release "
                          "manager freezes the branch on Friday.\n",
}


@pytest.fixture
def directory_vault(db, tmp_path):
    """The tester's vault: a team directory table beside a few unrelated notes."""
    rows = "\n".join(f"| {name} | {role} | {city} |" for name, role, city in PEOPLE)
    (tmp_path / "Team Directory.md").write_text(
        "# Team Directory\n\n| Name | Role | City |\n| --- | --- | --- |\n" + rows + "\n")
    for name, text in OTHER_NOTES.items():
        (tmp_path / name).write_text(text)
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())


def ask(question: str):
    return ask_prepare(AnswerRequest(question=question, scope=scope_all(), top_k=None,
                                     fallback=False), config=get_config())


@pytest.mark.parametrize("question", [
    "Who is the perception lead and where is she based?",
    "Which city is Aiko Tanaka in?",
])
def test_a_question_about_a_directory_row_is_answered_from_its_chunk(directory_vault, question):
    row = "| Aiko Tanaka | Perception lead | Tokyo |"
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_index, content FROM chunks WHERE relative_path = %s "
                       "ORDER BY chunk_index", ["Team Directory.md"])
        chunks = cursor.fetchall()
    # The table is cut into row groups, each under the header row.
    assert len(chunks) > 1
    assert all("| Name | Role | City |\n| --- | --- | --- |" in content for _, content in chunks)
    (holding,) = [index for index, content in chunks if row in content]
    plan = ask(question)
    assert plan.mode == MODE_RAG, plan.refusal
    first = plan.citations[0]
    assert (first["source"], first["chunk_index"]) == ("Team Directory.md", holding)
    assert row in plan.block_contents[0]


def test_a_role_the_directory_does_not_hold_is_still_refused(directory_vault):
    assert ask("Who is the head of marketing and where is she based?").mode == MODE_NO_ANSWER
