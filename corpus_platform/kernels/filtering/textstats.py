"""Every heuristic filter score of a batch of texts, from one tokenization.

The filter stage used to score each document with a dozen Python passes over word tuples. Here a
batch is split into words once, exactly where ``str.split()`` does (a test compares them on
every code point), and the words are dictionary-encoded, both in one compiled walk
(:meth:`corpus_platform.base.words.Words.of_compiled`: Arrow's split and ``dictionary_encode``,
exactly, about twice as fast). Everything that depends on a word alone (its length, whether it
has a letter, is a stop word, a URL, a blocklisted word) is computed once per distinct word and
gathered; everything that depends on word n-grams is computed on integer arrays:

* a word n-gram's id is built from the (n-1)-gram id at the same position and the next word's
  code, ``factorize(id[n-1] * vocabulary + code)``, so ids are exact (no hash collisions) and
  numbered in order of first appearance (a compiled loop numbers one document's keys at a time,
  :mod:`.compiled`);
* unigram ids are scoped to their document, so every n-gram id is too, and the first occurrence
  of an n-gram is where its id exceeds every id before it;
* repeated n-grams mark the words they cover through a difference array; per-document sums are
  ``bincount`` over the document index of each word.

Characters, lines and paragraphs are scored by a compiled walk over the batch's bytes for texts of
ASCII bytes (:mod:`.line_kernel`, equal to :func:`line_scores` bit for bit), by
:func:`line_scores` for the others. The scores equal those of the straightforward per-document
definitions in ``tests/kernels/filtering/reference_filters.py`` bit for bit; a test compares them
on generated and real text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus_platform.base.words import Words, text_buffers

STOP_WORDS = ("and", "be", "have", "of", "that", "the", "to", "with")
BULLETS = (
    "\u2022",
    "\u25cf",
    "\u25cb",
    "\u25a0",
    "\u25a1",
    "\u25aa",
    "\u25ab",
    "\u2013",
    "-",
    "*",
    "\u2023",
    "\u2043",
)
ELLIPSES = ("...", "…")
URL_WORD = re.compile(r"^(?:https?://|www\.)\S+|^\S+\.(?:com|org|net|io|html?)(?:/\S*)?$", re.I)
# The same rule for ASCII words in RE2 syntax (a word holds no whitespace, so \S+ is .+).
URL_WORD_RE2 = r"(?i)^(?:https?://|www\.).+|^.+\.(?:com|org|net|io|html?)(?:/.*)?$"
CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|#include|return\b|for \(|if \(|\}|\{)|[;{}]\s*$"
)
BLOCKLIST_STRIP = ".,;:!?\"'()"
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
TOP_NGRAMS = (2, 3, 4)
DUPLICATE_NGRAMS = (5, 6, 7, 8, 9, 10)
BATCH_DOCS = 1024  # documents tokenized together: bounds memory, not results


@dataclass(frozen=True)
class WordAttributes:
    """Per distinct word: length, has a letter, stop-word index (-1: none), URL, blocklisted."""

    length: np.ndarray
    alpha: np.ndarray
    stop: np.ndarray
    url: np.ndarray
    blocked: np.ndarray


def _python_attributes(word: str, blocklist: frozenset[str]) -> tuple[bool, int, bool, bool]:
    lowered = word.lower()
    return (
        any(ch.isalpha() for ch in word),
        STOP_WORDS.index(lowered) if lowered in STOP_WORDS else -1,
        bool(URL_WORD.match(word)),
        word.strip(BLOCKLIST_STRIP).lower() in blocklist,
    )


def _writable(values: pa.Array, dtype: type) -> np.ndarray:
    return np.array(values.to_numpy(zero_copy_only=False), dtype=dtype)


def word_attributes(words: pa.Array, blocklist: frozenset[str]) -> WordAttributes:
    """Attributes of each distinct word: vectorized for ASCII words, Python for the rest (where
    Unicode case and letter rules must be exactly Python's)."""
    ascii_mask = pc.string_is_ascii(words)
    lowered = pc.ascii_lower(words)
    stop = pc.index_in(lowered, pa.array(STOP_WORDS)).fill_null(-1)
    trimmed = pc.ascii_lower(pc.utf8_trim(words, characters=BLOCKLIST_STRIP))
    attrs = WordAttributes(
        length=_writable(pc.utf8_length(words), np.int64),
        alpha=_writable(pc.match_substring_regex(words, "[A-Za-z]"), np.bool_),
        stop=_writable(stop, np.int64),
        url=_writable(pc.match_substring_regex(words, URL_WORD_RE2), np.bool_),
        blocked=_writable(pc.is_in(trimmed, pa.array(sorted(blocklist), pa.string())), np.bool_),
    )
    for index in np.flatnonzero(~ascii_mask.to_numpy(zero_copy_only=False)):
        alpha, stop_index, url, blocked = _python_attributes(words[index].as_py(), blocklist)
        attrs.alpha[index], attrs.stop[index] = alpha, stop_index
        attrs.url[index], attrs.blocked[index] = url, blocked
    return attrs


def _factorize(keys: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Ids of ``keys`` in order of first appearance (``pandas.factorize``), numbered one
    document (``owner``, non-decreasing) at a time: keys are scoped to their document."""
    from corpus_platform.kernels.filtering.compiled import segmented_factorize  # numba

    return segmented_factorize(keys.astype(np.int64, copy=False), owner)


def _factorize_codes(codes: np.ndarray, owner: np.ndarray, vocabulary: int) -> np.ndarray:
    """:func:`_factorize` of the unigram keys ``owner * vocabulary + codes``, by direct index."""
    from corpus_platform.kernels.filtering.compiled import factorize_codes  # numba

    return factorize_codes(codes.astype(np.int64, copy=False), owner, vocabulary)


def _first_occurrences(ids: np.ndarray) -> np.ndarray:
    """True where an id (numbered in order of first appearance) appears for the first time."""
    first = np.empty(len(ids), dtype=bool)
    if len(ids):
        first[0] = True
        first[1:] = ids[1:] > np.maximum.accumulate(ids)[:-1]
    return first


@dataclass(frozen=True)
class WordLayout:
    """Where every word of a batch sits: its document, and how many words follow it there."""

    doc: np.ndarray
    remaining: np.ndarray
    length: np.ndarray
    total_chars: np.ndarray
    cumulative: np.ndarray

    @classmethod
    def of(cls, counts: np.ndarray, length: np.ndarray) -> WordLayout:
        doc = np.repeat(np.arange(len(counts)), counts)
        ends = np.cumsum(counts)
        cumulative = np.zeros(len(length) + 1, dtype=np.int64)
        np.cumsum(length, out=cumulative[1:])
        return cls(
            doc=doc,
            remaining=ends[doc] - np.arange(len(doc)),
            length=length,
            total_chars=(cumulative[ends] - cumulative[ends - counts]).astype(np.float64),
            cumulative=cumulative,
        )

    def count(self, mask: np.ndarray) -> np.ndarray:
        """How many words of each document ``mask`` holds for (float64), counting only the
        words it holds for: cheap when they are few."""
        return np.bincount(self.doc[mask], minlength=len(self.total_chars)).astype(np.float64)

    def fraction(self, numerator: np.ndarray) -> np.ndarray:
        """``numerator / total word characters`` per document; 0 where a document has none."""
        out = np.zeros(len(numerator))
        np.divide(numerator, self.total_chars, out=out, where=self.total_chars > 0)
        return out


def _repeated(ids: np.ndarray, candidates: np.ndarray, size: int) -> np.ndarray:
    """A mask over word positions: the gram starting there occurs at least twice."""
    counts = np.bincount(ids[candidates]) if len(candidates) else np.zeros(0, np.int64)
    mask = np.zeros(size + 1, dtype=bool)
    mask[candidates] = counts[ids[candidates]] >= 2
    return mask


def _covered_fraction(starts: np.ndarray, n: int, layout: WordLayout) -> np.ndarray:
    """Characters of the words covered by n-grams starting at ``starts`` (ascending, each
    inside its document), over all word characters, per document.

    Overlapping n-grams are merged into runs (a run ends where the next n-gram starts at or
    after the farthest end so far), so each covered word counts once; only the given n-grams
    are touched, not every word of the batch.
    """
    if not len(starts):
        return np.zeros(len(layout.total_chars))
    ends = starts + n
    reach = np.maximum.accumulate(ends)
    first = np.flatnonzero(np.r_[True, starts[1:] >= reach[:-1]])
    run_start, run_end = starts[first], np.maximum.reduceat(ends, first)
    chars = layout.cumulative[run_end] - layout.cumulative[run_start]
    covered = np.bincount(layout.doc[run_start], weights=chars, minlength=len(layout.total_chars))
    return layout.fraction(covered)


def _top_fraction(
    ids: np.ndarray, candidates: np.ndarray, n: int, layout: WordLayout
) -> np.ndarray:
    """Characters covered by each document's most frequent n-gram (ties: the one seen first),
    over all word characters; 0 where no n-gram repeats."""
    scores = np.zeros(len(layout.total_chars))
    if not len(candidates):
        return scores
    gram = ids[candidates]
    counts = np.bincount(gram)
    scale = len(counts)
    key = counts[gram] * scale + (scale - 1 - gram)
    doc_of = layout.doc[candidates]
    segment = np.flatnonzero(np.r_[True, doc_of[1:] != doc_of[:-1]])
    best = np.maximum.reduceat(key, segment)
    best_count, best_id = best // scale, scale - 1 - best % scale
    first_position = np.zeros(scale, dtype=np.int64)
    first_position[gram[::-1]] = candidates[::-1]
    start = first_position[best_id]
    chars = layout.cumulative[start + n] - layout.cumulative[start]
    owner, repeated = doc_of[segment], best_count >= 2
    scores[owner[repeated]] = (best_count[repeated] * chars[repeated]) / layout.total_chars[
        owner[repeated]
    ]
    return scores


def ngram_scores(codes: np.ndarray, vocabulary: int, layout: WordLayout) -> dict[str, np.ndarray]:
    """Top n-gram (n = 2..4) and duplicate n-gram (n = 5..10) character fractions.

    Only positions where an n-gram can repeat are looked at: an n-gram occurs twice only if both
    (n-1)-grams inside it do, so each round keeps the positions whose (n-1)-grams at ``i`` and
    ``i + 1`` repeat. Every occurrence of a repeated n-gram stays a candidate, so ids numbered
    in order of first appearance among candidates tell first occurrences and ties exactly.
    """
    size = len(codes)
    if size and (size + 1) * (vocabulary + 1) >= 2**62:
        raise ValueError(f"batch too large for exact n-gram ids: {size} words")
    out: dict[str, np.ndarray] = {}
    ids = np.full(size + 1, -1, dtype=np.int64)
    candidates = np.arange(size)
    ids[:size] = _factorize_codes(codes, layout.doc, vocabulary)
    for n in range(2, max(DUPLICATE_NGRAMS) + 1):
        repeated = _repeated(ids, candidates, size)
        candidates = np.flatnonzero(repeated[:size] & repeated[1:] & (layout.remaining >= n))
        grams = np.full(size + 1, -1, dtype=np.int64)
        keys = ids[candidates] * vocabulary + codes[candidates + n - 1]
        grams[candidates] = _factorize(keys, layout.doc[candidates])
        ids = grams
        if n in TOP_NGRAMS:
            out[f"top_{n}gram_char_fraction"] = _top_fraction(ids, candidates, n, layout)
        if n in DUPLICATE_NGRAMS:
            later = candidates[~_first_occurrences(ids[candidates])]
            out[f"duplicate_{n}gram_char_fraction"] = _covered_fraction(later, n, layout)
    return out


def _duplicates(items: list[str]) -> tuple[float, float]:
    """(fraction of items that repeat an earlier one, fraction of their characters): every
    occurrence of an item but its first repeats one, so the repeats are the items less the
    distinct ones, in number and in characters."""
    if not items:
        return 0.0, 0.0
    distinct = set(items)
    total_chars = sum(map(len, items))
    repeated_chars = total_chars - sum(map(len, distinct))
    return (len(items) - len(distinct)) / len(items), (
        repeated_chars / total_chars if total_chars else 0.0
    )


def _ratio(count: float, total: float) -> float:
    return count / total if total else 0.0


def _code_line(line: str) -> bool:
    """``CODE_LINE.search(line)`` for a stripped, non-empty line, running the regex only where
    it can match: a line ending in ``;{}`` always does; otherwise only the start can match."""
    return line[-1] in ";{}" or (line[0] in "dcif#r{}" and bool(CODE_LINE.search(line)))


def line_scores(text: str, words: int, may_hold_lorem: bool = True) -> dict[str, float]:
    """The scores that look at characters, lines and paragraphs of one text: the definition,
    and the fallback of :func:`batch_line_scores` for texts above ASCII (the compiled kernel
    equals it bit for bit on the others). ``may_hold_lorem``: False when a case-insensitive
    search found no "lorem ipsum" in it."""
    lines = list(filter(None, map(str.strip, text.split("\n"))))
    paragraphs = list(filter(None, map(str.strip, PARAGRAPH_BREAK.split(text))))
    line_dups, paragraph_dups = _duplicates(lines), _duplicates(paragraphs)
    symbols = text.count("#") + text.count("...") + text.count("…")
    return {
        "chars": float(len(text)),
        "symbol_word_ratio": _ratio(symbols, words),
        "bullet_lines_ratio": _ratio(sum(map(str.startswith, lines, repeat(BULLETS))), len(lines)),
        "ellipsis_lines_ratio": _ratio(sum(map(str.endswith, lines, repeat(ELLIPSES))), len(lines)),
        "duplicate_line_fraction": line_dups[0],
        "duplicate_paragraph_fraction": paragraph_dups[0],
        "duplicate_line_char_fraction": line_dups[1],
        "duplicate_paragraph_char_fraction": paragraph_dups[1],
        "c4_lorem_ipsum": float(may_hold_lorem and "lorem ipsum" in text.lower()),
        "c4_curly_braces": float("{" in text),
        "code_line_ratio": _ratio(sum(map(_code_line, lines)), len(lines)),
    }


def _word_scores(
    texts: pa.Array, blocklist: frozenset[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    words = Words.of_compiled(texts)
    counts, codes = words.counts, words.codes
    attrs = word_attributes(words.dictionary, blocklist)
    layout = WordLayout.of(counts, attrs.length[codes])
    stop = attrs.stop[codes]
    hit = np.flatnonzero(stop >= 0)
    stop_seen = np.zeros((len(counts), len(STOP_WORDS)), dtype=bool)  # document x stop word
    stop_seen[layout.doc[hit], stop[hit]] = True
    per_word = {
        "words": counts.astype(np.float64),
        "mean_word_length": np.divide(
            layout.total_chars, counts, out=np.zeros(len(counts)), where=counts > 0
        ),
        "stop_words": stop_seen.sum(axis=1).astype(np.float64),
    }
    alpha_words = counts - layout.count(~attrs.alpha[codes])  # most words have a letter
    for name, hits in (
        ("alpha_words_ratio", alpha_words),
        ("url_ratio", layout.count(attrs.url[codes])),
    ):
        per_word[name] = np.divide(hits, counts, out=np.zeros(len(counts)), where=counts > 0)
    per_word["blocklist_words"] = layout.count(attrs.blocked[codes])
    per_word.update(ngram_scores(codes, max(len(words.dictionary), 1), layout))
    return counts, per_word


def _may_hold_lorem(texts: pa.Array) -> list[bool]:
    """Texts where ``"lorem ipsum" in text.lower()`` can hold, by one case-insensitive RE2
    search of the batch (no lowered copy of every text): a superset, since the only characters
    Python's ``lower()`` turns into the phrase's letters are their ASCII capitals (U+0130 lowers
    to "i" and a combining dot, which no "p" follows)."""
    return pc.match_substring(texts, "lorem ipsum", ignore_case=True).to_pylist()


def batch_line_scores(
    batch: list[str], array: pa.Array, words: np.ndarray, lorem: list[bool]
) -> dict[str, np.ndarray]:
    """:func:`line_scores` of every text of a batch (``array``: the batch as one large_string
    array; ``words``, ``lorem``: each text's word count and RE2 lorem pre-check), keyed as it
    keys them: compiled for texts of ASCII bytes, :func:`line_scores` itself for the others
    (about 1%), whose Unicode whitespace and bullets the compiled walk leaves out."""
    from corpus_platform.kernels.filtering.line_kernel import COLUMNS, LOREM, line_stats  # numba

    data, offsets = text_buffers(array)
    values = np.zeros((len(COLUMNS), len(batch)))
    ascii_only = line_stats(data, offsets, words.astype(np.int64, copy=False), values)
    for index in np.flatnonzero(~ascii_only):
        row = line_scores(batch[index], int(words[index]), lorem[index])
        values[:, index] = [row[name] for name in COLUMNS]
    for index in np.flatnonzero(ascii_only & np.array(lorem, dtype=bool)):
        values[LOREM, index] = float("lorem ipsum" in batch[index].lower())
    return dict(zip(COLUMNS, values, strict=True))


def text_scores(texts: Sequence[str], blocklist: frozenset[str]) -> dict[str, np.ndarray]:
    """Every heuristic score of every text, keyed by score name, one float64 per text.

    Names: ``chars``, ``words``, ``mean_word_length``, the ratios and fractions of the Gopher,
    C4, URL and code rules, ``blocklist_words`` (count of blocklisted words).
    """
    columns: dict[str, list[np.ndarray]] = {}
    for start in range(0, len(texts), BATCH_DOCS):
        batch = list(texts[start : start + BATCH_DOCS])
        array = pa.array(batch, pa.large_string())
        counts, scores = _word_scores(array, blocklist)
        scores.update(batch_line_scores(batch, array, counts, _may_hold_lorem(array)))
        for name, values in scores.items():
            columns.setdefault(name, []).append(values)
    return {name: np.concatenate(parts) for name, parts in columns.items()}
