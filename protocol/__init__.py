"""The wire contract: envelope, op registry, strict converter, error codes, Python client."""
