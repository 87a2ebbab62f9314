"""`-c edge=true`: CloudFront with AWS WAF in front of the HTTP API, whose execute-api endpoint is off."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.constructs.edge import COMMON_RULE_SET_SIZE_LIMITS
from infra.settings import ROOT, ROUTES, DeployConfig
from shop.http_api.product_schemas import ProductIn
from shop.limits import (
    MAX_ID_LENGTH,
    MAX_LIMIT,
    MAX_PRICE_CENTS,
    MAX_PRODUCT_CATEGORIES,
    MAX_PRODUCT_NAME_LENGTH,
    MAX_SLUG_LENGTH,
    MAX_STOCK,
    MAX_TOKEN_LENGTH,
)
from tests.infra.conftest import EDGE, EDGE_DOMAIN

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # AWS managed cache policy id
ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac"  # AWS managed origin request policy id


def _edge(assembly: Any) -> Template:
    return Template.from_json(assembly.templates["ShopEdge"])


def test_no_edge_stack_unless_asked(arm64) -> None:
    assert "ShopEdge" not in arm64.templates
    (api,) = Template.from_json(arm64.templates["ShopApi"]).find_resources("AWS::ApiGatewayV2::Api").values()
    assert not api["Properties"].get("DisableExecuteApiEndpoint", False)


def test_the_edge_stack_lives_where_cloudfront_reads_web_acls(edge) -> None:
    manifest = json.loads((edge.outdir / "manifest.json").read_text())
    assert manifest["artifacts"]["ShopEdge"]["environment"] == "aws://111111111111/us-east-1"
    assert manifest["artifacts"]["ShopApi"]["environment"] == "aws://111111111111/eu-west-1"


def test_web_acl_limits_each_ip_then_applies_aws_managed_rules(edge) -> None:
    (acl,) = _edge(edge).find_resources("AWS::WAFv2::WebACL").values()
    props = acl["Properties"]
    assert props["Scope"] == "CLOUDFRONT"
    assert props["DefaultAction"] == {"Allow": {}}
    rules = sorted(props["Rules"], key=lambda rule: rule["Priority"])
    assert rules[0]["Name"] == "PerIpRateLimit"
    assert rules[0]["Action"] == {"Block": {}}
    assert rules[0]["Statement"] == {
        "RateBasedStatement": {"AggregateKeyType": "IP", "Limit": 1000, "EvaluationWindowSec": 300}
    }
    managed = [rule["Statement"]["ManagedRuleGroupStatement"] for rule in rules[1:]]
    assert [(group["VendorName"], group["Name"]) for group in managed] == [
        ("AWS", "AWSManagedRulesCommonRuleSet"),
        ("AWS", "AWSManagedRulesKnownBadInputsRuleSet"),
        ("AWS", "AWSManagedRulesAmazonIpReputationList"),
    ]
    for rule in rules:
        assert rule["VisibilityConfig"]["CloudWatchMetricsEnabled"] is True, rule["Name"]


def test_distribution_forwards_everything_to_the_api_domain_over_tls_through_the_acl(edge) -> None:
    template = _edge(edge)
    (acl_id,) = template.find_resources("AWS::WAFv2::WebACL")
    (bucket_id,) = template.find_resources("AWS::S3::Bucket")
    template.has_resource_properties(
        "AWS::CloudFront::Distribution",
        {
            "DistributionConfig": Match.object_like(
                {
                    "WebACLId": {"Fn::GetAtt": [acl_id, "Arn"]},
                    "Aliases": ["api.shop.example.com"],
                    "ViewerCertificate": {
                        "AcmCertificateArn": EDGE_DOMAIN["edge_certificate_arn"],
                        "MinimumProtocolVersion": "TLSv1.2_2021",
                        "SslSupportMethod": "sni-only",
                    },
                    "Logging": Match.object_like({"Bucket": {"Fn::GetAtt": [bucket_id, "RegionalDomainName"]}}),
                    "Origins": [
                        Match.object_like(
                            {
                                "DomainName": "origin.shop.example.com",
                                "CustomOriginConfig": Match.object_like(
                                    {"OriginProtocolPolicy": "https-only", "OriginSSLProtocols": ["TLSv1.2"]}
                                ),
                            }
                        )
                    ],
                    "DefaultCacheBehavior": Match.object_like(
                        {
                            "ViewerProtocolPolicy": "https-only",
                            "CachePolicyId": CACHING_DISABLED,
                            "OriginRequestPolicyId": ALL_VIEWER_EXCEPT_HOST_HEADER,
                            "AllowedMethods": ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"],
                        }
                    ),
                }
            )
        },
    )
    assert edge.templates["ShopEdge"]["Outputs"]["ApiUrl"]["Value"] == "https://api.shop.example.com/"


def test_without_the_domain_hook_the_distribution_uses_its_own_name(edge_default_domain) -> None:
    (distribution,) = _edge(edge_default_domain).find_resources("AWS::CloudFront::Distribution").values()
    assert "Aliases" not in distribution["Properties"]["DistributionConfig"]
    url = json.dumps(edge_default_domain.templates["ShopEdge"]["Outputs"]["ApiUrl"]["Value"])
    assert "DomainName" in url


def test_the_api_answers_on_its_custom_domain_only(edge) -> None:
    template = Template.from_json(edge.templates["ShopApi"])
    template.has_resource_properties("AWS::ApiGatewayV2::Api", {"DisableExecuteApiEndpoint": True})
    template.has_resource_properties(
        "AWS::ApiGatewayV2::DomainName",
        {
            "DomainName": "origin.shop.example.com",
            "DomainNameConfigurations": [
                Match.object_like(
                    {
                        "CertificateArn": EDGE["edge_origin_certificate_arn"],
                        "EndpointType": "REGIONAL",
                        "SecurityPolicy": "TLS_1_2",
                    }
                )
            ],
        },
    )
    template.resource_count_is("AWS::ApiGatewayV2::ApiMapping", 1)
    outputs = edge.templates["ShopApi"]["Outputs"]
    assert "ApiUrl" not in outputs  # the execute-api URL answers nothing; the edge stack has the URL
    assert "OriginDnsTarget" in outputs


def _config(**context: str) -> DeployConfig:
    return DeployConfig.from_context(context.get)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"edge": "true"}, "give the API a custom domain"),
        ({**EDGE, "edge_domain": "api.shop.example.com"}, "go together"),
        (
            {**EDGE, **EDGE_DOMAIN, "edge_certificate_arn": EDGE["edge_origin_certificate_arn"]},
            "must be in us-east-1",
        ),
        ({**EDGE, "edge_origin_domain": "Origin Shop"}, "must be a lower-case DNS name"),
        ({**EDGE, "edge_origin_certificate_arn": "arn:aws:iam::111111111111:x"}, "must be an ACM certificate ARN"),
        ({**EDGE, "waf_rate_limit": "5"}, "AWS WAF's minimum"),
        ({"edge": "yes"}, "edge must be true or false"),
    ],
)
def test_edge_context_is_validated(context, message) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**context)


def test_edge_settings_from_context() -> None:
    config = _config(**EDGE, **EDGE_DOMAIN, waf_rate_limit="500")
    assert config.edge is not None
    assert (config.edge.origin_domain, config.edge.domain, config.edge.rate_limit) == (
        "origin.shop.example.com",
        "api.shop.example.com",
        500,
    )
    assert _config().edge is None


WIDE = "\U0001f600"  # four bytes of UTF-8: the worst case of a character the contract counts


def _largest_requests() -> dict[str, int]:
    """Bytes of the largest request part the contract admits, per Common rule set size rule (no cookie is read)."""
    spec = json.loads((ROOT / "openapi.json").read_text())
    (description,) = [
        s["maxLength"]
        for s in spec["components"]["schemas"]["ProductInCategories"]["properties"]["description"]["anyOf"]
        if s.get("maxLength")
    ]
    body = {
        "name": WIDE * MAX_PRODUCT_NAME_LENGTH,
        "categories": [f"{i}{'c' * (MAX_SLUG_LENGTH - 1)}" for i in range(MAX_PRODUCT_CATEGORIES)],
        "price_cents": MAX_PRICE_CENTS,
        "description": WIDE * description,
        "stock": MAX_STOCK,
        "low_stock_threshold": MAX_STOCK,
    }
    ProductIn.model_validate(body)  # the API admits it
    parameters = {
        p["name"]: p["schema"].get("anyOf", [p["schema"]])[0] for p in spec["paths"]["/products"]["get"]["parameters"]
    }
    assert parameters["next_token"]["maxLength"] == MAX_TOKEN_LENGTH  # the contract's own bounds
    assert parameters["category"]["maxLength"] == MAX_SLUG_LENGTH
    query = f"category={'c' * MAX_SLUG_LENGTH}&limit={MAX_LIMIT}&next_token={'t' * MAX_TOKEN_LENGTH}"
    encoded_id = "".join(f"%{byte:02X}" for byte in (WIDE * MAX_ID_LENGTH).encode())  # an id, percent-encoded
    longest_path = max(len(re.sub(r"\{\w+\}", encoded_id, route.path)) for route in ROUTES if "{" in route.path)
    return {
        "SizeRestrictions_BODY": len(json.dumps(body, ensure_ascii=False).encode()),
        "SizeRestrictions_QUERYSTRING": len(query.encode()),
        "SizeRestrictions_URIPATH": longest_path,
        "SizeRestrictions_Cookie_HEADER": 0,
    }


def test_the_web_acl_admits_the_largest_request_the_contract_admits(edge) -> None:
    """A Common rule set size rule blocks above its limit: where the contract admits more, the rule only counts."""
    (acl,) = _edge(edge).find_resources("AWS::WAFv2::WebACL").values()
    (common,) = [
        rule["Statement"]["ManagedRuleGroupStatement"]
        for rule in acl["Properties"]["Rules"]
        if rule["Name"] == "AWSManagedRulesCommonRuleSet"
    ]
    counted = {o["Name"] for o in common.get("RuleActionOverrides", []) if o["ActionToUse"] == {"Count": {}}}
    assert counted == {o["Name"] for o in common.get("RuleActionOverrides", [])}  # counts, never allows
    largest = _largest_requests()
    assert set(largest) == set(COMMON_RULE_SET_SIZE_LIMITS)
    for rule, limit in COMMON_RULE_SET_SIZE_LIMITS.items():
        assert (rule in counted) == (largest[rule] > limit), (rule, largest[rule], limit)
    assert {"SizeRestrictions_BODY", "SizeRestrictions_QUERYSTRING"} <= counted  # issue 23: 16 KB, 4 KB


def test_the_web_acl_logs_to_a_waf_log_group_without_tokens(edge) -> None:
    template = _edge(edge)
    (group,) = template.find_resources("AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 30}}).values()
    assert group["Properties"]["LogGroupName"] == "aws-waf-logs-shop-prod-edge"
    (acl_id,) = template.find_resources("AWS::WAFv2::WebACL")
    (logging,) = template.find_resources("AWS::WAFv2::LoggingConfiguration").values()
    props = logging["Properties"]
    assert props["ResourceArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    (destination,) = props["LogDestinationConfigs"]
    assert destination == "arn:aws:logs:us-east-1:111111111111:log-group:aws-waf-logs-shop-prod-edge"  # no ":*"
    assert props["RedactedFields"] == [{"SingleHeader": {"Name": "authorization"}}]
