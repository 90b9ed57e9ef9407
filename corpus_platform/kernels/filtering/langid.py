"""Language identification with lingua-language-detector (its models ship with the package;
nothing is downloaded). This is the only module that imports lingua."""

from __future__ import annotations

from functools import cache

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder


def _language(code: str) -> Language:
    try:
        return Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))
    except AttributeError:
        raise ValueError(f"unknown ISO 639-1 language code {code!r}") from None


@cache
def detector(candidates: tuple[str, ...]) -> LanguageDetector:
    """A detector choosing among ``candidates`` (ISO 639-1 codes), built once per process."""
    return LanguageDetectorBuilder.from_languages(*(_language(c) for c in candidates)).build()


def keep_confidence(
    texts: list[str], keep: tuple[str, ...], candidates: tuple[str, ...]
) -> list[float]:
    """For each text, the highest confidence that it is written in one of ``keep``.

    Texts are scored in one parallel batch.
    """
    if not texts:
        return []
    wanted = {_language(code) for code in keep}
    results = detector(
        tuple(sorted(set(candidates) | set(keep)))
    ).compute_language_confidence_values_in_parallel(texts)
    return [
        max((v.value for v in values if v.language in wanted), default=0.0) for values in results
    ]
