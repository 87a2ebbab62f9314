"""`-c snapstart=true` (docs/deploy.md, "SnapStart (opt-in)"): every function behind an alias restores from a
snapshot of its published version; without the flag nothing changes."""

from __future__ import annotations

import json

import pytest

from infra.settings import ROOT, DeployConfig

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

FUNCTIONS = {"customers", "products", "orders", "sessions", "order_events", "payments"}
ON_PUBLISHED_VERSIONS = {"ApplyOn": "PublishedVersions"}
# SnapStart for Python starts at this runtime; /tmp beyond the default 512 MB, EFS, container
# images and provisioned concurrency cannot be combined with it.
OLDEST_PYTHON = (3, 12)
MAX_EPHEMERAL_MB = 512


def _python(runtime: str) -> tuple[int, int]:
    major, minor = runtime.removeprefix("python").split(".")
    return int(major), int(minor)


def test_every_function_behind_an_alias_restores_from_a_snapshot(snapstart) -> None:
    functions = snapstart.functions()
    assert set(functions) == FUNCTIONS
    for name, (_, _, function) in functions.items():
        props = function["Properties"]
        assert props["SnapStart"] == ON_PUBLISHED_VERSIONS, name
        assert _python(props["Runtime"]) >= OLDEST_PYTHON, name
        assert props.get("PackageType", "Zip") == "Zip", name
        assert "FileSystemConfigs" not in props, name
        assert props.get("EphemeralStorage", {"Size": MAX_EPHEMERAL_MB})["Size"] <= MAX_EPHEMERAL_MB, name


def test_each_alias_invokes_a_published_version_of_its_snapstart_function(snapstart) -> None:
    snapshotted = {logical_id for _, logical_id, _ in snapstart.functions().values()}
    aliases = snapstart.resources("AWS::Lambda::Alias")
    assert len(aliases) == len(FUNCTIONS)
    for logical_id, (stack_id, alias) in aliases.items():
        assert "ProvisionedConcurrencyConfig" not in alias["Properties"], logical_id
        version_id, attribute = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"]
        assert attribute == "Version", logical_id
        version = snapstart.templates[stack_id]["Resources"][version_id]
        assert version["Type"] == "AWS::Lambda::Version", logical_id
        assert "ProvisionedConcurrencyConfig" not in version["Properties"], logical_id
        assert version["Properties"]["FunctionName"]["Ref"] in snapshotted, logical_id


def test_functions_invoked_unqualified_do_without(snapstart) -> None:
    """The key rotation, the Cognito trigger and the migration worker run $LATEST, where SnapStart never applies."""
    unqualified = [
        function
        for function in (r for _, r in snapstart.resources("AWS::Lambda::Function").values())
        if "shop:function" not in function.get("Metadata", {})
    ]
    assert len(unqualified) == 3
    for function in unqualified:
        assert "SnapStart" not in function["Properties"]


def test_cdks_publish_reminder_is_answered_not_left_as_a_warning(snapstart) -> None:
    """CDK warns that SnapStart needs published versions; live_alias publishes one, and says so."""
    for stack_id in snapstart.templates:
        metadata = json.loads((snapstart.outdir / f"{stack_id}.metadata.json").read_text())
        kinds = {entry["type"] for entries in metadata.values() for entry in entries}
        assert "aws:cdk:warning" not in kinds, stack_id


@pytest.mark.parametrize("assembly_name", ["arm64", "prod_external"])
def test_snapstart_is_off_unless_asked_for(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    assert not assembly.shop.config.snapstart
    for logical_id, (_, function) in assembly.resources("AWS::Lambda::Function").items():
        assert "SnapStart" not in function["Properties"], logical_id


@pytest.mark.parametrize(("value", "expected"), [(None, False), ("false", False), ("true", True), ("TRUE", True)])
def test_the_snapstart_context_is_true_or_false(value, expected) -> None:
    context = {"snapstart": value} if value is not None else {}
    assert DeployConfig.from_context(context.get).snapstart is expected


def test_another_snapstart_value_is_refused() -> None:
    with pytest.raises(ValueError, match="context snapstart must be true or false, got 'yes'"):
        DeployConfig.from_context({"snapstart": "yes"}.get)


def test_make_synth_passes_the_knob() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "$(if $(SNAPSTART),-c snapstart=$(SNAPSTART),)" in makefile
