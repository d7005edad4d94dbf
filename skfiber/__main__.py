"""The ``skfiber`` command (``python -m skfiber`` runs it too): :func:`skfiber.cli.main`.

The command's module is imported inside :func:`main`, so that a Ctrl-C while it loads (numpy, scipy and numba
take a few tenths of a second) ends as one during the command does: ``skfiber: interrupted`` on stderr, exit
code 130, no traceback.
"""
import importlib
import sys

#: the exit code of an interrupted command (:data:`skfiber.cli.EXIT_INTERRUPTED`, which is not loaded yet here)
EXIT_INTERRUPTED = 130


def main() -> int:
    """Entry point of the ``skfiber`` console script; returns the exit code."""
    try:
        cli = importlib.import_module("skfiber.cli")
    except KeyboardInterrupt:
        print("skfiber: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
