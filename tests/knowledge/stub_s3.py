"""A local S3 for the bucket upload store's tests: moto's server on a socket of this machine,
reached by boto3 over HTTP exactly as a MinIO or AWS endpoint would be."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ACCESS_KEY = "stub-access-key"
SECRET_KEY = "stub-secret-key-never-shown"
REGION = "us-east-1"


@dataclass
class StubBucket:
    endpoint: str
    bucket: str
    client: Any  # a boto3 S3 client of the stub, for the test's own looks and changes

    def settings(self, **changes: Any) -> dict[str, Any]:
        """Config fields that keep uploads in this bucket."""
        return {"upload_store": "s3", "upload_s3_bucket": self.bucket,
                "upload_s3_prefix": "tests/", "upload_s3_endpoint_url": self.endpoint,
                "upload_s3_region": REGION, "upload_s3_access_key_id": ACCESS_KEY,
                "upload_s3_secret_access_key": SECRET_KEY, "upload_s3_timeout_seconds": 5.0,
                **changes}

    def keys(self) -> list[str]:
        listing = self.client.list_objects_v2(Bucket=self.bucket)
        return sorted(item["Key"] for item in listing.get("Contents", []))

    def read(self, key: str) -> tuple[bytes, dict[str, str]]:
        answer = self.client.get_object(Bucket=self.bucket, Key=key)
        return answer["Body"].read(), answer.get("Metadata") or {}


@contextmanager
def stub_bucket() -> Iterator[StubBucket]:
    """A new, empty bucket on a server of its own (moto keeps its buckets per process, so each
    gets a name of its own)."""
    import uuid

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY)
        name = f"local-rag-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=name)
        yield StubBucket(endpoint=endpoint, bucket=name, client=client)
    finally:
        server.stop()
