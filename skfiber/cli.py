"""The ``skfiber`` command: run demos, view results, run the verification studies and parameter studies.

::

    skfiber list                                   the demos and verification studies
    skfiber run DEMO [--level N] [--out DIR] ...   run a demo (other options go to the demo)
    skfiber view FILE.pvd [--screenshot F.png] [--movie F.mp4|F.gif] [--field NAME] [--time T]
    skfiber verify [--list] [--only NAME]          verification studies at small size
    skfiber study TARGET|DIR ...                   a parameter study (on dask), or the table of one

Demos are the modules of :mod:`skfiber.demos` (the repository's ``demos/``
folder), named with dashes: ``demos/hanging_bundle.py`` is ``hanging-bundle``.
A demo has ``main(argv)``; ``skfiber run`` passes ``--level``/``--out`` when
given, and every option it does not know, on to it.

A demo is a verification study when it is listed in :data:`VERIFY` (run as
``main(["--small"])``) or defines ``verify()`` (called without arguments).

Exit codes: 0 success, 1 a run or study failed, 2 bad arguments or paths,
130 interrupted (Ctrl-C), 141 the reader of the output went away
(``skfiber list | head -1``).  An error is one line on stderr, ``skfiber COMMAND:
error: …`` (bad arguments, paths, checkpoints: the ValueError, TypeError or
OSError skfiber raises for bad input) or ``skfiber COMMAND: failed: …`` (a
run that did not converge, a bug); ``skfiber --debug …`` adds the traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import importlib
import math
import os
import pkgutil
import select
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .core.files import check_file_name, writable_file, writable_folder
from .core.interrupt import caused_by_ctrl_c, ctrl_c_not_lost
from .study import command as study_command

__all__ = ["main", "demo_names", "VERIFY", "ArgumentParser", "positive_float", "positive_int", "nonnegative_float",
           "nonnegative_int", "output_folder", "output_file", "BAD_INPUT", "INTERRUPTED_SUMMARY", "FAILED_SUMMARY",
           "outcome", "run_script"]

#: Demos that are verification studies, run as ``main(["--small"])`` by ``skfiber verify``.
VERIFY = ("manufactured-solution", "pendulum-chain")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: the reader of the output went away (``skfiber list | head -1``): the shell's code of a SIGPIPE, no message
EXIT_BROKEN_PIPE = 128 + 13
#: the last line of a demo that Ctrl-C stopped before it printed its own ``summary:`` line
INTERRUPTED_SUMMARY = "summary: interrupted=1"
#: the last line of a demo that failed (an exception other than bad input left it: exit code 1)
FAILED_SUMMARY = "summary: failed=1"
#: the largest side (pixels) of ``skfiber view --window-size``: an image of that size is rendered with gigabytes
#: of memory (software rendering, 8× anti-aliasing), and far larger ones abort the process inside VTK
MAX_WINDOW_SIDE = 4096


#: exceptions that mean bad input (arguments, files, checkpoints) when they reach the command: exit code 2
BAD_INPUT = (ValueError, TypeError, OSError)


class UsageError(Exception):
    """Bad arguments or paths: printed as ``skfiber …: error: …``, exit code 2."""


#: the program name of the demo that ``skfiber run`` is running (:func:`_call_main`): the default ``prog`` of
#: its :class:`ArgumentParser` (argparse's own default, from ``sys.argv[0]`` or ``__main__``, names the
#: interpreter or the test runner there)
_DEMO_PROG: contextvars.ContextVar[str | None] = contextvars.ContextVar("skfiber_demo_prog", default=None)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line on stderr, ``PROG: error: …; see PROG --help``, exit code 2
    (the usage block is for ``--help``).  Under ``skfiber run DEMO`` its default ``prog`` is
    ``skfiber run DEMO``."""

    def __init__(self, *args, **kwargs):
        if not args and "prog" not in kwargs and _DEMO_PROG.get() is not None:
            kwargs["prog"] = _DEMO_PROG.get()
        super().__init__(*args, **kwargs)
        #: the parsers of the commands by name (:meth:`add_subparsers`)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def add_subparsers(self, **kwargs):
        """argparse's, keeping the parsers of the commands as :attr:`commands` (name → parser): an error found
        after parsing names its command (``skfiber list: error: …``)."""
        action = super().add_subparsers(**kwargs)
        self.commands = action.choices
        return action

    def error(self, message: str):
        help_command = f"{self.prog} --help"  # (under 'skfiber run DEMO' the flag goes on to the demo)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see {help_command}\n")


def _number(text: str, convert, kind: str, accept, condition: str):
    """``convert(text)`` when it converts and ``accept(value)`` holds, else argparse's error saying what is wanted."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"must be {condition}, got {text}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (argparse turns the error into one line and exit code 2)."""
    return _number(text, float, "a number", lambda x: math.isfinite(x) and x > 0, "a finite number > 0")


