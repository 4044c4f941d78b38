"""The status page: health checks, providers without any secret, index sizes in the person's
knowledge bases, and which vector search path runs."""

from __future__ import annotations

import re

from access.models import Grant
from knowledge.bases import kb_create
from knowledge.models import Chunk, Document

LLM_KEY = "sk-test-LLMKEY-4f9a2c"
RERANK_KEY = "rr-test-RERANKKEY-77d1"
URL_PASSWORD = "pw-IN-URL-93be"
URL_QUERY_KEY = "QUERYKEY-1c0d"


def count(html: str, name: str) -> int:
    return int(re.search(rf'id="count-{name}">(\d+)<', html).group(1))


def test_the_status_page_needs_a_sign_in(client, db):
    response = client.get("/workbench/status/")
    assert response.status_code == 302 and "/workbench/login/" in response["Location"]


def test_it_shows_checks_and_the_counts_of_the_persons_bases(reader, sample_index):
    response = reader.get("/workbench/status/")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<h1>System status: <span class="status-ok">ok</span></h1>' in html
    for check in ("database", "schema", "pgvector", "embedding_config", "retrieval_ready"):
        assert re.search(rf'<th scope="row">{check}</th><td><span class="status-ok">ok</span>',
                         html), check
    assert count(html, "documents") == Document.objects.count() > 0
    assert count(html, "chunks") == Chunk.objects.count()
    assert count(html, "embeddings") == Chunk.objects.count()


def test_counts_leave_out_bases_the_person_may_not_read(person, sample_index):
    kb_create(slug="other", name="Other base")
    outsider = person("oli", grants={"other": Grant.READER})
    html = outsider.get("/workbench/status/").content.decode()
    assert count(html, "documents") == count(html, "chunks") == 0
    assert "retrieval_ready</th><td><span class=\"status-bad\">not_ready" in html
    assert "Default" not in html


def test_providers_show_whether_a_key_is_set_never_the_key(reader, person, sample_index,
                                                           config_override):
    config_override(llm_provider="openai-compatible", llm_model="qwen-test",
                    llm_base_url=f"https://user:{URL_PASSWORD}@llm.example:8443/v1"
                                 f"?api-key={URL_QUERY_KEY}",
                    llm_api_key=LLM_KEY, rag_rerank="openai-compatible",
                    rerank_model="rerank-test", rerank_base_url="https://rerank.example/v1",
                    rerank_api_key=RERANK_KEY)
    # Readers learn whether things are set up, not where the servers are.
    html = reader.get("/workbench/status/").content.decode()
    assert "llm.example" not in html and "rerank.example" not in html
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    for secret in (LLM_KEY, RERANK_KEY, URL_PASSWORD, URL_QUERY_KEY):
        assert secret not in html
    llm = re.search(r"<td>LLM</td>.*?</tr>", html, re.DOTALL).group(0)
    assert "qwen-test" in llm and "https://llm.example:8443" in llm
    assert "<td>set</td>" in llm and "status-ok" in llm
    rerank = re.search(r"<td>rerank</td>.*?</tr>", html, re.DOTALL).group(0)
    assert "rerank-test" in rerank and "https://rerank.example" in rerank
    assert "<td>set</td>" in rerank


def test_a_missing_llm_key_is_said_as_such(reader, sample_index, config_override):
    config_override(llm_provider="openai-compatible", llm_model="qwen-test",
                    llm_base_url="http://127.0.0.1:9/v1", llm_api_key="")
    html = reader.get("/workbench/status/").content.decode()
    llm = re.search(r"<td>LLM</td>.*?</tr>", html, re.DOTALL).group(0)
    assert '<span class="status-bad">not set</span>' in llm and "config_missing" in llm


def test_the_vector_search_path_follows_the_setting(reader, sample_index, config_override):
    config_override(rag_vector_index="exact")
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">exact scan</strong>' in html
    assert "No HNSW index for the current embedding model" in html
    config_override(rag_vector_index="hnsw")
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">nothing: vector searches are refused</strong>' in html
    assert ("the current embedding model has no HNSW index: build it with <code>rag db index"
            "</code>.") in reason(html)


def test_an_hnsw_index_is_described_and_used_when_auto_allows(reader, person, sample_index,
                                                              config_override):
    from core.config import get_config
    from index.vector_index import vector_index_build
    from index.vector_recall import vector_index_tune

    config_override(rag_vector_index="auto", rag_hnsw_min_chunks=0)
    build = vector_index_build(config=get_config())
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">exact scan</strong>' in html  # not measured yet
    assert ("The HNSW index&#x27;s recall@10 is not measured yet; <code>rag db index</code> "
            "measures it.") in reason(html)
    tuning = vector_index_tune(config=get_config())
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">HNSW index (approximate)</strong>' in html
    chosen = tuning.chosen(target=0.98)
    assert f"reaches the target 0.98 at ef_search {chosen.ef_search}." in reason(html)
    # The index spans every base: its size is shown to administrators only.
    assert "An HNSW index exists" in html and f"~{build.vectors} vectors" not in html
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    assert f"HNSW index: ~{build.vectors} vectors" in html
    config_override(rag_vector_index="auto", rag_hnsw_min_chunks=10**6)
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">exact scan</strong>' in html
    assert "fewer than RAG_HNSW_MIN_CHUNKS (1000000)" in reason(html)


