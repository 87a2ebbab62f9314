#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth -c arch=<arm64|x86_64> [-c stage=prod]` (see docs/deploy.md)."""

from infra.app_factory import build_app

build_app().app.synth()
