"""``typing.get_type_hints`` (and pydantic, which is built on it) reads the package's classes once
:mod:`typing` is loaded for other reasons: a record as soon as it is used as a dataclass, every
class once a loop attaches to the bridge (or after ``acp_facade.bind_type_hints()``); the package's
start-up still does not import :mod:`typing` (test_start.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Dict, List

# In a fresh interpreter: the trigger given, then every public class and function of the package
# (each name in a public module's `__all__`, with a class's public methods) through
# `get_type_hints`; whether typing was imported before, and what `get_type_hints` said before.
_CHECK = """
import importlib, json, os, sys
import acp_facade
for file in sorted(os.listdir(acp_facade.__path__[0])):
    if file.endswith(".py") and file not in ("__init__.py", "demo.py", "__main__.py"):
        importlib.import_module("acp_facade." + file[:-3])
typing_before = "typing" in sys.modules
import inspect, typing
failures, checked = [], 0
before = None
try:
    typing.get_type_hints(acp_facade.TextContent)
except NameError as error:
    before = str(error)
exec(sys.argv[1])
for name, module in sorted(sys.modules.items()):
    if not name.startswith("acp_facade") or "._" in name or module is None:
        continue
    for value in [getattr(module, public) for public in getattr(module, "__all__", ())]:
        if getattr(value, "__module__", None) != name:
            continue
        owners = [value] if not isinstance(value, type) else [value, *(
            member for key, member in vars(value).items()
            if inspect.isfunction(member) and (not key.startswith("_") or key == "__init__"))]
        for owner in owners:
            if not (isinstance(owner, type) or inspect.isfunction(owner)):
                continue
            checked += 1
            try:
                typing.get_type_hints(owner)
            except Exception as error:
                failures.append(f"{name}.{getattr(owner, '__qualname__', owner)}: {error!r}")
print(json.dumps({"typing_before": typing_before, "before": before, "checked": checked, "failures": failures}))
"""


def _run(code: str, *args: str) -> str:
    """Runs ``code`` in a fresh interpreter; its standard output."""
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _check(trigger: str) -> Dict[str, Any]:
    outcome: Dict[str, Any] = json.loads(_run(_CHECK, trigger))
    return outcome


def _assert_all_read(outcome: Dict[str, Any]) -> None:
    failures: List[str] = outcome["failures"]
    assert outcome["checked"] > 100, outcome
    assert failures == [], "\n".join(failures)


def test_a_record_used_as_a_dataclass_is_readable_and_no_module_changes() -> None:
    # Its annotations are resolved in place; the modules' globals are not touched, since the check
    # may run while someone iterates them (test_record.py does).
    code = """
import dataclasses, sys
import acp_facade
assert "typing" not in sys.modules
modules = {name: set(vars(module)) for name, module in sys.modules.items() if name.startswith("acp_facade")}
records = [getattr(acp_facade, name) for name in acp_facade.__all__]  # the type aliases made too
records = [value for value in records if dataclasses.is_dataclass(value)]
assert len(records) > 40, len(records)
import typing
for record in records:
    typing.get_type_hints(record)
assert modules == {name: set(vars(sys.modules[name])) for name in modules}, "a module's globals changed"
print("ok")
"""
    assert _run(code).strip() == "ok"


def test_a_loop_attaching_to_the_bridge_makes_every_class_readable() -> None:
    trigger = (
        "import asyncio\n"
        "from acp_facade._bridge import dispatcher\n"
        "async def main():\n"
        "    dispatcher.attach(asyncio.get_running_loop())\n"
        "    dispatcher.detach()\n"
        "asyncio.run(main())\n"
        # pydantic reads a record's field types in its module's globals (a record: the wire types
        # of acp_facade.acp are plain classes, which pydantic does not take apart)
        "import pydantic\n"
        "adapter = pydantic.TypeAdapter(acp_facade.ToolCallRequest)\n"
        "call = acp_facade.ToolCallRequest(call_id='c1', name='Read', input={'path': '/a'})\n"
        "assert adapter.validate_python({'call_id': 'c1', 'name': 'Read', 'input': {'path': '/a'}}) == call\n"
        "assert adapter.dump_python(call)['input'] == {'path': '/a'}\n"
    )
    _assert_all_read(_check(trigger))


def test_bind_type_hints_makes_every_class_readable() -> None:
    outcome = _check("import asyncio; acp_facade.bind_type_hints()\n")
    assert outcome["typing_before"] is False, "importing the package must not import typing"
    assert outcome["before"] is not None, "nothing bound before the first call (module doc)"
    _assert_all_read(outcome)


def test_the_names_of_an_annotation() -> None:
    from acp_facade._hints import _words

    assert list(_words("Optional[Dict[str, Any]]")) == ["Optional", "Dict", "str", "Any"]
    assert list(_words("'Optional[Options]'")) == ["Optional", "Options"]  # a forward reference
    assert list(_words("asyncio.Future[None]")) == ["asyncio"]
    assert list(_words("Union[int, x.y, List[2]]")) == ["Union", "int", "x", "List"]
    assert list(_words("x. y")) == ["x"]


def test_typing_stand_in_modules_are_not_typing_names() -> None:
    # `typing.re` and `typing.io` (3.10–3.12) are deprecated stand-ins; `re.Pattern` names the module.
    code = """
import re, sys, types, acp_facade
module = types.ModuleType("acp_facade._probe")
exec("from __future__ import annotations\\ndef probe(p: re.Pattern[str]) -> None: ...", vars(module))
sys.modules[module.__name__] = module
acp_facade.bind_type_hints()
print(vars(module)["re"] is re)
"""
    assert _run(code).strip() == "True"
