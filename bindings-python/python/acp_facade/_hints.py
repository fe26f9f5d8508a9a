"""What :func:`typing.get_type_hints` — and what is built on it: pydantic, cattrs, typeguard, ... —
needs to read the package's classes: the names their annotations use but the modules import for
type checkers only.

Why: an agent's start-up does not import :mod:`typing` (ARCHITECTURE.md, "Start-up (Python)"),
so the package's modules import ``Optional``, ``Any``, ... and each other's type aliases under
``if TYPE_CHECKING:`` only, and their annotations stay strings. ``get_type_hints`` evaluates
those strings in the class's module's globals, where the names are then missing (NameError).

How: the names are read from the annotations of the classes (and their functions) each loaded
module of the package defines, and each one the module does not define and that is no builtin is
looked up: among :mod:`typing`'s public names, else in the first of the package's modules that has
it (type aliases included), else as a loaded module of that name (``asyncio`` in
``asyncio.Future``). Neither step below is on the start path: one runs when a loop attaches
(asyncio has imported :mod:`typing`), the other when a record is first used as a dataclass, which
imports :mod:`typing` if nothing has yet.

- :func:`aliases` makes a module's ``__getattr__`` for its type aliases: each is made when first
  looked up (it needs :mod:`typing`) and kept aside, never in the module's globals, so a lookup
  never changes them (someone may be iterating them) and an alias is the same object every time.
- :func:`bind` (public as ``acp_facade.bind_type_hints``) puts the names found in the modules'
  globals, for every class and function: when an event loop attaches to the bridge (every running
  agent), or when called. A name not found yet (a module of the package, or ``asyncio``, loaded
  later; a module still being imported is left for later whole) is looked for again at the next
  call that finds more modules loaded. Before the first call, ``get_type_hints`` on a function or
  a class that is no record, and pydantic on a record (it evaluates a field's type in its module's
  globals), still raise NameError.
- :func:`resolve` replaces a record's own annotations by what they name when it becomes a real
  dataclass (``dataclasses.fields``, ``is_dataclass``): ``get_type_hints`` on a record then works
  at once. It changes no module's globals, since the check that made the record may run while
  someone iterates them (a dataclass check over a module's values does).

Both are best effort and never raise: a name that cannot be found or read is left as it is, and
``get_type_hints`` says what is wrong when it is called. They take one lock, so that concurrent
callers see the work done.
"""

from __future__ import annotations

import sys
import _thread
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterator, Tuple

__all__ = ["aliases", "bind", "resolve"]

_PACKAGE = __name__.rpartition(".")[0]
_MISSING = object()
# Re-entrant: a name looked up may make a record, which resolves it. (`_thread.RLock` is the C lock
# `threading.RLock` returns; typeshed does not list it.)
_lock = _thread.RLock()  # type: ignore[attr-defined]
# Each package module seen (by name, with the module object it was read from): the names its
# annotations use that are not bound yet.
_unbound: dict[str, tuple[types.ModuleType, set[str]]] = {}
# `len(sys.modules)` at the end of the last complete `bind`: a name left unbound can only be found
# once more modules are loaded.
_modules_seen = 0


def aliases(module: str, names: Tuple[str, ...], make: Callable[[], Dict[str, Any]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module`` for its type aliases ``names``, which ``make`` builds (by
    name) when one is first looked up; the first made stay, whichever thread made them. An alias
    is written twice, for type checkers under ``if TYPE_CHECKING:`` and in ``make``:
    `test_start.py` compares the two."""
    made: Dict[str, Any] = {}

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if name not in made:
            for alias, value in make().items():
                made.setdefault(alias, value)
        return made[name]

    return __getattr__


def bind() -> None:
    """Binds the annotation names of the package's loaded modules (module doc); a name left unbound
    is looked for again at a later call, once more modules are loaded. Never raises."""
    global _modules_seen
    if len(sys.modules) == _modules_seen:
        return
    with _lock:
        try:
            seen = len(sys.modules)
            package = _package_modules()
            for module in package:
                namespace = vars(module)
                for word, value in _values_for_unbound(module, package).items():
                    namespace.setdefault(word, value)
                    _unbound[module.__name__][1].discard(word)
            _modules_seen = seen
        except Exception:  # best effort: `get_type_hints` will say what is missing
            pass


def resolve(cls: type) -> None:
    """Replaces the annotations of ``cls``'s own body (strings) by what they name, read as
    ``get_type_hints`` reads them with the names of the module doc: for a record made into a
    dataclass. Its module's globals are not touched (module doc). Never raises: an annotation that
    cannot be read is left as it is."""
    own = vars(cls).get("__annotations__")
    module = sys.modules.get(cls.__module__)
    if not own or module is None or not any(isinstance(value, str) for value in own.values()):
        return
    with _lock:
        try:
            import typing

            found = _values_for_unbound(module, _package_modules())
            # The names found as locals: the class's module's globals first, as for any caller.
            hints = typing.get_type_hints(cls, localns=found, include_extras=True)
        except Exception:
            return
    for name in list(own):
        if name in hints:
            own[name] = hints[name]


def _package_modules() -> list[types.ModuleType]:
    """The package's modules loaded and done importing (one still importing is left for later)."""
    return [
        module
        for name, module in sorted(sys.modules.items())
        if module is not None
        and (name == _PACKAGE or name.startswith(_PACKAGE + "."))
        and not getattr(getattr(module, "__spec__", None), "_initializing", False)
    ]


def _values_for_unbound(module: types.ModuleType, package: list[types.ModuleType]) -> dict[str, Any]:
    """The values found for ``module``'s annotation names that are not bound yet (module doc)."""
    import builtins
    import typing

    namespace = vars(module)
    cached = _unbound.get(module.__name__)
    if cached is None or cached[0] is not module:  # first seen, or imported anew
        words = set(_annotation_words(module))
        cached = _unbound[module.__name__] = (module, {w for w in words if w not in namespace and not hasattr(builtins, w)})
    found: dict[str, Any] = {}
    for word in sorted(cached[1]):
        # typing's public names only: `typing.re` and `typing.io` are deprecated stand-ins.
        value = getattr(typing, word) if word in typing.__all__ else _MISSING
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


def _annotation_words(module: types.ModuleType) -> Iterator[str]:
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
    """The function behind a class member or a module's value (a method, a static or class
    method, a property's getter, a ``functools.wraps`` wrapper's original), or ``None``."""
    member = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
    member = getattr(member, "__wrapped__", member)
    return member if isinstance(member, types.FunctionType) else None


def _words(text: str) -> Iterator[str]:
    """The names in an annotation's text, read by :mod:`ast` (:mod:`asyncio` imports it anyway):
    its bare names, the first of a dotted one (``asyncio`` in ``asyncio.Future``), none of its
    constants. Quoted text is read too (a forward reference, ``"'Options'"``): a ``Literal``'s values
    then come as well, and are found nowhere, or bound to no harm (the package has none). Text that
    is no expression gives nothing."""
    import ast

    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from _words(node.value)
