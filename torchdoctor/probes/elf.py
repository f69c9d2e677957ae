"""Just enough of ELF to tell whether a compiled extension links against the torch installed:
the libraries it needs (DT_NEEDED), the symbols it leaves undefined, and whether a library
defines a symbol (its GNU hash table). The dynamic loader answers the same questions with
``undefined symbol: ...`` when the extension is imported; here they are answered by reading
the files, so nothing of the extension runs.

Hand-written rather than pyelftools: a check reads the headers of every ``.so`` under
site-packages (hundreds in a data-science environment), and pyelftools takes about 7 ms a file
for the headers alone on the 2-core reference machine (46 files: 0.32 s), this under 0.1 ms.
Only 64-bit little-endian ELF is read (x86_64, aarch64: every platform torch ships Linux wheels
for); anything else reads as "not an extension we can judge" (None). Every offset comes from an
untrusted file and is checked against its size before use.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass

MAGIC = b"\x7fELF"
SHT_DYNAMIC, SHT_DYNSYM, SHT_GNU_HASH = 6, 11, 0x6FFFFFF6
DT_NEEDED = 1
STB_WEAK = 2
# A section table larger than this is not one a linker wrote.
MAX_SECTIONS = 1 << 16
# Symbols read from one extension's table: flash-attn's has a few thousand.
MAX_SYMBOLS = 1 << 20


@dataclass(frozen=True)
class Section:
    type: int
    offset: int
    size: int
    link: int
    entsize: int


class Elf:
    """One mapped ELF file; use as a context manager (``Elf.open``)."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.sections = self._sections()

    @classmethod
    def open(cls, path: str) -> Elf | None:
        """The file mapped read-only, or None when it is not a regular 64-bit LE ELF file."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size < 64:
                return None
            data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        # class 2 (64-bit), data 1 (little-endian)
        if data[:4] != MAGIC or data[4] != 2 or data[5] != 1:
            data.close()
            return None
        try:
            return cls(data)
        except (struct.error, ValueError, IndexError):
            data.close()
            return None

    def __enter__(self) -> Elf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.data.close()

    def _span(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise ValueError("section outside the file")
        return self.data[offset : offset + size]

    def _sections(self) -> list[Section]:
        (shoff,) = struct.unpack_from("<Q", self.data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", self.data, 0x3A)
        if not shoff or shentsize < 64 or shnum > MAX_SECTIONS:
            return []
        table = self._span(shoff, shentsize * shnum)
        out = []
        for i in range(shnum):
            # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, ...
            _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", table, i * shentsize
            )
            out.append(Section(kind, offset, size, link, entsize))
        return out

    def _first(self, kind: int) -> Section | None:
        return next((s for s in self.sections if s.type == kind), None)

    def _strings(self, section: Section) -> bytes:
        if not 0 <= section.link < len(self.sections):
            raise ValueError("string table index out of range")
        table = self.sections[section.link]
        return self._span(table.offset, table.size)

    @staticmethod
    def _name(strings: bytes, at: int) -> str:
        end = strings.find(b"\0", at)
        return strings[at : end if end >= 0 else len(strings)].decode("utf-8", "replace")

    def needed(self) -> list[str]:
        """The sonames it needs (DT_NEEDED), in order."""
        dynamic = self._first(SHT_DYNAMIC)
        if dynamic is None:
            return []
        strings = self._strings(dynamic)
        body = self._span(dynamic.offset, dynamic.size)
        out = []
        for tag, value in struct.iter_unpack("<qQ", body[: len(body) // 16 * 16]):
            if tag == 0:
                break
            if tag == DT_NEEDED and value < len(strings):
                out.append(self._name(strings, value))
        return out

    def _symbols(self) -> tuple[Section, bytes] | None:
        dynsym = self._first(SHT_DYNSYM)
        if dynsym is None or dynsym.entsize != 24:
            return None
        return dynsym, self._strings(dynsym)

    def undefined(self) -> Iterator[str]:
        """The symbols it expects another library to define (weak ones excepted: the loader
        does not refuse a library whose weak references stay unresolved)."""
        found = self._symbols()
        if found is None:
            return
        dynsym, strings = found
        count = min(dynsym.size // 24, MAX_SYMBOLS)
        body = self._span(dynsym.offset, count * 24)
        for name_at, info, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ", body):
            if shndx == 0 and name_at and info >> 4 != STB_WEAK and name_at < len(strings):
                yield self._name(strings, name_at)

    def defines(self) -> Lookup | None:
        """A lookup of the symbols it defines, through its GNU hash table (None without one)."""
        found = self._symbols()
        table = self._first(SHT_GNU_HASH)
        if found is None or table is None:
            return None
        return Lookup(self, found[0], found[1], table)


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


class Lookup:
    """Symbol lookup as the loader does it: bucket by hash, walk the chain (System V gABI GNU
    hash section, as glibc's dl-lookup.c reads it)."""

    def __init__(self, elf: Elf, dynsym: Section, strings: bytes, table: Section) -> None:
        self.elf, self.dynsym, self.strings = elf, dynsym, strings
        head = elf._span(table.offset, 16)
        self.nbuckets, self.symoffset, bloom_size, _ = struct.unpack("<IIII", head)
        if not self.nbuckets:
            raise ValueError("GNU hash table without buckets")
        self.buckets_at = table.offset + 16 + 8 * bloom_size
        self.chain_at = self.buckets_at + 4 * self.nbuckets
        self.end = table.offset + table.size
        elf._span(self.buckets_at, 4 * self.nbuckets)  # the buckets lie in the file

    def __contains__(self, symbol: str) -> bool:
        name = symbol.encode()
        h = gnu_hash(name)
        data = self.elf.data
        (i,) = struct.unpack_from("<I", data, self.buckets_at + 4 * (h % self.nbuckets))
        count = self.dynsym.size // 24
        while self.symoffset <= i < count:
            at = self.chain_at + 4 * (i - self.symoffset)
            if at + 4 > self.end:
                return False
            (h2,) = struct.unpack_from("<I", data, at)
            if (h | 1) == (h2 | 1):
                name_at, _, _, shndx = struct.unpack_from(
                    "<IBBH", data, self.dynsym.offset + 24 * i
                )
                if shndx != 0 and self.strings[name_at : name_at + len(name) + 1] == name + b"\0":
                    return True
            if h2 & 1:
                return False
            i += 1
        return False
