"""Data-only state files: nested dataclasses of arrays and scalars, stored so that loading runs no code.

A results directory may come from anyone, and a matching run id resumes from its checkpoint
automatically, so loading a checkpoint must never execute what the file says. Pickle does exactly
that (``__reduce__`` names any callable). A state file instead is one ``.npz`` archive:

* every numpy array of the state is one entry, read back with ``np.load(..., allow_pickle=False)``
  (object arrays are refused by numpy itself);
* the structure is a JSON document in the entry ``__state__`` (UTF-8 bytes as a uint8 array): plain
  values are JSON values, everything else is a one-key object naming what it is, for example
  ``{"tuple": [...]}``, ``{"array": "a3"}`` (an archive entry) or
  ``{"dataclass": "esbench.runtime.replica.TrainerState", "fields": {...}}``.

What a file may hold: ``None``, ``bool``, ``int``, ``float`` (NaN and infinities included), ``str``,
``bytes``, numpy arrays (no object dtype) and numpy scalars, ``list``/``tuple``/``dict``/
``OrderedDict``/``deque`` of these (hashable ones as dict keys), and instances of the dataclasses
the caller names in ``types``. Types are matched exactly (a ``NamedTuple`` is not a tuple, a
``bool`` subclass is not a bool), so what comes back is what went in; an array referenced twice is
stored once and comes back as one array, as with pickle. Loading rebuilds only the listed
dataclasses, by qualified name, through their ``__init__`` (fields with ``init=False`` are set
afterwards); any other name is refused. The serializer is generic over :func:`dataclasses.fields`:
a new field of a listed dataclass needs no code here, and a field missing from an older file takes
its default.

Every problem found while loading raises :class:`StateFileError` with a short reason, never another
exception type, so callers can turn it into one line for the user.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any

import numpy as np

from esbench.utils.io import atomic_write_bytes

FORMAT = "esbench-state"
VERSION = 1
_MANIFEST = "__state__"


class StateFileError(ValueError):
    """A state file that cannot be read: not one of ours, truncated, corrupt, or naming a refused type."""


def qualified_name(cls: type) -> str:
    """``module.QualName``: how a dataclass type is named in a state file."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _whitelist(types: Iterable[type]) -> dict[str, type]:
    allowed: dict[str, type] = {}
    for cls in types:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{cls!r} is not a dataclass type")
        allowed[qualified_name(cls)] = cls
    return allowed


# --- writing --------------------------------------------------------------------------------------


