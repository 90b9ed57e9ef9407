"""The shards' tar writer writes the bytes webdataset.ShardWriter (tarfile) writes."""

import random
import tarfile
from pathlib import Path

import pytest
from webdataset import ShardWriter

from corpus_platform.kernels.sharding.ustar import UstarWriter


def _samples(count: int, seed: int) -> list[tuple[str, bytes, bytes]]:
    rng = random.Random(seed)
    sizes = [0, 1, 511, 512, 513, 1024, 10_239, 10_240]
    samples = []
    for i in range(count):
        size = sizes[i] if i < len(sizes) else rng.randint(0, 20_000)
        text = "".join(rng.choices("ab \n\u00e9\u4e2d\U0001f600", k=size)).encode()[:size]
        key = f"doc-{rng.randrange(10**12):012d}_{'x' * rng.randint(0, 60)}-{i % 3}"
        samples.append((key, b'{"doc_id":"d%d"}' % i, text))
    return samples


@pytest.mark.parametrize("count", [0, 1, 9, 300])
def test_bytes_equal_webdataset_shard_writer(tmp_path: Path, count: int) -> None:
    samples = _samples(count, seed=count)
    closed: list[str] = []
    reference = ShardWriter(
        str(tmp_path / "ref-%06d.tar"), maxcount=max(count, 1), maxsize=float("inf"),
        verbose=0, post=closed.append, user="corpus", group="corpus", mode=0o444, mtime=0,
        encoder=False,
    )  # fmt: skip
    with reference:
        for key, meta, text in samples:
            reference.write({"__key__": key, "json": meta, "txt": text})
    ours = tmp_path / "ours.tar"
    with UstarWriter(ours, "corpus", 0o444, 0) as writer:
        for key, meta, text in samples:
            writer.add(f"{key}.json", meta)
            writer.add(f"{key}.txt", text)
    assert ours.read_bytes() == (tmp_path / "ref-000000.tar").read_bytes()
    assert writer.close() == ours.stat().st_size and ours.stat().st_size % 10_240 == 0
    with tarfile.open(ours) as archive:  # and tarfile reads it back
        members = archive.getmembers()
        names = [f"{key}.{ext}" for key, _, _ in samples for ext in ("json", "txt")]
        assert [m.name for m in members] == names
        assert all(m.uname == "corpus" and m.mode == 0o444 and m.mtime == 0 for m in members)
        if samples:
            assert archive.extractfile(members[-1]).read() == samples[-1][2]


def test_what_tarfile_would_put_in_a_pax_header_is_refused(tmp_path: Path) -> None:
    with UstarWriter(tmp_path / "t.tar", "corpus", 0o444, 0) as writer:
        with pytest.raises(ValueError, match="not ASCII"):
            writer.add("caf\u00e9.txt", b"")
        with pytest.raises(ValueError, match="at most 100"):
            writer.add("x" * 101, b"")
    with pytest.raises(ValueError, match="owner"):
        UstarWriter(tmp_path / "o.tar", "x" * 33, 0o444, 0)
    for mtime in (-1, 8**11, 0.5):
        with pytest.raises(ValueError, match="mtime"):
            UstarWriter(tmp_path / "m.tar", "corpus", 0o444, mtime)  # type: ignore[arg-type]


def test_a_writer_left_by_an_exception_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "partial.tar"
    with pytest.raises(RuntimeError, match="stop"), UstarWriter(path, "c", 0o444, 0) as writer:
        writer.add("a.txt", b"x" * 600)
        raise RuntimeError("stop")
    assert not path.exists()
