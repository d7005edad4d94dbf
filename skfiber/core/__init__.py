"""The core layer: state, evaluations, Newton's options and errors (no physics).

Every other part of skfiber may import from here; this package imports nothing of skfiber.
"""
from .errors import ConvergenceError, InadmissibleState
from .newton_options import NewtonOptions
from .state import ROUNDOFF_FACTOR, Evaluation, EulerRates, ResidualMemo, State, check_state, check_state_of
from .step_control import AdaptiveCursor, ErrorControl, StepCounts, output_grid, run_adaptive

__all__ = ["State", "Evaluation", "EulerRates", "ResidualMemo", "NewtonOptions", "ConvergenceError", "InadmissibleState",
           "ROUNDOFF_FACTOR", "check_state", "check_state_of", "ErrorControl", "StepCounts", "AdaptiveCursor",
           "run_adaptive", "output_grid"]
