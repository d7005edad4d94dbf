"""Output for ParaView and checkpoints: VTK time series through meshio, npz states.

A run writes, in its output folder, for a series called NAME:

``NAME.pvd``
    ParaView's collection file (``VTKFile type="Collection"``): one
    ``<DataSet timestep= part= file=>`` per part and written step.  It is
    rewritten after every finished step, so a run killed at any moment leaves
    a valid series of the steps finished so far.
``NAME_fibers_NNNNNN.vtu``
    Part 0: all fibers of step NNNNNN as polylines (VTK line cells), sampled
    ``points_per_element`` times per Hermite element by Hermite interpolation.
``NAME_bodies.vtu`` or ``NAME_bodies_NNNNNN.vtu``
    Part 1 (only with bodies): rigid bodies as triangulated cylinders, with a
    line (a lever) from a body's axis to each fiber attachment on it, once
    when they do not move, per step when they do.
``NAME_checkpoint.npz``
    The full state of the last checkpoint (see :func:`save_checkpoint`).

Every file is written under a temporary name and renamed (atomic on POSIX
and Windows), so a reader never sees half a file.

Point data of the fibers part (SI units; :data:`FIBER_FIELDS`):

===================  =====  ==================================================
name                 unit   meaning
===================  =====  ==================================================
``radius``           m      current radius r = r0/√λ (incompressibility, eq. 21)
``stretch``          1      λ = ‖a1‖/‖A1‖
``stretch_rate``     1/s    λ̇
``stress``           Pa     physical 2nd Piola–Kirchhoff stress S
``force``            N      axial force N = π r0² λ S at the sample
``force_recovered``  N      axial force recovered by L2 projection
                            (:func:`~skfiber.postprocess.recovered_axial_force`;
                            smooth where ``force`` wiggles on coarse meshes)
``activation``       1      α(t) of the fiber
``muscle_fraction``  1      γM(θ) (1 muscle, 0 tendon)
``displacement``     m      u = x − X (3 components)
``velocity``         m/s    ẋ (3 components)
``theta``            1      fiber parameter θ ∈ [0, 1]
``fiber_id``         1      index of the fiber in the model (also cell data)
===================  =====  ==================================================

Models with cylinder contacts (:class:`skfiber.contact.cylinder.CylinderContact`,
bones included) add :data:`CONTACT_FIELDS`: ``contact_force`` (N/m, 3
components), the penalty line force of the cylinders on the fiber per current
length (:meth:`~skfiber.contact.cylinder.CylinderContact.line_force`; fiber–fiber
contact is not included).  Other quantities can be added through ``extra_fields``.

Bodies part: point and cell data ``body_id``.

Examples
--------
>>> import tempfile, skfiber as sf
>>> from skfiber.io import VTKSeries
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
>>> model = sf.Model([fiber])
>>> with tempfile.TemporaryDirectory() as tmp:
...     series = VTKSeries(tmp, model, name="demo")
...     files = series.write(model.initial_state(), step=0)
...     series.times
[0.0]
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
import xml.etree.ElementTree as ET
import zipfile
import zlib
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Callable, Mapping, Sequence

import meshio
import numpy as np

from .contact.cylinder import CylinderContact
from .core import State
from .core.files import FolderHold, writable_folder
from .core.numbers import is_real
from .core.warn import warn
from .materials import MaterialPoint
from .model import Model
from .postprocess import fiber_fields, recovered_axial_force
from .rigid.bodies import Cylinder  # re-exported: skfiber.io.Cylinder

__all__ = [
    "FIBER_FIELDS",
    "CONTACT_FIELDS",
    "ALL_FIBER_FIELDS",
    "BODY_FIELDS",
    "Cylinder",
    "PvdEntry",
    "VTKSeries",
    "Checkpoint",
    "fiber_mesh",
    "cylinder_mesh",
    "write_vtu",
    "units_label",
    "write_pvd",
    "read_pvd",
    "pvd_series_id",
    "check_series",
    "read_vtu",
    "save_checkpoint",
    "load_checkpoint",
    "model_fingerprint",
    "FINGERPRINT_TIMES",
    "hold_run",
    "check_run_name",
]

#: Point data of the fibers part: name → (SI unit, meaning).
FIBER_FIELDS: dict[str, tuple[str, str]] = {
    "radius": ("m", "current radius r = r0/√λ"),
    "stretch": ("1", "stretch λ = |a1|/|A1|"),
    "stretch_rate": ("1/s", "stretch rate λ̇"),
    "stress": ("Pa", "physical 2nd Piola–Kirchhoff stress S"),
    "force": ("N", "axial force N = π r0² λ S"),
    "force_recovered": ("N", "axial force recovered by L2 projection onto the derivatives of the test functions"),
    "activation": ("1", "activation α(t)"),
    "muscle_fraction": ("1", "muscle fraction γM(θ)"),
    "displacement": ("m", "displacement u = x − X"),
    "velocity": ("m/s", "velocity ẋ"),
    "theta": ("1", "fiber parameter θ"),
    "fiber_id": ("1", "fiber index"),
}

#: Point data of the fibers part of models with cylinder contacts.
CONTACT_FIELDS: dict[str, tuple[str, str]] = {
    "contact_force": ("N/m", "line force of the cylinders (bones) on the fiber per current length"),
}

#: Every built-in point field of the fibers part, with its (unit, meaning).
ALL_FIBER_FIELDS: dict[str, tuple[str, str]] = {**FIBER_FIELDS, **CONTACT_FIELDS}

#: Point data of the bodies part.
BODY_FIELDS: dict[str, tuple[str, str]] = {
    "body_id": ("1", "body index"),
}

FIBERS_PART, BODIES_PART = 0, 1

#: the SI unit of every built-in point array (written into each VTU, :func:`write_vtu`)
_UNITS = {name: unit for name, (unit, _) in {**ALL_FIBER_FIELDS, **BODY_FIELDS}.items()}

ExtraFields = Callable[[Model, State, int, np.ndarray], dict]


# --------------------------------------------------------------------------- meshes
def fiber_mesh(
    model: Model,
    state: State,
    *,
    points_per_element: int = 4,
    extra_fields: ExtraFields | None = None,
) -> meshio.Mesh:
    """All fibers of a state as one polyline mesh with the point data of :data:`FIBER_FIELDS`
    (and :data:`CONTACT_FIELDS` when the model has cylinder contacts).

    Parameters
    ----------
    points_per_element
        Samples per Hermite element (≥ 1); the polyline of a fiber with n
        elements has n · points_per_element + 1 points.
    extra_fields
        Optional ``extra_fields(model, state, k, theta) -> {name: array}``
        adding point data of fiber k at the samples θ (arrays of shape (n,) or
        (n, 3)); the hook for quantities the core does not know, such as the
        contact line force.
    """
    if isinstance(points_per_element, bool) or not isinstance(points_per_element, (int, np.integer)) or points_per_element < 1:
        raise ValueError(f"points_per_element must be an integer ≥ 1, got {points_per_element!r}")
    d = model.discretization
    cylinders = [c for c in model.contacts if isinstance(c, CylinderContact)]
    builtin = ALL_FIBER_FIELDS if cylinders else FIBER_FIELDS
    points, lines, data = [], [], {name: [] for name in builtin}
    extra: dict[str, list] = {}
    offset = 0
    for k, fiber in enumerate(d.fibers):
        f = fiber_fields(model, state, k, points_per_element=points_per_element)
        n = f.theta.size
        points.append(f.position.T)
        lines.append(offset + np.column_stack([np.arange(n - 1), np.arange(1, n)]))
        offset += n
        values = {
            "radius": f.radius,
            "stretch": f.stretch,
            "stretch_rate": f.stretch_rate,
            "stress": f.stress,
            "force": f.force,
            "force_recovered": recovered_axial_force(model, state, k, theta=f.theta),
            "activation": np.full(n, f.activation),
            "muscle_fraction": f.muscle_fraction,
            "displacement": d.evaluate(state.u, k, f.theta).T,
            "velocity": d.evaluate(state.v, k, f.theta).T,
            "theta": f.theta,
            "fiber_id": np.full(n, k, dtype=np.int32),
        }
        if cylinders:
            position = np.ascontiguousarray(f.position.T)
            values["contact_force"] = sum((c.line_force(position, f.radius, t=state.t, q=state.q)
                                           for c in cylinders if c.acts_on(model, k)), np.zeros((n, 3)))
        for name, value in values.items():
            data[name].append(value)
        if extra_fields is not None:
            more = extra_fields(model, state, k, f.theta)
            if not isinstance(more, dict):
                raise TypeError(f"extra_fields must return a dict of arrays (field name → values at the fiber's "
                                f"points), got {type(more).__name__}")
            for name, value in more.items():
                if name in builtin:
                    raise ValueError(f"extra field {name!r} clashes with a built-in field; pick another name")
                value = np.asarray(value, dtype=float)
                if value.shape[:1] != (n,):
                    raise ValueError(f"extra field {name!r} of fiber {k} has shape {value.shape}; expected ({n},) or ({n}, 3)")
                extra.setdefault(name, []).append(value)
    cells = np.vstack(lines)
    point_data = {name: np.concatenate(v) for name, v in {**data, **extra}.items()}
    cell_fiber = point_data["fiber_id"][cells[:, 0]]
    return meshio.Mesh(np.vstack(points), [("line", cells)], point_data=point_data, cell_data={"fiber_id": [cell_fiber]})


def cylinder_mesh(cylinders: Sequence, *, resolution: int = 32) -> meshio.Mesh:
    """Closed triangulated cylinders (outward normals) with point/cell data ``body_id``, and a lever (a line
    cell) from each cylinder's axis to each of its ``attachment_points``.

    ``cylinders`` holds :class:`Cylinder` objects or tuples (start, axis, radius).  A lever starts at the point
    of the axis segment closest to the attachment point: it shows where a fiber attached away from the bone's
    axis is held (the upper limb's fibers end up to 18 cm from their bones' axes).

    Examples
    --------
    >>> mesh = cylinder_mesh([Cylinder((0, 0, 0), (0, 0, -0.5), 0.03, attachment_points=[(0.125, 0, -0.25)])],
    ...                      resolution=8)
    >>> mesh.cells_dict["triangle"].shape, mesh.points[mesh.cells_dict["line"][0]].tolist()
    ((32, 3), [[0.0, 0.0, -0.25], [0.125, 0.0, -0.25]])
    """
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 3:
        raise ValueError(f"resolution must be an integer ≥ 3, got {resolution!r}")
    cyls = [Cylinder.from_any(c) for c in cylinders]
    if not cyls:
        raise ValueError("no cylinders given")
    n = int(resolution)
    phi = 2 * np.pi * np.arange(n) / n
    i = np.arange(n)
    j = (i + 1) % n
    # local triangles: bottom ring 0..n-1, top ring n..2n-1, centers 2n (bottom), 2n+1 (top)
    local = np.vstack([
        np.column_stack([i, j, n + i]),
        np.column_stack([j, n + j, n + i]),
        np.column_stack([np.full(n, 2 * n), j, i]),
        np.column_stack([np.full(n, 2 * n + 1), n + i, n + j]),
    ])
    points, tris, ids = [], [], []
    for b, c in enumerate(cyls):
        a = c.axis / np.linalg.norm(c.axis)
        helper = np.eye(3)[np.argmin(np.abs(a))]
        e1 = np.cross(a, helper)
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(a, e1)
        ring = c.start + c.radius * (np.outer(np.cos(phi), e1) + np.outer(np.sin(phi), e2))
        points.append(np.vstack([ring, ring + c.axis, c.start, c.start + c.axis]))
        tris.append(local + b * (2 * n + 2))
        ids.append(np.full(2 * n + 2, b, dtype=np.int32))
    cells = [("triangle", np.vstack(tris))]
    lever_ends, lever_ids = [], []
    for b, c in enumerate(cyls):
        p = c.attachment_points
        s = np.clip((p - c.start) @ c.axis / np.dot(c.axis, c.axis), 0.0, 1.0)  # the closest point of the axis
        lever_ends.append(np.stack([c.start + np.outer(s, c.axis), p], axis=1).reshape(-1, 3))
        lever_ids.append(np.full(2 * len(p), b, dtype=np.int32))
    n_surface = sum(len(x) for x in points)
    n_levers = sum(len(x) for x in lever_ends) // 2
    if n_levers:
        points += lever_ends
        ids += lever_ids
        cells.append(("line", n_surface + np.arange(2 * n_levers).reshape(-1, 2)))
    body_id = np.concatenate(ids)
    return meshio.Mesh(
        np.vstack(points), cells,
        point_data={"body_id": body_id}, cell_data={"body_id": [body_id[c[:, 0]] for _, c in cells]},
    )


# --------------------------------------------------------------------------- atomic files
def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Write through ``write(tmp)`` to a temporary file next to ``path``, then rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def units_label(name: str, unit: str | tuple[str, str]) -> str:
    """The field-data label that states the unit (and meaning) of the point array ``name`` in a VTU file
    (:func:`write_vtu`); :func:`skfiber.viz.written_labels` reads it back.

    Examples
    --------
    >>> units_label("tension", ("N", "the cable's axial force"))
    "units: tension [N] the cable's axial force"
    >>> units_label("tension", "mm[2]")
    Traceback (most recent call last):
    ...
    ValueError: the unit of 'tension' must be printable ASCII without brackets, got 'mm[2]'
    """
    if not (isinstance(unit, str) or (isinstance(unit, tuple) and len(unit) == 2)):
        raise ValueError(f"the unit of {name!r} must be a unit or a (unit, meaning) pair, got {unit!r}")
    unit, meaning = (unit, "") if isinstance(unit, str) else unit
    if not (isinstance(name, str) and name.strip() and name.isascii() and name.isprintable() and " [" not in name):
        raise ValueError(f"an array name with a unit must be printable ASCII without ' [' (it is written as an XML "
                         f"array name beside its unit), got {name!r}")
    if not (isinstance(unit, str) and unit.strip() and unit.isascii() and unit.isprintable()
            and not set(unit) & set("[]")):
        raise ValueError(f"the unit of {name!r} must be printable ASCII without brackets, got {unit!r}")
    if not (isinstance(meaning, str) and meaning.isascii() and meaning.isprintable()):
        raise ValueError(f"the meaning of {name!r} must be one line of printable ASCII, got {meaning!r}")
    return f"units: {name} [{unit}]" + (f" {meaning.strip()}" if meaning.strip() else "")


def atomic_temporaries(path: str | os.PathLike) -> list[Path]:
    """The temporary files of writes of ``path`` that were killed before their rename (any process)."""
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.stem)}\.tmp\d+{re.escape(path.suffix)}")
    if not path.parent.is_dir():
        return []
    return [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]


def write_vtu(path: str | os.PathLike, mesh: meshio.Mesh, *, compression: str | None = "zlib",
              units: Mapping[str, str | tuple[str, str]] | None = None) -> None:
    """Write a mesh as VTU (binary, compressed), atomically.

    ``units`` (array name → unit, or → (unit, meaning)): each point array of the mesh with a unit gets a
    field-data array named ``"units: <name> [<unit>]"``, or ``"units: <name> [<unit>] <meaning>"`` (one 0),
    so that the file says its units, and what an array holds, where ParaView lists its arrays
    (*Information* panel) and where meshio reads them (``mesh.field_data``).  (VTK's string arrays would be
    the natural carrier, but meshio cannot read them; meshio writes no field data, so the arrays are added
    to its XML.)

    Examples
    --------
    >>> import os, tempfile, meshio
    >>> from skfiber.io import read_vtu, write_vtu
    >>> mesh = meshio.Mesh([[0, 0, 0], [0.5, 0, 0], [1, 0, 0]], [("line", [[0, 1], [1, 2]])],
    ...                    point_data={"stretch": [1.0, 1.1, 1.2]})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_vtu(os.path.join(folder, "line.vtu"), mesh, units={"stretch": "1"})
    ...     list(read_vtu(os.path.join(folder, "line.vtu")).field_data)
    ['units: stretch [1]']
    """
    labels = [units_label(name, units[name]) for name in mesh.point_data if units and name in units]

    def write(tmp: Path) -> None:
        meshio.write(tmp, mesh, file_format="vtu", binary=True, compression=compression)
        if labels:
            _add_field_data(tmp, labels)

    _atomic(Path(path), write)


def _add_field_data(path: Path, names: list[str]) -> None:
    """Insert a ``<FieldData>`` block of one-value Int8 arrays with these names into a VTU file written by
    meshio (before its ``<Piece>``)."""
    arrays = "".join(f'<DataArray type="Int8" Name="{escape(name, quote=True)}" NumberOfTuples="1" '
                     f'format="ascii">0</DataArray>\n' for name in names)
    text = path.read_bytes()
    at = text.index(b"<Piece ")
    path.write_bytes(text[:at] + f"<FieldData>\n{arrays}</FieldData>\n".encode() + text[at:])


@dataclass(frozen=True)
class PvdEntry:
    """One ``<DataSet>`` of a .pvd collection (file relative to the .pvd)."""

    time: float
    part: int
    file: str
    name: str = ""


#: the comment of a .pvd that names the series it belongs to (:attr:`VTKSeries.series_id`)
SERIES_COMMENT = "skfiber series "
#: what a series id may hold
SERIES_ID = re.compile(r"[0-9A-Za-z_-]+")


def write_pvd(path: str | os.PathLike, entries: Sequence[PvdEntry], *, series_id: str | None = None) -> None:
    """Write a ParaView collection file, atomically; times are written exactly (repr).

    ``series_id``: a name of the run that writes the series, kept as an XML comment (ParaView reads past it;
    :func:`pvd_series_id` reads it back), so that a resumed run can tell its own series from another's.
    """
    lines = [
        '<?xml version="1.0"?>',
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
    ]
    if series_id is not None:
        if not (isinstance(series_id, str) and SERIES_ID.fullmatch(series_id)):
            raise ValueError(f"series_id must be letters, digits, _ and -, got {series_id!r}")
        lines.append(f"  <!-- {SERIES_COMMENT}{series_id} -->")
    lines.append("  <Collection>")
    for e in entries:
        name = f' name="{e.name}"' if e.name else ""
        lines.append(f'    <DataSet timestep="{float(e.time)!r}" group="" part="{e.part}" file="{e.file}"{name}/>')
    lines += ["  </Collection>", "</VTKFile>", ""]
    text = "\n".join(lines)
    _atomic(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_pvd(path: str | os.PathLike) -> list[PvdEntry]:
    """The entries of a .pvd file; clear errors for a missing or malformed file.

    Examples
    --------
    >>> import os, tempfile
    >>> from skfiber.io import PvdEntry, read_pvd, write_pvd
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_pvd(os.path.join(folder, "demo.pvd"), [PvdEntry(0.0, 0, "demo_fibers_000000.vtu"),
    ...                                                  PvdEntry(0.01, 0, "demo_fibers_000001.vtu")])
    ...     [(e.time, e.part, e.file) for e in read_pvd(os.path.join(folder, "demo.pvd"))]
    [(0.0, 0, 'demo_fibers_000000.vtu'), (0.01, 0, 'demo_fibers_000001.vtu')]
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such .pvd file: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ValueError(f"{path} is not valid XML ({err}); is it a ParaView .pvd collection?") from err
    collection = root.find("Collection")
    if root.tag != "VTKFile" or root.get("type") != "Collection" or collection is None:
        raise ValueError(f"{path} is not a ParaView collection (expected <VTKFile type=\"Collection\"><Collection>…)")
    out = []
    for ds in collection.findall("DataSet"):
        if "file" not in ds.attrib:
            raise ValueError(f"{path}: a <DataSet> has no file attribute")
        out.append(PvdEntry(float(ds.get("timestep", 0.0)), int(ds.get("part", 0)), ds.get("file"), ds.get("name", "")))
    return out


