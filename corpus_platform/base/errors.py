"""The platform's user-facing error: its message is redacted on the way in."""

from corpus_platform.base.redact import redact_text


class CorpusError(ValueError):
    """Base of the platform's user-facing errors; the message is redacted on the way in."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_text(message))
