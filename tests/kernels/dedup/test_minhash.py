"""The batched MinHash kernels agree with datasketch and with plain set arithmetic."""

import gzip
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import xxhash
from datasketch import MinHash

from corpus_platform.base.arrays import avalanche64, distinct
from corpus_platform.base.hashing import TextNormalization
from corpus_platform.base.word_hashes import word_hashes
from corpus_platform.kernels.dedup import minhash
from corpus_platform.kernels.dedup.minhash import band_keys, shingle_sets, signatures
from tests.realtext import real_texts

NORM = TextNormalization()


def texts(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(300)}" for _ in range(rng.randint(0, 80))) for _ in range(n)]


def word_grams(text: str, size: int) -> set[tuple[str, ...]]:
    words = NORM.apply(text).split()
    if len(words) < size:
        return {tuple(words)}
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_shingle_sets_are_the_distinct_word_ngrams() -> None:
    batch = texts(60)
    sets = shingle_sets(batch, 5, NORM)
    assert len(sets) == 60
    for i, text in enumerate(batch):
        row = sets.row(i)
        assert len(row) == len(word_grams(text, 5))  # one hash per distinct n-gram
        assert np.all(row[1:] > row[:-1])  # sorted, distinct
    a, b = 0, 1
    exact = len(word_grams(batch[a], 5) & word_grams(batch[b], 5))
    assert len(np.intersect1d(sets.row(a), sets.row(b))) == exact


def test_a_row_does_not_depend_on_its_batch() -> None:
    batch = texts(40)
    alone = shingle_sets([batch[7]], 5, NORM).row(0)
    assert np.array_equal(shingle_sets(batch, 5, NORM).row(7), alone)


def test_signatures_equal_datasketch_minhash() -> None:
    batch = texts(30)
    sets = shingle_sets(batch, 5, NORM)
    ours = signatures(sets, 128, 42)
    for i in range(len(batch)):
        reference = MinHash(num_perm=128, seed=42, hashfunc=lambda v: v)
        reference.update_batch([int(h) & 0xFFFFFFFF for h in sets.row(i)])
        assert np.array_equal(ours[i], reference.hashvalues), i


def _reference_shingles(text: str, size: int) -> list[int]:
    """A text's shingle hashes by their definition, in Python integers: xxh3 of each normalized
    word, a polynomial over 2^64 (base NGRAM_BASE) of ``size`` of them (all of them when there
    are fewer) plus the number of words in it, MurmurHash3's 64-bit finalizer; sorted, distinct."""
    mask, base = 2**64 - 1, int(minhash.NGRAM_BASE)

    def avalanche(x: int) -> int:
        x ^= x >> 33
        x = x * 0xFF51AFD7ED558CCD & mask
        x ^= x >> 33
        x = x * 0xC4CEB9FE1A85EC53 & mask
        return x ^ x >> 33

    def gram(hashes: list[int]) -> int:
        value = 0
        for h in hashes:
            value = (value * base + h) & mask
        return avalanche((value + len(hashes)) & mask)

    words = [xxhash.xxh3_64_intdigest(w.encode()) for w in NORM.apply(text).split()]
    if len(words) < size:
        return [gram(words)]
    return sorted({gram(words[i : i + size]) for i in range(len(words) - size + 1)})


def test_shingle_hashes_are_their_definition_on_generated_and_debian_text() -> None:
    """The values every published sketch and exact-Jaccard check rests on: a change of them
    would make earlier builds' sketches incomparable with an append's."""
    batch = [*texts(80), "", "one", "two words", "caf\u00e9 na\u00efve \u00fcber stra\u00dfe x"]
    batch += real_texts(60)
    sets = shingle_sets(batch, 5, NORM)
    for i, text in enumerate(batch):
        assert sets.row(i).tolist() == _reference_shingles(text, 5), i


def test_a_row_without_shingles_has_datasketch_s_empty_signature() -> None:
    sets = minhash.ShingleSets(np.zeros(0, np.uint64), np.zeros(2, np.int64))
    assert np.array_equal(signatures(sets, 64, 1)[0], MinHash(num_perm=64, seed=1).hashvalues)


def test_band_keys_depend_on_the_slice_and_the_band() -> None:
    sig = np.zeros((2, 8), dtype=np.uint32)
    sig[1, 0] = 5
    keys = band_keys(sig, 4, 2)
    assert keys.shape == (2, 4)
    assert keys[0, 0] != keys[1, 0]  # the slices differ
    assert keys[0, 1] == keys[1, 1]  # equal slices in the same band share a key
    assert len(set(keys[0].tolist())) == 4  # equal slices in different bands do not


