"""Where uploaded files are kept: UPLOAD_STORE=folder keeps them in UPLOAD_DIR only (a worker
on another machine mounts the same folder at the same path); UPLOAD_STORE=s3 keeps every upload
in an S3-compatible bucket, and UPLOAD_DIR becomes each machine's cache of it.

The database names an upload by its path in UPLOAD_DIR (`<UPLOAD_DIR>/kb-<id>/<stored name>`,
which every machine uses alike); its object is `<UPLOAD_S3_PREFIX>kb-<id>/<stored name>`. The
web process puts the file in the bucket before the document's row commits, so a failed put
stores nothing; a worker whose cache lacks the file fetches it before it ingests, and a file the
bucket has lost fails that job — it never reads as a deleted file, which would take the document
out of the index; a delete removes the object, then the cached copy.

Bounds: a fetched object is read in chunks and refused past `max_bytes` (an object replaced in
the bucket by a huge one fills no disk) and must match the sha256 recorded when it was put.
boto3 is imported on first use: importing it, and making a client, takes ~0.1 s and ~0.2 s of
a process here, which no command that never touches a bucket should pay."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.config import Config, endpoint_origin
from core.errors import LocalRagError
from parsing.formats import NOTE_SUFFIX, suffix_of
from parsing.vault import DEFAULT_MAX_FILE_BYTES

log = logging.getLogger("localrag.knowledge.upload_store")

SHA256_METADATA = "sha256"  # the object's x-amz-meta-sha256: the bytes' digest at upload
_READ_BYTES = 1024 * 1024
# Error codes S3 (and MinIO, Ceph) give for credentials it does not accept.
_AUTH_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403",
               "InvalidToken", "ExpiredToken"}
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
# `details.reason` of an upload the bucket cannot give back as it was put: no retry helps.
LOST_REASONS = frozenset({"missing", "too_large", "digest_mismatch"})


class UploadStoreError(LocalRagError):
    code = "upload_store_error"


def store_is_bucket(config: Config) -> bool:
    return config.upload_store == "s3"


def object_key(path: Path, *, config: Config) -> str:
    """The object of an upload stored at `path` (`…/kb-<id>/<stored name>`)."""
    return f"{config.upload_s3_prefix}{path.parent.name}/{path.name}"


def upload_put(source: Path, *, stored_at: Path, config: Config, sha256: str = "") -> None:
    """Put the file at `source` in the bucket as the upload that will be `stored_at` (nothing
    without a bucket), with its sha256 (`sha256` when the caller hashed it already, as an
    upload has while streaming); UploadStoreError when the bucket does not take it."""
    if not store_is_bucket(config):
        return
    if not sha256:
        digest = hashlib.sha256()
        with open(source, "rb") as handle:
            for block in iter(lambda: handle.read(_READ_BYTES), b""):
                digest.update(block)
        sha256 = digest.hexdigest()
    key = object_key(stored_at, config=config)
    with _translated(config, action="put", key=key), open(source, "rb") as handle:
        _client(config).put_object(Bucket=config.upload_s3_bucket, Key=key, Body=handle,
                                   Metadata={SHA256_METADATA: sha256})


def upload_limit(name: str, *, config: Config) -> int:
    """The largest upload of this kind of file, in bytes (as for files in a vault)."""
    if suffix_of(name) == NOTE_SUFFIX:
        return DEFAULT_MAX_FILE_BYTES
    return config.rag_document_max_bytes


def upload_ensure(path: Path, *, config: Config) -> bool:
    """Make sure this machine holds the upload stored at `path`: fetched from the bucket when
    the cache lacks it (True), else nothing to do (False). UploadStoreError when the bucket has
    lost it, does not answer, or holds something other than what was uploaded."""
    if not store_is_bucket(config) or path.exists():
        return False
    max_bytes = upload_limit(path.name, config=config)
    key = object_key(path, config=config)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.parent / f".fetch-{uuid.uuid4().hex}"
    try:
        with _translated(config, action="fetch", key=key):
            answer = _client(config).get_object(Bucket=config.upload_s3_bucket, Key=key)
            expected = (answer.get("Metadata") or {}).get(SHA256_METADATA)
            size = 0
            digest = hashlib.sha256()
            with open(partial, "xb") as handle:
                os.chmod(partial, 0o600)
                for block in answer["Body"].iter_chunks(_READ_BYTES):
                    size += len(block)
                    if size > max_bytes:
                        answer["Body"].close()
                        raise UploadStoreError(
                            f"the bucket's copy of {path.name} is larger than the "
                            f"{max_bytes:,}-byte limit of an upload; it was not fetched",
                            details={"key": key, "reason": "too_large",
                                     "limit_bytes": max_bytes})
                    digest.update(block)
                    handle.write(block)
        if expected and digest.hexdigest() != expected:
            raise UploadStoreError(
                f"the bucket's copy of {path.name} is not the file that was uploaded (its "
                "sha256 differs from the one recorded at upload); it was not used",
                details={"key": key, "reason": "digest_mismatch"})
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    log.info("fetched %s from the upload bucket (%s bytes)", key, size)
    return True


def upload_remove(path: Path, *, config: Config) -> None:
    """Remove an upload's object (a missing one is already removed), then its cached file."""
    if store_is_bucket(config):
        key = object_key(path, config=config)
        with _translated(config, action="delete", key=key):
            _client(config).delete_object(Bucket=config.upload_s3_bucket, Key=key)
    path.unlink(missing_ok=True)