def test_auto_scans_exactly_and_says_why_when_the_recall_misses_the_target(
        reader, sample_index, config_override):
    from core.config import get_config
    from index.vector_index import vector_index_build
    from tests.index.recall_fixtures import measurement_store

    config_override(rag_vector_index="auto", rag_hnsw_min_chunks=0)
    vector_index_build(config=get_config())
    measurement_store(ef_searches=[100, 1000], recalls=[0.71, 0.8])
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">exact scan</strong>' in html
    assert ("HNSW: recall@10 0.800 stays below the target 0.98 even at ef_search 1000."
            in reason(html))
    config_override(rag_vector_index="hnsw")
    html = reader.get("/workbench/status/").content.decode()
    assert '<strong id="vector-path">HNSW index (approximate)</strong>' in html
    assert ("RAG_VECTOR_INDEX=hnsw; recall@10 0.800 stays below the target 0.98 even at "
            "ef_search 1000.") in reason(html)


def reason(html: str) -> str:
    return re.search(r'<p id="vector-reason">(.*?)</p>', html, re.DOTALL).group(1)


def test_the_embedding_servers_are_shown_to_staff_by_origin(reader, person, sample_index,
                                                           config_override):
    config_override(EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="bge-m3",
                    EMBEDDING_API_KEY="sk-embed-status-77",
                    EMBEDDING_BASE_URL=f"https://u:{URL_PASSWORD}@gpu-1:8443/v1,"
                                       "http://gpu-2:8080/v1")
    assert "gpu-1" not in reader.get("/workbench/status/").content.decode()
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    assert "sk-embed-status-77" not in html and URL_PASSWORD not in html
    embedding = re.search(r"<td>embedding</td>.*?</tr>", html, re.DOTALL).group(0)
    assert "bge-m3" in embedding and "https://gpu-1:8443, http://gpu-2:8080" in embedding
    assert "<td>set</td>" in embedding


def test_replicas_are_shown_to_staff_with_their_state(reader, person, sample_index,
                                                      config_override):
    # Nothing listens there: the replica is checked, found down and said to be skipped.
    config_override(DATABASE_REPLICA_URLS=f"postgresql://app:{URL_PASSWORD}@127.0.0.1:9/local_rag")
    assert "Read replicas" not in reader.get("/workbench/status/").content.decode()
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    assert URL_PASSWORD not in html
    replicas = re.search(r"<h2>Read replicas</h2>.*?</table>", html, re.DOTALL).group(0)
    assert "127.0.0.1:9/local_rag" in replicas and "skipped" in replicas


def test_the_upload_bucket_is_shown_to_staff_without_its_secret(reader, person, sample_index,
                                                                config_override):
    config_override(UPLOAD_STORE="s3", UPLOAD_S3_BUCKET="team-uploads",
                    UPLOAD_S3_ENDPOINT_URL="http://minio-1:9000/",
                    UPLOAD_S3_ACCESS_KEY_ID="AKIASTATUS",
                    UPLOAD_S3_SECRET_ACCESS_KEY="s3-secret-status-41")
    assert "team-uploads" not in reader.get("/workbench/status/").content.decode()
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    assert ("Uploads are kept in bucket <code>team-uploads</code> at http://minio-1:9000"
            in html)
    assert "s3-secret-status-41" not in html and "AKIASTATUS" not in html


def test_it_says_which_of_the_persons_bases_have_no_usable_search_index(person, clean_tables):
    from django.contrib.auth import get_user_model

    from tests.index.helpers import built, lexical_bases

    _, _, (first, _) = lexical_bases(52, chunks=(30, 10))
    built(first)
    try:
        page = person("indexed-reader", grants={"b52-0": Grant.READER, "b52-1": Grant.READER}
                      ).get("/workbench/status/").content.decode()
        assert 'id="search-index"' in page
        assert "No usable search index for b52-1:" in page and "b52-0:" not in page
        only_built = person("indexed-reader-2", grants={"b52-0": Grant.READER})
        page = only_built.get("/workbench/status/").content.decode()
        assert "Every knowledge base you read has a usable search index." in page
    finally:
        get_user_model().objects.filter(username__startswith="indexed-reader").delete()