def pvd_series_id(path: str | os.PathLike) -> str | None:
    """The series id that :func:`write_pvd` kept in the .pvd at ``path``; None for a .pvd without one (written
    by another program, or by an skfiber before series had ids) or with one that is not an id (edited by
    hand).  Errors as :func:`read_pvd`'s."""
    read_pvd(path)  # (a clear error for a missing or malformed file)
    root = ET.parse(path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    for node in root:
        text = (node.text or "").strip() if node.tag is ET.Comment else ""
        if text.startswith(SERIES_COMMENT):
            found = text[len(SERIES_COMMENT):].strip()
            return found if SERIES_ID.fullmatch(found) else None
    return None


def check_series(directory: str | os.PathLike, name: str, series_id: str | None) -> None:
    """A ``ValueError`` when the .pvd of the series ``name`` in ``directory`` names a series other than
    ``series_id`` (another run has written its series there since the checkpoint that keeps ``series_id``);
    nothing when it names that one, names none, or is missing, or when ``series_id`` is None or "" (a
    checkpoint of a version before series ids)."""
    pvd = Path(directory) / f"{name}.pvd"
    if not series_id or not pvd.is_file():
        return
    found = pvd_series_id(pvd)
    if found is not None and found != series_id:
        raise ValueError(f"{pvd} is not the series of the run to resume: another run has written its series there "
                         "since (another level or other options?), and continuing would join the two. Start the run "
                         "afresh, or resume it into a folder of its own")


def read_vtu(path: str | os.PathLike) -> meshio.Mesh:
    """A .vtu file (a step of a series) as a ``meshio.Mesh``; a clear error for a missing or damaged one
    (meshio itself prints and exits the process for a file it cannot read).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        If the file is empty, cut short or not a VTU file, naming it.

    Examples
    --------
    >>> import os, tempfile, meshio
    >>> from skfiber.io import read_vtu, write_vtu
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_vtu(os.path.join(folder, "line.vtu"), meshio.Mesh([[0, 0, 0], [1, 0, 0]], [("line", [[0, 1]])],
    ...                                                             point_data={"radius": [0.01, 0.02]}))
    ...     mesh = read_vtu(os.path.join(folder, "line.vtu"))
    >>> mesh.points.shape, mesh.cells[0].type, mesh.point_data["radius"].tolist()
    ((2, 3), 'line', [0.01, 0.02])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such .vtu file: {path} (a step of the series deleted or moved?)")
    try:
        return meshio.vtu.read(str(path))
    except Exception as err:  # (meshio's ReadError, or the XML, base64 or zlib error of a file cut short)
        why = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise ValueError(f"{path} cannot be read as a VTU file ({why}): the file is empty or damaged (a copy "
                         "cut short?)") from err


# --------------------------------------------------------------------------- series
def check_run_name(name) -> str:
    """``name`` if it can name a run's files (a series, a checkpoint): a plain file name of letters, digits,
    ``_``, ``.`` and ``-``; a ``ValueError`` naming it otherwise.

    Examples
    --------
    >>> check_run_name("upper_limb")
    'upper_limb'
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"series name {name!r} must be a plain file name (letters, digits, _ . -)")
    return name