def nonnegative_float(text: str) -> float:
    """An argparse type: a finite number ≥ 0."""
    return _number(text, float, "a number", lambda x: math.isfinite(x) and x >= 0, "a finite number ≥ 0")


def positive_int(text: str) -> int:
    """An argparse type: an integer ≥ 1."""
    return _number(text, int, "an integer", lambda n: n >= 1, "an integer ≥ 1")


def finite_float(text: str) -> float:
    """An argparse type: a finite number."""
    return _number(text, float, "a number", math.isfinite, "a finite number")


def window_side(text: str) -> int:
    """An argparse type: a side of a window in pixels, 1 … :data:`MAX_WINDOW_SIDE`."""
    return _number(text, int, "an integer", lambda n: 1 <= n <= MAX_WINDOW_SIDE,
                   f"an integer from 1 to {MAX_WINDOW_SIDE} (pixels)")


def nonnegative_int(text: str) -> int:
    """An argparse type: an integer ≥ 0."""
    return _number(text, int, "an integer", lambda n: n >= 0, "an integer ≥ 0")


def folder_path(text: str) -> Path:
    """An argparse type: a folder's path, not empty (``Path("")`` would be the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; name a folder, e.g. results")
    return Path(text)


def output_folder(parser: argparse.ArgumentParser, option: str, folder: str | os.PathLike) -> Path:
    """Make a demo's output ``folder`` (and its parents) before anything runs, or stop with the parser's
    one-line error naming ``option``: a run's results are not lost to a folder that cannot be written.

    Examples
    --------
    >>> import tempfile
    >>> parser = ArgumentParser(prog="demo")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     output_folder(parser, "--out", Path(tmp) / "results").is_dir()
    True
    """
    return output_folders(parser, (option, folder))[0]


def output_folders(parser: argparse.ArgumentParser, *folders: tuple[str, str | os.PathLike]) -> list[Path]:
    """:func:`output_folder` for several (option, folder) pairs, all or none: when one cannot be made, the
    folders this call made for the others are removed again (if still empty) before the parser's error.

    Examples
    --------
    >>> import tempfile
    >>> parser = ArgumentParser(prog="demo")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     [p.name for p in output_folders(parser, ("--vtk", Path(tmp) / "vtk"), ("--output", Path(tmp) / "csv"))]
    ['vtk', 'csv']
    """
    made: list[Path] = []  # the folders this call made, parents first
    try:
        for option, folder in folders:
            path = Path(folder).absolute()
            made += [p for p in reversed((path, *path.parents)) if not p.exists() and p not in made]
            _make_folder(option, folder)
    except UsageError as err:
        for path in reversed(made):  # deepest first; one that is not empty, or is gone, is left as it is
            with contextlib.suppress(OSError):
                path.rmdir()
        parser.error(str(err))
    return [Path(folder) for _, folder in folders]


def _folder_name(option: str, folder: str | os.PathLike) -> Path:
    """``folder`` as a path, or a :class:`UsageError` naming ``option`` when it is empty (which would be the
    current folder) or an existing file."""
    if not str(folder).strip():
        raise UsageError(f"{option} is empty; name a folder, e.g. {option} results")
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} exists and is not a folder; give a folder")
    return path


def _make_folder(option: str, folder: str | os.PathLike) -> Path:
    """``folder`` made (with its parents) and writable, or a :class:`UsageError` naming ``option``."""
    path = _folder_name(option, folder)
    try:
        writable_folder(path, what=option)  # (made, and tried with a file)
    except OSError as err:
        raise UsageError(str(err)) from None
    return path


def output_file(parser: argparse.ArgumentParser, option: str, file: str | os.PathLike, *,
                figure: bool = False) -> Path:
    """Check a demo's output file (e.g. ``--plot FILE.png``) before anything runs: not a folder, its folder
    made (:func:`output_folder`), the file writable (tried: made and removed again, or an existing one opened
    for appending, which leaves it as it is), and with ``figure`` a format matplotlib writes (matplotlib
    installed), or the parser's one-line error naming ``option``."""
    try:
        path = check_file_name(file, what=option)
    except OSError as err:
        parser.error(str(err))
    if figure:
        try:
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError:
            parser.error(f"{option} needs matplotlib: pip install 'skfiber[viz]'")
        formats = sorted(FigureCanvasBase.get_supported_filetypes())
        if path.suffix.lower().lstrip(".") not in formats:
            parser.error(f"{option} {path}: matplotlib writes no {path.suffix or 'extension-less'} files; end the "
                         f"name in one of .{', .'.join(formats)}")
    output_folder(parser, option, path.parent)
    try:
        writable_file(path, what=option)
    except OSError as err:
        parser.error(str(err))
    return path


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


# --------------------------------------------------------------------------- demos
def demo_names() -> list[str]:
    """Names of the demo modules in :mod:`skfiber.demos`, with dashes."""
    import skfiber.demos

    return sorted(
        m.name.replace("_", "-")
        for m in pkgutil.iter_modules(skfiber.demos.__path__)
        if not m.name.startswith("_") and not m.ispkg
    )


