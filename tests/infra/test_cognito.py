"""The Cognito user pool of a real shop: case-insensitive sign-in, SES mail, OAuth only when used, threat protection."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.settings import DeployConfig
from tests.infra.conftest import AUTH_OPTIONS, PINNED

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _one(assembly: Any, cfn_type: str) -> dict[str, Any]:
    (resource,) = Template.from_json(assembly.templates["ShopApi"]).find_resources(cfn_type).values()
    return resource["Properties"]


@pytest.mark.parametrize("assembly_name", ["arm64", "staging", "cognito_options"])
def test_sign_in_ignores_the_case_of_the_email(request, assembly_name) -> None:
    pool = _one(request.getfixturevalue(assembly_name), "AWS::Cognito::UserPool")
    assert pool["UsernameConfiguration"] == {"CaseSensitive": False}


def test_by_default_the_app_client_has_no_oauth_and_cognito_mails(arm64) -> None:
    client = _one(arm64, "AWS::Cognito::UserPoolClient")
    assert client["ExplicitAuthFlows"] == ["ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is False
    assert not {"AllowedOAuthFlows", "AllowedOAuthScopes", "CallbackURLs"} & set(client)
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    pool = _one(arm64, "AWS::Cognito::UserPool")
    assert "EmailConfiguration" not in pool  # Cognito's own mailer
    assert pool["UserPoolTier"] == "ESSENTIALS"
    assert "UserPoolAddOns" not in pool
    Template.from_json(arm64.templates["ShopApi"]).resource_count_is("AWS::Cognito::UserPoolDomain", 0)


def test_callback_urls_enable_the_code_flow_only(cognito_options) -> None:
    client = _one(cognito_options, "AWS::Cognito::UserPoolClient")
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["AllowedOAuthFlows"] == ["code"]  # no implicit grant, no client credentials
    assert sorted(client["AllowedOAuthScopes"]) == ["email", "openid"]
    assert client["CallbackURLs"] == AUTH_OPTIONS["auth_callback_urls"].split(",")
    assert client["LogoutURLs"] == [AUTH_OPTIONS["auth_logout_urls"]]
    domain = _one(cognito_options, "AWS::Cognito::UserPoolDomain")
    assert domain["Domain"] == AUTH_OPTIONS["auth_domain_prefix"]


def test_ses_sends_the_pools_mail(cognito_options) -> None:
    email = _one(cognito_options, "AWS::Cognito::UserPool")["EmailConfiguration"]
    assert email["EmailSendingAccount"] == "DEVELOPER"
    assert email["From"] == "Shop <shop@mail.example.com>"
    assert ":ses:eu-west-1:111111111111:identity/shop@mail.example.com" in str(email["SourceArn"])


def test_threat_protection_is_an_option(cognito_options) -> None:
    pool = _one(cognito_options, "AWS::Cognito::UserPool")
    assert pool["UserPoolTier"] == "PLUS"
    assert pool["UserPoolAddOns"] == {"AdvancedSecurityMode": "ENFORCED"}


def _admin_mfa_trigger(assembly: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The pre token generation trigger: (logical id, function, the pool's LambdaConfig)."""
    resources = assembly.templates["ShopApi"]["Resources"]
    config = _one(assembly, "AWS::Cognito::UserPool")["LambdaConfig"]
    trigger = config["PreTokenGenerationConfig"]
    assert trigger["LambdaVersion"] == "V2_0"  # version 2 overrides the groups of the access token too
    (function_id, _) = trigger["LambdaArn"]["Fn::GetAtt"]
    return function_id, resources[function_id], config


@pytest.mark.parametrize("assembly_name", ["arm64", "staging", "cognito_options", "edge"])
def test_admin_tokens_need_mfa_through_the_pre_token_trigger(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    function_id, function, config = _admin_mfa_trigger(assembly)
    assert set(config) == {"PreTokenGenerationConfig"}  # no other trigger
    properties = function["Properties"]
    assert properties["Handler"] == "admin_mfa.handler"
    assert (assembly.asset_dir(function) / "admin_mfa.py").is_file()
    assert properties["Timeout"] == 5
    assert properties["LoggingConfig"]["LogFormat"] == "JSON"
    assert function["Metadata"]["shop:local"] is False  # make dev has no Cognito
    permissions = Template.from_json(assembly.templates["ShopApi"]).find_resources("AWS::Lambda::Permission")
    assert any(
        p["Properties"]["Principal"] == "cognito-idp.amazonaws.com"
        and p["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
        for p in permissions.values()
    )


def test_the_trigger_may_call_only_admin_get_user_on_its_pool(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopApi"])
    _, function, _ = _admin_mfa_trigger(arm64)
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    (pool_id,) = template.find_resources("AWS::Cognito::UserPool")
    statements = [
        statement
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    cognito_statements = [s for s in statements if "logs:PutLogEvents" not in s["Action"]]
    assert cognito_statements == [
        {"Action": "cognito-idp:AdminGetUser", "Effect": "Allow", "Resource": {"Fn::GetAtt": [pool_id, "Arn"]}}
    ]
    (logs,) = [s for s in statements if s not in cognito_statements]
    assert logs["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
    roles = template.find_resources("AWS::IAM::Role")
    assert not roles[role]["Properties"].get("ManagedPolicyArns")
    assert not roles[role]["Properties"].get("Policies")


def test_an_external_issuer_has_no_user_pool_and_no_trigger(prod_external) -> None:
    template = Template.from_json(prod_external.templates["ShopApi"])
    template.resource_count_is("AWS::Cognito::UserPool", 0)
    handlers = [f["Properties"].get("Handler") for f in template.find_resources("AWS::Lambda::Function").values()]
    assert "admin_mfa.handler" not in handlers


def _config(**context: str) -> DeployConfig:
    return DeployConfig.from_context({"stage": "dev", **context}.get)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"ses_from_email": "not-an-address"}, "ses_from_email must be an email"),
        ({"ses_from_email": "shop@example.com"}, "needs -c region"),
        ({"auth_callback_urls": "https://shop.example.com/cb"}, "needs -c auth_domain_prefix"),
        (
            {"auth_callback_urls": "http://shop.example.com/cb", "auth_domain_prefix": "shop-dev"},
            "https URLs",
        ),
        ({"auth_logout_urls": "https://shop.example.com/", "auth_domain_prefix": "shop-dev"}, "goes with"),
        ({"auth_callback_urls": "https://a.example.com/", "auth_domain_prefix": "Shop_Dev"}, "auth_domain_prefix"),
        ({"auth_callback_urls": "https://a.example.com/", "auth_domain_prefix": "my-cognito"}, "auth_domain_prefix"),
        ({"cognito_threat_protection": "yes"}, "true or false"),
    ],
)
def test_cognito_context_is_validated(context, message) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**context)


def test_localhost_callbacks_may_use_http_and_ses_takes_the_pinned_region() -> None:
    config = _config(
        auth_callback_urls="http://localhost:5173/cb",
        auth_domain_prefix="shop-dev",
        ses_from_email="a@example.com",
        **PINNED,
    )
    assert config.auth.callback_urls == ("http://localhost:5173/cb",)
    assert config.auth.ses_from_email == "a@example.com"
