"""Parameter studies: sweeps, samples and sensitivity runs of skfiber models on dask.distributed.

A study is a run function (a parameter dict → named outputs), the parameters' ranges, a design
(:mod:`skfiber.study.design`) and a folder (:mod:`skfiber.study.records`); :func:`run_study`
(:mod:`skfiber.study.execute`) runs it on a local cluster or an existing one, records every run as
it finishes, goes on past failed runs and resumes a killed study; :func:`calibrate`
(:mod:`skfiber.study.calibrate`) fits parameters to a measured time series with the finite-difference
Jacobian's runs as one parallel batch.

Examples
--------
>>> import tempfile
>>> from skfiber.study import Parameter, run_study
>>> from skfiber.study.targets import quadratic
>>> with tempfile.TemporaryDirectory() as tmp:
...     r = run_study(quadratic, [Parameter("a", -1.0, 1.0)], design="grid", n=3, out=tmp, scheduler="serial",
...                   progress=False)
>>> r.completed, r.failed, list(r.table["status"])
(2, 1, ['failed', 'ok', 'ok'])
"""
from .calibrate import CalibrationResult, calibrate
from .design import DESIGNS, Parameter, make_design, parse_parameter
from .execute import StudyResult, run_study, serial_conflict
from .records import StudyFolder

__all__ = ["DESIGNS", "Parameter", "make_design", "parse_parameter", "StudyResult", "run_study", "StudyFolder",
           "CalibrationResult", "calibrate", "serial_conflict"]