def demos_with_option(option: str) -> list[str]:
    """The demos whose command line takes ``option`` (e.g. ``"--out"``; read from their source text, without
    importing them)."""
    import skfiber.demos

    folder = Path(skfiber.demos.__path__[0])
    return [name for name in demo_names()
            if f'"{option}"' in (folder / f"{name.replace('-', '_')}.py").read_text(encoding="utf-8")]


def demos_with_levels() -> list[str]:
    """The demos whose command line takes ``--level`` (read from their source text, without importing them)."""
    return demos_with_option("--level")


def _import_demo(name: str):
    names = demo_names()
    key = name.replace("_", "-")
    if key not in names:
        raise UsageError(f"unknown demo {name!r}; pick one of: {', '.join(names) or '(none found)'}")
    return importlib.import_module(f"skfiber.demos.{key.replace('-', '_')}")


def _exit_code(value) -> int:
    """A demo's ``main`` may return an exit code, None, or a result object or a list of them: a result whose
    ``interrupted`` is true (Ctrl-C, what was computed kept) gives :data:`EXIT_INTERRUPTED`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    results = value if isinstance(value, (list, tuple)) else [value]
    if any(getattr(r, "interrupted", False) is True for r in results):
        return EXIT_INTERRUPTED
    return EXIT_OK


def _called(main: Callable, argv: list[str]) -> int:
    """``main(argv)``'s exit code (:func:`_exit_code`), also when it leaves by ``SystemExit`` (argparse's
    errors and ``--help``, or ``sys.exit`` in the demo: a message given to it goes to stderr).  An exception
    that leaves ``main`` is raised on after the summary line of its outcome (:func:`outcome`):
    :data:`INTERRUPTED_SUMMARY` after a Ctrl-C, :data:`FAILED_SUMMARY` after a failure (exit code 1), none
    after bad input: every demo's output ends with a ``summary:`` line once it has run."""
    try:
        return _exit_code(main(argv))
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return EXIT_OK if exc.code is None else exc.code
        print(exc.code, file=sys.stderr)  # (as Python does for sys.exit("message"))
        _print_summary(FAILED_SUMMARY)
        return EXIT_FAILED
    except BaseException as err:
        code = outcome(err)
        if code in (EXIT_INTERRUPTED, EXIT_FAILED):
            _print_summary(INTERRUPTED_SUMMARY if code == EXIT_INTERRUPTED else FAILED_SUMMARY)
        raise


@contextlib.contextmanager
def _summary_if_interrupted():
    """:data:`INTERRUPTED_SUMMARY` as the last line when a Ctrl-C (:func:`outcome`) leaves the block, which it
    leaves as it would without."""
    try:
        yield
    except BaseException as err:
        if outcome(err) == EXIT_INTERRUPTED:
            _print_summary(INTERRUPTED_SUMMARY)
        raise


def _print_summary(line: str) -> None:
    """Print a demo's last line, unless stdout is closed (the exception is then what to report)."""
    try:
        print(line, flush=True)
    except OSError:
        pass


