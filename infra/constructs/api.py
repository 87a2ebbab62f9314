"""HTTP API (payload 2.0): the JWT authorizer, the routes as data, stage, CORS, access logs."""

from __future__ import annotations

import jsii
from aws_cdk import Aws, Duration
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.functions import tool_function
from infra.constructs.protection import removal_policy
from infra.settings import PUBLIC_WRITE_ROUTES, ROUTES, AuthSettings, DeployConfig

ACCESS_LOG_FORMAT = (
    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
    '"userAgent":"$context.identity.userAgent",'
    '"requestTime":"$context.requestTime","routeKey":"$context.routeKey",'
    '"method":"$context.httpMethod","path":"$context.path",'
    '"status":"$context.status","protocol":"$context.protocol",'
    '"responseLength":"$context.responseLength","latencyMs":"$context.responseLatency",'
    '"integrationLatencyMs":"$context.integrationLatency",'
    '"errorMessage":"$context.error.message","errorType":"$context.error.responseType",'
    '"integrationError":"$context.integrationErrorMessage",'
    '"authorizerError":"$context.authorizer.error","sub":"$context.authorizer.claims.sub"}'
)


class Auth(Construct):
    """Who may call the protected routes: a Cognito user pool by default, or an external issuer."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        self.admin_mfa: AdminMfaTrigger | None = None
        if config.jwt_issuer:
            issuer, audience = config.jwt_issuer, list(config.jwt_audience)
        else:
            settings = config.auth
            self.user_pool = cognito.UserPool(
                self,
                "UserPool",
                self_sign_up_enabled=True,
                sign_in_aliases=cognito.SignInAliases(email=True),
                sign_in_case_sensitive=False,  # Jane@Example.com and jane@example.com are one shopper
                email=_email(config),
                feature_plan=cognito.FeaturePlan.PLUS if settings.threat_protection else cognito.FeaturePlan.ESSENTIALS,
                standard_threat_protection_mode=(
                    cognito.StandardThreatProtectionMode.FULL_FUNCTION if settings.threat_protection else None
                ),
                auto_verify=cognito.AutoVerifiedAttrs(email=True),
                password_policy=cognito.PasswordPolicy(
                    min_length=12,
                    require_digits=True,
                    require_lowercase=True,
                    require_uppercase=True,
                    require_symbols=True,
                ),
                mfa=cognito.Mfa.OPTIONAL,
                mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
                account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
                deletion_protection=config.protected,
                removal_policy=removal_policy(config),
            )
            self.admin_mfa = AdminMfaTrigger(self, "AdminMfa", config=config, user_pool=self.user_pool)
            cognito.UserPoolGroup(
                self,
                "AdminGroup",
                user_pool=self.user_pool,
                group_name="admin",
                description="Catalogue and order administration",
            )
            self.client = self.user_pool.add_client(
                "AppClient",
                generate_secret=False,
                auth_flows=cognito.AuthFlow(user_srp=True),
                # the shop's own sign-in uses SRP; the hosted sign-in's code flow only with callback URLs
                disable_o_auth=not settings.callback_urls,
                o_auth=_oauth(settings) if settings.callback_urls else None,
                supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
                prevent_user_existence_errors=True,
                access_token_validity=Duration.hours(1),
                id_token_validity=Duration.hours(1),
                refresh_token_validity=Duration.days(30),
            )
            if settings.domain_prefix is not None:
                self.user_pool.add_domain(
                    "Domain", cognito_domain=cognito.CognitoDomainOptions(domain_prefix=settings.domain_prefix)
                )
            issuer = f"https://cognito-idp.{Aws.REGION}.amazonaws.com/{self.user_pool.user_pool_id}"
            audience = [self.client.user_pool_client_id]
        self.issuer = issuer
        self.audience = audience
        self.authorizer = authorizers.HttpJwtAuthorizer(
            "JwtAuthorizer",
            issuer,
            jwt_audience=audience,
            authorizer_name="jwt",
            identity_source=["$request.header.Authorization"],
        )


class AdminMfaTrigger(Construct):
    """Pre token generation trigger: `admin` stays in a token only if its user has TOTP MFA enabled.

    Attached in every stage: it costs one invocation per token issued and one AdminGetUser per admin.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, user_pool: cognito.UserPool
    ) -> None:
        super().__init__(scope, construct_id)
        self.function, role = tool_function(
            self,
            ("Logs", "Role", "Function"),
            config=config,
            folder="cognito",
            handler="admin_mfa.handler",
            description="Removes the admin group from tokens of users without TOTP MFA",
            role_description="admin MFA token trigger: its own logs and AdminGetUser on this user pool",
            timeout=Duration.seconds(5),  # Cognito waits 5 s for a trigger
        )
        user_pool.add_trigger(
            cognito.UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG, self.function, cognito.LambdaVersion.V2_0
        )
        # A policy of its own, which the function does not depend on: the pool depends on the function
        # (its trigger), so the role's default policy, which the function does depend on, cannot name
        # the pool. This one can, with the pool's exact ARN.
        self.read_users = iam.Policy(
            self,
            "ReadUsers",
            roles=[role],
            statements=[iam.PolicyStatement(actions=["cognito-idp:AdminGetUser"], resources=[user_pool.user_pool_arn])],
        )


