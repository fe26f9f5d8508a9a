"""The cross-language conformance harness: the demo agents as subprocesses, their wire recorded,
validated against the pinned ACP schema, normalised and compared."""