def hold_run(folder: str | os.PathLike, name: str) -> FolderHold:
    """The run ``name`` in ``folder`` (its series and checkpoint) held by this process until the hold is released
    or collected: another process that would write a run of the same name there is refused, where it would
    overwrite and interleave the files (:class:`skfiber.core.files.FolderHold`).

    Raises
    ------
    BlockingIOError
        When another process holds it: the folder, the name, and what to do.

    Examples
    --------
    >>> import tempfile
    >>> with hold_run(tempfile.mkdtemp(), "sag") as hold:
    ...     type(hold).__name__
    'FolderHold'
    """
    return FolderHold(folder, name, busy=f"the folder {folder}: another process is writing the run {name!r} there "
                      "(its series and checkpoint); wait for it to end, or give this run another folder")


class VTKSeries:
    """A VTK time series of a model in a folder: .vtu per step and part, plus the .pvd.

    While the series is open (until :meth:`close`, or until it is collected) its process holds it
    (:func:`hold_run`): a series of the same name that another process would write in the same folder is
    refused with a ``BlockingIOError``.

    Parameters
    ----------
    directory
        Output folder (created if missing).
    model
        The model whose states are written.
    name
        Series name: file prefix of the .pvd and .vtu files.
    points_per_element
        Polyline samples per Hermite element.
    bodies
        Optional rigid bodies drawn as cylinders: a sequence of
        :class:`Cylinder` or (start, axis, radius) tuples (fixed bodies,
        written once), or a callable ``bodies(state) -> sequence`` for bodies
        that move (written every step at their current pose).
    extra_fields
        Extra fiber point data, see :func:`fiber_mesh`.
    extra_units
        The units of ``extra_fields``' arrays, {name: unit} or {name: (unit, meaning)}, e.g.
        ``{"fiber_contact_force": ("N/m", "line force of the other fibers")}``, written into each file beside
        those of the built-in fields (ParaView's *Information* panel and ``skfiber view --info`` show them;
        printable ASCII, the unit without brackets); an array without one is shown with ``[?]``.  A name
        that the first step's ``extra_fields`` does not return is warned about (a typo?); give the units of
        arrays that appear only later when they appear.
    resume_time
        None: start a new series (old files of this series are removed).
        A time t: continue the series in the folder, keeping its steps up to t (later ones are removed from
        the .pvd and the folder).
    series_id
        With ``resume_time``: the :attr:`series_id` of the series to continue (a checkpoint keeps it); a .pvd in
        the folder that names another series (written there by another run since) is refused with a
        ``ValueError`` before anything is changed.  None: whatever series is there is continued.

    Attributes
    ----------
    series_id : str
        A name of this series, new for every series started (kept in the .pvd, :func:`pvd_series_id`).
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        model: Model,
        *,
        name: str = "result",
        points_per_element: int = 4,
        bodies: Sequence | Callable[[State], Sequence] | None = None,
        extra_fields: ExtraFields | None = None,
        extra_units: Mapping[str, str | tuple[str, str]] | None = None,
        resume_time: float | None = None,
        series_id: str | None = None,
        compression: str | None = "zlib",
    ):
        check_run_name(name)
        if isinstance(points_per_element, bool) or not isinstance(points_per_element, (int, np.integer)) or points_per_element < 1:
            raise ValueError(f"points_per_element must be an integer ≥ 1, got {points_per_element!r}")
        self.directory = writable_folder(directory, what="the series' folder")
        if (self.directory / f"{name}.pvd").is_dir():
            raise IsADirectoryError(f"{self.directory / f'{name}.pvd'} is a folder, where the series writes its .pvd "
                                    "file: rename or remove that folder, or give the series another name or folder")
        self.model = model
        self.name = name
        self.points_per_element = int(points_per_element)
        self.extra_fields = extra_fields
        self._units = dict(_UNITS)
        if extra_units and extra_fields is None:
            raise ValueError(f"extra_units ({', '.join(map(repr, extra_units))}) gives the units of extra_fields' "
                             "arrays; give extra_fields too, or leave extra_units out")
        for field, unit in (extra_units or {}).items():
            try:
                units_label(field, unit)
            except ValueError as err:
                raise ValueError(f"extra_units maps array names to units or to (unit, meaning) pairs, in printable "
                                 f"ASCII (e.g. {{'fiber_contact_force': ('N/m', 'line force of the other fibers')}}): "
                                 f"{err}") from None
            if field in _UNITS:
                raise ValueError(f"extra_units: {field!r} is a built-in field, whose unit is {_UNITS[field]!r}")
            self._units[field] = unit
        self._unmatched_units = set(extra_units or ())  # (warned about once)
        self.compression = compression
        if bodies is not None and not callable(bodies) and len(bodies) == 0:
            bodies = None  # (no bodies: no part for them)
        self._moving_bodies = callable(bodies)
        self._bodies = bodies
        self._static_bodies_file: str | None = None
        self.entries: list[PvdEntry] = []
        self.bytes_written = 0
        self.files_written = 0
        if resume_time is None:
            self.series_id = secrets.token_hex(8)
        else:
            if series_id is not None and not (isinstance(series_id, str) and SERIES_ID.fullmatch(series_id)):
                raise ValueError(f"series_id must be letters, digits, _ and -, got {series_id!r}")
            check_series(self.directory, name, series_id)
            found = pvd_series_id(self.pvd_path) if self.pvd_path.is_file() else None
            self.series_id = series_id or found or secrets.token_hex(8)
        self._hold = hold_run(self.directory, name)  # (checked, and before any file of the series is touched)
        self._closed = False
        try:
            self._start(resume_time, bodies)
        except BaseException:
            self.close()
            raise

    def _start(self, resume_time, bodies) -> None:
        """The folder made ready for the series: stale temporaries and an old series removed, or the resumed
        series' later steps forgotten; fixed bodies written."""
        name = self.name
        self._remove_stale_temporaries()
        if resume_time is None:
            self._remove_old_files()
        elif self.pvd_path.exists():
            self.entries = read_pvd(self.pvd_path)
            self._forget(lambda e: e.time > resume_time)  # (the steps after it: the run writes them again)
        elif any(self.directory.glob(f"{name}_fibers_*.vtu")):
            warn(f"{self.pvd_path} is missing: the resumed series lists only the steps after t = {resume_time:g} s "
                 "(the earlier steps' .vtu files stay in the folder, unlisted)")
        if bodies is not None and not self._moving_bodies:
            self._static_bodies_file = f"{name}_bodies.vtu"
            self._write_mesh(self._static_bodies_file, cylinder_mesh(bodies))

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the series {self.name!r} in {self.directory} was closed; continue it with a new "
                             "VTKSeries(..., resume_time=t)")

    def close(self) -> None:
        """Let another process write a series of this name in this folder (the files stay; once closed, the
        series is not written again)."""
        self._closed = True
        self._hold.release()

    def drop_time(self, t: float) -> None:
        """Remove the step at time ``t`` from the series: its entries, the .pvd (rewritten) and its files."""
        self._check_open()
        self._forget(lambda e: e.time == t)

    def _forget(self, dropped: Callable[[PvdEntry], bool]) -> None:
        """Drop the entries for which ``dropped`` holds: the .pvd rewritten first, then their files that no
        kept entry lists (a series' own files only)."""
        gone = [e for e in self.entries if dropped(e)]
        if not gone:
            return
        self.entries = [e for e in self.entries if not dropped(e)]
        write_pvd(self.pvd_path, self.entries, series_id=self.series_id)
        self._remove_unlisted(e.file for e in gone)

    def _remove_unlisted(self, files) -> None:
        """Remove those of ``files`` that are the series' own and that no entry lists any more."""
        kept = {e.file for e in self.entries}
        ours = re.compile(rf"{re.escape(self.name)}_(fibers|bodies)(_\d+)?\.vtu")
        for file in set(files) - kept:
            if ours.fullmatch(file):
                (self.directory / file).unlink(missing_ok=True)

    @property
    def pvd_path(self) -> Path:
        return self.directory / f"{self.name}.pvd"

    @property
    def times(self) -> list[float]:
        """Times written so far (one per step)."""
        return sorted({e.time for e in self.entries})

    def _remove_old_files(self) -> None:
        pattern = re.compile(rf"{re.escape(self.name)}_(fibers|bodies)(_\d+)?\.vtu")
        for p in self.directory.iterdir():
            if pattern.fullmatch(p.name) or p.name == self.pvd_path.name:
                p.unlink()

    def _remove_stale_temporaries(self) -> None:
        """Temporary files of a run of this series that was killed while writing."""
        pattern = re.compile(rf"\.{re.escape(self.name)}(_.*)?\.tmp\d+\.(vtu|pvd|npz)")
        for p in self.directory.iterdir():
            if pattern.fullmatch(p.name):
                p.unlink()

    def _write_mesh(self, file: str, mesh: meshio.Mesh) -> None:
        path = self.directory / file
        write_vtu(path, mesh, compression=self.compression, units=self._units)
        self.bytes_written += path.stat().st_size
        self.files_written += 1

    def write(self, state: State, step: int, *, time: float | None = None) -> list[Path]:
        """Write one step (all parts) and rewrite the .pvd; returns the files written.

        ``time``: the time the .pvd lists for the step (default ``state.t``), e.g. a test's own clock that
        starts at 0 where the run's does not, or ``state.t`` rounded to the output grid.  A step listed at the
        same time before is replaced (its files removed).  ``resume_time``, :meth:`drop_time` and
        :attr:`times` speak of the listed times.
        """
        self._check_open()
        step = int(step)
        if time is not None and not is_real(time):
            raise ValueError(f"time must be a finite number (s), got {time!r}")
        t = float(state.t if time is None else time)
        files = [(FIBERS_PART, f"{self.name}_fibers_{step:06d}.vtu", "fibers")]
        mesh = fiber_mesh(self.model, state, points_per_element=self.points_per_element, extra_fields=self.extra_fields)
        if self._unmatched_units:
            unmatched, self._unmatched_units = sorted(self._unmatched_units - set(mesh.point_data)), set()
            if unmatched:
                warn(f"extra_units names {', '.join(map(repr, unmatched))}, which extra_fields does not return "
                     f"(it returns {', '.join(sorted(set(mesh.point_data) - set(_UNITS)) or ['nothing'])}): a typo?")
        self._write_mesh(files[0][1], mesh)
        if self._moving_bodies:
            files.append((BODIES_PART, f"{self.name}_bodies_{step:06d}.vtu", "bodies"))
            self._write_mesh(files[-1][1], cylinder_mesh(self._bodies(state)))
        elif self._static_bodies_file is not None:
            files.append((BODIES_PART, self._static_bodies_file, "bodies"))
        replaced = [e.file for e in self.entries if e.time == t]  # (another step listed at this time)
        entries = ([e for e in self.entries if e.time != t]
                   + [PvdEntry(t, part, file, name) for part, file, name in files])
        write_pvd(self.pvd_path, entries, series_id=self.series_id)
        self.entries = entries  # only once the .pvd lists them (a Ctrl-C in write_pvd leaves both as they were)
        self._remove_unlisted(replaced)
        return [self.directory / f for _, f, _ in files]