def _email(config: DeployConfig) -> cognito.UserPoolEmail | None:
    """Cognito's own mailer sends 50 emails a day: a shop sends through SES (-c ses_from_email)."""
    sender = config.auth.ses_from_email
    if sender is None:
        return None
    return cognito.UserPoolEmail.with_ses(from_email=sender, from_name="Shop", ses_region=config.region)


def _oauth(settings: AuthSettings) -> cognito.OAuthSettings:
    """The authorization code grant (Cognito requires PKCE of public clients) and nothing else."""
    return cognito.OAuthSettings(
        flows=cognito.OAuthFlows(authorization_code_grant=True),
        scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
        callback_urls=list(settings.callback_urls),
        logout_urls=list(settings.logout_urls) or None,
    )


class HttpApi(Construct):
    """Every route of the API, generated from its one table (shop.http_api.routes, via infra.settings)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        functions: dict[str, lambda_.IFunction],
        auth: Auth,
    ) -> None:
        super().__init__(scope, construct_id)
        cors = None
        if config.cors_origins:
            cors = apigw.CorsPreflightOptions(
                allow_origins=list(config.cors_origins),
                allow_methods=[apigw.CorsHttpMethod.ANY],
                allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "If-Match"],
                expose_headers=["ETag", "Retry-After"],
                max_age=Duration.hours(1),
            )
        self.api = apigw.HttpApi(
            self,
            "Api",
            api_name=f"shop-{config.stage}",
            description="Serverless shop HTTP API (version 1)",
            cors_preflight=cors,
            create_default_stage=False,
            # behind CloudFront (-c edge=true) the API answers on its custom domain only, past WAF
            disable_execute_api_endpoint=config.edge is not None,
        )
        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=removal_policy(config),
        )
        self.stage = apigw.HttpStage(
            self,
            "DefaultStage",
            http_api=self.api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=config.throttle_rate, burst_limit=config.throttle_burst),
            access_log_settings=_AccessLogSettings(self.access_logs),
        )
        integration_for = {
            name: integrations.HttpLambdaIntegration(
                f"{name}-integration",
                function,
                payload_format_version=apigw.PayloadFormatVersion.VERSION_2_0,
            )
            for name, function in functions.items()
        }
        self.routes: dict[str, apigw.HttpRoute] = {}
        for route in ROUTES:
            created = self.api.add_routes(
                path=route.path,
                methods=[apigw.HttpMethod(route.method)],
                integration=integration_for[route.function],
                authorizer=apigw.HttpNoneAuthorizer() if route.public else auth.authorizer,
            )
            self.routes[route.route_key] = created[0]
        self._throttle_public_writes(config)
        self.origin_domain: apigw.DomainName | None = None
        if config.edge is not None:
            self.origin_domain = apigw.DomainName(
                self,
                "OriginDomain",
                domain_name=config.edge.origin_domain,
                certificate=acm.Certificate.from_certificate_arn(
                    self, "OriginCertificate", config.edge.origin_certificate_arn
                ),
                security_policy=apigw.SecurityPolicy.TLS_1_2,
            )
            apigw.ApiMapping(self, "OriginMapping", api=self.api, domain_name=self.origin_domain, stage=self.stage)

    def _throttle_public_writes(self, config: DeployConfig) -> None:
        """Per-route limits (the L2 stage sets only the default route's): public writes get less."""
        stage = self.stage.node.default_child
        assert isinstance(stage, apigw.CfnStage)
        stage.route_settings = {
            route.route_key: {
                "ThrottlingRateLimit": config.public_write_rate,
                "ThrottlingBurstLimit": config.public_write_burst,
            }
            for route in PUBLIC_WRITE_ROUTES
        }
        for route in PUBLIC_WRITE_ROUTES:  # a route setting names a route that must exist first
            self.stage.node.add_dependency(self.routes[route.route_key])

    @property
    def url(self) -> str:
        url = self.stage.url
        assert url is not None
        return url


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogSettings:
    """JSON access log lines into a log group."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigw.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(ACCESS_LOG_FORMAT)
