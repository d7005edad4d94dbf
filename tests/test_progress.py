"""The progress line: its ETA (none until the pace is known, then the pace of the recent steps), and one
line for simulate (fixed steps and error control) and run_simulation, redrawn in place on a terminal."""
import io
import re
import warnings

import pytest

import skfiber as sf
from skfiber import progress as progress_module
from skfiber import run as run_module
from skfiber.progress import MIN_SECONDS, PROGRESS_TERMS, Progress, RemainingTime, format_duration


def _estimates(step_seconds, *, n_steps=None):
    """The estimates after each step of a run whose steps take ``step_seconds`` (a fake clock)."""
    n_steps = n_steps or len(step_seconds)
    eta, now, out = RemainingTime(), 0.0, []
    for k, seconds in enumerate(step_seconds, start=1):
        now += seconds
        out.append(eta.update(k / n_steps, now=now))
    return out


def test_a_slow_first_step_does_not_blow_up_the_estimate():
    """A 2 s run whose first step compiled for 40 s: the old estimate (elapsed / steps × remaining) said 20:15
    after step 2; now there is none until 1 s after the first step, then the true remaining time."""
    step = 1 / 64   # s (exact in binary: the times below are exact)
    estimates = _estimates([40.0] + [step] * 127)
    known = [k for k, e in enumerate(estimates, start=1) if e is not None]
    assert known[0] == 65   # 64 steps = 1 s after the first one
    for k in known:
        assert estimates[k - 1] == pytest.approx(step * (128 - k), rel=1e-12)


def test_no_estimate_during_the_first_steps_or_second():
    assert _estimates([0.5] * 4, n_steps=10) == [None] * 3 + [pytest.approx(0.5 * 6)]   # 3 steps after the first
    assert _estimates([0.5, 2.0, 2.0, 2.0], n_steps=10)[:3] == [None] * 3   # 4 s, but only 2 steps after it
    assert _estimates([0.125] * 8, n_steps=100) == [None] * 8   # 0.875 s after the first step
    assert _estimates([0.125] * 9, n_steps=100)[8] == pytest.approx(0.125 * 91)
    assert MIN_SECONDS == 1.0


def test_the_estimate_follows_a_run_that_slows_down():
    """The pace of the last ~20 s counts: after 30 s of 0.1 s steps (following 0.01 s steps) the estimate is
    the slow pace's, not the mean since the start."""
    fast, slow, n = 2000, 300, 3000
    estimates = _estimates([0.01] * fast + [0.1] * slow, n_steps=n)
    assert estimates[-1] == pytest.approx(0.1 * (n - fast - slow), rel=0.02)
    mean_pace = (0.01 * fast + 0.1 * slow) / (fast + slow) * (n - fast - slow)
    assert abs(estimates[-1] - mean_pace) > 0.5 * mean_pace


def test_durations():
    assert [format_duration(s) for s in (0.04, 59.94, 74.0, 3725.0, None, float("nan"))] == [
        "0.0 s", "59.9 s", "1:14", "1:02:05", "?", "?"]


def test_the_progress_bar_shows_an_eta_only_once_it_is_known(monkeypatch):
    """run_simulation's bar in a log: 'elapsed' from the start, 'ETA' only when known, none on the last line."""
    clock = iter([0.0] + [40.0 + k / 16 for k in range(200)])   # the first step took 40 s, then 1/16 s each
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    stream = io.StringIO()
    bar = Progress(stream=stream, interval=0.0)
    for step in range(1, 61):
        bar.update(step=step, n_steps=60, t=step * 0.01, t_end=0.6, newton=3, retries=1, extra="contacts 4")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 60
    assert "ETA" not in lines[0] and "elapsed 40.0 s" in lines[0] and "retries 1" in lines[0]
    assert not any("ETA" in line for line in lines[:16])   # until 1 s after the first step
    assert "ETA 2.7 s" in lines[16] and lines[16].endswith("contacts 4")   # step 17: 43 steps of 1/16 s to go
    assert "ETA" not in lines[-1] and "100%" in lines[-1]


def test_the_terms_are_explained():
    for word in ("Newton", "retries", "contacts", "ETA", "step K/N", "done:"):
        assert word in PROGRESS_TERMS