# --------------------------------------------------------------------------- checkpoints
CHECKPOINT_VERSION = 2  # 2: the fingerprint covers laws, loads and activations


@dataclass
class Checkpoint:
    """Everything needed to continue a run exactly.

    Attributes
    ----------
    state : the state after ``step`` steps
    step : number of steps done since ``t_start``
    dt : step size of the run (s)
    t_start : start time of the run (s); step n ends at t_start + n dt
    fingerprint : :func:`model_fingerprint` of the model that wrote it
    stats : running totals (``newton_iterations``, ``retries``, ``wall_time``) and numbers of the run
        (``t_end``, its end time, as :func:`skfiber.run.run_simulation` writes it)
    options : the run's options that a resume must repeat (names → str, int, float, bool,
        or lists and dicts of them; stored as JSON), e.g. a demo's level and geometry
    extra : arrays of the run's own history up to ``step`` (names → arrays), e.g. a time
        series recorded by a callback that a resumed run continues
    control : the step control of an error-controlled run (names → arrays,
        :meth:`skfiber.core.AdaptiveCursor.arrays`; empty for fixed steps); ``step``
        then counts output times and ``dt`` is their interval
    series : the :attr:`VTKSeries.series_id` of the run's output series ("" without one)
    """

    state: State
    step: int
    dt: float
    t_start: float
    fingerprint: str
    stats: dict = dataclasses.field(default_factory=dict)
    options: dict = dataclasses.field(default_factory=dict)
    extra: dict = dataclasses.field(default_factory=dict)
    control: dict = dataclasses.field(default_factory=dict)
    series: str = ""


