"""Where a project's snapshot objects are kept: the ``snapshots:`` section of corpus.yaml.

```yaml
snapshots:
  remote: s3://my-bucket/corpus      # or a folder; unset: .dvc/config decides (.dvc-storage/)
  endpoint_url: http://127.0.0.1:9000  # S3-API stores other than AWS (MinIO, Ceph, moto)
```

Credentials never live here nor in ``.dvc/config``: DVC's S3 client reads them from the
environment (:data:`CREDENTIAL_VARIABLES`). Where the objects are kept does not change what a
dataset is, so the section is neither part of the config hash nor recorded with snapshots.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

S3_SCHEME = "s3://"
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_CREDENTIAL_KEYS = {
    "access_key_id",
    "secret_access_key",
    "session_token",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "credentials",
    "password",
}
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
CREDENTIALS_FIX = (
    "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary "
    "credentials) in the environment of every corpus command"
)


def is_s3(url: str | None) -> bool:
    """True for an ``s3://`` URL."""
    return (url or "").startswith(S3_SCHEME)


class SnapshotsConfig(BaseModel):
    """The DVC remote of a project.

    Attributes:
        remote: ``s3://bucket[/prefix]`` or a folder (relative to the project). None: the
            project's ``.dvc/config`` decides; a new project gets ``.dvc-storage/``.
        endpoint_url: The address of an S3-API store that is not AWS (S3 remotes only).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    remote: str | None = None
    endpoint_url: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_credentials(cls, data: object) -> object:
        found = (
            sorted(str(k) for k in data if str(k).lower() in _CREDENTIAL_KEYS)
            if isinstance(data, dict)
            else []
        )
        if found:
            raise ValueError(f"{found}: credentials never go into corpus.yaml; {CREDENTIALS_FIX}")
        return data

    @field_validator("remote")
    @classmethod
    def _remote(cls, remote: str | None) -> str | None:
        if remote is None:
            return None
        remote = remote.strip().rstrip("/")
        if is_s3(remote):
            bucket = remote.removeprefix(S3_SCHEME).split("/", 1)[0]
            if not _BUCKET.fullmatch(bucket) or ".." in bucket:
                raise ValueError(
                    f"{bucket!r} is not an S3 bucket name (3 to 63 lowercase letters, digits, '.' "
                    "and '-'); use s3://bucket/prefix"
                )
        elif not remote or "://" in remote:
            raise ValueError(
                f"{remote!r}: use s3://bucket/prefix (an S3-API store) or a folder; DVC's plugins "
                "for other remote kinds are not installed"
            )
        return remote

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, endpoint: str | None) -> str | None:
        if endpoint is None:
            return None
        endpoint = endpoint.strip().rstrip("/")
        parts = urlsplit(endpoint)
        if parts.username or parts.password:
            raise ValueError(f"put no credentials in the URL; {CREDENTIALS_FIX}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("use http(s)://host[:port], for example http://127.0.0.1:9000")
        return endpoint

    @model_validator(mode="after")
    def _endpoint_needs_s3(self) -> SnapshotsConfig:
        if self.endpoint_url and not is_s3(self.remote):
            raise ValueError("endpoint_url needs an S3 remote: set remote: s3://bucket/prefix")
        return self

    def remote_url(self, root: Path) -> str | None:
        """The remote as DVC takes it (the S3 URL, or the folder made absolute against
        ``root``); None when the project's ``.dvc/config`` decides."""
        if self.remote is None or is_s3(self.remote):
            return self.remote
        return str((root / self.remote).resolve())
