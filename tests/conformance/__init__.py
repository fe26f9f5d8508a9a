"""The cross-language conformance harness: the demo agents as subprocesses, their wire recorded,
validated against the generated ACP v1 schema, normalised and compared."""