#: times at which model_fingerprint samples the time-dependent data (loads, prescribed ends, activations)
FINGERPRINT_TIMES = (0.0, 0.0625, 0.25, 1.0)


def model_fingerprint(model: Model) -> str:
    """A hash of what a run's states depend on: geometry, DOF numbering, constraints, materials, loads.

    It covers the reference geometry, the elements per fiber, the fixed and
    prescribed DOFs, each fiber's radius, density and muscle fraction at the
    quadrature points, its stress law (the law's stress and derivatives at a
    fixed set of material points, so any kind of law counts by what it
    computes), the activations, the external load vector and the prescribed
    displacements at :data:`FINGERPRINT_TIMES`, the names of the residual
    terms and the contacts (their ``repr``).  Resuming with another law, other
    loads or other boundary conditions is refused.
    """
    d = model.discretization
    h = hashlib.sha256()

    def add(array) -> None:
        h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())

    add(d.reference_dofs)
    h.update(np.ascontiguousarray(np.sort(model.constrained_dofs), dtype=np.int64).tobytes())
    h.update(str([f.n_elements for f in d.fibers]).encode())
    for array in (d.area, d.density, d.muscle_fraction):
        add(array)
    lam, rate = np.meshgrid(np.linspace(0.6, 1.6, 6), np.linspace(-1.0, 1.0, 3))
    for fiber in d.fibers:
        for theta, gamma, alpha in ((0.3, 0.0, 0.0), (0.6, 1.0, 0.7)):
            response = fiber.law(MaterialPoint(lam, rate, theta=theta, t=0.5, muscle_fraction=gamma, activation=alpha))
            for value in (response.stress, response.d_stretch, response.d_stretch_rate):
                add(np.broadcast_to(value, lam.shape))
    for t in FINGERPRINT_TIMES:
        add(model.external_force(t))
        add(model.prescribed_displacement(t))
        add([f.activation_at(t) for f in d.fibers])
    contacts = [repr(c) if type(c).__repr__ is not object.__repr__ else type(c).__qualname__ for c in model.contacts]
    h.update(repr((model.term_names, contacts, model.rigid is not None)).encode())
    return h.hexdigest()[:16]


