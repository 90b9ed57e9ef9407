"""Which raw files a build reads: new ones, or ones named to re-ingest; a changed one is an
error that names it."""

import hashlib
from pathlib import Path

import pytest

from corpus_platform.base.files import known_md5
from corpus_platform.base.names import batch_key
from corpus_platform.kernels.ingest import batches
from corpus_platform.kernels.ingest.batches import file_sha256, plan_batches
from corpus_platform.kernels.ingest.decoding import InputError

PUBLISHED = {
    "web/a.jsonl": {"sha256": "a" * 64},
    "web/b.jsonl": {"sha256": "b" * 64},
    "old.csv": {"sha256": "c" * 64},
}


def test_new_files_are_read_published_ones_kept_and_removed_ones_named() -> None:
    names = ["web/a.jsonl", "web/b.jsonl", "web/new.jsonl"]
    digests = {"web/a.jsonl": "a" * 64, "web/b.jsonl": "b" * 64, "web/new.jsonl": "d" * 64}
    plan = plan_batches(names, digests, PUBLISHED)
    assert plan.new == ("web/new.jsonl",)
    assert plan.kept == ("web/a.jsonl", "web/b.jsonl")
    assert plan.gone == ("old.csv",)
    first = plan_batches(names, digests, None)  # nothing published: every file is new
    assert first.new == tuple(names) and first.kept == ()


def test_a_changed_file_is_an_error_unless_it_is_named_to_reingest() -> None:
    names = ["web/a.jsonl", "web/b.jsonl"]
    digests = {"web/a.jsonl": "a" * 64, "web/b.jsonl": "e" * 64}
    with pytest.raises(InputError) as error:
        plan_batches(names, digests, PUBLISHED, snapshot="f00d")
    message = str(error.value)
    assert (
        "raw file web/b.jsonl changed after it was ingested into raw_documents snapshot f00d"
        in (message)
    )
    assert "sha256 bbbbbbbbbbbb... then, eeeeeeeeeeee... now" in message
    assert "`corpus run --reingest web/b.jsonl`" in message
    plan = plan_batches(names, digests, PUBLISHED, reingest=["web/b.jsonl"])
    assert plan.new == ("web/b.jsonl",) and plan.kept == ("web/a.jsonl",)
    with pytest.raises(InputError, match=r"not in the raw folder: \['web/c.jsonl'\]"):
        plan_batches(names, digests, PUBLISHED, reingest=["web/c.jsonl"])


def test_batch_keys_are_distinct_file_names_and_digests_follow_bytes(tmp_path: Path) -> None:
    assert batch_key("web/crawl-0.jsonl") == "web%2Fcrawl-0.jsonl"
    assert batch_key("a/b") != batch_key("a%2Fb")
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_bytes(b"x" * 3_000_000)
    two.write_bytes(b"x" * 2_999_999 + b"y")
    assert file_sha256(one) != file_sha256(two)
    assert file_sha256(one) == file_sha256(one)


def test_raw_files_are_hashed_again_only_when_they_change(tmp_path: Path, monkeypatch) -> None:
    raw = {name: tmp_path / name for name in ("a.jsonl", "b.jsonl")}
    for name, path in raw.items():
        path.write_text(f'{{"id": "{name}"}}\n', encoding="utf-8")
    known = tmp_path / "cache" / "digests.json"
    first = batches.file_digests(raw, known)
    assert first == {name: batches.file_sha256(path) for name, path in raw.items()}
    hashed: list[Path] = []
    real = batches.file_sha256
    monkeypatch.setattr(batches, "file_sha256", lambda p: hashed.append(p) or real(p))
    assert batches.file_digests(raw, known) == first and hashed == []  # nothing changed
    raw["b.jsonl"].write_text('{"id": "b", "more": 1}\n', encoding="utf-8")
    again = batches.file_digests(raw, known)
    assert hashed == [raw["b.jsonl"]] and again["b.jsonl"] != first["b.jsonl"]
    assert again["a.jsonl"] == first["a.jsonl"]


def test_hashing_a_raw_file_leaves_its_md5_known_for_the_pin_and_the_audit(
    tmp_path: Path,
) -> None:
    """One read gives the SHA-256 the batch records and the MD5 DVC names the file by; the MD5
    is known for the file as it is, and forgotten once it is written again."""
    path = tmp_path / "web.jsonl"
    data = b'{"id": "a", "text": "caf\xc3\xa9"}\n' * 200_000  # several read blocks
    path.write_bytes(data)
    assert known_md5(path) is None
    assert batches.file_digests({"web.jsonl": path}, tmp_path / "digests.json") == {
        "web.jsonl": hashlib.sha256(data).hexdigest()
    }
    assert known_md5(path) == hashlib.md5(data).hexdigest()
    path.write_bytes(data + b"\n")
    assert known_md5(path) is None
