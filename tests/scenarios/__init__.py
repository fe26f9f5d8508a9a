"""The scenarios, by topic. Importing this package registers them all (in this order)."""

from . import prompts, rich, current, v2, sessions, idempotency, protocol, auth, fleet, client  # noqa: F401