def save_checkpoint(path: str | os.PathLike, checkpoint: Checkpoint) -> None:
    """Save a checkpoint as .npz (atomically); all fields of the State are stored.

    Examples
    --------
    >>> import os, tempfile, numpy as np, skfiber as sf
    >>> from skfiber.io import Checkpoint, save_checkpoint
    >>> checkpoint = Checkpoint(sf.State(0.02, np.zeros(6), np.ones(6)), step=2, dt=0.01, t_start=0.0, fingerprint="f")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_checkpoint(os.path.join(folder, "demo_checkpoint.npz"), checkpoint)
    ...     sorted(os.listdir(folder))
    ['demo_checkpoint.npz']
    """
    arrays = {f"state.{f.name}": np.asarray(getattr(checkpoint.state, f.name)) for f in dataclasses.fields(checkpoint.state)}
    arrays.update(
        version=np.array(CHECKPOINT_VERSION),
        step=np.array(checkpoint.step),
        dt=np.array(checkpoint.dt),
        t_start=np.array(checkpoint.t_start),
        fingerprint=np.array(checkpoint.fingerprint),
        options=np.array(json.dumps(checkpoint.options, sort_keys=True)),
        series=np.array(str(checkpoint.series)),
        **{f"stats.{k}": np.asarray(v) for k, v in checkpoint.stats.items()},
        **{f"extra.{k}": np.asarray(v) for k, v in checkpoint.extra.items()},
        **{f"control.{k}": np.asarray(v) for k, v in checkpoint.control.items()},
    )

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    _atomic(Path(path), write)


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Load a checkpoint written by :func:`save_checkpoint`.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not a skfiber checkpoint (another file, another npz), is
        truncated or damaged, or has another format version; the message gives
        the path.

    Examples
    --------
    >>> import os, tempfile, numpy as np, skfiber as sf
    >>> from skfiber.io import Checkpoint, load_checkpoint, save_checkpoint
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "demo_checkpoint.npz")
    ...     save_checkpoint(path, Checkpoint(sf.State(0.02, np.zeros(3), np.ones(3)), 2, 0.01, 0.0, "f"))
    ...     back = load_checkpoint(path)
    >>> back.step, back.dt, back.state.t, back.state.v.tolist()
    (2, 0.01, 0.02, [1.0, 1.0, 1.0])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; start the run without resume first")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"PK\x03\x04":
        raise ValueError(f"{path} is not a skfiber checkpoint (not an .npz archive); "
                         "point to a NAME_checkpoint.npz written by skfiber, or start afresh")
    try:
        with np.load(path, allow_pickle=False) as z:
            files = set(z.files)
            if not {"version", "step", "dt", "t_start", "fingerprint", "state.t", "state.u", "state.v"} <= files:
                raise ValueError(f"{path} is not a skfiber checkpoint (an .npz without the entries of one: "
                                 f"{sorted(files)[:6]}); point to a NAME_checkpoint.npz written by skfiber")
            version = int(z["version"])
            if version != CHECKPOINT_VERSION:
                raise ValueError(f"{path} has checkpoint format {version}, this skfiber reads "
                                 f"{CHECKPOINT_VERSION}; start the run afresh")
            values = {k[len("state."):]: z[k] for k in files if k.startswith("state.")}
            names = [f.name for f in dataclasses.fields(State)]
            state = State(**{n: (float(values[n]) if values[n].ndim == 0 else values[n].copy())
                             for n in names if n in values})
            stats = {k[len("stats."):]: z[k].item() for k in files if k.startswith("stats.")}
            extra = {k[len("extra."):]: z[k] for k in files if k.startswith("extra.")}
            control = {k[len("control."):]: z[k] for k in files if k.startswith("control.")}
            options = json.loads(str(z["options"])) if "options" in files else {}
            series = str(z["series"]) if "series" in files else ""
            return Checkpoint(state, int(z["step"]), float(z["dt"]), float(z["t_start"]), str(z["fingerprint"]),
                              stats, options, extra, control, series)
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as err:
        raise ValueError(f"{path} is truncated or damaged ({err}); start the run afresh (without resume)") from None
    except ValueError as err:  # also json's JSONDecodeError
        if str(err).startswith(str(path)):
            raise
        raise ValueError(f"{path} is not a skfiber checkpoint ({err}); start afresh") from None
