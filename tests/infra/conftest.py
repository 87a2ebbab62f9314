"""Synthesized cloud assemblies, built once per test session (synth is slow).

``arm64`` is the default (deployed) architecture; ``x86_64`` is this machine's,
used by the packaging test; ``prod_external`` is a production-stage synth with
an external JWT issuer; ``staging`` is another protected stage (Cognito, an
existing alarm topic, a runbook URL); ``sam_local`` is the ``-c local=true`` synth for
`sam local invoke`; ``snapstart`` is a protected stage with ``-c snapstart=true``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
os.environ.setdefault("JSII_RUNTIME_PACKAGE_CACHE_ROOT", str(Path(__file__).resolve().parents[2] / ".cache" / "jsii"))


# Protected stages are pinned to an account and region; these are dummies (synth stays offline).
PINNED = {"account": "111111111111", "region": "eu-west-1"}
STAGING_ALARM_TOPIC = "arn:aws:sns:eu-west-1:111111111111:ops-pager"
EDGE = {
    "edge": "true",
    "edge_origin_domain": "origin.shop.example.com",
    "edge_origin_certificate_arn": "arn:aws:acm:eu-west-1:111111111111:certificate/11111111-2222-3333-4444-555555555555",
}
EDGE_DOMAIN = {
    "edge_domain": "api.shop.example.com",
    "edge_certificate_arn": "arn:aws:acm:us-east-1:111111111111:certificate/66666666-7777-8888-9999-000000000000",
}
STAGING_RUNBOOK = "https://github.com/example/shop/blob/main/docs/operations.md"


@dataclass
class Assembly:
    """A synthesized app: its output folder and every template by stack id."""

    outdir: Path
    templates: dict[str, dict[str, Any]]
    shop: Any

    def resources(self, cfn_type: str) -> dict[str, tuple[str, dict[str, Any]]]:
        """``{logical id: (stack id, resource)}`` of one CloudFormation type over all stacks."""
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        for stack_id, template in self.templates.items():
            for logical_id, resource in template.get("Resources", {}).items():
                if resource["Type"] == cfn_type:
                    found[logical_id] = (stack_id, resource)
        return found

    def functions(self) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """``{function name: (stack id, logical id, resource)}`` via the shop:function metadata."""
        return {
            resource["Metadata"]["shop:function"]: (stack_id, logical_id, resource)
            for logical_id, (stack_id, resource) in self.resources("AWS::Lambda::Function").items()
            if "shop:function" in resource.get("Metadata", {})
        }

    def asset_dir(self, resource: dict[str, Any]) -> Path:
        return self.outdir / resource["Metadata"]["aws:asset:path"]


def _synth(tmp_path_factory: pytest.TempPathFactory, name: str, context: dict[str, Any]) -> Assembly:
    from infra import build_layers
    from infra.app_factory import build_app

    build_layers.build(context.get("arch", "arm64"))
    if context.get("payments") == "stripe":
        build_layers.build(context.get("arch", "arm64"), layer="payments")
    outdir = tmp_path_factory.mktemp(f"cdk-{name}")
    shop = build_app(context=context, outdir=str(outdir))
    shop.app.synth()  # raises when cdk-nag reports an unacknowledged finding
    templates = {
        stack.node.id: json.loads((outdir / f"{stack.node.id}.template.json").read_text()) for stack in shop.stacks
    }
    return Assembly(outdir=outdir, templates=templates, shop=shop)


@pytest.fixture(scope="session")
def arm64(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The default synth (no context): what `make deploy` ships."""
    return _synth(tmp_path_factory, "arm64", {})


@pytest.fixture(scope="session")
def x86_64(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    return _synth(tmp_path_factory, "x86_64", {"arch": "x86_64"})


@pytest.fixture(scope="session")
def prod_external(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    return _synth(
        tmp_path_factory,
        "prod",
        {
            "arch": "x86_64",
            "stage": "prod",
            "jwt_issuer": "https://issuer.example.com/",
            "jwt_audience": "shop-api,shop-admin",
            "cors_origins": "https://shop.example.com",
            **PINNED,
            "alarm_email": "oncall@example.com",
        },
    )


@pytest.fixture(scope="session")
def staging(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """A protected stage that is not called prod: a second stage next to dev and prod in one account."""
    return _synth(
        tmp_path_factory,
        "staging",
        {
            "arch": "x86_64",
            "stage": "staging",
            **PINNED,
            "alarm_topic_arn": STAGING_ALARM_TOPIC,
            "runbook_url": STAGING_RUNBOOK,
        },
    )


@pytest.fixture(scope="session")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`-c edge=true` on prod: CloudFront and WAF in front, the API on its custom domain only."""
    return _synth(
        tmp_path_factory,
        "edge",
        {
            "arch": "x86_64",
            "stage": "prod",
            **PINNED,
            "alarm_email": "oncall@example.com",
            **EDGE,
            **EDGE_DOMAIN,
        },
    )


@pytest.fixture(scope="session")
def edge_default_domain(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`-c edge=true` without the custom domain hook: the distribution's cloudfront.net name."""
    return _synth(tmp_path_factory, "edge-default", {"arch": "x86_64", **EDGE})


@pytest.fixture(scope="session")
def sam_local(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`make synth-local`: the template `sam local invoke` reads (never deployed)."""
    return _synth(tmp_path_factory, "local", {"arch": "x86_64", "local": "true"})


@pytest.fixture(scope="session")
def snapstart(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`-c snapstart=true` on a protected stage: SnapStart versions behind the aliases and their canaries."""
    return _synth(
        tmp_path_factory,
        "snapstart",
        {"arch": "x86_64", "stage": "prod", **PINNED, "alarm_email": "oncall@example.com", "snapstart": "true"},
    )


# The Cognito options of a real shop (docs/infrastructure.md#cognito).
AUTH_OPTIONS = {
    "ses_from_email": "shop@mail.example.com",
    "auth_callback_urls": "https://shop.example.com/auth/callback,http://localhost:5173/callback",
    "auth_logout_urls": "https://shop.example.com/",
    "auth_domain_prefix": "example-shop-dev",
    "cognito_threat_protection": "true",
}


@pytest.fixture(scope="session")
def cognito_options(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """dev with every user pool option on: SES mail, the hosted sign-in's code flow, threat protection."""
    return _synth(tmp_path_factory, "cognito", {"arch": "x86_64", **PINNED, **AUTH_OPTIONS})


@pytest.fixture(scope="session")
def payments_on(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`-c payments=stripe` on a protected stage: the Stripe secret, the payments layer, payment_steps."""
    return _synth(
        tmp_path_factory,
        "payments",
        {"arch": "x86_64", "stage": "prod", **PINNED, "alarm_email": "oncall@example.com", "payments": "stripe"},
    )


@pytest.fixture(scope="session")
def capture_on_confirm(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """`-c payments=stripe -c capture=on_confirm` on dev: captured at CONFIRMED, refunded at CANCELLED."""
    return _synth(tmp_path_factory, "capture", {"arch": "x86_64", "payments": "stripe", "capture": "on_confirm"})
