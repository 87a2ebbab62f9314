"""The deployment pipeline (.github/workflows): valid for GitHub, tests first, stage by stage, OIDC, approval."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.settings import ROOT

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

WORKFLOWS = ROOT / ".github" / "workflows"


def _lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema (requirements/dev.in) against its bundled GitHub workflow schema, offline."""
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _workflow(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_every_workflow_passes_the_linter() -> None:
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    assert workflows
    result = _lint(*workflows)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_rejects_a_broken_workflow(tmp_path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("name: broken\non: push\njobs:\n  test:\n    steps:\n      - run: make test\n")  # no runs-on
    result = _lint(broken)
    assert result.returncode != 0
    assert "runs-on" in result.stdout + result.stderr


def test_tests_run_before_the_first_stage_deploys() -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    assert jobs["test"]["uses"] == "./.github/workflows/test.yml"
    (suite,) = _workflow("test.yml")["jobs"].values()
    assert any(step.get("run", "").startswith("make test") for step in suite["steps"])
    assert jobs["deploy-dev"]["needs"] == "test"


def test_pull_requests_run_the_fast_lane() -> None:
    workflow = _workflow("fast-lane.yml")
    assert set(workflow[True]) == {"pull_request"}  # YAML 1.1 reads the key `on` as True
    (lane,) = workflow["jobs"].values()
    runs = " ".join(step.get("run", "") for step in lane["steps"])
    assert "make lint typecheck unit" in runs


def test_stages_deploy_one_after_another_ending_with_prod() -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    order = [(job["with"]["stage"], job["needs"]) for job in jobs.values() if "with" in job]
    assert order == [("dev", "test"), ("staging", "deploy-dev"), ("prod", "deploy-staging")]
    for job in jobs.values():
        if "with" in job:
            assert job["uses"] == "./.github/workflows/deploy-stage.yml"


def test_a_stage_deploys_in_its_environment_with_an_oidc_role() -> None:
    workflow = _workflow("deploy-stage.yml")
    (job,) = workflow["jobs"].values()
    # the GitHub environment named like the stage: prod's required reviewers are the approval
    assert job["environment"] == "${{ inputs.stage }}"
    assert workflow["permissions"]["id-token"] == "write"
    (credentials,) = [step for step in job["steps"] if "configure-aws-credentials" in step.get("uses", "")]
    assert set(credentials["with"]) == {"role-to-assume", "role-session-name", "aws-region"}
    text = (WORKFLOWS / "deploy-stage.yml").read_text() + (WORKFLOWS / "deploy.yml").read_text()
    assert "aws-access-key-id" not in text, "no stored AWS keys"
    assert "secrets." not in text, "no stored AWS keys"
    (deploy,) = [step for step in job["steps"] if "make deploy" in step.get("run", "")]
    assert "-c stage=$STAGE" in deploy["run"]
    assert "-c account=$ACCOUNT" in deploy["run"]


def test_runs_of_one_ref_deploy_one_after_the_other() -> None:
    """Two pushes to main: the older run's jobs must not run beside the newer run's.

    With only a per-stage group, the two runs test in parallel and whichever finishes first deploys
    first, so the older commit can land over the newer one (prod too, if approvals come out of order).
    """
    deploy = _workflow("deploy.yml")
    assert deploy["concurrency"] == {"group": "deploy-${{ github.ref }}", "cancel-in-progress": False}
    for name, job in deploy["jobs"].items():
        assert "concurrency" not in job, f"{name}: the run, not one job, holds the ref's group"


def test_one_deployment_per_stage_at_a_time_whatever_the_ref() -> None:
    """Two refs (a push to main, a dispatch of another branch) must not deploy one stage at once."""
    (job,) = _workflow("deploy-stage.yml")["jobs"].values()
    assert job["concurrency"] == {"group": "deploy-${{ inputs.stage }}", "cancel-in-progress": False}
