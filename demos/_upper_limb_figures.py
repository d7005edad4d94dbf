"""Files of the upper-limb demo (``demos/upper_limb.py``): CSV tables, the paper's Figs. 10–12 and 13.

``write_outputs(results, out)`` writes, per level L run, ``angle_levelL.csv`` (t, elbow angle,
forces at the upper-arm attachments of biceps1 and triceps1) and ``axial_force_levelL.csv``
(N(θ) of those fibers at the paper's Fig. 12 times), and for all levels together

* ``angle.png`` — Fig. 10: elbow flexion q [°] over t [s], one curve per level;
* ``forces.png`` — Fig. 11: force magnitude |F| [N] of one biceps and one triceps fiber on
  the upper arm (at their origin) over t [s], every level;
* ``axial_force.png`` — Fig. 12: axial force N [N] along those fibers over θ at t = 1 s and
  4 s (color: time), every level (line style: level; finer levels drawn thinner on top);
* ``snapshots.png`` — Fig. 13 (``snapshots=True`` and pyvista installed): the finest run at
  t = 0, 0.5, 1, 1.5, 2 s, fibers as tubes of their true current radius r0/√λ colored by the
  axial force, bones and the wrapping cylinder as cylinders, rendered off screen.

Examples
--------
>>> from demos import upper_limb, _upper_limb_figures          # doctest: +SKIP
>>> r = upper_limb.run(1, t_end=0.5, progress=False)          # doctest: +SKIP
>>> _upper_limb_figures.write_outputs([r], Path("out"))        # doctest: +SKIP
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

__all__ = ["write_outputs", "write_snapshots", "snapshot_states", "SNAPSHOT_TIMES"]

#: times of the 3D snapshots (s): one activation cycle
SNAPSHOT_TIMES = (0.0, 0.5, 1.0, 1.5, 2.0)


def _write_csv(results, out: Path) -> list[Path]:
    files = []
    for r in results:
        path = out / f"angle_level{r.level}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_s", "elbow_angle_deg", "biceps1_origin_force_N", "triceps1_origin_force_N"])
            for row in zip(r.times, r.angle_deg, r.biceps_origin_force, r.triceps_origin_force):
                w.writerow([f"{v:.9g}" for v in row])
        files.append(path)
        path = out / f"axial_force_level{r.level}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_s", "fiber", "theta", "axial_force_N", "recovered_axial_force_N"])
            for tp, prof in sorted(r.profiles.items()):
                for name, (theta, N, N_rec) in prof.items():
                    for th, n_, nr in zip(theta, N, N_rec):
                        w.writerow([tp, name, f"{th:.6g}", f"{n_:.9g}", f"{nr:.9g}"])
        files.append(path)
    return files


def _label(r) -> str:
    return f"level {r.level} ({r.n_elements} el./fiber, Δt = {r.t_end / r.n_steps:.3g} s)"


#: line styles of the levels (the finest run drawn last, on top)
_LEVEL_STYLES = ("-", "--", ":", "-.")


def _style(results, r) -> dict:
    """Line width and style of run ``r`` among ``results``: level by style, coarser runs wider."""
    k = results.index(r)
    return dict(ls=_LEVEL_STYLES[k % len(_LEVEL_STYLES)], lw=2.4 - 0.5 * k)


def _setting(results) -> str:
    r = results[-1]
    return (f"geometry '{r.geometry}', fiber–fiber contact {'on' if r.fiber_contact else 'off'}, "
            + ("levels " + ", ".join(str(x.level) for x in results) if len(results) > 1 else f"level {r.level}"))


def _plots(results, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    # Fig. 10: the elbow angle; the legend below the axes, never over the curves
    fig, ax = plt.subplots(figsize=(7, 4.4), layout="constrained")
    for r in results:
        ax.plot(r.times, r.angle_deg, label=_label(r), color=f"C{r.level - 1}", **_style(results, r))
    ax.set(xlabel="time t [s]", ylabel="elbow flexion angle q [°]",
           title=f"Elbow flexion over time (cf. paper Fig. 10)\n{_setting(results)}")
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncol=min(len(results), 2), fontsize=8, frameon=False)
    fig.savefig(out / "angle.png", dpi=120)
    files.append(out / "angle.png")
    plt.close(fig)

    # Fig. 11: the forces of one biceps and one triceps fiber on the upper arm
    fig, ax = plt.subplots(figsize=(7, 4.6), layout="constrained")
    for r in results:
        for name, color, label in (("biceps_origin_force", "tab:red", "biceps fiber 1"),
                                   ("triceps_origin_force", "tab:blue", "triceps fiber 1")):
            ax.plot(r.times, getattr(r, name), color=color, label=f"{label}, level {r.level}", **_style(results, r))
    ax.set(xlabel="time t [s]", ylabel="force magnitude |F| [N]",
           title="Force of one biceps and one triceps fiber on the upper arm, at their origin\n"
                 f"(cf. paper Fig. 11); {_setting(results)}")
    ax.title.set_fontsize(10)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    fig.savefig(out / "forces.png", dpi=120)
    files.append(out / "forces.png")
    plt.close(fig)

    # Fig. 12: N(θ) along the same fibers; color: time, line style: level; each fiber its own force axis
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
    times = sorted({tp for r in results for tp in r.profiles})
    for r in results:
        for tp, prof in sorted(r.profiles.items()):
            for ax, (name, (theta, N, N_rec)) in zip(axes, prof.items()):
                color = f"C{times.index(tp)}"
                ax.plot(theta, N_rec, color=color, label=f"t = {tp:g} s, level {r.level}", **_style(results, r))
                ax.plot(theta, N, color=color, lw=0.6, alpha=0.45, marker=".", ms=2)
                ax.set_title(name, fontsize=10)
    for ax in axes:
        ax.set(xlabel="fiber parameter θ [–]", ylabel="axial force N = π r0² λ S [N]")
        ax.grid(alpha=0.3)
    fig.suptitle(f"Axial force along one biceps and one triceps fiber at t = {', '.join(f'{t:g}' for t in times)} s "
                 f"(cf. paper Fig. 12): recovered N (lines), N at the samples (thin, dots)\n{_setting(results)}",
                 fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.savefig(out / "axial_force.png", dpi=120)
    files.append(out / "axial_force.png")
    plt.close(fig)
    return files


def _crop(images: list, margin: int = 8) -> list:
    """``images`` (of one size) cut to one box around all that differs from their corner (background) color,
    plus ``margin`` pixels: the panels keep one size and scale."""
    ink = np.zeros(images[0].shape[:2], dtype=bool)
    for image in images:
        ink |= np.any(np.abs(image.astype(float) - image[0, 0].astype(float)) > 2, axis=-1)
    if not ink.any():
        return images
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    r0, r1 = max(rows[0] - margin, 0), min(rows[-1] + margin + 1, ink.shape[0])
    c0, c1 = max(cols[0] - margin, 0), min(cols[-1] + margin + 1, ink.shape[1])
    return [image[r0:r1, c0:c1] for image in images]


def snapshot_states(result, *, times=SNAPSHOT_TIMES) -> list:
    """The states :func:`write_snapshots` shows: the run's sampled states nearest to ``times`` (those the run
    reached), and its last state when the run ends between two of them."""
    states = result.states
    stimes = np.array([s.t for s in states])
    chosen = [states[int(np.argmin(np.abs(stimes - t)))] for t in times if t <= stimes[-1] + 1e-9]
    if not chosen or chosen[-1].t < stimes[-1] - 1e-9:
        chosen.append(states[-1])
    return chosen


def write_snapshots(result, path: Path, *, times=SNAPSHOT_TIMES) -> Path:
    """Paper Fig. 13: the run's sampled states nearest to ``times`` side by side (PyVista, off screen), and
    its last state when the run ends between two of them.

    Fibers are tubes of their true current radius colored by the axial force N (one color range
    for all panels), bones and the wrapping cylinder cylinders.  Needs pyvista (``skfiber[viz]``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import skfiber.viz as viz
    from skfiber.coupling import body_cylinders
    from skfiber.io import fiber_mesh

    model = result.model
    chosen = snapshot_states(result, times=times)
    meshes = [fiber_mesh(model, s) for s in chosen]
    forces = np.concatenate([m.point_data["force"] for m in meshes])
    clim = (float(forces.min()), float(forces.max()))
    bodies = body_cylinders(model)
    images = []
    for mesh, state in zip(meshes, chosen):
        plotter = viz.scene(mesh, field="force", bodies=bodies(state), clim=clim, view="xz", off_screen=True,
                            title=False, window_size=(480, 720), multi_samples=1)
        try:
            plotter.remove_scalar_bar()   # one color bar for all panels, below
            plotter.camera.zoom(1.4)
            images.append((state.t, plotter.screenshot(return_img=True)))
        finally:
            plotter.close()
    fig, axes = plt.subplots(1, len(images), figsize=(max(2.6 * len(images), 7.0), 4.6),   # (the title's width)
                             layout="constrained")
    axes = np.atleast_1d(axes)
    for ax, t, image in zip(axes, [t for t, _ in images], _crop([image for _, image in images])):
        ax.imshow(image)
        ax.set_title(f"t = {t:g} s", fontsize=10)
        ax.axis("off")
    mappable = matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(*clim), cmap="viridis")
    fig.colorbar(mappable, ax=list(axes), orientation="horizontal", fraction=0.05, pad=0.02,
                 label="axial force N [N]")
    fig.suptitle(f"Upper limb, level {result.level} (cf. paper Fig. 13): fibers as tubes of their current radius "
                 "r0/√λ,\nbones and wrapping cylinder; side view (x forward to the right, z up)", fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(results, out: Path, *, snapshots: bool = False) -> list[Path]:
    """CSV and PNG files of the runs (see the module notes); plots only with matplotlib installed."""
    out.mkdir(parents=True, exist_ok=True)
    files = _write_csv(results, out)
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # plotting is optional
        return files
    files += _plots(results, out)
    if snapshots:
        try:
            import pyvista  # noqa: F401
        except ImportError:
            print("no snapshots.png: it needs pyvista (pip install 'skfiber[viz]')")
        else:
            files.append(write_snapshots(results[-1], out / "snapshots.png"))
    return files