def _numpy_shingle_sets(normalized: list[str | None] | pa.Array, size: int) -> minhash.ShingleSets:
    """:func:`minhash.normalized_shingle_sets` as it was in numpy, before its compiled kernels:
    the reference they must match bit for bit."""

    def polynomial(words: np.ndarray, width: int) -> np.ndarray:
        grams = words[: len(words) - width + 1].copy()
        with np.errstate(over="ignore"):
            for k in range(1, width):
                grams = grams * minhash.NGRAM_BASE + words[k : len(words) - width + 1 + k]
        return grams

    words, counts = word_hashes(normalized)
    ends = np.cumsum(counts)
    rows: list[np.ndarray] = []
    full = np.empty(0, dtype=np.uint64)
    if len(words) >= size:
        owner = np.repeat(np.arange(len(counts)), counts)[: len(words) - size + 1]
        inside = np.arange(len(owner)) + size <= ends[owner]
        with np.errstate(over="ignore"):
            full = avalanche64(polynomial(words, size) + np.uint64(size))
        full = np.where(inside, full, np.uint64(0))
    for count, end in zip(counts.tolist(), ends.tolist(), strict=True):
        start = end - count
        if count >= size:
            rows.append(distinct(full[start : end - size + 1]))
        else:
            with np.errstate(over="ignore"):
                short = polynomial(words[start:end], count) if count else np.zeros(1, np.uint64)
                rows.append(avalanche64(short[:1] + np.uint64(count)))
    return minhash.ShingleSets.of_rows(rows)


def _doc_files(pattern: str, limit: int = 120) -> list[str]:
    """Up to ``limit`` Debian documentation files as text, messy bytes replaced, at most 100 kB
    each."""
    out = []
    for path in sorted(Path("/usr/share/doc").glob(pattern))[:limit]:
        if path.is_file():
            data = path.read_bytes()
            data = gzip.decompress(data) if path.suffix == ".gz" else data
            out.append(data.decode("utf-8", errors="replace")[:100_000])
    return out


def _generated(size: int, seed: int) -> list[str | None]:
    """Texts of every length around ``size`` words, nulls and empty texts, and long texts of a few
    distinct words (windows repeated many times)."""
    rng = random.Random(seed)
    batch: list[str | None] = [None, "", "   \n\t "]
    for n in sorted({0, 1, max(size - 1, 0), size, size + 1, 2 * size, 3 * size + 2}):
        for vocabulary in (3, 1000):
            batch.append(" ".join(f"w{rng.randrange(vocabulary)}" for _ in range(n)))
    batch += [" ".join(f"r{rng.randrange(4)}" for _ in range(3000)), "same " * 2500]
    batch += [None if rng.random() < 0.1 else " ".join(["x"] * rng.randint(0, 40))]
    return batch


def test_normalized_shingle_sets_match_the_numpy_reference_bit_for_bit() -> None:
    real = _doc_files("*/copyright") + _doc_files("*/changelog*")
    assert len(real) > 100, "the test needs /usr/share/doc"
    real += [NORM.spaced(t) for t in real[::5]]
    for size in (1, 3, 5, 13):
        batch = _generated(size, size) + real + _generated(size, size + 100)
        # The kernel writes over the word hashes unless early empty texts forbid it: both ways.
        for texts_ in (batch, batch[::-1], ["", None, "", *batch], batch[:3], [], [None]):
            for given in (
                texts_,
                pa.array(texts_, pa.large_string()),
                pa.array(texts_, pa.string()),
            ):
                ours = minhash.normalized_shingle_sets(given, size)
                reference = _numpy_shingle_sets(given, size)
                for got, want in (
                    (ours.values, reference.values),
                    (ours.offsets, reference.offsets),
                ):
                    assert got.dtype == want.dtype, size
                    assert np.array_equal(got, want), size


def test_shingle_windows_overwrite_the_word_hashes_only_when_safe() -> None:
    from corpus_platform.kernels.dedup import compiled

    words, counts = word_hashes(["a b c d e f g", "", "h i"])
    values, _ = compiled.shingle_windows(words, counts, 3)
    assert np.shares_memory(values, words)  # rows' hashes end before the next row's words
    words, counts = word_hashes(["", "", "a b c d"])
    values, _ = compiled.shingle_windows(words, counts, 3)
    assert not np.shares_memory(values, words)  # the empty first row's shingle would overwrite "a"