class _Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


def _fiber(n_elements=4):
    return sf.Model([sf.Fiber.straight((0, 0, 0), (0.1, 0, 0), n_elements=n_elements, radius=0.005,
                                       law=sf.paper_law(), activation=lambda t: 0.5 * t, name="f")])


def test_run_simulation_bar_is_the_same_object_as_the_progress_module_bar():
    assert run_module.Progress is Progress


def test_simulate_redraws_its_line_in_place_on_a_terminal(monkeypatch):
    """Fixed steps on a terminal: every line starts with a carriage return, only the last one ends the line,
    and it is the bar of PROGRESS_TERMS (share done, step K/N, Newton, retries, tangents, factorizations)."""
    monkeypatch.setenv("COLUMNS", "400")
    stream = _Terminal()
    r = sf.simulate(_fiber(), t_end=0.05, dt=0.01, progress=Progress(stream=stream))
    text = stream.getvalue()
    assert text.startswith("\r") and text.endswith("\n") and text.count("\n") == 1
    last = text.split("\r")[-1]
    assert last.startswith("[########################] 100%  t = 0.05/0.05 s  step 5/5  Newton ")
    assert "retries 0" in last and "ETA" not in last
    assert f"tangents {r.step_counts.tangent_builds} factorizations {r.step_counts.factorizations}" in last


def test_simulate_prints_lines_in_a_log_at_most_every_interval():
    """In a log (not a terminal) a line is printed when the interval has passed, and the last line always."""
    stream = io.StringIO()
    sf.simulate(_fiber(), t_end=0.05, dt=0.01, progress=Progress(stream=stream, interval=1e9))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue()   # the first step's line, and the last
    assert "step 1/5" in lines[0] and "step 5/5" in lines[1]


def test_a_run_continued_by_a_second_call_counts_its_steps_on():
    """count_on: a simulate call that continues a run (two steps of it done before, one retried) shows the
    run's steps, share and retries, not its own call's."""
    stream = io.StringIO()
    bar = Progress(stream=stream, interval=0.0)
    first = sf.simulate(_fiber(), t_end=0.02, dt=0.01, progress=False)
    bar.count_on(steps=2, retries=1)
    sf.simulate(_fiber(), t_end=0.05, dt=0.01, state=first.final_state, progress=bar)
    lines = stream.getvalue().splitlines()
    assert [re.search(r"step (\d+)/(\d+)", line).groups() for line in lines] == [("3", "5"), ("4", "5"), ("5", "5")]
    assert lines[0].startswith("[##############..........]  60%  t = 0.03/0.05 s")
    assert all("retries 1" in line for line in lines)


@pytest.mark.parametrize("steps, retries", [(-1, 0), (1.5, 0), (True, 0), (2, -3)])
def test_count_on_refuses_what_is_no_count(steps, retries):
    with pytest.raises(ValueError, match="whole number"):
        Progress(stream=io.StringIO()).count_on(steps=steps, retries=retries)


def test_error_control_shows_the_share_of_the_simulated_time():
    """With tolerances: no step count (the steps are not known ahead); the share is the simulated time's, the
    step size and the counts of accepted and rejected steps are on the line."""
    stream = io.StringIO()
    sf.simulate(_fiber(), t_end=0.05, dt=0.01, method="bdf2", rtol=1e-3, atol=1e-6,
                progress=Progress(stream=stream, interval=0.0))
    lines = stream.getvalue().splitlines()
    shares = [int(re.search(r"\] +(\d+)%", line).group(1)) for line in lines]
    assert shares == sorted(shares) and shares[-1] == 100 and shares[0] < 100
    assert all("step " not in line and " h " in line and "accepted " in line for line in lines)
    assert lines[-1].split("]")[1].startswith(" 100%  t = 0.05/0.05 s  Newton ")


