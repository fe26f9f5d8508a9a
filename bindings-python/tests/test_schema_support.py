"""The schema support of conftest.py: what it reads from the generated schemas (schema/v1 and
schema/v2) is what an agent may send, and a violation fails."""

from __future__ import annotations

import pytest

from conftest import V1, V2, validate_def, validate_def_v2


def test_v1_methods_are_read_from_the_schema() -> None:
    assert V1.notifications == {
        "session/update": "SessionNotification",
        "$/cancel_request": "CancelRequestNotification",
        "elicitation/complete": "CompleteElicitationNotification",
    }
    assert V1.requests["session/request_permission"] == "RequestPermissionRequest"
    assert len(V1.requests) == 9
    assert V1.responses["session/prompt"] == "PromptResponse"
    assert len(V1.responses) == 12


def test_v2_is_validated_as_v2() -> None:
    assert V2.notifications["session/update"] == "UpdateSessionNotification"
    text = {"type": "text", "text": "hi"}
    validate_def_v2("SessionUpdate", {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": text})
    with pytest.raises(AssertionError):
        validate_def_v2("SessionUpdate", {"sessionUpdate": "agent_message_chunk", "content": text})
    validate_def("SessionUpdate", {"sessionUpdate": "agent_message_chunk", "content": text})
