"""Text codecs by name, checked before any file is read."""


def check_encoding(encoding: str) -> str:
    """``encoding`` when Python knows it as a text codec.

    Raises:
        ValueError: naming the encoding and what to use instead.
    """
    try:
        "".encode(encoding)
        b"".decode(encoding)
    except LookupError:
        raise ValueError(
            f"unknown text encoding {encoding!r}; use a Python codec name such as utf-8, "
            "latin-1 or cp1252 (see Python's list of standard encodings)"
        ) from None
    return encoding
