"""filtered_documents: PII redaction, quality filters, language identification, verdicts."""