def outcome(err: BaseException) -> int | None:
    """The exit code the ``skfiber`` command and the demos give an exception that reached them, as they report
    it: :data:`EXIT_USAGE` for bad input (the ValueError, TypeError or OSError skfiber raises for arguments,
    paths, checkpoints), :data:`EXIT_INTERRUPTED` for a Ctrl-C (also as the cause of another exception, as
    numba raises it), :data:`EXIT_BROKEN_PIPE` when the reader of stdout went away, :data:`EXIT_FAILED` for
    anything else (a run that did not converge, a singular matrix: numpy's ``LinAlgError`` is a ValueError
    but the computation's failure, a bug); None for what is not an ``Exception`` (``SystemExit``), passed on.

    Examples
    --------
    >>> import numpy as np
    >>> outcome(ValueError("--t-end must be > 0")), outcome(np.linalg.LinAlgError("Singular matrix"))
    (2, 1)
    """
    if isinstance(err, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if not isinstance(err, Exception):
        return None
    if isinstance(err, (UsageError, study_command.StudyUsageError)):
        return EXIT_USAGE
    if isinstance(err, BrokenPipeError):
        return EXIT_BROKEN_PIPE if _stdout_closed() else EXIT_FAILED  # (another pipe's: a failure)
    if isinstance(err, np.linalg.LinAlgError):
        return EXIT_FAILED
    if isinstance(err, BAD_INPUT):
        return EXIT_USAGE
    return EXIT_INTERRUPTED if caused_by_ctrl_c(err) else EXIT_FAILED


def _call_main(module, argv: list[str], prog: str | None = None) -> int:
    """``module.main(argv)``'s exit code; with ``prog``, the demo's usage and error lines name it (the
    default ``prog`` of :class:`ArgumentParser`, and ``sys.argv[0]`` for a plain argparse parser)."""
    if not callable(getattr(module, "main", None)):
        raise UsageError(f"demo module {module.__name__} has no main(argv) function")
    saved = sys.argv[0] if sys.argv else None
    token = _DEMO_PROG.set(prog) if prog is not None else None
    if prog is not None and sys.argv:
        sys.argv[0] = prog  # (a demo's parser that is plain argparse's)
    try:
        return _called(module.main, argv)
    finally:
        if token is not None:
            _DEMO_PROG.reset(token)
        if prog is not None and sys.argv:
            sys.argv[0] = saved


def _first_line(module) -> str:
    doc = (module.__doc__ or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else ""


def _studies() -> list[tuple[str, object | None]]:
    """(name, module or None if missing) of the verification studies."""
    names = demo_names()
    found = []
    for name in names:
        try:
            module = importlib.import_module(f"skfiber.demos.{name.replace('-', '_')}")
        except Exception:  # a broken demo shows up when it is run
            module = None
        if name in VERIFY or callable(getattr(module, "verify", None)):
            found.append((name, module))
    found += [(name, None) for name in VERIFY if name not in names]
    return sorted(found, key=lambda x: x[0])


# --------------------------------------------------------------------------- commands
def _cmd_list(args) -> int:
    print("demos (skfiber run NAME):")
    for name in demo_names():
        try:
            line = _first_line(_import_demo(name))
        except Exception as err:  # pragma: no cover - depends on the demos
            line = f"(cannot import: {type(err).__name__}: {err})"
        print(f"  {name:24s} {line}")
    print("verification studies (skfiber verify):")
    for name, module in _studies():
        print(f"  {name}{'' if module is not None else '  (not found)'}")
    return EXIT_OK


def _cmd_run(args, extra: list[str]) -> int:
    with _summary_if_interrupted():  # (a Ctrl-C while the demo's imports load: its summary line, as after it ran)
        module = _import_demo(args.demo)
    if "-h" in extra or "--help" in extra:  # the demo's help: nothing else is done (no folder made)
        return _call_main(module, ["--help"], prog=f"skfiber run {args.demo}")
    argv = []
    if args.level is not None:  # (≥ 1: positive_int, as the demos' own --level)
        leveled = demos_with_levels()
        if args.demo.replace("_", "-") not in leveled:
            raise UsageError(f"{args.demo} takes no --level; the demos with levels are {', '.join(leveled)} "
                             f"(see 'skfiber run {args.demo} --help' for its options)")
        argv += ["--level", str(args.level)]
    if args.out is not None:
        writers = demos_with_option("--out")
        if args.demo.replace("_", "-") not in writers:
            raise UsageError(f"{args.demo} takes no --out; the demos that write files there are {', '.join(writers)} "
                             f"(see 'skfiber run {args.demo} --help' for its options)")
        argv += ["--out", str(_folder_name("--out", args.out))]  # (the demo makes it once it has checked its options)
    argv += extra
    tic = time.perf_counter()
    code = _call_main(module, argv, prog=f"skfiber run {args.demo}")
    if code == EXIT_USAGE:  # the demo said what was wrong, in one line
        return code
    wall = time.perf_counter() - tic
    done = {EXIT_OK: "finished", EXIT_INTERRUPTED: "interrupted"}.get(code, f"exit code {code}")
    lines = [f"skfiber run {args.demo}: {done} in {wall:.1f} s"]
    if args.out is not None and Path(args.out).is_dir():
        found = sorted(Path(args.out).glob("*.pvd")) or sorted(Path(args.out).glob("*/*.pvd"))  # (a level a folder)
        for pvd in (p for p in found if not p.name.startswith(".")):
            lines.append(f"  results: {pvd}  (ParaView, or: skfiber view {pvd} --screenshot shot.png)")
    print("\n".join(lines), file=sys.stderr, flush=True)
    return code


def _cmd_view(args) -> int:
    path = Path(args.file)
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():  # a demo's output folder: its one series
        series = sorted(p for p in path.glob("*.pvd") if not p.name.startswith("."))  # (not a write cut short)
        if len(series) != 1:
            found = f"{len(series)}: {', '.join(p.name for p in series)}" if series else "none"
            below = sorted(p.relative_to(path) for p in path.glob("*/*.pvd") if not p.name.startswith("."))
            if not series and below:  # (the upper limb's --levels: a subfolder a level)
                found += f"; in its subfolders: {', '.join(map(str, below[:6]))}" + (", …" if len(below) > 6 else "")
            raise UsageError(f"{path} is a folder; name one .pvd series in it (.pvd files there: {found})")
        path = series[0]
    if path.suffix.lower() not in (".pvd", ".vtu"):
        raise UsageError(f"{path} is neither a .pvd series nor a .vtu file")
    for option, target, example in (("--screenshot", args.screenshot, "shot.png"),
                                    ("--movie", args.movie, "movie.mp4")):
        if target is not None and Path(target).is_dir():
            raise UsageError(f"{option} {target} is a folder; give a file name, e.g. "
                             f"{option} {Path(target) / example}")
    if args.movie is not None and Path(args.movie).suffix.lower() not in (".gif", ".mp4"):
        raise UsageError(f"--movie {args.movie}: pick a file ending in .gif or .mp4")
    if args.screenshot is not None and Path(args.screenshot).suffix.lower() not in (".png", ".jpg", ".jpeg"):
        raise UsageError(f"--screenshot {args.screenshot}: pick a file ending in .png or .jpg")
    if args.movie is not None and path.suffix.lower() != ".pvd":
        raise UsageError("--movie needs a .pvd series")
    given = [option for option, value in (("--time", args.time), ("--screenshot", args.screenshot),
                                          ("--movie", args.movie)) if value is not None]
    if args.info and given:
        raise UsageError(f"--info prints the time points and the fields and exits; leave out {', '.join(given)}")
    if args.time is not None and path.suffix.lower() != ".pvd":
        raise UsageError(f"--time picks a time point of a .pvd series; {path.name} is one data set (leave out "
                         "--time, or name the series' .pvd file)")
    if args.time is not None and args.movie is not None and args.screenshot is None:
        raise UsageError("--time picks the time point of a screenshot or a window; a movie shows them all (use "
                         "--every K to thin it)")
    for option, value in (("--fps", args.fps), ("--every", args.every)):
        if value is not None and args.movie is None:
            raise UsageError(f"{option} belongs to --movie F.mp4 (a screenshot or a window shows one time point)")
    fps, every = (15.0 if args.fps is None else args.fps), (1 if args.every is None else args.every)
    try:
        from . import viz
    except ImportError as err:
        print(f"skfiber view: {err}", file=sys.stderr)
        return EXIT_FAILED
    if args.movie is not None:
        try:
            viz.check_gif_fps(args.movie, fps)
        except ValueError as err:
            raise UsageError(f"--{err} (--movie F.mp4)") from None
    for option, target in (("--screenshot", args.screenshot), ("--movie", args.movie)):
        if target is not None:
            try:  # (its folder made and the file tried, or an error naming the option)
                writable_file(target, what=option)
            except OSError as err:
                raise UsageError(str(err)) from None
    try:
        if args.info:
            return _print_info(viz, path)
        frame = viz.load(path, time=args.time)
        if args.field not in frame.fields:
            raise UsageError(f"unknown field {args.field!r}; pick one of: {', '.join(frame.fields)}")
        options = dict(field=args.field, view=args.view, window_size=tuple(args.window_size))
        if args.screenshot is None and args.movie is None:
            if not viz.has_display():
                raise UsageError("no display to open a window on; pass --screenshot F.png or --movie F.mp4")
            viz.show(frame, **options)
            return EXIT_OK
        if args.screenshot is not None:
            out = viz.screenshot(frame, args.screenshot, **options)
            print(f"screenshot (t = {frame.time if frame.time is not None else '–'} s, {args.field}): {out}")
        if args.movie is not None:
            if args.every is not None:
                points = len(viz.Series(path))
                _note_few_frames(points, len(viz.movie_frames(points, args.every)), args.every)
            tic = time.perf_counter()
            out = viz.movie(path, args.movie, field=args.field, view=args.view, fps=fps,
                            every=every, window_size=tuple(args.window_size))
            print(f"movie ({args.field}, {time.perf_counter() - tic:.1f} s to render): {out}")
    except (ValueError, FileNotFoundError) as err:
        raise UsageError(str(err)) from err
    return EXIT_OK


#: ``skfiber view --movie … --every K``: a note when K leaves fewer frames than this of a longer series
MIN_MOVIE_FRAMES = 3


def _note_few_frames(points: int, frames: int, every: int) -> None:
    """A note on stderr when ``--every`` ``every`` leaves ``frames`` (:func:`skfiber.viz.movie_frames`), fewer
    than :data:`MIN_MOVIE_FRAMES`, of a series of ``points`` time points."""
    if frames < min(MIN_MOVIE_FRAMES, points):
        print(f"skfiber view: note: --every {every} leaves {frames} frame{'s' if frames > 1 else ''} of the "
              f"series' {points} time points; --every {max(1, (points - 1) // (MIN_MOVIE_FRAMES - 1))} or less "
              f"gives {MIN_MOVIE_FRAMES} or more", file=sys.stderr, flush=True)


def _print_info(viz, path: Path) -> int:
    from .io import ALL_FIBER_FIELDS, BODY_FIELDS

    if path.suffix.lower() == ".pvd":
        series = viz.Series(path)
        print(f"{path}: {len(series)} time points, t = {series.times[0]:g} … {series.times[-1]:g} s")
        frame = series.frame(len(series) - 1)
    else:
        grid = viz.read_grid(path)
        print(f"{path}: one data set")
        if viz.holds_bodies(grid):  # (a series' bodies part)
            print("fibers: none (this file holds the bodies of a series; its .pvd holds both)")
            _print_bodies(grid, BODY_FIELDS, viz.lever_count)
            return EXIT_OK
        frame = viz.load(path)
    print(f"fibers: {frame.fibers.n_points} points, {frame.fibers.n_cells} line cells")
    written = viz.written_labels(frame.fibers)  # (extra fields' units and meanings too)
    width = max([16] + [len(name) for name in frame.fields])
    for name in frame.fields:
        unit, meaning = ALL_FIBER_FIELDS.get(name, written.get(name, ("?", "")))
        meaning = meaning or "an array of the run's own (the file does not say what it holds)"
        print(f"  {name:{width}s} {'[' + unit + ']':6s} {meaning}")
    if frame.bodies is not None:
        _print_bodies(frame.bodies, BODY_FIELDS, viz.lever_count)
    return EXIT_OK


def _print_bodies(bodies, units: dict, lever_count: Callable) -> None:
    """The line of ``skfiber view --info`` for the bodies of a data set."""
    levers = lever_count(bodies)
    print(f"bodies: {bodies.n_points} points, {bodies.n_cells - levers} triangles"
          + (f", {levers} lever{'s' if levers > 1 else ''} (lines from a bone's axis to a fiber attachment)"
             if levers else "") + "; arrays: "
          + ", ".join(f"{n} [{units.get(n, ('?',))[0]}]" for n in bodies.point_data.keys()))


class StudySummaries:
    r"""A text stream that passes everything on to ``stream`` but writes a line that starts with ``summary:``
    as ``(study) summary:``: the studies ``skfiber verify`` runs end with their own summary lines, and the
    command's output ends with one summary line, its own.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> relabel = StudySummaries(out)
    >>> _ = relabel.write("step 1\nsummary: ok=1\n")
    >>> out.getvalue()
    'step 1\n(study) summary: ok=1\n'
    """

    def __init__(self, stream):
        self.stream = stream
        self.line_start = True

    def write(self, text: str) -> int:
        pieces = text.split("\n")
        for k, piece in enumerate(pieces):
            if self.line_start and piece.startswith("summary:"):
                piece = "(study) " + piece
            self.stream.write(piece + ("\n" if k < len(pieces) - 1 else ""))
            self.line_start = k < len(pieces) - 1 or (self.line_start and piece == "")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):  # (isatty, encoding, fileno, … of the stream)
        return getattr(self.stream, name)


def _cmd_verify(args) -> int:
    studies = _studies()
    if args.only:  # (--list too lists only these)
        known = [n for n, _ in studies]
        unknown = [n for n in args.only if n.replace("_", "-") not in known]
        if unknown:
            raise UsageError(f"unknown verification study {unknown[0]!r}; pick one of: {', '.join(known)}")
        wanted = {n.replace("_", "-") for n in args.only}
        studies = [s for s in studies if s[0] in wanted]
    if args.list:
        for name, module in studies:
            how = "verify()" if callable(getattr(module, "verify", None)) else "main(['--small'])"
            print(f"{name:24s} {how if module is not None else '(not found)'}")
        return EXIT_OK
    results = []
    for name, module in studies:
        if module is None:
            results.append((name, "not found", 0.0))
            continue
        print(f"\n=== {name} (small) ===", flush=True)
        tic = time.perf_counter()
        try:
            with contextlib.redirect_stdout(StudySummaries(sys.stdout)):  # (one summary line: the command's)
                if callable(getattr(module, "verify", None)):
                    code = _exit_code(module.verify())
                else:
                    code = _call_main(module, ["--small"])
            status = "ok" if code == 0 else f"failed (exit code {code})"
        except (KeyboardInterrupt, BrokenPipeError):  # (Ctrl-C, or the output's reader gone: the command's to say)
            raise
        except Exception:
            traceback.print_exc()
            status = "failed (exception)"
        sys.stdout.flush()
        results.append((name, status, time.perf_counter() - tic))
    print("\nverification summary")
    for name, status, wall in results:
        print(f"  {name:24s} {status:24s} {wall:7.1f} s")
    ran = [r for r in results if r[1] != "not found"]
    passed = sum(r[1] == "ok" for r in ran)
    print(f"summary: studies={len(ran)} passed={passed} failed={len(ran) - passed} "
          f"not_found={len(results) - len(ran)} wall_s={sum(r[2] for r in results):.1f}")
    if not ran:
        print("no verification study found", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if passed == len(ran) else EXIT_FAILED


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = ArgumentParser(
        prog="skfiber",
        description="skfiber: skeletal muscle fibers as 1D cables on scikit-fem. "
        "Run demos, view their VTK output, run the verification studies and parameter studies.",
        epilog="Run 'skfiber COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"skfiber {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error (anywhere before a '--')")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="list the demos and the verification studies",
                   description="List the demos (for 'skfiber run') and the verification studies (for 'skfiber verify').")

    run = sub.add_parser(
        "run", help="run a demo",
        description="Run a demo by name (see 'skfiber list'). Options that 'skfiber run' does not know "
        "are passed on to the demo, e.g. 'skfiber run hanging-bundle --out res --t-end 0.2'; "
        "'skfiber run DEMO --help' shows the demo's own options.",
    )
    run.add_argument("demo", metavar="DEMO", help="demo name, e.g. hanging-bundle (dashes or underscores)")
    run.add_argument("--level", type=positive_int, metavar="N",
                     help=f"refinement level N ≥ 1, for the demos that have levels ({', '.join(demos_with_levels())}: "
                          "'skfiber run DEMO --help' says what it refines); the others refuse it")
    run.add_argument("--out", metavar="DIR",
                     help=f"output folder (made if missing) of the demos that write files "
                          f"({', '.join(demos_with_option('--out'))}): their VTK series (.pvd + .vtu), CSV and PNG "
                          "files and checkpoints; 'skfiber run DEMO --help' says what a demo writes (some of "
                          "the others take --plot FILE.png); the others refuse it")

    view = sub.add_parser(
        "view", help="show a .pvd series or .vtu file: window, screenshot or movie",
        description="Draw the fibers as tubes of their current radius, colored by a field, and the bodies as cylinders. "
        "Without --screenshot/--movie an interactive window opens (needs a display).",
    )
    view.add_argument("file", metavar="FILE",
                      help="a .pvd series (or .vtu file) written by skfiber, or a folder holding one .pvd series")
    view.add_argument("--screenshot", metavar="F.png", help="save a PNG of one time point (off screen)")
    view.add_argument("--movie", metavar="F.mp4|F.gif", help="save a movie of all time points (MP4 via imageio-ffmpeg, or GIF)")
    view.add_argument("--field", default="stress", metavar="NAME",
                      help="point field for the colors (default stress); see --info for the choices")
    view.add_argument("--time", type=finite_float, metavar="T",
                      help="time in s of the screenshot/window (nearest step; default: last)")
    view.add_argument("--view", default="front", choices=["front", "iso", "xy", "xz", "yz"],
                      help="camera direction (default front: the xz plane seen from slightly above)")
    view.add_argument("--fps", type=positive_float, default=None,
                      help="movie frames per second (default 15; a GIF's at most 50)")
    view.add_argument("--every", type=positive_int, default=None, metavar="K",
                      help="movie: use every K-th time point (default 1)")
    view.add_argument("--window-size", type=window_side, nargs=2, default=[960, 720], metavar=("W", "H"),
                      help="image size in pixels (default 960 720)")
    view.add_argument("--info", action="store_true", help="print the time points and the fields with units, and exit")

    verify = sub.add_parser(
        "verify", help="run the verification studies at small size and print their tables",
        description="Run every verification study (--list shows them: demos run with --small, "
        "and demos defining verify()) and print their tables and a summary. A study fails when it raises "
        "or returns a non-zero exit code; the studies judge their own numbers (rates, errors).",
    )
    study_command.add_parser(sub)
    verify.add_argument("--list", action="store_true", help="list the studies (those of --only) and exit")
    verify.add_argument("--only", nargs="+", metavar="NAME", help="run only these studies")
    return parser


@contextlib.contextmanager
def _warnings_in_one_line(who: str, *, enabled: bool):
    """While a command runs, a warning is shown as one line, ``<who>: warning: <message> (<category>)``,
    without Python's file, line number and source line (``--debug`` keeps Python's format)."""
    if not enabled:
        yield
        return
    shown = warnings.formatwarning

    def one_line(message, category, filename, lineno, line=None):
        return f"{who}: warning: {' '.join(str(message).split())} ({category.__name__})\n"

    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = shown


def _demo_help_forwarded(argv: list[str]) -> list[str]:
    """``run DEMO … --help`` asks for the demo's help (its options), not for that of ``skfiber run``: the
    help flag (``-h``, ``--help`` or an abbreviation such as ``--hel``) goes to the demo, behind a ``--``,
    wherever it stands after ``run`` once a demo is named (``run --level 2 DEMO --help`` too).  ``run
    --help`` with no demo named stays the command's own."""
    cut = argv.index("--") if "--" in argv else len(argv)
    if len(argv) < 2 or argv[0] != "run":
        return argv
    words, k = argv[1:cut], 0
    while k < len(words) and words[k].startswith("-"):  # skfiber run's own options before the demo's name
        k += 2 if words[k] in ("--level", "--out") else 1
    if k >= len(words):
        return argv  # no demo named
    is_help = [w == "-h" or (len(w) >= 4 and "--help".startswith(w)) for w in words]
    if not any(is_help):
        return argv
    rest = [w for w, h in zip(words, is_help) if not h]
    return argv[:1] + rest + ["--"] + argv[cut + 1:] + ["--help"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``skfiber`` command; returns the exit code (the console script calls it via ``skfiber.__main__``)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:cut]  # a skfiber option wherever it stands (a demo never sees it)
    argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    argv = _demo_help_forwarded(argv)
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if extra and args.command != "run":  # (the command's parser: its prog names it)
        parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "run" and "--" in extra:  # the separator of the demo's own options
        extra.remove("--")
    who = f"skfiber {args.command}" + (f" {args.demo}" if args.command == "run" else "")  # (names the demo)

    def command() -> int:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args, extra)
        if args.command == "view":
            return _cmd_view(args)
        if args.command == "study":  # (at Ctrl-C it writes its table, says how to resume and ends with its summary)
            return study_command.command(args)
        with _summary_if_interrupted():
            return _cmd_verify(args)

    return _reported(who, command, debug=debug, hint="skfiber --debug … shows the traceback")


def _reported(who: str, call, *, debug: bool, hint: str) -> int:
    """``call()``'s exit code, with the module's rules for what goes wrong (:func:`outcome`): bad input is one
    line ``<who>: error: …`` (exit code 2), Ctrl-C ``<who>: interrupted`` (130), any other exception one line
    ``<who>: failed: …`` (1); ``debug`` adds the traceback and keeps Python's format of warnings."""
    try:
        with _warnings_in_one_line(who, enabled=not debug), ctrl_c_not_lost():
            return call()
    except Exception as err:
        code = outcome(err)
        if code == EXIT_BROKEN_PIPE:  # the reader of the output stopped reading: nothing more to say, nowhere
            _silence_stdout()
            return code
        if code == EXIT_FAILED:
            return _failed(who, err, debug=debug, hint=hint)
        ours = isinstance(err, (UsageError, study_command.StudyUsageError))  # (the command's own words, as written)
        if debug and not ours:
            traceback.print_exc()
        if code == EXIT_INTERRUPTED:
            print(f"{who}: interrupted", file=sys.stderr)
        else:
            print(f"{who}: error: {err if ours else _one_line(err)}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(f"{who}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _failed(who: str, err: BaseException, *, debug: bool, hint: str) -> int:
    """Report the exception being handled, ``err``, as a failure: ``<who>: failed: …`` in one line (``debug``:
    after its traceback); returns :data:`EXIT_FAILED`."""
    if debug:
        traceback.print_exc()
    print(f"{who}: failed: {type(err).__name__}: {_one_line(err)}" + ("" if debug else f" ({hint})"),
          file=sys.stderr)
    return EXIT_FAILED


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``poll`` reports an error on its end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # (no file descriptor: a test's capture; no poll)
        return False


def _silence_stdout() -> None:
    """Point stdout at the null device, so that Python's flush at exit finds no closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # (a stdout without a file descriptor: a test's capture)
        pass


def run_script(main: Callable, argv: Sequence[str] | None = None) -> int:
    """Run a demo's ``main(argv)`` as a script, with the exit codes and one-line messages of ``skfiber run``.

    A demo ends with ``if __name__ == "__main__": run_script(main)``.  A Ctrl-C that leaves ``main`` (a demo
    that does not report what it reached itself) ends the output with :data:`INTERRUPTED_SUMMARY`, and an
    error that stops it as a failure (exit code 1) with :data:`FAILED_SUMMARY`, so that every demo's last
    line is a ``summary:`` line.  ``--debug`` (anywhere before a ``--``) is taken out of ``argv`` and shows
    the traceback of an error.  A demo that succeeds returns
    here (the script ends; sphinx-gallery, which runs the demos as ``__main__`` in its own process, goes
    on); any other outcome leaves by ``SystemExit`` with its exit code.  A ``main`` defined in code run
    without a file (sphinx-gallery, a notebook) is called plainly: its errors propagate, for the gallery
    to record or the notebook to show.

    Parameters
    ----------
    main : callable
        The demo's ``main(argv)``: it returns an exit code, None, or a result (or a list of them) whose
        ``interrupted`` is true after Ctrl-C.
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 (done).

    Raises
    ------
    SystemExit
        With 1 (failed), 2 (bad arguments or paths) or 130 (interrupted).

    Examples
    --------
    >>> def main(argv):
    ...     raise ValueError(f"--t-end must be > 0, got {argv[1]}")
    >>> run_script(main, ["--t-end", "-1"])  # doctest: +SKIP
    demo.py: error: --t-end must be > 0, got -1
    Traceback (most recent call last):
    SystemExit: 2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if "__file__" not in getattr(main, "__globals__", {"__file__": None}):
        # code run without a file: the documentation's gallery (sphinx-gallery never gives the demo a
        # __file__), which records an error itself, or a notebook, where the traceback is what helps
        return _exit_code(main(argv))
    cut = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:cut]
    argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    who = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "demo"

    code = _reported(who, lambda: _called(main, argv), debug=debug, hint="--debug shows the traceback")
    if code != EXIT_OK:
        raise SystemExit(code)
    return code

if __name__ == "__main__":
    sys.exit(main())
