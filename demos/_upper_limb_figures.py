"""Files of the upper-limb demo (``demos/upper_limb.py``): CSV tables, the paper's Figs. 10–12 and 13.

``write_outputs(results, out)`` writes, per level L run, ``angle_levelL.csv`` (t, elbow angle,
forces at the upper-arm attachments of biceps1 and triceps1) and ``axial_force_levelL.csv``
(N(θ) of those fibers at the paper's Fig. 12 times), and for all levels together

* ``angle.png`` — Fig. 10: elbow flexion (deg) over t (s), one curve per level;
* ``forces.png`` — Fig. 11: force (N) at the upper-arm attachment of one biceps and one
  triceps fiber over t (s), finest level;
* ``axial_force.png`` — Fig. 12: axial force N (N) along those fibers over θ at t = 1 s and
  4 s, every level (finer levels drawn thinner on top);
* ``snapshots.png`` — Fig. 13 (``snapshots=True`` and pyvista installed): the finest run at
  t = 0, 0.5, 1, 1.5, 2 s, fibers as tubes of their true current radius r0/√λ colored by the
  axial force, bones and the wrapping cylinder as cylinders, rendered off screen.

Example
-------
>>> from demos import upper_limb, _upper_limb_figures          # doctest: +SKIP
>>> r = upper_limb.run(1, t_end=0.5, progress=False)          # doctest: +SKIP
>>> _upper_limb_figures.write_outputs([r], Path("out"))        # doctest: +SKIP
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

__all__ = ["write_outputs", "write_snapshots", "SNAPSHOT_TIMES"]

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
            w.writerow(["t_s", "fiber", "theta", "axial_force_N"])
            for tp, prof in sorted(r.profiles.items()):
                for name, (theta, N) in prof.items():
                    for th, n_ in zip(theta, N):
                        w.writerow([tp, name, f"{th:.6g}", f"{n_:.9g}"])
        files.append(path)
    return files


def _label(r) -> str:
    return f"level {r.level} ({r.n_elements} el./fiber, Δt = {r.t_end / r.n_steps:.3g} s)"


def _plots(results, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    contact = "fiber–fiber contact on" if results[-1].fiber_contact else "fiber–fiber contact off"
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        ax.plot(r.times, r.angle_deg, label=_label(r), lw=2.2 - 0.4 * (r.level - 1))
    ax.set(xlabel="time t (s)", ylabel="elbow flexion angle q (deg)",
           title=f"Forearm rotation (paper Fig. 10); geometry '{results[-1].geometry}', {contact}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "angle.png", dpi=120)
    files.append(out / "angle.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        lw = 2.2 - 0.4 * (r.level - 1)
        ax.plot(r.times, r.biceps_origin_force, color="tab:red", lw=lw, alpha=0.5 + 0.5 * (r is results[-1]),
                label=f"biceps fiber 1, level {r.level}")
        ax.plot(r.times, r.triceps_origin_force, color="tab:blue", lw=lw, alpha=0.5 + 0.5 * (r is results[-1]),
                label=f"triceps fiber 1, level {r.level}")
    ax.set(xlabel="time t (s)", ylabel="force at the upper-arm attachment |N t| (N)",
           title="Fiber forces at the coupling point to the upper arm (paper Fig. 11)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "forces.png", dpi=120)
    files.append(out / "forces.png")
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for r in results:
        for tp, prof in sorted(r.profiles.items()):
            for ax, (name, (theta, N)) in zip(axes, prof.items()):
                ax.plot(theta, N, lw=2.2 - 0.4 * (r.level - 1), label=f"t = {tp:g} s, level {r.level}")
                ax.set_title(f"{name}: axial force along the fiber (paper Fig. 12)", fontsize=9)
    for ax in axes:
        ax.set(xlabel="fiber parameter θ (–)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set(ylabel="axial force N = π r0² λ S (N)")
    fig.tight_layout()
    fig.savefig(out / "axial_force.png", dpi=120)
    files.append(out / "axial_force.png")
    plt.close(fig)
    return files


def write_snapshots(result, path: Path, *, times=SNAPSHOT_TIMES) -> Path:
    """Paper Fig. 13: the run's sampled states nearest to ``times`` side by side (PyVista, off screen).

    Fibers are tubes of their true current radius colored by the axial force N (one color range
    for all panels), bones and the wrapping cylinder cylinders.  Needs pyvista (``skfiber[viz]``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import skfiber.viz as viz
    from skfiber.coupling import body_cylinders
    from skfiber.io import fiber_mesh

    model, states = result.model, result.states
    stimes = np.array([s.t for s in states])
    chosen = [states[int(np.argmin(np.abs(stimes - t)))] for t in times if t <= stimes[-1] + 1e-9]
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
    fig, axes = plt.subplots(1, len(images), figsize=(2.6 * len(images), 4.6))
    axes = np.atleast_1d(axes)
    for ax, (t, image) in zip(axes, images):
        ax.imshow(image)
        ax.set_title(f"t = {t:g} s", fontsize=10)
        ax.axis("off")
    mappable = matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(*clim), cmap="viridis")
    fig.colorbar(mappable, ax=list(axes), orientation="horizontal", fraction=0.05, pad=0.02,
                 label="axial force N (N)")
    fig.suptitle(f"Upper limb, level {result.level} (paper Fig. 13): fibers as tubes of their current radius "
                 "r0/√λ, bones and wrapping cylinder;\nside view (x forward to the right, z up)", fontsize=9)
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
