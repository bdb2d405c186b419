"""Files into and out of the snippet's working directory."""
import base64
import os
import stat


class PathEscapeError(ValueError):
    def __init__(self, path):
        super().__init__(f"file path escapes working directory: '{path}'")


def resolve_inside(workdir, path):
    """The real path `path` names inside `workdir`, or PathEscapeError.

    Refused: empty, NUL, absolute, any `..` component (even one that would stay inside: there is no
    honest use for it), and anything that a symlink already in the directory would lead outside.
    """
    if not path or "\0" in path or os.path.isabs(path) or ".." in path.split("/"):
        raise PathEscapeError(path)
    root = os.path.realpath(workdir)
    target = os.path.realpath(os.path.join(root, path))
    if not target.startswith(root + os.sep):
        raise PathEscapeError(path)
    return target


def write_files(workdir, files):
    """Write (path, content) pairs; every path is checked before anything is written."""
    targets = [(resolve_inside(workdir, path), content) for path, content in files]
    for target, content in targets:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # O_NOFOLLOW: the target was resolved above, so a symlink here would be a race, not a file.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with open(fd, "wb") as file:
            file.write(content)


def collect_files(workdir, max_files, max_total_bytes):
    """([{"path", "content_b64"}], truncated) for the regular files under `workdir`.

    Symlinks, FIFOs and sockets are not files the snippet produced (and reading a FIFO would block).
    A file that does not fit the remaining byte budget is left out; smaller later files still come.
    """
    collected: list[dict[str, str]] = []
    budget = max_total_bytes
    truncated = False
    for directory, subdirectories, names in os.walk(workdir):
        subdirectories.sort()
        for name in sorted(names):
            full_path = os.path.join(directory, name)
            content = read_regular_file(full_path, budget)
            if content is None:
                continue
            if len(collected) == max_files:
                return collected, True
            if len(content) > budget:
                truncated = True
                continue
            budget -= len(content)
            collected.append({"path": os.path.relpath(full_path, workdir),
                              "content_b64": base64.b64encode(content).decode("ascii")})
    return collected, truncated


def read_regular_file(path, limit):
    """Up to limit+1 bytes of a regular file (more than `limit` means: too big); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read(limit + 1)
