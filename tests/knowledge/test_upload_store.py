"""UPLOAD_STORE=s3 against a local S3 (moto's server on a socket): an upload is put in the
bucket before its row commits, a worker whose cache lacks the file fetches it, a file the
bucket lost or changed fails its job without taking the document out of the index, a bucket
that does not answer stores nothing, a delete removes the object, a backup fetches what its
cache lacks, and the settings are checked with the secret never shown."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import pytest

from access.callers import OPERATOR, scope_all
from core.config import ConfigError, config_load, get_config
from core.errors import LocalRagError
from jobs.queue import job_get
from jobs.worker import Worker
from knowledge.bases import kb_create
from knowledge.documents import document_delete, document_reindex, document_upload
from knowledge.models import Document
from knowledge.upload_store import object_key
from ops.backup import backup_write
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.conftest import cli_env
from tests.knowledge.stub_s3 import SECRET_KEY, stub_bucket

TEXT = b"Greisen veins on ridge 9 carry tin and tungsten near the old adit.\n"


@pytest.fixture
def bucket():
    with stub_bucket() as stub:
        yield stub


@pytest.fixture
def store(clean_tables, config_override, tmp_path, bucket):
    config = config_override(project_root=tmp_path, **bucket.settings())
    kb_create(slug="field", name="Field reports")
    return config


def work() -> None:
    Worker(poll_seconds=0.01).run(until_idle=True)


def upload(text: bytes = TEXT, name: str = "Ridge 9 survey.txt"):
    return document_upload(caller=OPERATOR, slug="field", filename=name, chunks=[text])


def stored_file(document_id: int) -> Path:
    return Path(Document.objects.get(pk=document_id).file_path)


def test_an_upload_is_in_the_bucket_and_a_worker_without_the_file_fetches_it(store, bucket):
    done = upload()
    path = stored_file(done.document_id)
    key = object_key(path, config=store)
    assert bucket.keys() == [key] and key.startswith(f"tests/{path.parent.name}/")
    data, metadata = bucket.read(key)
    assert data == TEXT and metadata["sha256"] == hashlib.sha256(TEXT).hexdigest()

    path.unlink()  # the worker's machine has no copy of it
    work()
    job = job_get(done.job_id)
    assert job.status == "succeeded", job.last_error
    assert path.read_bytes() == TEXT and oct(path.stat().st_mode & 0o777) == "0o600"
    hits = search(RetrievalRequest(query="greisen tin ridge", scope=scope_all(), top_k=3,
                                   mode="vector"), config=store).results
    assert hits and hits[0].relative_path == "Ridge 9 survey.txt"

    # The same content again is the document already there; its second put leaves no object.
    again = upload()
    assert not again.created and bucket.keys() == [key]

    document_delete(caller=OPERATOR, document_id=done.document_id)
    work()
    assert bucket.keys() == [] and not path.exists()
    assert not Document.objects.exists()


def test_a_file_the_bucket_lost_fails_its_job_and_keeps_the_document(store, bucket):
    done = upload()
    work()
    path = stored_file(done.document_id)
    key = object_key(path, config=store)
    bucket.client.delete_object(Bucket=bucket.bucket, Key=key)
    path.unlink()
    job_id = document_reindex(caller=OPERATOR, document_id=done.document_id)
    work()
    job = job_get(job_id)
    assert job.status == "failed" and job.attempt == 1  # lost: no retry would find it
    assert f"does not hold {key}" in job.last_error
    document = Document.objects.get(pk=done.document_id)
    assert document.status == "active"  # still searchable as it was
    hits = search(RetrievalRequest(query="greisen tin ridge", scope=scope_all(), top_k=3,
                                   mode="vector"), config=store).results
    assert hits and hits[0].relative_path == "Ridge 9 survey.txt"


@pytest.mark.parametrize("replacement, says", [
    (b"Something else entirely.\n", "sha256 differs"),
    (b"x" * 5000, "larger than the 1,048-byte limit"),
])
def test_a_changed_or_inflated_object_is_not_used(store, bucket, config_override,
                                                  replacement, says):
    config_override(**{**bucket.settings(), "project_root": store.project_root,
                       "rag_document_max_mb": 0.001})
    done = upload(b"A short survey note.\n")
    path = stored_file(done.document_id)
    key = object_key(path, config=store)
    _, metadata = bucket.read(key)
    bucket.client.put_object(Bucket=bucket.bucket, Key=key, Body=replacement,
                             Metadata=metadata)
    path.unlink()
    work()
    job = job_get(done.job_id)
    assert job.status == "failed" and says in job.last_error
    assert Document.objects.get(pk=done.document_id).status == "failed"
    assert not path.exists() and not list(path.parent.glob(".fetch-*"))


def test_a_bucket_that_does_not_answer_stores_nothing(clean_tables, config_override, tmp_path,
                                                      bucket):
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    config_override(project_root=tmp_path, **bucket.settings(
        upload_s3_endpoint_url=f"http://127.0.0.1:{port}", upload_s3_timeout_seconds=1.0))
    kb_create(slug="field", name="Field reports")
    with pytest.raises(LocalRagError) as raised:
        upload()
    error = raised.value
    assert error.code == "upload_store_error" and error.http_status == 503
    assert error.details["reason"] == "unreachable"
    assert error.message.startswith(f"the bucket {bucket.bucket} could not be reached for the "
                                    "put (")
    # The endpoint may name an internal host: the message, which API callers see, never does.
    assert "127.0.0.1" not in error.message and str(port) not in error.message
    assert SECRET_KEY not in str(error.details) + error.message
    assert not Document.objects.exists()
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]


def test_a_bucket_that_does_not_exist_is_named(clean_tables, config_override,
                                                        tmp_path, bucket):
    config_override(project_root=tmp_path, **bucket.settings(upload_s3_bucket="no-such-bucket"))
    kb_create(slug="field", name="Field reports")
    with pytest.raises(LocalRagError) as raised:
        upload()
    assert raised.value.details["reason"] == "no_bucket"
    assert raised.value.message == "the bucket no-such-bucket does not exist"
    assert not Document.objects.exists()


def test_a_backup_fetches_the_uploads_its_cache_lacks(store, bucket, tmp_path):
    done = upload()
    work()
    path = stored_file(done.document_id)
    path.unlink()
    result = backup_write(path=tmp_path / "backup.tar", config=store)
    assert not result.manifest["uploads"]["missing"]
    with tarfile.open(result.path) as tar:
        members = [member for member in tar.getnames()
                   if member.startswith("uploads/") and member.endswith(path.name)]
        assert len(members) == 1
        extracted = tar.extractfile(members[0])
        assert extracted is not None and extracted.read() == TEXT


def test_a_restore_puts_the_archives_uploads_in_the_bucket(store, bucket, tmp_path, run_cli,
                                                           project, empty_database):  # noqa: F811
    done = upload()
    work()
    key = object_key(stored_file(done.document_id), config=store)
    archive = backup_write(path=tmp_path / "backup.tar", config=store).path
    bucket.client.delete_object(Bucket=bucket.bucket, Key=key)  # a new, empty bucket
    env = {name.upper(): str(value) for name, value in bucket.settings().items()}
    result = run_cli("restore", str(archive), cwd=project,
                     env=cli_env(DATABASE_URL=empty_database, **env))
    assert result.returncode == 0, result.stderr
    assert "putting 1 uploaded files in bucket" in result.stdout + result.stderr
    assert bucket.keys() == [key]
    data, metadata = bucket.read(key)
    assert data == TEXT and metadata["sha256"] == hashlib.sha256(TEXT).hexdigest()
    restored = list((project / ".local" / "uploads").rglob(Path(key).name))
    assert len(restored) == 1 and restored[0].read_bytes() == TEXT


def loaded(folder: Path, environ: dict[str, str]):
    (folder / ".env").write_text("")
    return config_load(environ=environ, start_dir=folder, env_file=folder / ".env")


@pytest.mark.parametrize("settings, variable", [
    ({"UPLOAD_STORE": "s3"}, "UPLOAD_S3_BUCKET"),
    ({"UPLOAD_STORE": "s3", "UPLOAD_S3_BUCKET": "Bad_Name"}, "UPLOAD_S3_BUCKET"),
    ({"UPLOAD_STORE": "s3", "UPLOAD_S3_BUCKET": "uploads",
      "UPLOAD_S3_ENDPOINT_URL": "minio:9000"}, "UPLOAD_S3_ENDPOINT_URL"),
    ({"UPLOAD_STORE": "s3", "UPLOAD_S3_BUCKET": "uploads", "UPLOAD_S3_ACCESS_KEY_ID": "key"},
     "UPLOAD_S3_ACCESS_KEY_ID"),
    ({"UPLOAD_STORE": "gcs"}, "UPLOAD_STORE"),
])
def test_the_settings_of_a_bucket_are_checked(tmp_path, settings, variable):
    with pytest.raises(ConfigError) as raised:
        loaded(tmp_path, settings)
    assert raised.value.variable == variable


def test_the_secret_is_never_shown(tmp_path):
    config = loaded(tmp_path, {"UPLOAD_STORE": "s3", "UPLOAD_S3_BUCKET": "uploads",
                               "UPLOAD_S3_ACCESS_KEY_ID": "key",
                               "UPLOAD_S3_SECRET_ACCESS_KEY": SECRET_KEY})
    assert config.upload_store == "s3" and config.upload_s3_secret_access_key == SECRET_KEY
    assert SECRET_KEY not in repr(config)
    assert SECRET_KEY not in str(config.display_items())


def test_a_local_only_base_keeps_its_uploads_off_a_bucket_elsewhere(clean_tables,
                                                                     config_override, tmp_path,
                                                                     bucket):
    # The stub listens on loopback; taken off the local hosts, it stands for a bucket elsewhere.
    config_override(project_root=tmp_path, rag_outbound_local_hosts=frozenset(),
                    **bucket.settings())
    kb_create(slug="field", name="Field reports")  # local-only, as every new base
    with pytest.raises(LocalRagError) as raised:
        upload()
    assert raised.value.code == "outbound_refused"
    assert raised.value.details["knowledge_bases"] == ["field"]
    assert bucket.keys() == [] and not Document.objects.exists()
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]
    kb_create(slug="shared", name="Shared", outbound="allowed")
    allowed = document_upload(caller=OPERATOR, slug="shared", filename="note.txt",
                              chunks=[TEXT])
    assert bucket.keys() == [object_key(stored_file(allowed.document_id), config=get_config())]
