"""Read a pickle's opcodes without executing them (standard library only).

`pickletools.genops` only decodes; nothing is imported or called. A small stack simulation
recovers what torch's persistent ids say about each storage — `('storage', <type>, key,
location, numel)` — so the devices a checkpoint was saved from are known even for a file that
`weights_only` loading refuses (a pickled nn.Module). Also lists every global it references,
however named (GLOBAL, STACK_GLOBAL, INST, copyreg EXT codes), in every protocol 0-5.
"""

from __future__ import annotations

import contextlib
import io
import pickletools
import typing
import zipfile
from collections import Counter

STRING_OPS = frozenset(
    [
        "SHORT_BINUNICODE",
        "BINUNICODE",
        "BINUNICODE8",
        "UNICODE",
        "SHORT_BINSTRING",
        "BINSTRING",
        "STRING",
    ]
)
INT_OPS = frozenset(["BININT", "BININT1", "BININT2", "INT", "LONG", "LONG1", "LONG4"])
TO_MARK_PUSH = frozenset(["TUPLE", "LIST", "DICT", "FROZENSET", "OBJ", "INST"])
TO_MARK_DROP = frozenset(["APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"])
POPS = {"POP": 1, "APPEND": 1, "SETITEM": 2, "BUILD": 1, "REDUCE": 1, "NEWOBJ": 1, "NEWOBJ_EX": 2}
MAX_OPS = 50_000_000
TORCH_MAGIC = 0x1950A86A20F9469CFC6C
# Legacy (pre-1.6) files are several pickles in a row: magic, protocol, sys_info, the object.
LEGACY_PICKLES = 4


# A STACK_GLOBAL whose names are not plain strings here: unknowable, so never allowed.
COMPUTED_GLOBAL = "<global computed at load time>"


class Global(str):
    """A GLOBAL reference, `module.name`, kept apart from plain strings on the stack."""


class _Other:
    pass


OTHER = _Other()


class _Machine:
    """The simulated pickle machine: its stack, the MARK positions on it, and the memo."""

    def __init__(self) -> None:
        self.stack: list[object] = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}


class Scan:
    def __init__(self) -> None:
        self.globals: Counter[str] = Counter()
        self.locations: Counter[str] = Counter()
        self.location_elements: Counter[str] = Counter()
        self.storage_types: Counter[str] = Counter()
        self.persistent_ids = 0
        self.complete = True
        self.ops = 0

    def feed(self, stream: io.BufferedIOBase) -> object:
        """Simulate one pickle; returns its top value (a str/int/tuple or OTHER)."""
        m = _Machine()
        ops, opaque = _OPS, Scan._opaque
        try:
            for op, arg, _pos in pickletools.genops(stream):
                self.ops += 1
                if self.ops > MAX_OPS:
                    self.complete = False
                    break
                ops.get(op.name, opaque)(self, op.name, arg, m)
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            # A malformed or truncated pickle: what was read so far still counts.
            self.complete = False
            self.error = f"{type(exc).__name__}: {exc}"
            return OTHER
        return m.stack[-1] if m.stack else OTHER

    # One handler per kind of opcode, (self, opcode name, its argument, the machine); _OPS
    # below maps each opcode name to its handler.

    def _opaque(self, name: str, arg: object, m: _Machine) -> None:
        """NONE, NEWTRUE, BINFLOAT, EMPTY_*, bytes...: one value we need not know."""
        m.stack.append(OTHER)

    def _nothing(self, name: str, arg: object, m: _Machine) -> None:
        """PROTO, FRAME, STOP: nothing on the stack changes."""

    def _string(self, name: str, arg: object, m: _Machine) -> None:
        m.stack.append(arg if isinstance(arg, str) else OTHER)

    def _int(self, name: str, arg: object, m: _Machine) -> None:
        m.stack.append(arg)

    def _global(self, name: str, arg: object, m: _Machine) -> None:
        if name == "GLOBAL":
            g = Global(str(arg).replace(" ", ".", 1))
        elif name == "STACK_GLOBAL":
            attr, module = m.stack.pop(), m.stack.pop()
            known = isinstance(module, str) and isinstance(attr, str)
            g = Global(f"{module}.{attr}" if known else COMPUTED_GLOBAL)
        else:  # EXT1/2/4: a global named by copyreg's registry
            g = Global(f"<copyreg extension {arg}>")
        self.globals[g] += 1
        m.stack.append(g)

    def _mark(self, name: str, arg: object, m: _Machine) -> None:
        m.marks.append(len(m.stack))

    def _to_mark(self, name: str, arg: object, m: _Machine) -> None:
        """TUPLE, LIST, DICT, OBJ, INST...: the items since the last MARK become one value."""
        k = m.marks.pop()
        items = tuple(m.stack[k:])
        del m.stack[k:]
        if name == "INST":
            self.globals[Global(str(arg).replace(" ", ".", 1))] += 1
        m.stack.append(items if name == "TUPLE" else OTHER)

    def _drop_to_mark(self, name: str, arg: object, m: _Machine) -> None:
        del m.stack[m.marks.pop() :]

    def _small_tuple(self, name: str, arg: object, m: _Machine) -> None:
        n = int(name[-1])
        items = tuple(m.stack[-n:])
        del m.stack[-n:]
        m.stack.append(items)

    def _pop(self, name: str, arg: object, m: _Machine) -> None:
        del m.stack[len(m.stack) - POPS[name] :]
        if name in ("REDUCE", "NEWOBJ", "NEWOBJ_EX"):
            m.stack[-1] = OTHER

    def _persid(self, name: str, arg: object, m: _Machine) -> None:
        if name == "BINPERSID":
            self._persistent(m.stack.pop())
        else:  # PERSID: a string id, not torch's tuple
            self.persistent_ids += 1
        m.stack.append(OTHER)

    def _put(self, name: str, arg: object, m: _Machine) -> None:
        m.memo[len(m.memo) if name == "MEMOIZE" else int(arg)] = m.stack[-1]

    def _get(self, name: str, arg: object, m: _Machine) -> None:
        m.stack.append(m.memo.get(int(arg), OTHER))

    def _dup(self, name: str, arg: object, m: _Machine) -> None:
        m.stack.append(m.stack[-1])

    def _persistent(self, pid: object) -> None:
        self.persistent_ids += 1
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            location = pid[3] if isinstance(pid[3], str) else "?"
            self.locations[location] += 1
            if isinstance(pid[4], int):
                self.location_elements[location] += pid[4]
            if isinstance(pid[1], Global):
                self.storage_types[str(pid[1])] += 1

    def to_dict(self) -> dict:
        return {
            "globals": sorted(self.globals),
            "storage_locations": dict(self.locations),
            "storage_elements_by_location": dict(self.location_elements),
            "storage_types": dict(self.storage_types),
            "persistent_ids": self.persistent_ids,
            "complete": self.complete,
            "error": getattr(self, "error", None),
        }


