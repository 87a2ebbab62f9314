"""Whether a function wraps its handler in Powertools' Tracer: POWERTOOLS_TRACE_DISABLED read exactly as
Powertools reads it, with its own helper, so that a value it takes for "off" never loads Tracer and X-Ray."""

from __future__ import annotations

import os

from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice


def tracing_disabled() -> bool:
    """True for any spelling Powertools takes as true (1, y, yes, t, true, on, in any case); a value it cannot
    read raises ValueError, as Tracer() itself would."""
    return resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false"))