class _Encoder:
    """Turns a value into a JSON tree, collecting its arrays for the archive."""

    def __init__(self, allowed: dict[str, type]) -> None:
        self.allowed = allowed
        self.arrays: dict[str, np.ndarray] = {}
        self._seen: dict[int, str] = {}  # id(array) -> entry: one array referenced twice is stored once

    def _array(self, arr: np.ndarray) -> str:
        if arr.dtype.hasobject:
            raise TypeError("object arrays cannot be stored in a state file")
        key = self._seen.get(id(arr))
        if key is None:
            key = self._seen[id(arr)] = f"a{len(self.arrays)}"
            self.arrays[key] = arr  # keeps arr alive, so its id is not reused while encoding
        return key

    def encode(self, value: Any) -> Any:
        t = type(value)
        if value is None or t is bool or t is int or t is str:
            return value
        if t is float:
            return value if math.isfinite(value) else {"float": repr(value)}  # 'nan', 'inf', '-inf'
        if t is list:
            return {"list": [self.encode(v) for v in value]}
        if t is tuple:
            return {"tuple": [self.encode(v) for v in value]}
        if t is dict or t is OrderedDict:
            kind = "dict" if t is dict else "odict"
            return {kind: [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if t is deque:
            return {"deque": [self.encode(v) for v in value], "maxlen": value.maxlen}
        if t is bytes:
            return {"bytes": self._array(np.frombuffer(value, dtype=np.uint8))}
        if t is np.ndarray:
            return {"array": self._array(value)}
        if isinstance(value, np.generic):
            return {"scalar": self._array(np.asarray(value))}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            name = qualified_name(t)
            if self.allowed.get(name) is not t:
                raise TypeError(f"dataclass {name} is not among the types this state file may hold")
            fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return {"dataclass": name, "fields": fields}
        raise TypeError(f"a state file cannot hold a {t.__module__}.{t.__qualname__}")


def dumps(obj: Any, types: Iterable[type] = ()) -> bytes:
    """The state file bytes of ``obj``; ``types`` lists the dataclasses it may contain.

    Raises:
        TypeError: ``obj`` holds a value a state file cannot (an unlisted dataclass, an arbitrary
            object, an object array).
    """
    enc = _Encoder(_whitelist(types))
    tree = {"format": FORMAT, "version": VERSION, "root": enc.encode(obj)}
    manifest = json.dumps(tree, allow_nan=False, separators=(",", ":")).encode("utf-8")
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **enc.arrays, **{_MANIFEST: np.frombuffer(manifest, dtype=np.uint8)})
    return buf.getvalue()


def save(path: str | os.PathLike[str], obj: Any, types: Iterable[type] = ()) -> None:
    """Write ``obj`` to ``path`` as a state file, atomically (:func:`esbench.utils.io.atomic_write_bytes`)."""
    atomic_write_bytes(path, dumps(obj, types))


# --- reading --------------------------------------------------------------------------------------

_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class _Decoder:
    """Rebuilds a value from its JSON tree and the archive's arrays."""

    def __init__(self, archive: Any, allowed: dict[str, type]) -> None:
        self.archive = archive
        self.allowed = allowed
        self._arrays: dict[str, np.ndarray] = {}

    def _array(self, key: Any) -> np.ndarray:
        if not isinstance(key, str) or key == _MANIFEST or key not in self.archive.files:
            raise StateFileError(f"array entry {str(key)[:60]!r} is missing")
        if key not in self._arrays:  # an entry named twice is one shared array, as it was written
            arr = self.archive[key]  # allow_pickle=False: numpy refuses object arrays
            if not isinstance(arr, np.ndarray):
                raise StateFileError(f"entry {key!r} is not an array")
            self._arrays[key] = arr
        return self._arrays[key]

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not node:
            raise StateFileError(f"unexpected node {str(node)[:60]!r}")
        kind = next(iter(node))
        body = node[kind]
        if kind == "float" and isinstance(body, str) and body in _FLOATS:
            return _FLOATS[body]
        if kind in ("list", "tuple", "deque") and isinstance(body, list):
            items = [self.decode(v) for v in body]
            if kind == "list":
                return items
            if kind == "tuple":
                return tuple(items)
            maxlen = node.get("maxlen")
            if maxlen is not None and not (type(maxlen) is int and maxlen >= 0):
                raise StateFileError(f"bad deque maxlen {maxlen!r}")
            return deque(items, maxlen=maxlen)
        if kind in ("dict", "odict") and isinstance(body, list):
            pairs = []
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise StateFileError("bad dict entry")
                pairs.append((self.decode(pair[0]), self.decode(pair[1])))
            try:
                return dict(pairs) if kind == "dict" else OrderedDict(pairs)
            except TypeError as e:  # an unhashable key
                raise StateFileError(f"bad dict key ({e})") from None
        if kind == "bytes":
            return self._array(body).tobytes()
        if kind == "array":
            return self._array(body)
        if kind == "scalar":
            arr = self._array(body)
            if arr.ndim != 0:
                raise StateFileError(f"scalar entry {body!r} is not 0-dimensional")
            return arr[()]
        if kind == "dataclass":
            return self._dataclass(body, node.get("fields"))
        raise StateFileError(f"unknown node kind {kind!r}")

    def _dataclass(self, name: Any, fields: Any) -> Any:
        cls = self.allowed.get(name) if isinstance(name, str) else None
        if cls is None:
            raise StateFileError(f"type {str(name)[:100]!r} is not allowed here")
        if not isinstance(fields, dict):
            raise StateFileError(f"{name} has no fields")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(fields) - set(known))
        if unknown:
            raise StateFileError(f"{name} has no field(s) {', '.join(unknown)}")
        values = {k: self.decode(v) for k, v in fields.items()}
        try:
            obj = cls(**{k: v for k, v in values.items() if known[k].init})
        except (TypeError, ValueError) as e:  # a required field missing, or __post_init__ refusing
            raise StateFileError(f"cannot rebuild {name}: {e}") from None
        for k, v in values.items():
            if not known[k].init:
                object.__setattr__(obj, k, v)  # works for frozen dataclasses too
        return obj


def loads(data: bytes, types: Iterable[type] = ()) -> Any:
    """The value stored by :func:`dumps`; only the dataclasses in ``types`` are rebuilt.

    Raises:
        StateFileError: the bytes are not a complete state file, or name a type not in ``types``.
    """
    allowed = _whitelist(types)
    if data[:1] == b"\x80":  # the PROTO opcode every pickle since protocol 2 starts with
        raise StateFileError("it is a pickle, which esbench never loads: unpickling can run any code")
    if data[:4] != b"PK\x03\x04":
        raise StateFileError("not an esbench state file (not a .npz archive)")
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)  # refuses pickled data outright
    except Exception as e:  # not a zip or .npy, truncated: the file is untrusted, any failure is "unreadable"
        raise StateFileError(f"truncated or corrupt archive: {_reason(e)}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):  # pragma: no cover - the zip magic was checked
        raise StateFileError("not an esbench state file")
    try:
        if _MANIFEST not in archive.files:
            raise StateFileError("not an esbench state file (no manifest)")
        try:
            tree = json.loads(archive[_MANIFEST].tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise StateFileError(f"manifest is not JSON ({_reason(e)})") from None
        if not isinstance(tree, dict) or tree.get("format") != FORMAT:
            raise StateFileError("not an esbench state file")
        if tree.get("version") != VERSION:
            raise StateFileError(f"state file version {tree.get('version')!r}; this esbench reads {VERSION}")
        return _Decoder(archive, allowed).decode(tree.get("root"))
    except StateFileError:
        raise
    except RecursionError:
        raise StateFileError("structure nested too deeply") from None
    except Exception as e:  # a corrupt entry (bad CRC, truncated member, bad .npy header, ...)
        raise StateFileError(f"corrupt archive: {_reason(e)}") from None
    finally:
        archive.close()


def _reason(e: BaseException) -> str:
    """The first line of an exception's message (or its type), at most 200 characters."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:200]


def load(path: str | os.PathLike[str], types: Iterable[type] = ()) -> Any:
    """Read a state file written by :func:`save`; see :func:`loads`.

    Raises:
        StateFileError: as :func:`loads`, or the file cannot be read.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise StateFileError(f"cannot read it ({e.strerror or e})") from None
    return loads(data, types)
