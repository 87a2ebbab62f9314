"""The HTTP API: every route of shop.http_api.routes, its function and authorizer; stage, CORS, outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from shop.http_api.routes import ROUTES

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# What the template must wire: every route of the one table (shop.http_api.routes, which
# tests/functions/test_routes.py ties to the handlers), to its function and authorizer.
PUBLIC = "public"
JWT = "jwt"
EXPECTED_ROUTES = {route.route_key: (route.function, PUBLIC if route.public else JWT) for route in ROUTES}


def _api(assembly: Any) -> dict[str, Any]:
    return assembly.templates["ShopApi"]


def _wiring(assembly: Any) -> dict[str, tuple[str, str]]:
    """route key -> (function name, "jwt"|"public"), read from the template only."""
    resources = _api(assembly)["Resources"]
    function_names = {logical_id: name for name, (_, logical_id, _) in assembly.functions().items()}
    wiring = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::ApiGatewayV2::Route":
            continue
        props = resource["Properties"]
        target = props["Target"]["Fn::Join"][1]
        assert target[0] == "integrations/"
        integration = resources[target[1]["Ref"]]["Properties"]
        assert integration["IntegrationType"] == "AWS_PROXY"
        assert integration["PayloadFormatVersion"] == "2.0"
        # the route invokes the function's `live` alias (CodeDeploy shifts it in protected stages)
        alias = resources[integration["IntegrationUri"]["Ref"]]
        assert alias["Type"] == "AWS::Lambda::Alias"
        assert alias["Properties"]["Name"] == "live"
        function = function_names[alias["Properties"]["FunctionName"]["Ref"]]
        auth = props.get("AuthorizationType", "NONE")
        if auth == "JWT":
            assert "AuthorizerId" in props
            wiring[props["RouteKey"]] = (function, JWT)
        else:
            assert auth == "NONE"
            assert "AuthorizerId" not in props
            wiring[props["RouteKey"]] = (function, PUBLIC)
    return wiring


def test_every_contract_route_is_wired_to_its_function_and_authorizer(arm64) -> None:
    assert _wiring(arm64) == EXPECTED_ROUTES


def test_http_api_is_payload_2_with_one_jwt_authorizer_on_cognito(arm64) -> None:
    template = Template.from_json(_api(arm64))
    template.has_resource_properties("AWS::ApiGatewayV2::Api", {"ProtocolType": "HTTP"})
    template.resource_count_is("AWS::ApiGatewayV2::Authorizer", 1)
    (authorizer,) = template.find_resources("AWS::ApiGatewayV2::Authorizer").values()
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "JWT"
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    issuer = json.dumps(props["JwtConfiguration"]["Issuer"])
    assert "cognito-idp." in issuer
    assert "UserPool" in issuer
    (audience,) = props["JwtConfiguration"]["Audience"]
    assert "AppClient" in audience["Ref"]
    template.has_resource_properties("AWS::Cognito::UserPoolGroup", {"GroupName": "admin"})
    template.has_resource_properties("AWS::Cognito::UserPoolClient", {"GenerateSecret": False})


def test_external_issuer_replaces_the_user_pool(prod_external) -> None:
    template = Template.from_json(_api(prod_external))
    template.resource_count_is("AWS::Cognito::UserPool", 0)
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {
            "AuthorizerType": "JWT",
            "JwtConfiguration": {
                "Issuer": "https://issuer.example.com/",
                "Audience": ["shop-api", "shop-admin"],
            },
        },
    )
    assert _wiring(prod_external) == EXPECTED_ROUTES
    outputs = _api(prod_external)["Outputs"]
    assert "ApiUrl" in outputs
    assert "UserPoolId" not in outputs


def test_cors_comes_from_context(arm64, prod_external) -> None:
    (api,) = Template.from_json(_api(arm64)).find_resources("AWS::ApiGatewayV2::Api").values()
    assert "CorsConfiguration" not in api["Properties"]
    Template.from_json(_api(prod_external)).has_resource_properties(
        "AWS::ApiGatewayV2::Api",
        {"CorsConfiguration": Match.object_like({"AllowOrigins": ["https://shop.example.com"]})},
    )


def test_default_stage_throttles_and_logs_access(arm64) -> None:
    template = Template.from_json(_api(arm64))
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "DefaultRouteSettings": {"ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200},
            "AccessLogSettings": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp(r"\$context\.requestId"),
            },
        },
    )


def test_outputs(arm64) -> None:
    assert {"ApiUrl", "UserPoolId", "UserPoolClientId"} <= set(_api(arm64)["Outputs"])
    assert "TableName" in arm64.templates["ShopData"]["Outputs"]


def test_public_write_routes_have_their_own_lower_throttle(arm64) -> None:
    template = Template.from_json(_api(arm64))
    (stage_id, stage) = next(iter(template.find_resources("AWS::ApiGatewayV2::Stage").items()))
    public_writes = {route.route_key for route in ROUTES if route.public and route.method != "GET"}
    assert public_writes  # the sessions' writes
    assert stage["Properties"]["RouteSettings"] == {
        key: {"ThrottlingRateLimit": 20, "ThrottlingBurstLimit": 40} for key in public_writes
    }
    # CloudFormation must create the routes before a stage that names them
    routes = {
        logical_id
        for logical_id, route in template.find_resources("AWS::ApiGatewayV2::Route").items()
        if route["Properties"]["RouteKey"] in public_writes
    }
    assert routes <= set(stage.get("DependsOn", [])), stage_id


def test_access_log_lines_carry_who_what_and_why(arm64) -> None:
    (stage,) = Template.from_json(_api(arm64)).find_resources("AWS::ApiGatewayV2::Stage").values()
    line = json.loads(stage["Properties"]["AccessLogSettings"]["Format"])
    assert {
        "ip": "$context.identity.sourceIp",
        "userAgent": "$context.identity.userAgent",
        "method": "$context.httpMethod",
        "path": "$context.path",
        "routeKey": "$context.routeKey",
        "status": "$context.status",
        "errorMessage": "$context.error.message",
        "errorType": "$context.error.responseType",
    }.items() <= line.items()
