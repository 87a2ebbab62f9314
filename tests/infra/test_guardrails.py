"""cdk-nag AwsSolutions (every finding acknowledged with a reason), cfn-lint, alarms."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


# Every configuration the infra tests synthesize: each one's cdk-nag report and cfn-lint.
ASSEMBLIES = (
    "arm64",
    "x86_64",
    "prod_external",
    "staging",
    "edge",
    "edge_default_domain",
    "cognito_options",
    "snapstart",
    "payments_on",
    "capture_on_confirm",
)


@pytest.mark.parametrize("assembly_name", ASSEMBLIES)
def test_cdk_nag_reports_no_unacknowledged_finding(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)  # synth itself fails on a finding
    report = json.loads((assembly.outdir / "validation-report.json").read_text())
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert nag["conclusion"] == "success"
    assert nag["violations"] == []
    assert nag["suppressedViolations"], "the acknowledged findings should be reported"
    for violation in nag["suppressedViolations"]:
        assert violation["acknowledgedId"].startswith("AwsSolutions::"), violation
        assert len(violation["reason"]) >= 40, violation


def test_every_acknowledgement_carries_a_reason(arm64) -> None:
    acknowledged = 0
    for template in arm64.templates.values():
        for resource in template["Resources"].values():
            for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
                acknowledged += 1
                assert rule["id"].startswith("AwsSolutions::AwsSolutions-")
                assert len(rule["reason"]) >= 40, rule
    assert acknowledged


# A content hash of an asset (code, layer, nested file) in a template: the only difference between many of the
# configurations' copies of one stack (x86_64's and arm64's data stack, say).
ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def test_cfn_lint_is_clean(request) -> None:
    """Every distinct template of every assembly in one cfn-lint run: its start (about 4 s of CPU, the rules and
    schemas) is paid once, not once per assembly, and a template that differs from one already taken only in its
    assets' hashes (strings cfn-lint reads as any other) is not linted twice: 40 of the 60 (31 -> 21 s of CPU)."""
    templates: dict[str, str] = {}
    for assembly_name in ASSEMBLIES:
        assembly = request.getfixturevalue(assembly_name)
        files = sorted(Path(assembly.outdir).glob("*.template.json"))
        assert len(files) == len(assembly.templates), assembly_name
        for file in files:
            templates.setdefault(ASSET_HASH.sub("<asset>", file.read_text(encoding="utf-8")), str(file))
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run(
        [str(cfn_lint), *templates.values()], capture_output=True, text=True, check=False, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
