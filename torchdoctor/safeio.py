"""The one way torchdoctor reads a user's file and the one way it writes one.

Reads: a user may name anything (``/dev/zero``, a FIFO, a 40 GB log), so input is read only
from a regular file (or ``-`` for stdin), opened without blocking, and never past a size limit.

Writes: a temporary file in the target's directory, flushed and fsynced, then renamed over the
target. On any failure (disk full, interrupted) the old file is intact and the temporary file is
removed. The new file keeps the old one's mode and, where we may set it, its owner.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from typing import BinaryIO

MiB = 1024 * 1024
DEFAULT_READ_LIMIT = 64 * MiB


class InputError(Exception):
    """A user-named input that cannot be used; the message is one line for the user."""


class OutputError(Exception):
    """A user-named output that could not be written; the old file (if any) is intact."""


def read_bounded(path: str, limit: int = DEFAULT_READ_LIMIT, *, allow_stdin: bool = True) -> bytes:
    """The bytes of ``path`` (``-``: stdin), refusing non-regular files and inputs over ``limit``."""
    if path == "-" and allow_stdin:
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise InputError(f"standard input is larger than {_size(limit)}")
        return data
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > limit:
            raise InputError(f"{path!r} is larger than {_size(limit)} ({_size(st.st_size)})")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if len(data) > limit:  # it grew while we read it
        raise InputError(f"{path!r} is larger than {_size(limit)}")
    return data


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, only if it is a regular file: a FIFO, a device or
    a folder raises InputError. The caller bounds what it reads (a checkpoint's zip index is read
    by seeking, not whole)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait; fstat then refuses it anyway.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    fh = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        fh.close()
        raise InputError(f"{path!r} is not a regular file ({_kind(mode)})")
    return fh


def version(path: str) -> tuple[int, int] | None:
    """(modification time in ns, size) of the file: the key under which what was read from it
    may be cached, since an edit changes it. None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def read_text_bounded(path: str, limit: int = DEFAULT_READ_LIMIT, **kw) -> str:
    data = read_bounded(path, limit, **kw)
    # Windows PowerShell 5's `>` writes UTF-16 with a BOM (a saved collect_env report, say).
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        where = "standard input" if path == "-" else repr(path)
        raise InputError(f"{where} is not UTF-8 text (byte {exc.start})") from None


def atomic_write(path: str, data: bytes | str, *, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``data`` all at once, or leave it as it was and raise OutputError.

    A symlink is followed (the file it points at is replaced, as an in-place write would). The
    mode of an existing file is kept, and its owner when we are allowed to set it (root).
    """
    payload = data.encode(encoding) if isinstance(data, str) else data
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise OutputError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise OutputError(f"cannot write {path!r}: not a regular file ({_kind(old.st_mode)})")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if hasattr(os, "chown") and (old.st_uid, old.st_gid) != _owner(tmp):
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.chown(tmp, old.st_uid, old.st_gid)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OutputError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    with contextlib.suppress(OSError):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _owner(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def write_stdout(text: str) -> str | None:
    """Write ``text`` to stdout and flush it now; why it could not be written, or None.

    A reader that went away (``| head``) is not a failure: the report's exit code still stands.
    A closed stdout or a full disk behind ``>`` is, since the report was lost.
    """
    out = sys.stdout
    if out is None:  # started with stdout closed (`>&-`)
        return "cannot write the report: standard output is closed"
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
    except (OSError, ValueError) as exc:  # ENOSPC, EIO, EBADF; ValueError: closed file object
        _stdout_to_devnull()
        return (
            f"cannot write the report to standard output: {getattr(exc, 'strerror', None) or exc}"
        )
    return None


def _stdout_to_devnull() -> None:
    """Point fd 1 at /dev/null so the buffered rest, flushed at exit, cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass
