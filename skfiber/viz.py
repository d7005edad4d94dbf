"""PyVista views of fibers and bodies: tubes of the true current radius, screenshots, movies.

Optional dependency: ``pip install skfiber[viz]`` (pyvista, imageio,
imageio-ffmpeg).  Import this module explicitly (``import skfiber.viz``);
``import skfiber`` does not load pyvista.

A *source* is any of

- a ``.pvd`` series or a ``.vtu`` file written by :mod:`skfiber.io`,
- a ``(model, state)`` pair (drawn through :func:`skfiber.io.fiber_mesh`),
- a ``meshio.Mesh`` or a pyvista dataset of fibers.

Fibers are drawn as tubes whose radius is the current radius r = r0/√λ
(``tube(scalars="radius", absolute=True)``), colored by a chosen point field
(:data:`skfiber.io.FIBER_FIELDS`); bodies as their triangulated cylinders, with the levers to the fiber
attachments on them as lines.
No display is needed: without one, rendering is off screen (EGL or OSMesa).

Examples
--------
>>> import skfiber as sf, skfiber.viz as viz
>>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
>>> model = sf.Model([fiber])
>>> tube = viz.tubes(viz.load((model, model.initial_state())).fibers)
>>> round(float(tube.point_data["radius"].max()), 6)
0.05
>>> viz.screenshot("out/hanging_bundle.pvd", "bundle.png", field="stress")  # doctest: +SKIP
>>> viz.movie("out/hanging_bundle.pvd", "bundle.mp4", field="stretch")  # doctest: +SKIP
"""
from __future__ import annotations

import math
import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from . import io as _io
from .core.files import writable_file

if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
    # headless: go straight to EGL instead of failing on X first (VTK ≥ 9.4 wheels)
    os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")

try:
    import pyvista as pv
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "skfiber.viz needs pyvista; install the optional extra: pip install 'skfiber[viz]'"
    ) from err

__all__ = [
    "has_display",
    "Frame",
    "Series",
    "load",
    "holds_bodies",
    "lever_count",
    "label_format",
    "written_units",
    "written_labels",
    "read_grid",
    "tubes",
    "scene",
    "screenshot",
    "movie",
    "show",
    "MOVIE_FORMATS",
    "MAX_GIF_FPS",
    "check_gif_fps",
    "movie_frames",
    "gif_delay_ms",
]

BONE_COLOR = "#e8dcc4"
#: colour of the levers from a bone's axis to the fiber attachments on it
LEVER_COLOR = "#8c7b5e"
MOVIE_FORMATS = (".gif", ".mp4")
#: the fastest GIF (frames per second): its frame delays are whole hundredths of a second, and browsers play a
#: delay of 1/100 s or less at their own pace (about 10 frames per second)
MAX_GIF_FPS = 50
DEFAULT_WINDOW = (960, 720)  # multiples of 16 (H.264 macro blocks)


def has_display() -> bool:
    """Whether an interactive window can be opened."""
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


if not has_display():
    pv.OFF_SCREEN = True


@dataclass
class Frame:
    """What is drawn at one time: fibers (lines with point data) and bodies (surface or None)."""

    fibers: pv.DataSet
    bodies: pv.DataSet | None = None
    time: float | None = None

    @property
    def fields(self) -> list[str]:
        return sorted(self.fibers.point_data.keys())


class Series:
    """A .pvd series written by :mod:`skfiber.io`, frame by frame."""

    def __init__(self, pvd: str | os.PathLike):
        self.path = Path(pvd)
        if self.path.suffix.lower() != ".pvd":
            raise ValueError(f"{self.path} is not a .pvd file")
        entries = _io.read_pvd(self.path)
        if not entries:
            raise ValueError(f"{self.path} lists no data sets (the run wrote no step yet?)")
        self._by_time: dict[float, dict[int, str]] = {}
        for e in entries:
            self._by_time.setdefault(e.time, {})[e.part] = e.file
        self.times = sorted(self._by_time)
        missing = [f for parts in self._by_time.values() for f in parts.values() if not (self.path.parent / f).is_file()]
        if missing:
            raise FileNotFoundError(f"{self.path} refers to missing files, e.g. {missing[0]} ({len(missing)} missing)")

    def __len__(self) -> int:
        return len(self.times)

    def index(self, time: float | None) -> int:
        """Index of the time point nearest to ``time`` (None: the last)."""
        if time is None:
            return len(self.times) - 1
        if isinstance(time, bool) or not isinstance(time, (int, float, np.integer, np.floating)) or time != time:
            raise TypeError(f"time must be a number of seconds (or None: the last), got {time!r}")
        t0, t1 = self.times[0], self.times[-1]
        tol = 1e-9 * max(1.0, abs(t1))
        if not (t0 - tol <= time <= t1 + tol):
            raise ValueError(f"time {time:g} s is outside the series, which spans {t0:g} … {t1:g} s ({len(self)} time points)")
        return int(np.argmin(np.abs(np.asarray(self.times) - time)))

    def frame(self, i: int) -> Frame:
        parts = self._by_time[self.times[i]]
        fibers = read_grid(self.path.parent / parts[_io.FIBERS_PART])
        bodies = read_grid(self.path.parent / parts[_io.BODIES_PART]) if _io.BODIES_PART in parts else None
        return Frame(fibers, bodies, self.times[i])


_QUIET_VTK = threading.Lock()


def read_grid(path) -> pv.DataSet:
    """The grid of a ``.vtu`` file, or a ValueError naming the file when it holds nothing readable.

    VTK's reader returns an empty grid for a truncated or empty file (after printing its parser's
    complaints); such a file is refused here instead, quietly.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import meshio, numpy as np
    >>> from skfiber.viz import read_grid
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "line.vtu"
    >>> meshio.write(path, meshio.Mesh(np.eye(3), [("line", [[0, 1], [1, 2]])]))
    >>> read_grid(path).n_points
    3
    >>> path.write_bytes(b"")
    0
    >>> read_grid(path)
    Traceback (most recent call last):
    ...
    ValueError: ...line.vtu holds no points: the file is empty or damaged (a copy cut short?); write it again (run the demo or simulation again)
    >>> folder.cleanup()
    """
    from vtkmodules.vtkCommonCore import vtkObject

    with _QUIET_VTK:  # (VTK's switch is global: one reader at a time turns it off and back)
        shown = vtkObject.GetGlobalWarningDisplay()
        vtkObject.GlobalWarningDisplayOff()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (pyvista repeats VTK's errors as warnings)
                grid = pv.read(path)
        finally:
            vtkObject.SetGlobalWarningDisplay(shown)
    if grid.n_points == 0:
        raise ValueError(f"{path} holds no points: the file is empty or damaged (a copy cut short?); "
                         "write it again (run the demo or simulation again)")
    return grid


def holds_bodies(grid: pv.DataSet) -> bool:
    """Whether ``grid`` is the bodies part of a series (triangles, and the attachments' levers as lines; no
    fiber ``radius``), not its fibers."""
    cells = np.asarray(getattr(grid, "celltypes", ()))
    triangles = cells == pv.CellType.TRIANGLE
    return ("radius" not in grid.point_data and bool(np.any(triangles))
            and bool(np.all(triangles | (cells == pv.CellType.LINE))))


def load(source, *, time: float | None = None, bodies: Sequence | None = None) -> Frame:
    """One frame from a source (see the module docs); ``time`` picks the nearest step of a .pvd series (only
    a series has steps to pick: for any other source it is refused), ``bodies`` adds cylinders to draw.

    Examples
    --------
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> frame = load((model, model.initial_state()), bodies=[((0.5, -0.1, -0.1), (0, 0.2, 0), 0.05)])
    >>> frame.time, frame.bodies is not None, "stretch" in frame.fields
    (0.0, True, True)
    """
    is_series = isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".pvd"
    if time is not None and not is_series:
        raise ValueError(f"time={time!r} picks a step of a .pvd series; this {type(source).__name__} holds one "
                         "state (leave out time, or load the series' .pvd)")
    if isinstance(source, Frame):
        frame = replace(source)  # (the caller's frame keeps its bodies)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        suffix = path.suffix.lower()
        if suffix == ".pvd":
            series = Series(path)
            frame = series.frame(series.index(time))
        elif suffix == ".vtu":
            grid = read_grid(path)
            if holds_bodies(grid):
                raise ValueError(f"{path} holds the bodies of a series (the bones), not its fibers: show the series' "
                                 f".pvd (fibers and bodies), or a fibers .vtu")
            frame = Frame(grid)
        else:
            raise ValueError(f"cannot show {path}: pick a .pvd series or a .vtu file written by skfiber")
    elif isinstance(source, tuple) and len(source) == 2:
        model, state = source
        frame = Frame(pv.from_meshio(_io.fiber_mesh(model, state)), time=float(state.t))
    elif type(source).__module__.startswith("meshio"):
        frame = Frame(pv.from_meshio(source))
    elif isinstance(source, pv.DataSet):
        frame = Frame(source)
    else:
        raise TypeError(f"cannot show a {type(source).__name__}; give a .pvd/.vtu path, (model, state), a meshio.Mesh or a pyvista dataset")
    if bodies is not None:
        extra = pv.from_meshio(_io.cylinder_mesh(bodies))
        frame.bodies = extra if frame.bodies is None else frame.bodies.merge(extra)
    return frame


def _as_polydata(grid: pv.DataSet, cell_type, kind: str) -> pv.PolyData:
    """PolyData of an unstructured grid of one cell type (lines or triangles), with its point data."""
    if isinstance(grid, pv.PolyData):
        return grid
    if np.any(np.asarray(grid.celltypes) != cell_type):
        raise ValueError(f"expected a grid of {cell_type.name.lower()} cells only (as written by skfiber.io)")
    poly = pv.PolyData(np.asarray(grid.points), **{kind: np.asarray(grid.cells)})
    for name in grid.point_data.keys():
        poly.point_data[name] = np.asarray(grid.point_data[name])
    return poly


def tubes(fibers: pv.DataSet, *, n_sides: int = 24) -> pv.PolyData:
    """Tubes around the fiber polylines with radius = point data ``radius`` (absolute, m).

    Examples
    --------
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.05)])
    >>> tube = tubes(load((model, model.initial_state())).fibers, n_sides=8)
    >>> [round(float(b), 6) for b in tube.bounds]          # 1 m long, 0.05 m in radius
    [0.0, 1.0, -0.05, 0.05, -0.05, 0.05]
    """
    if "radius" not in fibers.point_data:
        raise ValueError(f"the fiber data has no 'radius' array (arrays: {sorted(fibers.point_data.keys())}); was it written by skfiber.io?")
    poly = _as_polydata(fibers, pv.CellType.LINE, "lines")
    # join the 2-point line cells of each fiber into one polyline (smooth tube joints)
    poly = poly.strip(join=True, max_length=poly.n_points + 1)
    return poly.tube(scalars="radius", absolute=True, n_sides=n_sides, capping=True)


def _body_surface(bodies: pv.DataSet) -> pv.PolyData:
    """Body surfaces with normals split at the cylinder rims (smooth sides, flat caps)."""
    surface = _body_cells(bodies, pv.CellType.TRIANGLE, "faces")
    return surface.compute_normals(split_vertices=True, feature_angle=45.0, auto_orient_normals=False)


def _body_levers(bodies: pv.DataSet) -> pv.PolyData | None:
    """The levers of the bodies part (lines from a bone's axis to the fiber attachments on it), or None."""
    return _body_cells(bodies, pv.CellType.LINE, "lines") if lever_count(bodies) else None


def lever_count(bodies: pv.DataSet) -> int:
    """The levers (line cells: a bone's axis to a fiber attachment) in a bodies part; the rest are triangles."""
    if isinstance(bodies, pv.PolyData):
        return int(bodies.n_lines)
    return int(np.count_nonzero(np.asarray(bodies.celltypes) == pv.CellType.LINE))


def _body_cells(bodies: pv.DataSet, cell_type, kind: str) -> pv.PolyData:
    """The cells of one type of a bodies part (``kind`` "faces": its triangles, "lines": its levers) as PolyData
    with the point data."""
    if isinstance(bodies, pv.PolyData):
        poly = pv.PolyData(np.asarray(bodies.points), **{kind: np.asarray(getattr(bodies, kind))})
        for name in bodies.point_data.keys():
            poly.point_data[name] = np.asarray(bodies.point_data[name])
        return poly
    if not np.all(np.asarray(bodies.celltypes) == cell_type):
        bodies = bodies.extract_cells_by_type(cell_type)
    return _as_polydata(bodies, cell_type, kind)


def _draw_levers(plotter: pv.Plotter, bodies: pv.DataSet | None) -> None:
    """Show the levers of ``bodies`` as the plotter's ``"levers"`` actor: added the first time there are some,
    updated in place after, hidden in a frame without any (a movie's frames may differ)."""
    levers = None if bodies is None else _body_levers(bodies)
    actor = plotter.actors.get("levers")
    if levers is None:
        if actor is not None:
            actor.visibility = False
    elif actor is None:
        plotter.add_mesh(levers, color=LEVER_COLOR, line_width=3, name="levers", reset_camera=False)
    else:
        actor.mapper.dataset.copy_from(levers)
        actor.visibility = True


def _field_range(frames: Sequence[Frame], field: str) -> tuple[float, float]:
    lo, hi = np.inf, -np.inf
    for f in frames:
        v = np.asarray(f.fibers.point_data[field])
        v = np.linalg.norm(v, axis=1) if v.ndim == 2 else v
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    if lo == hi:
        lo, hi = lo - 0.5 * max(abs(lo), 1e-12), hi + 0.5 * max(abs(hi), 1e-12)
    return lo, hi


def _check_field(frame: Frame, field: str) -> None:
    if field not in frame.fibers.point_data:
        raise ValueError(f"unknown field {field!r}; pick one of {frame.fields}")


def _check_window_size(window_size) -> None:
    """A ValueError unless ``window_size`` is two integers ≥ 1 (pixels)."""
    try:
        ok = len(window_size) == 2 and all(
            not isinstance(n, bool) and isinstance(n, (int, np.integer)) and n >= 1 for n in window_size)
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"window_size must be two integers ≥ 1 (width, height in pixels), got {window_size!r}")


#: pixels right of a colour bar's left edge that its labels need (a label of 9 characters, "-8.28e+03", at
#: the labels' 14-point font, beside the bar)
BAR_LABEL_PIXELS = 100


def _bar_args(field: str, clim, units: dict[str, str], *, window_width: int) -> dict:
    # upright at the right edge: the title stands above the bar, the labels beside it (a horizontal bar
    # puts both above the bar, where they overlap); in a narrow window it moves left to keep its labels
    position_x = min(0.86, 1.0 - BAR_LABEL_PIXELS / window_width)
    return {"title": _title(field, units), "color": "black", "fmt": label_format(*clim), "vertical": True,
            "position_x": position_x, "position_y": 0.18, "width": 0.07, "height": 0.64, "title_font_size": 16,
            "label_font_size": 14}


def label_format(low: float, high: float) -> str:
    """The printf format of a colour bar's labels over [low, high]: 3 significant digits, more when the range
    is narrow beside its values, so that the labels differ (a stretch of 0.996 … 1).

    Examples
    --------
    >>> label_format(0.0, 8.3e4), label_format(0.996, 1.0)
    ('%.3g', '%.6g')
    """
    size, span = max(abs(low), abs(high)), abs(high - low)
    if not (np.isfinite(size) and np.isfinite(span) and span > 0 and size > 0):
        return "%.3g"
    return f"%.{min(3 + max(0, math.ceil(math.log10(size / span))), 12)}g"


