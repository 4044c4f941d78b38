"""The contract of the evaluation endpoints: question sets with versions, runs, results."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, Field

from core.api_schemas import KnowledgeBaseSlug, StrictRequest, no_control_characters
from evaluation.versions import SET_NAME_MAX_CHARS, SET_QUESTIONS_MAX, SET_YAML_MAX_CHARS

BIGINT_MAX = 2 ** 63 - 1
PAGE_MAX = 200

SetName = Annotated[str, Field(min_length=1, max_length=SET_NAME_MAX_CHARS),
                    AfterValidator(no_control_characters)]
# Checked field by field by evaluation/questions.py, which names every question at fault; the
# schema bounds only the sizes (one more than allowed still reaches the check and its message).
QuestionList = Annotated[list[dict[str, Any]], Field(max_length=SET_QUESTIONS_MAX + 1)]
QuestionsYaml = Annotated[str, Field(max_length=SET_YAML_MAX_CHARS + 1)]


class QuestionSetCreate(StrictRequest):
    knowledge_base: KnowledgeBaseSlug
    name: SetName
    questions: QuestionList | None = None  # exactly one of `questions` and `yaml`
    yaml: QuestionsYaml | None = None
    source_name: Annotated[str, Field(max_length=255)] = ""


class QuestionSetRevise(StrictRequest):
    questions: QuestionList | None = None
    yaml: QuestionsYaml | None = None


class VersionOut(Schema):
    number: int
    content_hash: str
    frozen: bool  # a run used it: an edit makes a new version
    created_at: datetime


class VersionListed(VersionOut):
    runs: int


class QuestionSetOut(Schema):
    id: int
    name: str
    knowledge_base: str
    source_name: str
    created_at: datetime
    latest_version: int


class QuestionSetPage(Schema):
    total: int
    limit: int
    offset: int
    question_sets: list[QuestionSetOut]


class QuestionSetDetail(QuestionSetOut):
    version: VersionOut  # the version whose questions these are
    questions: list[dict[str, Any]]
    versions: list[VersionListed]


class RunCreate(StrictRequest):
    question_set: Annotated[int, Field(ge=1, le=BIGINT_MAX)]
    version: Annotated[int, Field(ge=1, le=2 ** 31 - 1)] | None = None
    knowledge_bases: Annotated[list[KnowledgeBaseSlug], Field(min_length=1,
                                                             max_length=100)] | None = None
    top_k: int | None = None  # bounded as /search bounds it
    retrieval: Literal["vector", "lexical", "hybrid"] | None = None
    answers: bool = False


class Cost(Schema):
    amount: float
    currency: str


class ProgressOut(Schema):
    stage: str
    fraction: float


class LeakageOut(Schema):
    question_id: str
    field: str
    document: str
    chunk_index: int


class RunOut(Schema):
    id: int
    status: str
    job_id: int | None
    question_set: int
    set_version: int | None
    knowledge_bases: list[str]
    parameters: dict[str, Any]
    config_hash: str | None
    prompt_version: str | None
    code_version: str | None
    corpus_digest: str | None
    summary: dict[str, Any]
    cost: Cost | None
    leakage: list[LeakageOut]
    error: str | None
    progress: ProgressOut | None
    created_at: datetime
    finished_at: datetime | None


class RunPage(Schema):
    total: int
    limit: int
    offset: int
    runs: list[RunOut]


class ResultOut(Schema):
    id: str
    question: str
    expected_mode: str
    mode: str
    passed: bool
    confidence: float
    hit_rank: int | None
    hit: bool | None
    complete_hit: bool | None
    page_hit_rank: int | None
    ndcg_at_10: float | None
    latency_ms: float | None
    refused: bool
    sources: list[str]
    answer_mode: str | None
    answer_correct: bool | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: Cost | None
    answer_error: str | None


class ResultPage(Schema):
    run_id: int
    status: str
    total: int
    limit: int
    offset: int
    results: list[ResultOut]
