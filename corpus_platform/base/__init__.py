"""Foundation modules every layer may use: errors and redaction, stable hashing, names, shard
I/O. They import nothing else from the package (a test enforces the direction)."""
