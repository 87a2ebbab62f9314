#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth -c arch=<arm64|x86_64> [-c stage=prod]` (see docs/deploy.md)."""

import sys

from infra.app_factory import build_app

try:
    shop = build_app()
except ValueError as error:  # a context value is missing or wrong: say which, without a traceback
    sys.exit(f"error: {error}")
shop.app.synth()
