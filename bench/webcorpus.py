r"""A benchmark corpus that looks like web text, with duplicates of known similarity.

    .bench-venv/bin/python bench/webcorpus.py --docs 100000 --out DIR [--truth TRUTH.jsonl]

or from Python (``from webcorpus import ...`` in a script under ``bench/``; ``from
bench.webcorpus import ...`` from the repository root, as the tests do)::

    corpus = WebCorpus(seed=3)
    for doc in corpus.documents(100_000):
        doc.record()        # the raw row: id, body, src, author, created_at, label, url, ...
    corpus.truth.cluster_pairs(0.8)

Text. Documents have 200 to 2,000 words (uniform; about 7.5 KB on average) drawn from a Zipf
vocabulary (p(rank k) ~ (k + 2.7) ** -1.15) of 50,000 words whose first ~400 ranks are real
English words (the, of, and, to, a, in, that, is, for, it, with, as, was, on, be, have, ...:
about two thirds of the running words), followed by made-up words of English-like syllables and
endings (-ing, -tion, -ness, ...; the shorter, the more frequent), none on the project's word
blocklist. Words form sentences of 5 to 25 words (a capital, commas, a full stop, question or
exclamation mark), sentences form paragraphs of about 4 sentences separated by blank lines, and
one paragraph in five puts each sentence on its own line. So Gopher-style quality rules keep
almost every document (every document holds many of Gopher's stop words, its mean word length
is about 6, every word is alphabetic, no line ends with an ellipsis, lines do not repeat), and
lingua identifies almost every document as English.

Duplicates. Each document is, by default, an original (76%), or a copy of a random member of a
recent family (an original and the copies made of it, among the last ``window`` originals; a
family holds at most 6 documents):

- ``exact`` (5%): byte-identical;
- edited (15%), at a target word 5-gram Jaccard drawn uniformly from 0.5 to 1.0 (the edit size
  is solved for the target; the exact value is measured, see below): ``scattered`` (single
  words replaced, deleted or inserted at positions at least 6 words apart), ``block-replace``
  (a run of words replaced), ``block-insert`` (a run of new words inserted), ``truncate`` (the
  head or the tail cut). The edited words are laid out afresh (new sentence and paragraph
  breaks), and one edited copy in five is also reformatted as below;
- reformatted (4%), the same words under a ``\w+`` tokenizer: ``punctuation`` (sentence marks
  swapped, dropped or added), ``markup`` (words wrapped in ``[[...]]``, ``{{...}}``, ``[...]``
  or ``'''...'''``, one convention per page; half of them also get one ``[12]``-style
  reference per 250 words, whose numbers are the only new tokens, so their Jaccard is about
  0.95 rather than 1.0), ``line-breaks`` (hard
  wrapped, joined into one line, or CRLF) and ``bullets`` (a third of the paragraphs become
  bulleted lists with ``•``, ``-``, ``*``, ``·``, ``‣`` or ``◦``).

Ground truth (:class:`GroundTruth`), computed here and independently of the platform's kernels:
when a copy is generated, the exact Jaccard similarity of the sets of lowercase ``\w+`` word
5-grams (``re.findall(r"\w+", text.lower())``) of the copy and of every earlier member of its
family is recorded. Clusters at a threshold are the connected components of the pairs at or
above it. Documents of different families share only chance 5-grams of a Zipf vocabulary
(their Jaccard is about 0), so pairs across families are not recorded.

Metadata: ``src`` web / wiki / code (50 / 30 / 20%, as corpus.yaml's mix; every row is prose),
``author`` (35% of documents reuse one of the last 1,000 new authors, chosen uniformly, so an
author has about 1.5 documents and the components that join rows by author and by duplicate
family stay small, as a group split needs; a copy usually has another author than its
original, as a mirror site does), ``created_at`` (2022 to 2025, UTC), ``label``
(0/1, 30% ones), ``url`` (on the author's site), ``clicks`` and ``dwell_seconds`` (>= 0).

Everything is a function of the seed (numpy's seeded ``Generator``; never Python's ``hash()``),
and each document depends only on the ones before it: the first N documents of a larger corpus
are the N-document corpus. Documents stream one at a time; only the recent families are held,
so memory does not grow with the corpus.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import re
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import combinations, pairwise
from pathlib import Path
from typing import TextIO

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BLOCKLIST = REPO / "corpus_platform" / "data" / "blocklist.txt"
VOCABULARY_SEED = 20_260_611  # the made-up words are the same for every corpus seed
SHINGLE = 5
WORD = re.compile(r"\w+")


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


# Real English words by rough frequency rank; Gopher's eight stop words (the, be, to, of, and,
# that, have, with) are all near the top.
COMMON_WORDS = _split(
    """the of and to a in that is for it with as was on be have by at this are not from or
    but an they which you his we all their one there has been her will would more when if
    can so what about who out up them some into its than other only could time then these
    two may new first any like over our such most after how just even because no made many
    between those through both where much well should being each year under still same very
    own see back used get down make another life great come while last might since world
    work long here also people state good day way use part number place water case point
    group problem fact hand week company system program question government home school
    family student country city area money story month night light river market report
    change power music service house game history party result reason research early young
    local social public large small important different following possible able human
    national political economic general open free full strong clear simple common often
    always never several later today around against without within during before above
    below along among across behind toward upon whether though although however therefore
    information development education community experience management technology business
    industry interest language knowledge material medical million nothing
    organization particular performance personal position practice president production
    provide quality received relationship remember situation something sometimes
    special support teacher together understand university whatever yourself
    building children computer director economy election energy environment evidence
    federal figure financial foreign function health hospital husband individual instead
    international investment analysis article attention available beautiful campaign
    central century character chemical collection commercial conference congress control
    course culture current decision defense democratic design detail difference discussion
    district doctor evening example explain factor feeling football friend future growth
    heart himself image income increase island leader letter living machine marriage member
    memory message method military minute modern moment morning mother movement natural
    network office official operation opportunity painting parent patient pattern period
    picture player police popular population pressure private process product professor
    project property purpose reality recent record region religious remain response return
    science season second section security sense series serious significant single society
    soldier source southern space species standard statement station strategy structure
    subject success summer surface table television theory thousand training travel treatment
    trouble various village weapon western window woman writer"""
)
# Made-up words: syllables (onset, nucleus, coda; "-" is nothing), then an English ending.
ONSETS = _split(
    "- b c d f g h j k l m n p r s t v w y z bl br ch cl cr dr fl fr gl gr pl pr sc sh sk sl "
    "sm sn sp st str sw th tr wh"
)
NUCLEI = _split("a e i o u a e i o ai ea ee ie oa oo ou y")
CODAS = _split("- - - n r s t l m d nd nt st ng ck rt ss th x")
ENDINGS = _split("- - - - s s ed ing er tion ment ness able ly al ous ive ity ers ings")
SYLLABLE_WEIGHTS = np.array([0.10, 0.42, 0.35, 0.13])  # words of 1, 2, 3, 4 syllables
ZIPF_EXPONENT = 1.15  # Zipf-Mandelbrot law: p(rank k) ~ 1 / (k + shift) ** exponent
ZIPF_SHIFT = 2.7
ABBREVIATION_NOISE = 6.0  # spread (letters) of the made-up words' length-for-rank ordering

MARKS = ("", ",", ".", "?", "!")  # after a word: none, a comma, a sentence end
SEPARATORS = (" ", "\n", "\n\n", "")  # then a space, a line break, a paragraph break, the end
SENTENCE_END = np.array([2] * 8 + [3, 4])  # . (8 in 10), ? and !
PUNCTUATION_SWAPS = (".", "!", "?", ";", ":", ",", " -", "")
PUNCTUATION_EXTRA = (", ", " - ", "; ", ": ", " / ", " (", ") ")
MARKUP = ("[[{}]]", "{{{{{}}}}}", "[{}]", "'''{}'''")
BULLETS = ("\u2022", "-", "*", "\u00b7", "\u2023", "\u25e6")
EDITS = ("scattered", "scattered", "block-replace", "block-insert", "truncate")
FORMATS = ("punctuation", "markup", "line-breaks", "bullets")
SOURCES = ("web", "wiki", "code")
SOURCE_CUMULATIVE = np.array([0.5, 0.8, 1.0])
START = datetime(2022, 1, 1, tzinfo=UTC)
SPAN_SECONDS = 4 * 365 * 86_400
RECENT_AUTHORS = 1_000  # a document reuses one of the last RECENT_AUTHORS new authors ...
AUTHOR_REUSE = 0.35  # ... this often (about 1.5 documents per author; components stay small)
MAX_FAMILY = 6  # members of a family (an original and its copies)
BLOCK = 256  # documents drawn together (metadata in one call, originals laid out in one pass)

Pair = tuple[str, str]


def words_of(text: str) -> list[str]:
    r"""The ground truth's tokens: lowercase ``\w+`` words (``re.findall(r"\w+", text.lower())``).

    Args:
        text: A document.

    Returns:
        Its words, in order.
    """
    return WORD.findall(text.lower())


def shingle_set(text: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """The set of word ``size``-grams of :func:`words_of` (a shorter text: one n-gram of all
    its words).

    Args:
        text: A document.
        size: Words per n-gram.
    """
    words = words_of(text)
    if len(words) < size:
        return frozenset([tuple(words)])
    return frozenset(zip(*(words[i:] for i in range(size)), strict=False))


def jaccard(a: frozenset, b: frozenset) -> float:
    """Exact Jaccard similarity ``|a & b| / |a | b|`` (1.0 for two empty sets)."""
    common = len(a & b)
    union = len(a) + len(b) - common
    return common / union if union else 1.0


def components(pairs: Iterable[Pair]) -> list[list[str]]:
    """Connected components (of two or more documents) of a graph given by its edges, each
    sorted, ordered by their first member.

    Args:
        pairs: Edges ``(a, b)``.
    """
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for doc in parent:
        groups.setdefault(root(doc), []).append(doc)
    return sorted(sorted(members) for members in groups.values())


def closure(pairs: Iterable[Pair]) -> set[Pair]:
    """Every pair ``(a, b)``, ``a < b``, inside the connected components of ``pairs``: how a
    deduplicator's reported pairs are scored (its clusters, as pairs).

    Args:
        pairs: Edges ``(a, b)``.
    """
    return {pair for c in components(pairs) for pair in combinations(c, 2)}


@dataclass(frozen=True)
class CorpusSpec:
    """What the generator plants; validated at once.

    Args:
        min_words: Fewest words of a document (also of every edited copy).
        max_words: Most words of a document.
        exact_rate: Share of documents that are byte-identical copies.
        edit_rate: Share of documents that are edited copies.
        format_rate: Share of documents that are reformatted copies (same ``\\w+`` words).
        min_jaccard: Lowest target 5-gram Jaccard of an edited copy (the highest is 1.0).
        vocabulary: Words in the Zipf vocabulary.
        window: Recent originals whose families can receive copies.
    """

    min_words: int = 200
    max_words: int = 2_000
    exact_rate: float = 0.05
    edit_rate: float = 0.15
    format_rate: float = 0.04
    min_jaccard: float = 0.5
    vocabulary: int = 50_000
    window: int = 1_000

    def __post_init__(self) -> None:
        if not 2 * SHINGLE <= self.min_words <= self.max_words:
            raise ValueError(
                f"need {2 * SHINGLE} <= min_words <= max_words, got "
                f"{self.min_words} and {self.max_words}"
            )
        rates = (self.exact_rate, self.edit_rate, self.format_rate)
        if min(rates) < 0 or sum(rates) >= 1:
            raise ValueError(f"copy rates must be >= 0 and sum to less than 1, got {rates}")
        if not 0 < self.min_jaccard <= 1:
            raise ValueError(f"min_jaccard must be in (0, 1], got {self.min_jaccard}")
        if self.vocabulary < 2 * len(COMMON_WORDS):
            raise ValueError(f"vocabulary must be at least {2 * len(COMMON_WORDS)} words")
        if self.window < 1:
            raise ValueError(f"window must be at least 1, got {self.window}")


@dataclass(frozen=True)
class Document:
    """One generated document, its raw-row metadata and what it was planted as.

    ``family`` is the id of the original it descends from (its own id for an original),
    ``parent`` the member it was copied from, ``kind`` how (``original``, ``exact``, an edit,
    a format, or ``edit+format``) and ``target`` the Jaccard the edit aimed at.
    """

    doc_id: str
    text: str
    source: str
    author: str
    created_at: str
    label: int
    url: str
    clicks: int
    dwell_seconds: float
    family: str
    kind: str
    parent: str | None = None
    target: float | None = None

    def record(self) -> dict[str, object]:
        """The raw row, in the input column names corpus.yaml maps (``input.columns``)."""
        return {
            "id": self.doc_id,
            "body": self.text,
            "src": self.source,
            "author": self.author,
            "created_at": self.created_at,
            "label": self.label,
            "url": self.url,
            "clicks": self.clicks,
            "dwell_seconds": self.dwell_seconds,
        }


@dataclass
class GroundTruth:
    """Exact word 5-gram Jaccard of every pair inside every planted family."""

    pairs: list[tuple[str, str, float]] = field(default_factory=list)

    def add(self, a: str, b: str, similarity: float) -> None:
        """Record the pair ``a``, ``b`` (any order) at ``similarity``."""
        self.pairs.append((min(a, b), max(a, b), similarity))

    def clusters(self, threshold: float) -> list[list[str]]:
        """Connected components (of two or more documents) of the pairs at or above
        ``threshold``, each sorted, ordered by their first member."""
        return components((a, b) for a, b, similarity in self.pairs if similarity >= threshold)

    def cluster_pairs(self, threshold: float) -> set[Pair]:
        """Every pair ``(a, b)``, ``a < b``, inside the clusters at ``threshold``: what a
        deduplicator that groups by the threshold should report."""
        return {pair for c in self.clusters(threshold) for pair in combinations(c, 2)}

    def write(self, path: Path) -> None:
        """One ``{"a", "b", "jaccard"}`` JSON line per pair."""
        with path.open("w", encoding="utf-8") as out:
            for a, b, similarity in self.pairs:
                out.write(json.dumps({"a": a, "b": b, "jaccard": similarity}) + "\n")

    @classmethod
    def read(cls, path: Path) -> GroundTruth:
        """The truth :meth:`write` wrote."""
        with path.open(encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
        return cls([(r["a"], r["b"], r["jaccard"]) for r in rows])


@dataclass(frozen=True)
class Vocabulary:
    """The words by Zipf rank, and the bytes every document is assembled from.

    ``blob`` holds every entry's ASCII bytes: the ``size`` lowercase words (entry ``k``), the
    same words capitalized (entry ``size + k``), then every suffix, a sentence mark
    (:data:`MARKS`) followed by a separator (:data:`SEPARATORS`) (entry ``2 * size + 4 * mark
    + separator``); ``offsets`` and ``lengths`` locate each entry.
    """

    words: tuple[str, ...]
    blob: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    @property
    def size(self) -> int:
        """Number of words."""
        return len(self.words)

    def ranks(self, uniform: np.ndarray) -> np.ndarray:
        """Word ranks (0 the most frequent) for uniform draws in [0, 1): the inverse of the
        continuous Zipf-Mandelbrot law, density ~ ``(x + shift) ** -exponent`` over
        ``[1, size + 1)``, rounded down."""
        power = 1.0 - ZIPF_EXPONENT
        top = (1.0 + ZIPF_SHIFT) ** power
        spread = top - (self.size + 1.0 + ZIPF_SHIFT) ** power
        x = (top - uniform * spread) ** (1.0 / power) - ZIPF_SHIFT
        return np.clip(x.astype(np.int64) - 1, 0, self.size - 1)

    def render(self, entries: np.ndarray) -> tuple[str, np.ndarray]:
        """The text of a sequence of entries (words and suffixes), and the offset in it where
        each entry ends."""
        lengths = self.lengths[entries]
        ends = np.cumsum(lengths)
        shift = self.offsets[entries] - (ends - lengths)
        index = np.repeat(shift, lengths) + np.arange(int(ends[-1]) if len(ends) else 0)
        return self.blob[index].tobytes().decode("ascii"), ends


@lru_cache(maxsize=4)
def vocabulary(size: int) -> Vocabulary:
    """The vocabulary of ``size`` words: :data:`COMMON_WORDS` first, then made-up words of
    1 to 4 syllables (the shorter, the more frequent, with noise), none blocklisted. The same
    for every corpus seed.

    Args:
        size: Number of words.
    """
    blocked = set(BLOCKLIST.read_text(encoding="utf-8").split()) if BLOCKLIST.is_file() else set()
    common = list(dict.fromkeys(COMMON_WORDS))
    rng = np.random.default_rng(VOCABULARY_SEED)
    taken = set(common) | blocked
    made_up: list[str] = []
    while len(made_up) < size - len(common):
        count = 2 * (size - len(common) - len(made_up)) + 100
        syllables = rng.choice(4, size=count, p=SYLLABLE_WEIGHTS) + 1
        parts = rng.integers(0, 1 << 30, size=(int(syllables.sum()), 3)).tolist()
        endings = rng.integers(0, len(ENDINGS), size=count).tolist()
        pieces = [
            (ONSETS[o % len(ONSETS)] + NUCLEI[n % len(NUCLEI)] + CODAS[c % len(CODAS)]).replace(
                "-", ""
            )
            for o, n, c in parts
        ]
        begin = 0
        for end, ending in zip(np.cumsum(syllables).tolist(), endings, strict=True):
            word = "".join(pieces[begin:end]) + ENDINGS[ending].replace("-", "")
            begin = end
            if len(word) >= 2 and word not in taken:
                taken.add(word)
                made_up.append(word)
    made_up = made_up[: size - len(common)]
    keys = np.array([len(w) for w in made_up]) + rng.normal(0.0, ABBREVIATION_NOISE, len(made_up))
    words = common + [made_up[i] for i in np.argsort(keys, kind="stable").tolist()]
    suffixes = [mark + separator for mark in MARKS for separator in SEPARATORS]
    entries = [w.encode("ascii") for w in words + [w.capitalize() for w in words] + suffixes]
    lengths = np.array([len(e) for e in entries], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    blob = np.frombuffer(b"".join(entries), dtype=np.uint8)
    return Vocabulary(tuple(words), blob, offsets, lengths)


@dataclass
class _Family:
    """A recent original and its copies: (doc id, word ranks, text) per member, and their
    5-gram sets once the family has a copy."""

    members: list[tuple[str, np.ndarray, str]]
    shingles: dict[str, frozenset] = field(default_factory=dict)


class WebCorpus:
    """Deterministic web-like documents with planted duplicates (see the module docstring).

    Args:
        seed: Seed of numpy's ``Generator``; the same seed gives the same documents.
        spec: What to plant.
        track_truth: Measure the exact Jaccard of every pair inside every family into
            :attr:`truth` (costs time; not needed just to write a corpus).
    """

    def __init__(
        self, seed: int = 3, spec: CorpusSpec | None = None, track_truth: bool = True
    ) -> None:
        self.spec = spec or CorpusSpec()
        self.seed = seed
        self.track_truth = track_truth
        self.truth = GroundTruth()
        self.kinds: Counter[str] = Counter()
        self._rng = np.random.default_rng([seed, 0])  # replaced per block of documents
        self._vocabulary = vocabulary(self.spec.vocabulary)
        self._families: deque[_Family] = deque()
        self._authors: deque[str] = deque(maxlen=RECENT_AUTHORS)
        self._started = False

    # --- words and layout ---------------------------------------------------------------

    def _draw(self, count: int) -> np.ndarray:
        """``count`` word ranks from the Zipf distribution."""
        return self._vocabulary.ranks(self._rng.random(count))

    def _layout(self, docs: list[np.ndarray]) -> list[str]:
        """The texts of documents given as word ranks, laid out in one vectorized pass:
        sentences of 5 to 25 words (a capital, commas, an end mark) in paragraphs of about 4
        sentences separated by blank lines; one paragraph in five puts each sentence on its
        own line."""
        rng, size = self._rng, self._vocabulary.size
        ranks = np.concatenate(docs)
        n = len(ranks)
        doc_last = np.cumsum([len(d) for d in docs]) - 1  # each document's last word
        ends = np.cumsum(rng.integers(5, 26, n // 5 + 2)) - 1
        is_last = np.zeros(n, dtype=bool)
        is_last[ends[ends < n]] = True
        is_last[doc_last] = True
        last = np.flatnonzero(is_last)  # each sentence's last word
        final = np.zeros(n, dtype=bool)
        final[doc_last] = True
        final = final[last]  # sentences that end a document
        paragraph_end = (rng.random(len(last)) < 0.25) | final
        paragraph = np.cumsum(paragraph_end) - paragraph_end
        lines = rng.random(int(paragraph[-1]) + 1) < 0.2
        separator = lines[paragraph].astype(np.int64)  # 0 a space, 1 a line break
        separator[paragraph_end] = 2
        separator[final] = 3
        mark = (rng.random(n) < 0.05).astype(np.int64)  # commas
        mark[last] = SENTENCE_END[rng.integers(0, len(SENTENCE_END), len(last))]
        gap = np.zeros(n, dtype=np.int64)
        gap[last] = separator
        entries = np.empty(2 * n, dtype=np.int64)
        entries[0::2] = ranks
        entries[0] += size
        entries[2 * (last[:-1] + 1)] += size  # capitals
        entries[1::2] = 2 * size + len(SEPARATORS) * mark + gap
        text, offsets = self._vocabulary.render(entries)
        cuts = [0, *offsets[2 * doc_last + 1].tolist()]
        return [text[a:b] for a, b in pairwise(cuts)]

    # --- edits (on word ranks) and formats (on text) ------------------------------------

    def _edit(self, ranks: np.ndarray, target: float) -> tuple[str, np.ndarray]:
        """An edited copy of ``ranks`` whose 5-gram Jaccard with it is about ``target``; an
        insertion or a truncation the length limits forbid becomes a block replacement."""
        rng, spec, n = self._rng, self.spec, len(ranks)
        shingles = n - SHINGLE + 1
        kind = EDITS[int(rng.integers(len(EDITS)))]
        if kind == "block-insert":
            size = max(1, round((shingles - SHINGLE + 1) / target - shingles - SHINGLE + 1))
            if n + size <= spec.max_words:
                at = int(rng.integers(0, n + 1))
                return kind, np.concatenate((ranks[:at], self._draw(size), ranks[at:]))
            kind = "block-replace"
        if kind == "truncate":
            keep = round(target * shingles) + SHINGLE - 1
            if spec.min_words <= keep < n:
                return kind, (ranks[:keep] if rng.random() < 0.5 else ranks[n - keep :])
            kind = "block-replace"
        if kind == "block-replace":
            size = round(shingles * (1 - target) / (1 + target)) - SHINGLE + 1
            size = min(max(1, size), n)
            at = int(rng.integers(0, n - size + 1))
            out = ranks.copy()
            out[at : at + size] = self._replacements(ranks[at : at + size])
            return kind, out
        return kind, self._scattered(ranks, target)

    def _replacements(self, old: np.ndarray) -> np.ndarray:
        """New words for ``old``, each different from the one it replaces."""
        new = self._draw(len(old))
        return np.where(new == old, (new + 1) % self._vocabulary.size, new)

    def _scattered(self, ranks: np.ndarray, target: float) -> np.ndarray:
        """Single words replaced, deleted or inserted, at least 6 words apart."""
        rng, spec, n = self._rng, self.spec, len(ranks)
        shingles = n - SHINGLE + 1
        count = round(shingles * (1 - target) / (SHINGLE * (1 + target)))
        count = min(max(1, count), n // 6)
        at = np.sort(rng.choice(n // 6, size=count, replace=False)) * 6 + int(rng.integers(6))
        at = at[at < n]
        ops = rng.integers(0, 3, len(at))  # 0 replace, 1 delete, 2 insert before
        deletes, inserts = at[ops == 1], at[ops == 2]
        if not spec.min_words <= n - len(deletes) + len(inserts) <= spec.max_words:
            ops[:] = 0
            deletes, inserts = at[:0], at[:0]
        out = ranks.copy()
        replaced = at[ops == 0]
        out[replaced] = self._replacements(ranks[replaced])
        keep = np.ones(n, dtype=bool)
        keep[deletes] = False
        out = np.insert(out, inserts, self._draw(len(inserts)))
        return out[np.insert(keep, inserts, True)]

    def _reformat(self, text: str, words: int) -> tuple[str, str]:
        """The same ``\\w+`` words with other punctuation, markup, line breaks or bullets."""
        rng = self._rng
        kind = FORMATS[int(rng.integers(len(FORMATS)))]
        if kind == "punctuation":
            marks = sum(text.count(mark) for mark in ".,!?;:")
            swaps = iter(rng.integers(0, len(PUNCTUATION_SWAPS), marks).tolist())
            text = re.sub(r"[.,!?;:]", lambda _: PUNCTUATION_SWAPS[next(swaps)], text)
            extra = iter(rng.integers(0, 25 * len(PUNCTUATION_EXTRA), text.count(" ")).tolist())
            return kind, re.sub(r"(?<=\w) (?=\w)", lambda _: _extra(next(extra)), text)
        if kind == "markup":
            tokens = text.split(" ")
            style = MARKUP[int(rng.integers(len(MARKUP)))]  # one convention per page
            for at in np.flatnonzero(rng.random(len(tokens)) < 0.05).tolist():
                tokens[at] = style.format(tokens[at])
            if rng.random() < 0.5:  # references: new (number) tokens, Jaccard just below 1
                ends = [i for i, t in enumerate(tokens) if t.endswith(".")]
                room = min(len(ends), words // 250, self.spec.max_words - words)
                if room > 0:
                    for at in rng.choice(ends, size=room, replace=False).tolist():
                        tokens[at] += f"[{int(rng.integers(1, 60))}]"
            return kind, " ".join(tokens)
        if kind == "line-breaks":
            style = int(rng.integers(3))
            if style == 0:
                return kind, _wrap(text.split(), int(rng.integers(40, 101)))
            if style == 1:
                return kind, re.sub(r"\s*\n\s*", " ", text)
            return kind, text.replace("\n", "\r\n")
        bullet = BULLETS[int(rng.integers(len(BULLETS)))]
        paragraphs = text.split("\n\n")
        listed = rng.random(len(paragraphs)) < 1 / 3
        listed[0] = False  # an introduction, then lists
        return kind, "\n\n".join(
            "\n".join(f"{bullet} {s}" for s in re.split(r"(?<=[.!?])[ \n]", p)) if listed[i] else p
            for i, p in enumerate(paragraphs)
        )

    # --- families and truth -------------------------------------------------------------

    def _shingles(self, family: _Family, doc_id: str, text: str) -> frozenset:
        cached = family.shingles.get(doc_id)
        if cached is None:
            cached = family.shingles[doc_id] = shingle_set(text)
        return cached

    def _record_truth(self, family: _Family, doc_id: str, text: str, same_as: str | None) -> None:
        """Record the Jaccard of the new member ``doc_id`` with every earlier member
        (``same_as``: an earlier member with the very same text)."""
        if same_as is not None and same_as in family.shingles:
            family.shingles[doc_id] = family.shingles[same_as]
        new = self._shingles(family, doc_id, text)
        for member, _, member_text in family.members:
            self.truth.add(
                member, doc_id, jaccard(self._shingles(family, member, member_text), new)
            )

    def _copy(self, doc_id: str, u: list[float]) -> tuple[str, str, str, str, float | None]:
        """A copy of a random member of a random recent family: (text, family, parent,
        kind, target)."""
        spec = self.spec
        families = len(self._families)
        first = int(u[0] * families)
        family = next(  # families are capped, so early originals do not gather every copy
            (
                self._families[(first + step) % families]
                for step in range(families)
                if len(self._families[(first + step) % families].members) < MAX_FAMILY
            ),
            self._families[first],
        )
        parent, ranks, text = family.members[int(u[1] * len(family.members))]
        roll = u[2] * (spec.exact_rate + spec.edit_rate + spec.format_rate)
        target = None
        if roll < spec.exact_rate:
            kind = "exact"
        elif roll < spec.exact_rate + spec.edit_rate:
            target = spec.min_jaccard + u[3] * (1 - spec.min_jaccard)
            kind, ranks = self._edit(ranks, target)
            text = self._layout([ranks])[0]
            if u[4] < 0.2:
                variant, text = self._reformat(text, len(ranks))
                kind = f"{kind}+{variant}"
        else:
            kind, text = self._reformat(text, len(ranks))
        if self.track_truth:
            self._record_truth(family, doc_id, text, parent if kind == "exact" else None)
        family.members.append((doc_id, ranks, text))
        return text, family.members[0][0], parent, kind, target

    def _originals(self, words: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
        """Word ranks and texts of new originals of ``words`` words each."""
        if not len(words):
            return iter(())
        ranks = np.split(self._draw(int(words.sum())), np.cumsum(words)[:-1])
        return zip(ranks, self._layout(ranks), strict=True)

    # --- documents ----------------------------------------------------------------------

    def documents(self, count: int) -> Iterator[Document]:
        """The first ``count`` documents of the corpus (generate a corpus once).

        Args:
            count: Number of documents.

        Yields:
            Documents in id order; a copy always comes after the member it copies.
        """
        if self._started:
            raise RuntimeError("a WebCorpus generates its documents once; make a new one")
        self._started = True
        spec = self.spec
        copy_rate = spec.exact_rate + spec.edit_rate + spec.format_rate
        for first in range(0, count, BLOCK):
            # Each block of documents draws from its own generator, seeded by (seed, block), and
            # makes all its originals up front: a document never depends on ``count``.
            self._rng = np.random.default_rng([self.seed, first // BLOCK])
            block = self._rng.random((BLOCK, 14))
            original = block[:, 0] >= copy_rate
            original[0] |= first == 0
            words = spec.min_words + (block[original, 1] * (spec.max_words - spec.min_words + 1))
            originals = self._originals(words.astype(np.int64))
            sources = np.searchsorted(SOURCE_CUMULATIVE, block[:, 5], side="right").tolist()
            for offset, u in enumerate(block[: count - first].tolist()):
                index = first + offset
                doc_id = f"doc-{index:08d}"
                if original[offset]:
                    ranks, text = next(originals)
                    self._families.append(_Family([(doc_id, ranks, text)]))
                    if len(self._families) > spec.window:
                        self._families.popleft()
                    family, parent, kind, target = doc_id, None, "original", None
                else:
                    text, family, parent, kind, target = self._copy(doc_id, u[8:13])
                self.kinds[kind] += 1
                recent = int(u[3] * RECENT_AUTHORS)  # early on, most of the window is empty
                if u[2] < AUTHOR_REUSE and recent < len(self._authors):
                    author = self._authors[recent]
                else:
                    author = f"author-{index:08d}"
                    self._authors.append(author)
                when = START + timedelta(seconds=int(u[4] * SPAN_SECONDS))
                source = SOURCES[sources[offset]]
                yield Document(
                    doc_id=doc_id,
                    text=text,
                    source=source,
                    author=author,
                    created_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    label=int(u[6] < 0.3),
                    url=f"https://{author}.example.org/{source}/{doc_id}",
                    clicks=int(math.expm1(u[7] * 7.0)),
                    dwell_seconds=round(u[13] * 600.0, 1),
                    family=family,
                    kind=kind,
                    parent=parent,
                    target=target,
                )


def _extra(draw: int) -> str:
    """One of :data:`PUNCTUATION_EXTRA` for 1 draw in 25, else a plain space."""
    return PUNCTUATION_EXTRA[draw] if draw < len(PUNCTUATION_EXTRA) else " "


def _wrap(words: list[str], width: int) -> str:
    """``words`` hard-wrapped into lines of at most ``width`` characters (longer words alone)."""
    lines: list[str] = []
    line: list[str] = []
    used = 0
    for word in words:
        if line and used + 1 + len(word) > width:
            lines.append(" ".join(line))
            line, used = [], 0
        used += len(word) + (1 if line else 0)
        line.append(word)
    lines.append(" ".join(line))
    return "\n".join(lines)


@dataclass(frozen=True)
class CorpusFiles:
    """What :func:`write_corpus` wrote."""

    docs: int
    text_bytes: int
    files: list[Path]
    seconds: float
    kinds: dict[str, int]
    truth: GroundTruth | None


def write_corpus(
    folder: Path,
    count: int,
    seed: int = 3,
    files: int | None = None,
    truth: Path | None = None,
    spec: CorpusSpec | None = None,
    gzip_files: bool = False,
) -> CorpusFiles:
    """Stream ``count`` raw rows into ``files`` jsonl files (``part-00000.jsonl`` ...; by
    default one per 25,000 documents), documents dealt round-robin.

    Args:
        folder: Output folder (created); put nothing else in it if a pipeline reads it.
        count: Number of documents.
        seed: Corpus seed.
        files: Number of jsonl files.
        truth: Where to write the ground truth (``{"a", "b", "jaccard"}`` lines); ``None``
            skips measuring it.
        spec: What to plant (:class:`CorpusSpec` defaults when ``None``).
        gzip_files: Write ``part-00000.jsonl.gz`` ... (gzip level 1, no timestamp): a third of
            the disk for a corpus that must fit beside its stages, snapshots and remote.

    Returns:
        Counts, the text bytes (UTF-8 of ``body``), the files and the truth when measured.
    """
    files = files or max(1, -(-count // 25_000))
    folder.mkdir(parents=True, exist_ok=True)
    corpus = WebCorpus(seed, spec, track_truth=truth is not None)
    suffix = ".jsonl.gz" if gzip_files else ".jsonl"
    paths = [folder / f"part-{i:05d}{suffix}" for i in range(files)]
    handles: list[TextIO] = [
        io.TextIOWrapper(gzip.GzipFile(p, "wb", compresslevel=1, mtime=0), encoding="utf-8")
        if gzip_files
        else p.open("w", encoding="utf-8")
        for p in paths
    ]
    text_bytes = 0
    start = time.perf_counter()
    try:
        for index, doc in enumerate(corpus.documents(count)):
            text_bytes += len(doc.text.encode("utf-8"))
            handles[index % files].write(json.dumps(doc.record(), ensure_ascii=False) + "\n")
    finally:
        for handle in handles:
            handle.close()
    if truth is not None:
        corpus.truth.write(truth)
    seconds = time.perf_counter() - start
    return CorpusFiles(
        count,
        text_bytes,
        paths,
        seconds,
        dict(corpus.kinds),
        corpus.truth if truth is not None else None,
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: write a corpus (and optionally its truth), print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder for the jsonl files")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--truth", type=Path, default=None, help="ground-truth jsonl to write")
    args = parser.parse_args(argv)
    written = write_corpus(args.out, args.docs, args.seed, args.files, args.truth)
    summary = {
        "docs": written.docs,
        "megabytes": round(written.text_bytes / 1e6, 1),
        "kb_per_doc": round(written.text_bytes / written.docs / 1e3, 2),
        "seconds": round(written.seconds, 1),
        "docs_per_second": round(written.docs / written.seconds),
        "kinds": dict(sorted(written.kinds.items())),
    }
    if written.truth is not None:
        summary["truth_pairs"] = len(written.truth.pairs)
        summary["cluster_pairs_at_0.8"] = len(written.truth.cluster_pairs(0.8))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