_OPS = {
    **dict.fromkeys(STRING_OPS, Scan._string),
    **dict.fromkeys(INT_OPS, Scan._int),
    **dict.fromkeys(("GLOBAL", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4"), Scan._global),
    "MARK": Scan._mark,
    **dict.fromkeys(TO_MARK_PUSH, Scan._to_mark),
    **dict.fromkeys(TO_MARK_DROP, Scan._drop_to_mark),
    **dict.fromkeys(("TUPLE1", "TUPLE2", "TUPLE3"), Scan._small_tuple),
    **dict.fromkeys(POPS, Scan._pop),
    **dict.fromkeys(("BINPERSID", "PERSID"), Scan._persid),
    **dict.fromkeys(("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"), Scan._put),
    **dict.fromkeys(("BINGET", "LONG_BINGET", "GET"), Scan._get),
    "DUP": Scan._dup,
    **dict.fromkeys(("PROTO", "FRAME", "STOP"), Scan._nothing),
}


def _bounded(fh: typing.BinaryIO, limit: int | None) -> typing.BinaryIO:
    """The stream itself, or its first `limit` bytes: a pickle longer than that ends early,
    and the scan says it is incomplete."""
    return fh if limit is None else io.BytesIO(fh.read(limit))


def scan_zip(source: str | typing.BinaryIO, limit: int | None = None) -> dict:
    """`source`: a path or an open binary file; `limit`: the most bytes of data.pkl read."""
    with zipfile.ZipFile(source) as zf:
        names = zf.namelist()
        pkl = next((n for n in names if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            return {
                "error": "zip file without a data.pkl: not a torch.save file",
                "entries": len(names),
            }
        scan = Scan()
        with zf.open(pkl) as fh:
            scan.feed(_bounded(io.BufferedReader(fh), limit))
        out = scan.to_dict()
        out["entries"] = len(names)
        return out


SNIFF_BYTES = 1 << 20


def is_pickle(path: str) -> bool:
    """Does the file start with a pickle (protocols 0 and 1 have no header)? Its first MiB must
    decode as one whole pickle, or as a long run of opcodes cut off only by that window."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES + 1)
    scan = Scan()
    scan.feed(io.BytesIO(head[:SNIFF_BYTES]))
    return (scan.complete and scan.ops > 1) or (len(head) > SNIFF_BYTES and scan.ops >= 1000)


def scan_legacy(source: str | typing.BinaryIO, limit: int | None = None) -> dict:
    """`source`: a path or an open binary file; `limit`: the most bytes read."""
    scan = Scan()
    with contextlib.ExitStack() as stack:
        if isinstance(source, str):
            source = stack.enter_context(open(source, "rb"))
        fh = _bounded(source, limit)
        first = scan.feed(fh)
        magic_ok = first == TORCH_MAGIC
        for _ in range(LEGACY_PICKLES - 1 if magic_ok else 0):
            if not scan.complete:
                break
            scan.feed(fh)
    out = scan.to_dict()
    out["torch_magic"] = magic_ok
    return out
