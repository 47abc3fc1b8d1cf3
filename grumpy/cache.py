"""The on-disk kernel cache: ``python -m grumpy.cache info|clear``.

The directory is GRUMPY_CACHE_DIR (default ``$XDG_CACHE_HOME/grumpy`` or
``~/.cache/grumpy``; ``off`` turns the cache off), bounded by
GRUMPY_CACHE_MAX_MB (default 256 MiB, least recently used entries removed
first).  grumpy uses a directory only when the current user owns it and
nobody else can write it; every entry carries a SHA-256 of its contents,
checked before it is loaded.

``info`` prints the directory, the number of entries and their size in
bytes; ``clear`` removes every entry (and leftover temporary file) this user
owns there.  Exit status 0, or 2 on a bad command line or a GRUMPY_*
variable grumpy does not accept (one line, as ``grumpy.enable`` says it).
"""
import os
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in ("info", "clear"):
        print("usage: python -m grumpy.cache info|clear", file=sys.stderr)
        return 2
    from grumpy import _config, _grumpy

    try:
        _config.validate_environment(os.environ)
    except ValueError as exc:
        print(f"grumpy.cache: {exc}", file=sys.stderr)
        return 2

    if argv[0] == "clear":
        removed = _grumpy.cache_clear()
        print(f"removed {removed} files")
        return 0
    info = _grumpy.cache_info()
    print(f"directory: {info['dir'] if info['dir'] else 'off'}")
    print(f"entries:   {info['files']}")
    print(f"bytes:     {info['bytes']} of at most {info['max_bytes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