def upload_remove_quietly(path: Path, *, config: Config) -> None:
    """`upload_remove` where an error is already on its way (the upload failed): logged, not
    raised over the first error."""
    try:
        upload_remove(path, config=config)
    except UploadStoreError as exc:
        log.warning("could not remove %s after a failed upload: %s", path.name, exc.message)


def upload_store_shown(config: Config) -> dict[str, str]:
    """What /health and the status page say of the store, for administrators: its kind and,
    for a bucket, its name and endpoint (scheme://host:port only). Read from the settings:
    a health probe never waits on the bucket."""
    if not store_is_bucket(config):
        return {"store": "folder"}
    return {"store": "s3", "bucket": config.upload_s3_bucket,
            "endpoint": bucket_endpoint(config)}


def bucket_endpoint(config: Config) -> str:
    """The bucket's server as scheme://host:port (AWS S3's regional endpoint without one)."""
    if config.upload_s3_endpoint_url:
        return endpoint_origin(config.upload_s3_endpoint_url) or ""
    return f"https://s3.{config.upload_s3_region}.amazonaws.com"


@contextlib.contextmanager
def _translated(config: Config, *, action: str, key: str) -> Iterator[None]:
    """boto3's errors as UploadStoreError naming the bucket, the action and the object, with
    `details.reason` saying what kind of failure it was. Never the endpoint: the message reaches
    API callers and job listings, and the URL may name an internal host (administrators see
    the endpoint on /health and the status page)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        where = f"bucket {config.upload_s3_bucket}"
        details: dict[str, Any] = {"bucket": config.upload_s3_bucket, "action": action}
        if key:
            details["key"] = key
        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code", ""))
            details["s3_code"] = code
            if code in _MISSING_CODES and key:
                reason, message = "missing", f"the {where} does not hold {key}"
            elif code in _AUTH_CODES:
                reason = "auth_failed"
                message = f"the {where} refused this server's credentials ({code})"
            elif code == "NoSuchBucket":
                reason, message = "no_bucket", f"the {where} does not exist"
            else:
                reason = "upstream_error"
                message = f"the {where} answered the {action} with an error ({code})"
        else:
            reason = "unreachable"
            message = (f"the {where} could not be reached for the {action} "
                       f"({type(exc).__name__})")
        details["reason"] = reason
        raise UploadStoreError(message, details=details) from None


@functools.lru_cache(maxsize=8)
def _client_for(endpoint: str, region: str, key_id: str, secret: str, timeout: float) -> Any:
    import boto3
    from botocore.config import Config as BotoConfig

    settings = BotoConfig(connect_timeout=timeout, read_timeout=timeout, region_name=region,
                          retries={"max_attempts": 3, "mode": "standard"},
                          # MinIO and most S3-compatible servers want the bucket in the path.
                          s3={"addressing_style": "path" if endpoint else "auto"},
                          signature_version="s3v4")
    credentials = {"aws_access_key_id": key_id, "aws_secret_access_key": secret} if key_id else {}
    return boto3.session.Session().client("s3", endpoint_url=endpoint or None, config=settings,
                                          **credentials)


def _client(config: Config) -> Any:
    """One client per store settings and process (boto3's clients are thread-safe)."""
    return _client_for(config.upload_s3_endpoint_url, config.upload_s3_region,
                       config.upload_s3_access_key_id, config.upload_s3_secret_access_key,
                       config.upload_s3_timeout_seconds)
