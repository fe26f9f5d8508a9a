"""``record``: :func:`dataclasses.dataclass`, made when first used rather than at import, with one
shared ``__eq__``, ``__repr__`` and ``__hash__`` instead of new ones generated for every class;
``field``: :func:`dataclasses.field` for a record's class body.

Why: the package defines about sixty dataclasses, and making them (Python compiles an
``__init__`` for each, and before 3.13 an ``__eq__`` and a ``__repr__`` too) was most of what
importing the package cost — about 11 ms of an agent's start-up, plus 7 ms for importing
:mod:`dataclasses`, which imports :mod:`inspect`. An agent uses a few records before it starts
serving, and only to create them.

How: ``@record`` reads the class's fields as ``dataclass`` would (its record bases' first, then
its own annotations; a ``ClassVar`` is not a field) and leaves, in the class, stand-ins for what
``dataclass`` adds. Creating the first instance replaces the ``__init__`` stand-in with the
``__init__`` that ``dataclass`` would write (the same code, compiled then) and sets
``__match_args__``; that needs no :mod:`dataclasses`. Anything else that ``dataclass`` gives —
``__dataclass_fields__`` (and so ``dataclasses.fields``, ``is_dataclass``, ``replace``,
``asdict``, the shared methods), ``__dataclass_params__``, a field's class attribute, a frozen
record's ``__setattr__``/``__delattr__`` — makes the class with ``dataclass`` itself the first
time it is looked up (a frozen record at its first instance), which keeps that ``__init__``. From
then on the class is the dataclass it would have been; only ``vars(cls)`` shows the stand-ins
before, and its ``__annotations__`` then hold what they name rather than their text (the fields'
``type`` stays the text, as ``dataclass`` wrote it): :mod:`acp_facade._hints` resolves them, so
that ``typing.get_type_hints`` reads the class although its module binds its typing names for type
checkers only. Each step runs once, under a lock, and no step leaves a moment in which another thread
could create an instance without the step's ``__init__``, or change a frozen one that it created. A class this
does not cover (a base that is another kind of dataclass, ``InitVar``, ``KW_ONLY``,
``field(init=...)`` or ``kw_only``, ``__post_init__``, its own ``__init__``, no docstring (which
``dataclass`` writes from the signature), ...) is made with ``dataclass`` at once, as before; every
record of the package is covered (tests hold it to that: building the demo's agent does not import
:mod:`dataclasses`, and every record is the dataclass it would have been).

The shared methods behave as the generated ones do — equal when the classes are the same and the
fields compared (``field(compare=...)``) are equal as a tuple; the fields shown
(``field(repr=...)``) in declaration order; a frozen record hashed by its compared fields, a
mutable one unhashable — and a class's own methods take precedence, as with ``dataclass``. What
they do not have is the generated ``__repr__``'s guard against a record that contains itself;
these records hold wire values, which never do. A type checker sees ``dataclasses.dataclass`` and
``dataclasses.field`` themselves.
"""

from __future__ import annotations

import sys

