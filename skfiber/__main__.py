"""The ``skfiber`` command (``python -m skfiber`` runs it too): :func:`skfiber.cli.main`.

The command's module is imported inside :func:`main`, so that a Ctrl-C while it loads (numpy, scipy and numba
take a few tenths of a second) ends as one during the command does: ``skfiber: interrupted`` on stderr (and
``summary: interrupted=1`` on stdout for the commands that end with a summary line), exit code 130, no
traceback, also when numpy or scipy turn the Ctrl-C into an ImportError.
"""
import importlib
import sys

#: the exit code of an interrupted command (:data:`skfiber.cli.EXIT_INTERRUPTED`, which is not loaded yet here)
EXIT_INTERRUPTED = 130


#: the commands whose output ends with a ``summary:`` line (:data:`skfiber.cli.INTERRUPTED_SUMMARY` after Ctrl-C)
SUMMARIZED = ("run", "study", "verify")


def main() -> int:
    """Entry point of the ``skfiber`` console script; returns the exit code."""
    try:
        cli = importlib.import_module("skfiber.cli")
    except BaseException as err:
        if not _ctrl_c_in(err):
            raise
        words = [w for w in sys.argv[1:] if not w.startswith("-")]
        if words and words[0] in SUMMARIZED:
            print("summary: interrupted=1", flush=True)
        print("skfiber: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli.main()


def _ctrl_c_in(err: BaseException) -> bool:
    """Whether a KeyboardInterrupt is ``err`` or in its chain: numpy and scipy turn a Ctrl-C during their own
    import into an ImportError ("initialization failed"), which would tell the user the install is broken.
    (:func:`skfiber.core.interrupt.caused_by_ctrl_c` is the same test; it cannot be imported while numpy's
    import is what failed.)"""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
