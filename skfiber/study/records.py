"""A study's folder: its plan, the record of every finished run, and the tidy results table.

``plan.json`` holds what defines the study (the target, the parameters, the
design, n, the seed) and its rows; a study started again in the same folder
must have the same plan, and then skips the runs that succeeded (a failed run is run again).
``runs.jsonl`` gets one line per finished run (ok or failed), appended and
flushed as each result arrives, so a killed study loses at most the runs in
flight; a line cut by the kill is ignored.  :func:`write_table` writes the
tidy table — one row per run: ``run``, the parameters, the outputs,
``status``, ``error``, ``wall_s``, ``worker`` — as ``results.parquet`` when
pyarrow is there, else ``results.csv``.  Time series go to
``series/run_<k>.npz``.  While a study runs, its process holds the folder
(:meth:`StudyFolder.hold`, a lock on ``.study.lock`` there that the operating
system releases when the process ends, killed or not): a second process
that would run a study in the same folder at the same time is refused.

Examples
--------
>>> import tempfile
>>> folder = StudyFolder(tempfile.mkdtemp())
>>> folder.record({"run": 0, "params": {"a": 1.0}, "status": "ok", "error": "", "wall_s": 0.1,
...                "worker": "local", "outputs": {"y": 2.0}})
>>> sorted(folder.finished())
[0]
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from ..core.files import FolderHold, writable_folder

__all__ = ["StudyFolder", "PLAN", "RUNS", "TABLE_COLUMNS"]

PLAN = "plan.json"
RUNS = "runs.jsonl"
#: the table's own columns beside the parameters and the outputs: no parameter or output may take their names
TABLE_COLUMNS = ("run", "status", "error", "wall_s", "worker")


class StudyFolder:
    """The folder of one study (made if needed).

    Raises
    ------
    ValueError
        When the folder cannot be made or written (the path and the reason).
    """

    def __init__(self, path):
        try:
            self.path = writable_folder(path, what="the study folder")
        except OSError as err:
            raise ValueError(str(err)) from None
        self._written: str | None = None  # the plan's text as start() stored it (None: it stored none)

    @contextlib.contextmanager
    def hold(self):
        """This folder for this process alone while the ``with`` block runs.

        Two processes running a study in one folder would run the same rows twice and interleave their
        records; the second is refused instead.  The lock is the operating system's on the file
        ``.study.lock`` (:class:`skfiber.core.files.FolderHold`): it is released when the block ends, and when
        the process ends however it ends, so a killed study leaves no stale lock behind.  Within one process
        the hold is reentrant.

        Raises
        ------
        ValueError
            When another process holds the folder (its path, and what to do).

        Examples
        --------
        >>> import tempfile
        >>> folder = StudyFolder(tempfile.mkdtemp())
        >>> with folder.hold():
        ...     (folder.path / ".study.lock").exists()
        True
        """
        try:
            hold = FolderHold(self.path, "study", busy=f"{str(self.path)!r} is in use by another process running a "
                              "study there; wait for it to end (the same command then resumes the study, skipping "
                              "the runs that succeeded) or use another folder")
        except BlockingIOError as err:
            raise ValueError(str(err)) from None
        with hold:
            yield self

    # ------------------------------------------------------------------ plan
    def plan(self) -> dict | None:
        """The stored plan, or None for a new folder."""
        f = self.path / PLAN
        if not f.exists():
            return None
        try:
            return json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"{str(f)!r} is not a skfiber study plan ({err}); use another folder") from None

    def start(self, plan: dict) -> bool:
        """Store ``plan``, or check that it is the stored one (a resumed study); True when it was stored here
        (a new study), False for a resumed one.

        Raises
        ------
        ValueError
            When the folder holds another study (it names what differs).
        """
        stored = self.plan()
        if stored is None:
            if self.records():
                raise ValueError(f"{str(self.path)!r} holds runs of a study but no plan (removed by hand, or by a "
                                 "failed start of another process); use another folder")
            text = json.dumps(plan, indent=1)
            tmp = self.path / f"{PLAN}.{os.getpid()}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path / PLAN)
            self._written = text
            return True
        differ = [key for key in plan if stored.get(key) != json.loads(json.dumps(plan[key]))]
        if differ:
            shown = [f"{key} {_short(stored.get(key))} there, {_short(plan[key])} here" for key in differ
                     if key != "rows"]  # (the rows follow from the others)
            raise ValueError(f"{str(self.path)!r} holds another study (its {', '.join(differ)} differ: "
                             f"{'; '.join(shown) or 'the rows of its design'}); resume it with the same settings "
                             "or use another folder")
        return False

    def discard_plan(self) -> bool:
        """Remove the plan this folder object stored (:meth:`start`) of a study that recorded no run (one whose
        scheduler could not be reached, say), so that the folder takes another study; a folder that holds runs,
        or whose plan is no longer the one stored here, keeps its plan.  True when removed."""
        written = self._written
        if written is None or self.records():
            return False
        try:
            if (self.path / PLAN).read_text(encoding="utf-8") != written:
                return False
            (self.path / PLAN).unlink()
        except FileNotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ runs
    def records(self) -> list[dict]:
        """The recorded runs (the last record of a run wins; a line cut by a kill is skipped)."""
        f = self.path / RUNS
        if not f.exists():
            return []
        out: dict[int, dict] = {}
        with f.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "run" in rec:
                    out[int(rec["run"])] = rec
        return [out[k] for k in sorted(out)]

    def finished(self) -> set[int]:
        """The runs whose last record is a success (a failed run is run again when the study resumes)."""
        return {int(r["run"]) for r in self.records() if r.get("status") == "ok"}

    def record(self, rec: dict, series: dict | None = None) -> None:
        """Append one run's record (and write its time series), flushed to the operating system."""
        if series:
            folder = self.path / "series"
            folder.mkdir(exist_ok=True)
            np.savez(folder / f"run_{int(rec['run']):05d}.npz", **{k: np.asarray(v) for k, v in series.items()})
        runs = self.path / RUNS
        cut = False
        if runs.exists() and runs.stat().st_size > 0:
            with runs.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                cut = f.read(1) != b"\n"
        with runs.open("a", encoding="utf-8") as f:
            # a line cut by a kill stays a line of its own (skipped on reading), never glued to this one
            f.write(("\n" if cut else "") + json.dumps(rec, default=float) + "\n")
            f.flush()  # (in the kernel's hands: a killed study keeps it)

    # ------------------------------------------------------------------ table
    def table(self):
        """The tidy table of the recorded runs (a pandas DataFrame)."""
        import pandas as pd

        rows, params, outputs = [], {}, {}
        for rec in self.records():
            row = {"run": int(rec["run"])}
            row.update(rec.get("params", {}))
            row.update(rec.get("outputs", {}))
            row.update(status=rec.get("status"), error=rec.get("error", ""), wall_s=rec.get("wall_s"),
                       worker=rec.get("worker", ""))
            rows.append(row)
            params.update(dict.fromkeys(rec.get("params", {})))
            outputs.update(dict.fromkeys(rec.get("outputs", {})))
        # the columns in one order whichever run comes first (a failed run has no outputs)
        return pd.DataFrame(rows, columns=["run", *params, *outputs, "status", "error", "wall_s", "worker"])

    def write_table(self) -> Path:
        """Write the table as ``results.parquet`` (pyarrow) or ``results.csv``; returns its path."""
        table = self.table()
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            path = self.path / "results.csv"
            table.to_csv(path, index=False)
        else:
            path = self.path / "results.parquet"
            table.to_parquet(path, index=False)
        return path


def _short(value, limit: int = 80) -> str:
    """``value`` as JSON, cut to ``limit`` characters (a plan's entry in a message)."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"
