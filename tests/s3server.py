"""A real S3-API server for tests: moto in server mode, a separate process on a free loopback
port, reached over HTTP by DVC, s3fs and boto3 alike (no in-process mocking).

The fake credentials are put into this process's environment for as long as the server runs,
so every process the tests start (DVC's, the ``corpus`` command's) inherits them; the machine's
own AWS files and the instance metadata service are kept out of the way.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3

FAKE_KEY_ID = "corpus-test-key-id"
FAKE_SECRET = "corpus-test-secret-0123456789"  # must never reach a config file


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fake_aws_environment(home: Path) -> dict[str, str]:
    """Fake credentials and a region; no shared AWS files, no instance metadata lookups."""
    return {
        "AWS_ACCESS_KEY_ID": FAKE_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
    }


@dataclass
class S3Server:
    """A running moto server and a boto3 client for it."""

    endpoint: str
    process: subprocess.Popen

    @property
    def client(self):
        """A boto3 S3 client for the server."""
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")

    def create_bucket(self, bucket: str) -> None:
        """Create ``bucket``."""
        self.client.create_bucket(Bucket=bucket)

    def objects(self, bucket: str, prefix: str) -> dict[str, str]:
        """Key -> ETag (without quotes) of every object under ``prefix``."""
        found = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            for item in page.get("Contents", []):
                found[item["Key"]] = item["ETag"].strip('"')
        return found

    def copy_prefix(self, bucket: str, source: str, target: str) -> int:
        """Copy every object under ``source`` to ``target`` (server side); return the count."""
        keys = self.objects(bucket, source + "/")
        client = self.client
        for key in keys:
            client.copy_object(
                Bucket=bucket,
                Key=target + key[len(source) :],
                CopySource={"Bucket": bucket, "Key": key},
            )
        return len(keys)


def object_key(prefix: str, md5: str) -> str:
    """Where DVC 3 keeps an object under a remote prefix."""
    return f"{prefix}/files/md5/{md5[:2]}/{md5[2:]}"


@contextmanager
def moto_server(home: Path) -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port, wait until it answers, set the fake
    credentials in this process's environment; stop the server and restore the environment
    afterwards."""
    port = free_port()
    environment = fake_aws_environment(home)
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                assert process.poll() is None, "moto server exited"
                assert time.monotonic() < deadline, "moto server did not answer within 60 s"
                time.sleep(0.2)
        yield S3Server(endpoint, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def server_with_bucket(home: Path, bucket: str) -> Iterator[S3Server]:
    """A module fixture's body: a moto server holding an empty ``bucket``."""
    with moto_server(home) as server:
        server.create_bucket(bucket)
        yield server
