"""The batched MinHash kernels agree with datasketch and with plain set arithmetic."""

import random

import numpy as np
import xxhash
from datasketch import MinHash

from corpus_platform.base.hashing import TextNormalization
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
