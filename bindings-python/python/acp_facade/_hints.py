"""What :func:`typing.get_type_hints` — and what is built on it: pydantic, cattrs, typeguard, ... —
needs to read the package's classes: the names their annotations use but the modules import for
type checkers only.

Why: an agent's start-up does not import :mod:`typing` (ARCHITECTURE.md, "Start-up (Python)"),
so the package's modules import ``Optional``, ``Any``, ... and each other's type aliases under
``if TYPE_CHECKING:`` only, and their annotations stay strings. ``get_type_hints`` evaluates
those strings in the class's module's globals, where the names are then missing (NameError).

How: the names are read from the annotations of the classes (and their functions) each loaded
module of the package defines, and each one the module does not define and that is no builtin is
looked up: in :mod:`typing`, else in the first of the package's modules that has it (type aliases
included), else as a loaded module of that name (``asyncio`` in ``asyncio.Future``). Both steps
below run only once :mod:`typing` is needed or loaded anyway, so the start-up pays nothing.

- :func:`bind` puts the names found in the modules' globals, for every class and function: when
  an event loop attaches to the bridge (``asyncio`` has imported :mod:`typing` by then; every
  running agent), or when called. A name not found yet (a module of the package or ``asyncio``
  loaded later) is looked for again at the next call that finds more modules loaded. Before the
  first call, ``get_type_hints`` on a function or a class that is no record, and pydantic on a
  record (it evaluates the fields' types in the module's globals), still raise NameError: call
  ``acp_facade._hints.bind()`` first.
- :func:`resolve` replaces a record's own annotations by what they name when it becomes a real
  dataclass (``dataclasses.fields``, ``is_dataclass``): ``get_type_hints`` on a record then works
  at once. It changes no module's globals, since the check that made the record may run while
  someone iterates them (a dataclass check over a module's values does).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Iterator

__all__ = ["bind"]

_PACKAGE = __name__.rpartition(".")[0]
_MISSING = object()
# Each package module seen: the names its annotations use that are not bound yet.
_unbound: dict[str, set[str]] = {}
# How many modules were loaded at the last pass: a name left unbound can only be found in a new one.
_loaded = 0


def bind() -> None:
    """Binds the annotation names of the package's loaded modules (module doc); a name left unbound
    is looked for again at a later call, once more modules are loaded."""
    global _loaded
    if len(sys.modules) == _loaded:
        return
    _loaded = len(sys.modules)
    package = _package_modules()
    for module in package:
        namespace = vars(module)
        for word, value in _found(module, package).items():
            namespace.setdefault(word, value)
            _unbound[module.__name__].discard(word)


def resolve(cls: type) -> None:
    """Replaces the annotations of ``cls``'s own body (strings) by what they name, read as
    ``get_type_hints`` reads them, with the names of the module doc: for a record made into a
    dataclass. Its module's globals are not touched (module doc). An annotation that cannot be
    read is left as it is (``get_type_hints`` will say what is wrong)."""
    own = vars(cls).get("__annotations__")
    module = sys.modules.get(cls.__module__)
    if not own or module is None or not any(isinstance(value, str) for value in own.values()):
        return
    import typing

    namespace = {**vars(module), **_found(module, _package_modules())}
    try:
        hints = typing.get_type_hints(cls, globalns=namespace, include_extras=True)
    except Exception:
        return
    for name in list(own):
        if name in hints:
            own[name] = hints[name]


def _package_modules() -> list[ModuleType]:
    return [module for name, module in sorted(sys.modules.items()) if _in_package(name, module)]


def _in_package(name: str, module: Any) -> bool:
    return module is not None and (name == _PACKAGE or name.startswith(_PACKAGE + "."))


def _found(module: ModuleType, package: list[ModuleType]) -> dict[str, Any]:
    """The values found for ``module``'s annotation names that are not bound yet (module doc)."""
    import builtins
    import typing

    namespace = vars(module)
    unbound = _unbound.get(module.__name__)
    if unbound is None:
        words = set(_annotation_words(module))
        unbound = {word for word in words if word not in namespace and not hasattr(builtins, word)}
        _unbound[module.__name__] = unbound
    found: dict[str, Any] = {}
    for word in sorted(unbound):
        value = getattr(typing, word, _MISSING)
        for other in package if value is _MISSING else ():
            if other is not module:
                value = getattr(other, word, _MISSING)
                if value is not _MISSING:
                    break
        if value is _MISSING:  # a module named for its attributes (`asyncio.Future`), if loaded
            value = sys.modules.get(word) or _MISSING
        if value is not _MISSING:
            found[word] = value
    return found


def _annotation_words(module: ModuleType) -> Iterator[str]:
    """The names in the annotations of the classes and functions ``module`` defines (a class's
    own, and its methods')."""
    for value in list(vars(module).values()):
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if isinstance(value, type):
            functions = [_function(member) for member in list(vars(value).values())]
            annotated = [vars(value).get("__annotations__")]
            annotated += [function.__annotations__ for function in functions if function is not None]
        elif _function(value) is not None:
            annotated = [value.__annotations__]
        else:
            continue
        for annotations in annotated:
            for annotation in (annotations or {}).values():
                if isinstance(annotation, str):
                    yield from _words(annotation)


def _function(member: Any) -> Any:
    """The function behind a class member (a method, a static or class method, a property's
    getter), or ``None``."""
    member = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
    return member if type(member).__name__ == "function" else None


def _words(text: str) -> Iterator[str]:
    """The names in an annotation's text: its identifiers, less those after a dot (attributes) and
    the constants. Quoted text counts (a forward reference, ``"'Options'"``): a ``Literal``'s
    values then come too, and are found nowhere, or bound to no harm."""
    word = ""
    after_dot = False
    for char in text + " ":
        if char.isalnum() or char == "_":
            word += char
            continue
        if word and not word[0].isdigit() and not after_dot and word not in ("None", "True", "False"):
            yield word
        after_dot = char == "."
        word = ""
