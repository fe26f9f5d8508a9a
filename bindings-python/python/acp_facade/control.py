"""The facade's control of a live session (the Rust ``acp_facade::host::SessionControl``): what a
host changes about its session itself — its mode, a config option, its slash commands — through the
path the client's own requests take, so the client is told (``current_mode_update``,
``config_option_update``, ``available_commands_update``).

A live session that defines ``set_control(self, control)`` (a plain ``def``) receives one once the
facade serves it. A change made while a prompt of the session is in flight reaches the client in
order with the turn's events, before the prompt's response; otherwise at once. Each call returns
once its updates are queued for the client. An unknown mode, option or value raises
:class:`acp_facade.InvalidParams` and changes nothing; once the session is closed every call raises
:class:`acp_facade.ResourceNotFound`.
"""

from __future__ import annotations

from ._bridge import dispatcher
from .acp import AvailableCommand

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Sequence, Union

__all__ = ["SessionControl"]


class SessionControl:
    """What a host can change about its live session itself."""

    __slots__ = ("_n",)

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def session_id(self) -> str:
        """The session this control acts on."""
        return str(self._n.session_id)

    async def set_mode(self, mode_id: str) -> None:
        """Sets the current mode (the config option ``mode``): the client gets
        ``current_mode_update``, then ``config_option_update``; the current mode is a no-op."""
        await dispatcher.wait(self._n.set_mode, mode_id)

    async def set_config_option(self, config_id: str, value: Union[str, bool]) -> List[Dict[str, Any]]:
        """Sets one config option (a value id, or a bool for a boolean option); returns the
        complete state the client now has, as ACP config options."""
        options: List[Dict[str, Any]] = await dispatcher.wait(self._n.set_config_option, config_id, value)
        return options

    async def set_commands(self, commands: Sequence[Union[AvailableCommand, Dict[str, Any]]]) -> None:
        """Replaces the session's host-defined slash commands; once advertised (from the session's
        first prompt on), a different list is advertised again at once."""
        await dispatcher.wait(self._n.set_commands, list(commands))

    def __repr__(self) -> str:
        return f"SessionControl(session_id={self.session_id!r})"