__all__ = ["field", "record"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING: typing is not imported at start-up (ARCHITECTURE.md)
if TYPE_CHECKING:
    from dataclasses import dataclass as record
    from dataclasses import field
else:
    import _thread
    import types

    from . import _hints

    # (The annotations below are for readers: nothing evaluates them.) `_FieldSpec`, a field as
    # `record` reads it: (annotation, kind, value); kind "" (no default), "default" (value: the
    # default) or "factory" (value: the default factory).

    class _Spec:
        """What ``dataclass`` will be given for one class."""

        __slots__ = ("frozen", "fields")

        def __init__(self, frozen: bool, fields: Dict[str, _FieldSpec]) -> None:
            self.frozen = frozen
            self.fields = fields

    # Every record made lazily, with its fields (its bases' included), for the records that
    # derive from it.
    _specs: Dict[type, _Spec] = {}
    # Those that `dataclass` has not made yet.
    _pending: Dict[type, _Spec] = {}
    # Classes with a `field(...)` that has no annotation (`dataclass` refuses them).
    _unannotated: Set[type] = set()
    # One step at a time; making a class makes its record bases first (re-entering the lock).
    _lock = _thread.RLock()

    # What `dataclass` adds that something may look up (the frozen pair only when frozen).
    _ADDED = ("__init__", "__dataclass_fields__", "__dataclass_params__", "__match_args__") + (
        ("__replace__",) if sys.version_info >= (3, 13) else ()
    )
    _FROZEN = ("__setattr__", "__delattr__")

    _FIELD_ARGS = frozenset(("default", "default_factory", "repr", "compare", "hash", "metadata"))

    class _Factory:
        """The default shown for a parameter with a default factory (``dataclass`` has its own)."""

        __slots__ = ()

        def __repr__(self) -> str:
            return "<factory>"

    _FACTORY = _Factory()
    _ABSENT = object()

    class _FieldArgs:
        """``field(...)`` in a record's class body until ``dataclass`` makes the class (then the
        :func:`dataclasses.field` it stands for). Read on the class before, it makes the class."""

        __slots__ = ("kwargs", "_cls", "_name")

        def __init__(self, kwargs: Dict[str, Any]) -> None:
            self.kwargs = kwargs
            self._cls: Any = None
            self._name = ""

        def __set_name__(self, owner: type, name: str) -> None:
            self._cls = owner
            self._name = name
            if name not in owner.__dict__.get("__annotations__", {}):
                _unannotated.add(owner)

        def __get__(self, obj: Any, owner: Any = None) -> Any:
            if self._cls not in _pending:
                return self  # not a lazy record's: what a plain class would answer
            _make(self._cls)
            return getattr(self._cls if obj is None else obj, self._name)

        def real(self) -> Any:
            made = _dataclasses().field(**self.kwargs)
            made.__set_name__(self._cls, self._name)
            return made

    def field(**kwargs: Any) -> Any:
        """:func:`dataclasses.field`, for a record's class body (see the module doc)."""
        return _FieldArgs(kwargs)

    class _StandIn:
        """Stands in a record for one attribute that ``dataclass`` adds: looking it up takes the
        step that makes it, then answers what the class has."""

        __slots__ = ("_cls", "_name")

        def __init__(self, cls: type, name: str) -> None:
            self._cls = cls
            self._name = name

        def __get__(self, obj: Any, owner: Any = None) -> Any:
            cls = self._cls
            if self._name == "__init__" and not _specs[cls].frozen:
                _install_init(cls)
            else:
                _make(cls)
            # What the class has now (or, when this is still there — looked up while its own
            # class is being made: `__init__`, by a frozen record's `dataclass` — what it stands
            # in front of), bound as it would have been looked up in its place.
            for klass in cls.__mro__:
                value = klass.__dict__.get(self._name, self)
                if value is not self:
                    get = getattr(type(value), "__get__", None)
                    return value if get is None else get(value, obj, owner)
            raise AttributeError(self._name)

    def _dataclasses() -> Any:
        import dataclasses

        return dataclasses

    def _read(cls: type, frozen: bool) -> Optional[_Spec]:
        """The fields of ``cls`` as ``dataclass`` would read them, or ``None`` when this module
        does not cover the class (see the module doc)."""
        own = cls.__dict__
        # (Without a docstring, `dataclass` writes one from the signature.)
        if "__init__" in own or hasattr(cls, "__post_init__") or not own.get("__doc__"):
            return None
        if frozen and ("__setattr__" in own or "__delattr__" in own):
            return None
        fields: Dict[str, _FieldSpec] = {}
        for base in cls.__mro__[-1:0:-1]:
            spec = _specs.get(base)
            if spec is not None:
                if spec.frozen != frozen:
                    return None
                fields.update(spec.fields)
            elif "__dataclass_fields__" in base.__dict__:
                return None
        module = sys.modules.get(cls.__module__)
        namespace = vars(module) if module is not None else {}
        dataclasses = sys.modules.get("dataclasses")
        # As `dataclass` reads it: no name can be `typing.ClassVar` before typing is imported.
        typing = sys.modules.get("typing")
        annotations = own.get("__annotations__")
        if annotations is None and "__annotate__" in own:
            return None  # annotations evaluated lazily (3.14), which `dataclass` reads otherwise
        for name, annotation in (annotations or {}).items():
            head = _head(annotation)
            if head is None:
                return None
            named = namespace.get(head)
            value = own.get(name, _ABSENT)
            if typing is not None and (
                named is typing.ClassVar or (type(named) is typing._GenericAlias and named.__origin__ is typing.ClassVar)
            ):
                if isinstance(value, _FieldArgs):
                    return None
                continue
            if dataclasses is not None and (
                named is dataclasses.InitVar or type(named) is dataclasses.InitVar or named is dataclasses.KW_ONLY
            ):
                return None
            if isinstance(value, _FieldArgs):
                args = value.kwargs
                if not args.keys() <= _FIELD_ARGS or ("default" in args and "default_factory" in args):
                    return None
                if type(args.get("default")).__hash__ is None:
                    return None  # `dataclass` refuses a mutable default
                if "default_factory" in args:
                    fields[name] = (annotation, "factory", args["default_factory"])
                elif "default" in args:
                    fields[name] = (annotation, "default", args["default"])
                else:
                    fields[name] = (annotation, "", None)
            elif value is not _ABSENT:
                if (
                    type(value).__hash__ is None  # `dataclass` refuses a mutable default
                    or isinstance(value, types.MemberDescriptorType)
                    or (dataclasses is not None and isinstance(value, dataclasses.Field))
                ):
                    return None
                fields[name] = (annotation, "default", value)
            elif any(name in vars(base) for base in cls.__mro__[1:]):
                return None  # a default inherited from a base
            else:
                fields[name] = (annotation, "", None)
        if not _defaults_last(fields):
            return None
        if cls in _unannotated:
            return None  # `dataclass` refuses a field without an annotation
        return _Spec(frozen, fields)

    def _head(annotation: Any) -> Optional[str]:
        """The name a string annotation starts with, which ``dataclass`` looks up in the class's
        module (``dataclasses._MODULE_IDENTIFIER_RE``, without :mod:`re`: not imported for this);
        ``None`` for anything else, or a name that a module's name qualifies (``typing.ClassVar``),
        which this module does not cover."""
        if not isinstance(annotation, str):
            return None
        text = annotation.lstrip()
        end = 0
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        if end == 0 or text[end:].lstrip().startswith("."):
            return None
        return text[:end]

    def _defaults_last(fields: Dict[str, _FieldSpec]) -> bool:
        seen_default = False
        for _, kind, _ in fields.values():
            if kind:
                seen_default = True
            elif seen_default:
                return False
        return True

    def _init(cls: type, spec: _Spec) -> Any:
        """The ``__init__`` that ``dataclass`` writes for ``spec`` (its code, as in
        ``dataclasses._init_fn``, and its annotations)."""
        self_name = "__dataclass_self__" if "self" in spec.fields else "self"
        scope: Dict[str, Any] = {"_HAS_DEFAULT_FACTORY": _FACTORY, "__dataclass_builtins_object__": object}
        params = [self_name]
        body = []
        for name, (_, kind, value) in spec.fields.items():
            if kind == "factory":
                scope[f"_dflt_{name}"] = value
                params.append(f"{name}=_HAS_DEFAULT_FACTORY")
                assigned = f"_dflt_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name}"
            else:
                if kind == "default":
                    scope[f"_dflt_{name}"] = value
                params.append(name + ("=_dflt_" + name if kind == "default" else ""))
                assigned = name
            if spec.frozen:
                body.append(f"  __dataclass_builtins_object__.__setattr__({self_name},{name!r},{assigned})")
            else:
                body.append(f"  {self_name}.{name}={assigned}")
        source = (
            f"def __create_fn__({', '.join(scope)}):\n"
            f" def __init__({','.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n return __init__"
        )
        module = sys.modules.get(cls.__module__)
        made: Dict[str, Any] = {}
        # `exec` of the text, as `dataclass` does, not `compile`: Python's first `compile` call
        # sets up the `ast` module's classes (about 9 M instructions, 2-3 ms), which the start
        # path has no other use for. The text has no annotations, whose meaning this module's
        # `from __future__ import annotations` (which `exec` inherits) would change: they are set
        # as `dataclass` sets them, the field's annotation for each parameter and `None` returned.
        exec(source, vars(module) if module is not None else {}, made)
        init = made["__create_fn__"](**scope)
        init.__annotations__ = {name: annotation for name, (annotation, _, _) in spec.fields.items()}
        init.__annotations__["return"] = None
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        return init

    def _install_init(cls: type) -> None:
        """Creating the first instance of a mutable record: its ``__init__`` and
        ``__match_args__``, without :mod:`dataclasses`."""
        with _lock:
            own = cls.__dict__
            if isinstance(own.get("__init__"), _StandIn):
                spec = _specs[cls]
                if isinstance(own.get("__match_args__"), _StandIn):
                    cls.__match_args__ = tuple(spec.fields)
                cls.__init__ = _init(cls, spec)  # type: ignore[misc]

    def _make(cls: type) -> None:
        """Makes ``cls`` the dataclass it stands for (once)."""
        with _lock:
            spec = _pending.pop(cls, None)
            if spec is None:
                return
            global _fields
            dataclasses = _dataclasses()
            _fields = dataclasses.fields
            own = cls.__dict__
            try:
                if not spec.frozen:
                    _install_init(cls)  # `dataclass` keeps it
                for name, value in list(own.items()):
                    if isinstance(value, _FieldArgs):
                        setattr(cls, name, value.real())
                # `dataclass` overwrites `__dataclass_fields__` and `__dataclass_params__` (their
                # stand-ins answer meanwhile, after this step) and keeps what else it finds, so
                # the other stand-ins stay until their values replace them below. A frozen
                # record's `__init__` stand-in so keeps every instance from existing while its
                # `__setattr__` and `__delattr__`, which `dataclass` must write itself, are
                # missing.
                replace = getattr(dataclasses, "_replace", None)
                for name in _FROZEN if spec.frozen else ():
                    if isinstance(own.get(name), _StandIn):
                        delattr(cls, name)
                if replace is None and isinstance(own.get("__replace__"), _StandIn):
                    delattr(cls, "__replace__")  # (no `_replace` to set after)
                # `dataclass` makes every record base first (it reads their `__dataclass_fields__`).
                dataclasses.dataclass(cls, eq=False, repr=False, frozen=spec.frozen)
            except BaseException:
                _pending[cls] = spec  # the next use tries again, and fails the same way
                raise
            if isinstance(own.get("__replace__"), _StandIn):
                cls.__replace__ = replace  # type: ignore[attr-defined]
            if isinstance(own.get("__match_args__"), _StandIn):
                cls.__match_args__ = tuple(spec.fields)  # type: ignore[attr-defined]
            if isinstance(own.get("__init__"), _StandIn):
                cls.__init__ = _init(cls, spec)  # type: ignore[misc]
        _hints.resolve(cls)  # so that `typing.get_type_hints` (pydantic, cattrs, ...) reads it

    def _fields(obj: Any) -> Any:
        """:func:`dataclasses.fields` (and it is, once a record has been made)."""
        return _dataclasses().fields(obj)

    def _compared(obj: Any) -> Tuple[Any, ...]:
        return tuple(getattr(obj, f.name) for f in _fields(obj) if f.compare)

    def _eq(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def _repr(self: Any) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _fields(self) if f.repr)
        return f"{self.__class__.__qualname__}({shown})"

    def _hash(self: Any) -> int:
        return hash(_compared(self))

    def record(cls: Any = None, /, *, frozen: bool = False) -> Any:
        """``@record`` or ``@record(frozen=True)``: see the module doc."""

        def wrap(cls: type) -> type:
            own = cls.__dict__
            # As `dataclass` decides: a `__hash__` written in the class stays; the `None` that
            # Python puts there for a class defining only `__eq__` does not count.
            explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
            if "__eq__" not in own:
                cls.__eq__ = _eq
            if "__repr__" not in own:
                cls.__repr__ = _repr
            if not explicit_hash:
                cls.__hash__ = _hash if frozen else None
            spec = _read(cls, frozen)
            if spec is None:
                # Not covered: made at once, `field(...)` included.
                for name, value in list(own.items()):
                    if isinstance(value, _FieldArgs):
                        setattr(cls, name, value.real())
                return _dataclasses().dataclass(cls, eq=False, repr=False, frozen=frozen)  # type: ignore[no-any-return]
            _specs[cls] = _pending[cls] = spec
            for name in _ADDED + (_FROZEN if frozen else ()):
                if name not in own:
                    setattr(cls, name, _StandIn(cls, name))
            return cls

        wrapper: Callable[[Any], Any] = wrap
        return wrapper if cls is None else wrapper(cls)