def test_the_llm_servers_last_probe_is_shown_from_the_cache(reader, person, db,
                                                            config_override):
    from answering.llm_health import llm_health_cache_clear
    from tests.answering.stub_openai import StubOpenAI

    llm_health_cache_clear()
    with StubOpenAI() as stub:
        stub.required_key = LLM_KEY
        config_override(llm_provider="openai-compatible", llm_model="stub-model",
                        llm_base_url=stub.base_url, llm_api_key=LLM_KEY)
        html = reader.get("/workbench/status/").content.decode()
        llm = re.search(r"<td>LLM</td>.*?</tr>", html, re.DOTALL).group(0)
        probe = re.search(r'<td class="probe">(.*?)</td>', llm, re.DOTALL).group(1)
        assert '<span class="status-ok">up</span>' in probe
        assert re.search(r"</span> \d+ ms <span class=\"muted\">checked \d\d:\d\d:\d\d</span>",
                         probe)
        assert LLM_KEY not in html
        # The page and /health after it read the cache: the server was asked once.
        reader.get("/workbench/status/")
        reader.get("/health")
        assert [request.path for request in stub.requests] == ["/v1/models"]
        stub.models = ["another-model"]
        llm_health_cache_clear()
        staff = person("ops-probe", grants={"default": "reader"}, staff=True)
        html = staff.get("/workbench/status/").content.decode()
        llm = re.search(r"<td>LLM</td>.*?</tr>", html, re.DOTALL).group(0)
        assert "status-bad" in llm and "<code>llm_model_not_served</code>" in llm
        assert "does not serve &#x27;stub-model&#x27;" in llm  # the reason, for staff
    llm_health_cache_clear()


def test_a_provider_of_this_process_is_local_without_a_probe(reader, db):
    html = reader.get("/workbench/status/").content.decode()
    llm = re.search(r"<td>LLM</td>.*?</tr>", html, re.DOTALL).group(0)
    assert '<td class="probe"><span class="status-ok">local</span></td>' in llm
    rerank = re.search(r"<td>rerank</td>.*?</tr>", html, re.DOTALL).group(0)
    assert '<td class="probe"><span class="status-ok">local</span></td>' in rerank


def test_the_embedding_and_rerank_servers_probes_are_shown(reader, person, db,
                                                           config_override):
    from ops.provider_health import providers_health_cache_clear
    from tests.knowledge.stub_embeddings import StubEmbeddings
    from tests.retrieval.stub_rerank import StubRerank

    providers_health_cache_clear()
    with StubEmbeddings() as embed, StubRerank() as rerank:
        rerank.behaviour = "status:500"
        config_override(EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="stub-embed",
                        EMBEDDING_BASE_URL=embed.base_url, RAG_RERANK="openai-compatible",
                        RERANK_BASE_URL=rerank.base_url, RERANK_MODEL="stub-reranker",
                        RERANK_API_KEY=RERANK_KEY)
        html = reader.get("/workbench/status/").content.decode()
        reader.get("/workbench/status/")  # the second page reads the cache
    providers_health_cache_clear()
    embedding = re.search(r"<td>embedding</td>.*?</tr>", html, re.DOTALL).group(0)
    assert re.search(r'<td class="probe"><span class="status-ok">up</span> \d+ ms', embedding)
    row = re.search(r"<td>rerank</td>.*?</tr>", html, re.DOTALL).group(0)
    assert '<span class="status-bad">down</span>' in row
    assert "<code>rerank_upstream_error</code>" in row
    assert (len(embed.requests), len(rerank.requests)) == (1, 1)
    assert 'id="breakers"' not in html  # the breakers are for staff


def test_staff_see_each_circuit_breakers_state(person, db, config_override):
    from core.breaker import breaker_for
    from ops.provider_health import providers_health_cache_clear
    from tests.retrieval.stub_rerank import StubRerank

    providers_health_cache_clear()
    config_override(RAG_BREAKER_FAILURES="2")
    staff = person("ops-breakers", grants={"default": "reader"}, staff=True)
    html = staff.get("/workbench/status/").content.decode()
    assert "No model server has been called by this process yet." in html
    with StubRerank() as rerank:
        rerank.behaviour = "status:503"
        config_override(RAG_BREAKER_FAILURES="2", RAG_RERANK="openai-compatible",
                        RERANK_BASE_URL=rerank.base_url, RERANK_MODEL="stub-reranker",
                        RERANK_API_KEY=RERANK_KEY)
        breaker_for(service="LLM", url="http://llm.test/v1/chat/completions", model="m")
        staff.get("/workbench/status/")
        providers_health_cache_clear()  # a minute later: the second probe's failure opens it
        html = staff.get("/workbench/status/").content.decode()
    providers_health_cache_clear()
    section = re.search(r'<section class="card" id="breakers">.*?</section>', html,
                        re.DOTALL).group(0)
    rows = {re.search(r"<td>(\w+)</td>", row).group(1): row
            for row in re.findall(r"<tr><td>.*?</tr>", section, re.DOTALL)}
    assert '<span class="status-ok">closed</span></td><td class="num">0</td><td>–</td>' \
        in rows["LLM"]
    assert "/reranks</code>" in rows["rerank"] and RERANK_KEY not in html
    assert re.search(r'<span class="status-bad">open</span></td><td class="num">2</td>'
                     r"<td>\d\d:\d\d:\d\d</td>", rows["rerank"])
    assert len(rerank.requests) == 2  # one per probe: a probe makes no retries