def test_a_line_drawn_in_place_is_ended_before_other_text():
    """end() closes a terminal's open line (Ctrl-C's warning then starts on a line of its own); nothing in a log
    or when the line is closed already; message() replaces the open line."""
    stream = _Terminal()
    bar = Progress(stream=stream)
    bar.update(step=1, n_steps=4, t=0.1, t_end=0.4, newton=2)
    assert not stream.getvalue().endswith("\n")
    bar.end()
    assert stream.getvalue().endswith("\n")
    bar.end()
    assert stream.getvalue().count("\n") == 1
    bar._last = -1e300   # (redraw now)
    bar.update(step=2, n_steps=4, t=0.2, t_end=0.4, newton=2)
    bar.message("resuming")
    assert stream.getvalue().endswith("\r\033[Kresuming\n")
    log = io.StringIO()
    bar = Progress(stream=log)
    bar.update(step=1, n_steps=4, t=0.1, t_end=0.4, newton=2)
    bar.end()
    assert log.getvalue().count("\n") == 1


def test_simulate_refuses_a_progress_that_is_neither():
    with pytest.raises(TypeError, match=r"progress must be True, False or a skfiber.progress.Progress, got 'yes'"):
        sf.simulate(_fiber(), t_end=0.02, dt=0.01, progress="yes")


def test_a_warning_while_the_line_is_open_starts_on_a_line_of_its_own(monkeypatch):
    """On a terminal: a warning shown while the bar's line is open ends that line first and is then shown by the
    handler from before (its own format); with no line open it is shown as before, and bars opened one after
    the other do not stack handlers."""
    stream = _Terminal()
    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args, **kwargs: shown.append(
        (str(message), stream.getvalue())))
    for run in range(3):
        bar = Progress(stream=stream)
        bar.update(step=1, n_steps=4, t=0.1, t_end=0.4, newton=2)
        assert not stream.getvalue().endswith("\n")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(f"softening in fiber f{run}")
        assert shown[-1] == (f"softening in fiber f{run}", stream.getvalue()) and stream.getvalue().endswith("\n")
        bar._last = -1e300
        bar.update(step=4, n_steps=4, t=0.4, t_end=0.4, newton=2)
    assert len(shown) == 3 and stream.getvalue().count("\n") == 6
    before = stream.getvalue()
    with warnings.catch_warnings():  # no line open: shown once, nothing written to the stream
        warnings.simplefilter("always")
        warnings.warn("after the runs")
    assert shown[-1] == ("after the runs", before) and len(shown) == 4
    assert getattr(warnings.showwarning, "__name__", "") == "<lambda>"   # the handler from before, put back


@pytest.mark.parametrize("columns", [60, 100])
def test_a_line_drawn_in_place_fits_the_terminal(monkeypatch, columns):
    """A line wider than the terminal wraps, and a carriage return then redraws only its last row: on a
    terminal the line is cut to the width (its end, the extra counts, goes first); a log keeps it whole."""
    monkeypatch.setenv("COLUMNS", str(columns))
    stream, log = _Terminal(), io.StringIO()
    extra = "contacts 1234  tangents 56 factorizations 56 " * 3
    for out in (stream, log):
        bar = Progress(stream=out, interval=0.0)
        for step in range(1, 5):
            bar._last = -1e300
            bar.update(step=step, n_steps=4, t=0.1 * step, t_end=0.4, newton=3, retries=0, extra=extra)
    drawn = [part.replace("\033[K", "").rstrip("\n") for part in stream.getvalue().split("\r")[1:]]
    assert len(drawn) == 4 and all(len(line) == columns - 1 for line in drawn)
    assert drawn[-1].startswith("[########################] 100%  t = 0.4/0.4 s  step 4/4")
    assert all(len(line) > 120 and line.endswith(extra) for line in log.getvalue().splitlines())


def test_run_simulation_ends_its_line_when_an_error_stops_it(monkeypatch):
    """An error in the run (here the caller's callback) leaves no line open on a terminal: the error the caller
    prints starts on a line of its own."""
    monkeypatch.setenv("COLUMNS", "400")
    stream = _Terminal()

    def fails_at_step_3(state, info):
        if info.step == 3:
            raise ValueError("the callback failed")

    with pytest.raises(ValueError, match="the callback failed"):
        run_module.run_simulation(_fiber(), t_end=0.05, dt=0.01, progress=Progress(stream=stream),
                                  callback=fails_at_step_3)
    assert "step 1/5" in stream.getvalue() and stream.getvalue().endswith("\n")
