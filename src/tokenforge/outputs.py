"""Output files written whole or not at all, with the permissions a user expects.

- `partial_file(target)` opens `.NAME.PID.partial` beside the target, created with mode 0666 less the
  umask (as `open` would; `mkstemp` would give 0600), and removes the partial files of runs that died
  (their process is gone), so killed runs leave nothing behind for long.
- `commit([(partial, target), ...])` makes several files appear together as far as a reader can
  tell: each partial is fsynced before anything is renamed, an existing target keeps its mode, and
  the files are renamed in the order given. A caller puts the file that vouches for the others last
  (a sidecar naming the data file's size and checksum), and removes the old one first (`retire`), so
  that a crash between the renames leaves a data file without a sidecar — refused by the readers —
  never a new data file beside an old sidecar.
- `write_atomic(path, data)` and `write_atomic_group({path: data, ...})` write whole files from
  bytes: the one writer of whole files for the package (tokenizer files, vocabularies, reports).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

SUFFIX = ".partial"


def resolve_target(path) -> Path:
    """The file that writing to `path` replaces: a symbolic link's target (written through, as
    editors do, not the link replaced by a file). A path that is not a regular file (a directory, a
    device such as /dev/full, a FIFO) is refused: replacing it by a file would not write to it, and
    would destroy it."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return path
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, a FIFO or a socket)"
        raise ValueError(f"{path}: {what}: give the path of a file to write")
    return path


def partial_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}{SUFFIX}")


def clean_stale_partials(target: Path) -> list[Path]:
    """Removes `.NAME.PID.partial` files of target whose process no longer runs; returns them."""
    removed = []
    prefix = f".{target.name}."
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(SUFFIX)):
            continue
        pid = name[len(prefix):-len(SUFFIX)]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def partial_file(target: Path):
    """(binary file open for writing, its path): a fresh partial file for target."""
    target = resolve_target(target)
    clean_stale_partials(target)
    path = partial_path(target)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    return os.fdopen(fd, "wb"), path


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        _fsync_path(folder)
    except OSError:  # some file systems cannot fsync a directory
        pass


def commit(pairs, *, retire=()) -> None:
    """Renames each partial onto its target, after fsyncing all of them; `retire` lists files removed
    before the first rename (the old sidecar of a data file about to be replaced)."""
    pairs = [(Path(p), resolve_target(t)) for p, t in pairs]
    for partial, target in pairs:
        _fsync_path(partial)
        try:
            os.chmod(partial, os.stat(target).st_mode & 0o7777)  # keep an existing file's mode
        except FileNotFoundError:
            pass
    blocked = _block_signals()  # Ctrl-C / SIGTERM wait until the files agree again (SIGKILL cannot)
    try:
        for old in retire:
            try:
                os.unlink(old)
            except FileNotFoundError:
                pass
        for partial, target in pairs:
            os.replace(partial, target)
    finally:
        _restore_signals(blocked)
    for folder in {t.parent for _, t in pairs}:
        _fsync_dir(folder)


def _block_signals():
    """Defers SIGINT / SIGTERM (main thread only: Python runs signal handlers there): they are
    recorded and raised again by _restore_signals. A signal mask would not do: a process-directed
    signal goes to any thread that does not block it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    pending: list[int] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
        except (ValueError, OSError):
            pass
    return previous, pending


def _restore_signals(state) -> None:
    if state is None:
        return
    import signal

    previous, pending = state
    for sig, handler in previous.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    for sig in pending:
        signal.raise_signal(sig)


def discard(path) -> None:
    try:
        os.unlink(path)
    except (FileNotFoundError, TypeError):
        pass


def write_atomic(path, data: bytes) -> None:
    """Writes data to path through a partial file and a rename: never a half-written file."""
    write_atomic_group({path: data})


_WRITING = threading.Lock()  # two threads saving the same file would share its partial file's name


def write_atomic_group(files: dict) -> None:
    """Writes several files that belong together ({path: bytes}, e.g. vocab.json + merges.txt):
    every file is complete and on disk before the first rename, so a full disk or an error leaves
    the old files untouched; the renames follow in the order given, with Ctrl-C deferred. The
    renames are not one atomic step: readers of such pairs check that they belong together
    (formats/pair_files.py puts the vocabulary's hash into the merges header)."""
    pairs = []
    with _WRITING:
        try:
            for path, data in files.items():
                path = resolve_target(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                f, partial = partial_file(path)
                pairs.append((partial, path))
                with f:
                    f.write(data)
            commit(pairs)
        except BaseException:
            for partial, _ in pairs:
                discard(partial)
            raise


__all__ = ["clean_stale_partials", "commit", "discard", "partial_file", "partial_path", "resolve_target", "write_atomic",
           "write_atomic_group"]