def written_units(grid: pv.DataSet) -> dict[str, str]:
    """The units a file states for its arrays (field data ``units: <name> [<unit>]``, with a meaning after it
    or not: :func:`skfiber.io.units_label`): name → unit."""
    return {name: unit for name, (unit, _) in written_labels(grid).items()}


def written_labels(grid: pv.DataSet) -> dict[str, tuple[str, str]]:
    """The units and meanings a file states for its arrays (:func:`skfiber.io.units_label`): name → (unit,
    meaning), the meaning "" where the file gives none."""
    found = (re.fullmatch(r"units: (.+?) \[([^\[\]]*)\](?: (.+))?", label) for label in grid.field_data.keys())
    return {m.group(1): (m.group(2), m.group(3) or "") for m in found if m}


def _title(field: str, units: dict[str, str]) -> str:
    unit = _io.ALL_FIBER_FIELDS.get(field, (units.get(field, ""), ""))[0]
    return f"{field} ({unit})" if unit and unit != "1" else field


VIEWS = ("front", "iso", "xy", "xz", "yz")


def _set_view(plotter: pv.Plotter, view: str, bounds=None) -> None:
    """Camera: ``front`` = the xz plane (z up) seen slightly from above and the side."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; pick one of {list(VIEWS)}")
    kwargs = {} if bounds is None else {"bounds": bounds}
    if view == "iso":
        plotter.view_isometric(**kwargs)
    elif view == "front":
        plotter.view_xz(**kwargs)
        plotter.camera.azimuth = -30
        plotter.camera.elevation = 20
        plotter.reset_camera(bounds=bounds)
    else:
        getattr(plotter, f"view_{view}")(**kwargs)


def scene(
    source,
    *,
    field: str = "stress",
    time: float | None = None,
    bodies: Sequence | None = None,
    clim: tuple[float, float] | None = None,
    cmap: str = "viridis",
    view: str = "front",
    n_sides: int = 24,
    window_size: tuple[int, int] = DEFAULT_WINDOW,
    off_screen: bool | None = None,
    title: bool = True,
    multi_samples: int | None = None,
) -> pv.Plotter:
    """A plotter with the fibers as tubes colored by ``field`` and the bodies as cylinders.

    Parameters
    ----------
    source
        See the module docs; ``time`` picks the step of a .pvd series (nearest; default last).
    field
        Point field for the colors (:data:`skfiber.io.FIBER_FIELDS`); vectors by magnitude.
    bodies
        Extra cylinders (start, axis, radius) to draw, e.g. bones of a (model, state) source.
    clim
        Color range (default: the range of the field).
    view
        Camera: ``"front"`` (the xz plane, z up, seen from slightly above and
        aside), ``"iso"``, ``"xy"``, ``"xz"`` or ``"yz"``.
    off_screen
        Render without a window (default: when there is no display).
    multi_samples
        MSAA samples (default: pyvista's theme, 8; 1 renders ~7× faster in software).

    Examples
    --------
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> plotter = scene((model, model.initial_state()), field="stretch", window_size=(160, 120), off_screen=True)
    >>> "fibers" in plotter.actors, plotter.window_size
    (True, [160, 120])
    >>> plotter.close()
    """
    _check_window_size(window_size)
    frame = load(source, time=time, bodies=bodies)
    _check_field(frame, field)
    plotter = pv.Plotter(
        off_screen=(not has_display()) if off_screen is None else off_screen,
        window_size=list(window_size),
    )
    if multi_samples is not None:
        plotter.render_window.SetMultiSamples(int(multi_samples))  # before the first render
    plotter.set_background("white")
    # the meshes carry their own normals (Gouraud shading without pyvista's smooth_shading
    # pipeline), so movie() can update them in place
    clim = clim if clim is not None else _field_range([frame], field)
    actor = plotter.add_mesh(
        tubes(frame.fibers, n_sides=n_sides), scalars=field, cmap=cmap, clim=clim,
        scalar_bar_args=_bar_args(field, clim, written_units(frame.fibers), window_width=window_size[0]),
        name="fibers",
    )
    actor.prop.interpolation = "gouraud"
    if frame.bodies is not None:
        actor = plotter.add_mesh(_body_surface(frame.bodies), color=BONE_COLOR, name="bodies")
        actor.prop.interpolation = "gouraud"
        _draw_levers(plotter, frame.bodies)
    if title and frame.time is not None:
        plotter.add_text(f"t = {frame.time:.4g} s", position=(0.03, 0.92), viewport=True, font_size=12,
                         color="black", name="time")
    _set_view(plotter, view)
    return plotter


def screenshot(source, filename: str | os.PathLike, **options) -> Path:
    """Render a source off screen to a PNG (options as for :func:`scene`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     png = screenshot((model, model.initial_state()), Path(tmp) / "fiber.png", window_size=(160, 120))
    ...     png.name, png.stat().st_size > 0
    ('fiber.png', True)
    """
    filename = Path(filename)
    if filename.suffix.lower() not in (".png", ".jpg", ".jpeg"):
        raise ValueError(f"screenshot file {filename} must end in .png or .jpg")
    if "window_size" in options:
        _check_window_size(options["window_size"])
    writable_file(filename, what="screenshot")
    options["off_screen"] = True
    plotter = scene(source, **options)
    try:
        plotter.screenshot(str(filename))
    finally:
        plotter.close()
    return filename


def movie(
    pvd: str | os.PathLike,
    filename: str | os.PathLike,
    *,
    field: str = "stress",
    fps: float = 15.0,
    every: int = 1,
    view: str = "front",
    cmap: str = "viridis",
    n_sides: int = 16,
    window_size: tuple[int, int] = DEFAULT_WINDOW,
    multi_samples: int = 1,
) -> Path:
    """A movie of a .pvd series: GIF or MP4 (imageio-ffmpeg), chosen by the suffix.

    The camera and the color range are fixed over the movie (they fit all
    frames).  ``every`` takes every k-th step (the last one always);
    ``multi_samples`` = 1 (no anti-aliasing) keeps software rendering fast
    (a render ~20 ms at 960 × 720 with llvmpipe; pyvista's default 8: ~150 ms).
    GIF frames are quantized with Pillow's fast octree (imageio's GIF writer
    takes ~0.3 s per frame) and kept in memory until the end (~0.7 MB each):
    use MP4 or ``every`` for long series.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    >>> model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     run = sf.run_simulation(model, t_end=0.02, dt=0.01, out_dir=tmp, progress=False)   # 3 time points
    ...     movie(run.pvd, Path(tmp) / "sag.gif", field="stretch", window_size=(160, 120)).name
    'sag.gif'
    """
    filename = Path(filename)
    suffix = filename.suffix.lower()
    if suffix not in MOVIE_FORMATS:
        raise ValueError(f"movie file {filename} has an unknown format; pick one of {list(MOVIE_FORMATS)}")
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every must be an integer ≥ 1, got {every!r}")
    if not fps > 0:
        raise ValueError(f"fps must be > 0, got {fps!r}")
    check_gif_fps(filename, fps)
    _check_window_size(window_size)
    series = Series(pvd)
    writable_file(filename, what="movie")  # (before the frames are read and rendered)
    frames = [series.frame(i) for i in movie_frames(len(series), every)]
    _check_field(frames[0], field)
    clim = _field_range(frames, field)
    rmax = max(float(np.max(f.fibers.point_data["radius"])) for f in frames)
    boxes = np.array([f.fibers.bounds for f in frames] + [f.bodies.bounds for f in frames if f.bodies is not None])
    bounds = [boxes[:, 0].min() - rmax, boxes[:, 1].max() + rmax, boxes[:, 2].min() - rmax,
              boxes[:, 3].max() + rmax, boxes[:, 4].min() - rmax, boxes[:, 5].max() + rmax]
    plotter = scene(frames[0], field=field, clim=clim, cmap=cmap, view=view, n_sides=n_sides,
                    window_size=window_size, off_screen=True, multi_samples=multi_samples)
    _set_view(plotter, view, bounds)
    fibers = plotter.actors["fibers"].mapper.dataset
    surfaces = plotter.actors["bodies"].mapper.dataset if "bodies" in plotter.actors else None
    label = plotter.actors["time"]
    try:
        with _movie_writer(filename, fps) as writer:
            for frame in frames:
                # update the meshes in place: re-adding actors costs ~10× a render
                fibers.copy_from(tubes(frame.fibers, n_sides=n_sides))
                fibers.set_active_scalars(field)
                if surfaces is not None and frame.bodies is not None:
                    surfaces.copy_from(_body_surface(frame.bodies))
                _draw_levers(plotter, frame.bodies)
                label.SetInput(f"t = {frame.time:.4g} s")  # a vtkTextActor at a viewport position
                plotter.render()
                writer.append_data(plotter.screenshot(return_img=True))
    finally:
        plotter.close()
    return filename


class _GifWriter:
    def __init__(self, filename: Path, fps: float):
        from PIL import Image

        self._image = Image
        self.filename, self.fps, self.frames = filename, fps, []

    def append_data(self, image: np.ndarray) -> None:
        self.frames.append(self._image.fromarray(image).quantize(256, method=self._image.Quantize.FASTOCTREE))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None and self.frames:
            self.frames[0].save(
                self.filename, save_all=True, append_images=self.frames[1:],
                duration=gif_delay_ms(self.fps), loop=0,
            )


def movie_frames(points: int, every: int) -> list[int]:
    """The time points :func:`movie` shows of a series of ``points``: every ``every``-th from the first, and
    the last.

    Examples
    --------
    >>> movie_frames(11, 4)
    [0, 4, 8, 10]
    """
    indices = list(range(0, points, every))
    if indices and indices[-1] != points - 1:
        indices.append(points - 1)
    return indices


def check_gif_fps(filename: str | Path, fps: float) -> None:
    """Raise a ValueError when a movie ``filename`` is a GIF and ``fps`` is above :data:`MAX_GIF_FPS`.

    Examples
    --------
    >>> check_gif_fps("m.mp4", 120.0)        # an MP4 plays any rate
    >>> check_gif_fps("m.gif", 120.0)
    Traceback (most recent call last):
    ...
    ValueError: fps 120 is too fast for a GIF: its frame delays are whole hundredths of a second, ...
    """
    if Path(filename).suffix.lower() == ".gif" and fps > MAX_GIF_FPS:
        raise ValueError(f"fps {fps:g} is too fast for a GIF: its frame delays are whole hundredths of a second, and "
                         f"browsers play 1/100 s or less at about 10 frames per second; give fps {MAX_GIF_FPS} or "
                         "less, or write an MP4")


def gif_delay_ms(fps: float) -> int:
    """A GIF frame's delay in ms for ``fps``: the nearest whole hundredth of a second (what the file can hold),
    at least 2/100 s.

    Examples
    --------
    >>> gif_delay_ms(15.0), gif_delay_ms(30.0), gif_delay_ms(50.0)
    (70, 30, 20)
    """
    return 10 * max(2, round(100.0 / fps))


def _movie_writer(filename: Path, fps: float):
    if filename.suffix.lower() == ".gif":
        return _GifWriter(filename, fps)
    try:
        import imageio.v2 as imageio
        import imageio_ffmpeg  # noqa: F401
    except ImportError as err:
        raise ImportError("MP4 movies need imageio and imageio-ffmpeg: pip install 'skfiber[viz]'") from err
    return imageio.get_writer(str(filename), fps=fps, codec="libx264", quality=7, macro_block_size=16)


def show(source, **options) -> None:
    """Open an interactive window (needs a display; use :func:`screenshot` otherwise).

    Examples
    --------
    >>> import skfiber as sf
    >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    >>> show((model, model.initial_state()), field="stretch")   # doctest: +SKIP
    """
    if not has_display():
        raise RuntimeError("no display to open a window on; save a screenshot or a movie instead")
    scene(source, off_screen=False, **options).show()
