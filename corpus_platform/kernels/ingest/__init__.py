"""raw_documents: reading raw files, decoding, the canonical schema and its expectations."""
