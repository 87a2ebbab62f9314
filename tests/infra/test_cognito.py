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
