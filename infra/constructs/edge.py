"""`-c edge=true`: CloudFront in front of the HTTP API with an AWS WAF web ACL (WAF cannot attach to an HTTP API).

The body of its own us-east-1 stack (EdgeStack); its origin is the API's custom domain, a context value, so
nothing crosses regions.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from infra.constructs.protection import removal_policy
from infra.settings import DeployConfig, EdgeSettings

# AWS managed rule groups (no subscription cost, WCU within the default 1,500).
MANAGED_RULE_GROUPS = (
    "AWSManagedRulesCommonRuleSet",  # OWASP-style generic web exploits
    "AWSManagedRulesKnownBadInputsRuleSet",  # request patterns of known exploits
    "AWSManagedRulesAmazonIpReputationList",  # bots and known bad sources
)

# AWSManagedRulesCommonRuleSet's size rules: each blocks a request whose part is larger than this many bytes
# (AWS WAF Developer Guide, "Core rule set (CRS) managed rule group").
COMMON_RULE_SET_SIZE_LIMITS = {
    "SizeRestrictions_QUERYSTRING": 2_048,
    "SizeRestrictions_Cookie_HEADER": 10_240,
    "SizeRestrictions_BODY": 8_192,
    "SizeRestrictions_URIPATH": 1_024,
}
# The ones the contract's own limits exceed (a 4,000-character description, a 4,096-character next_token,
# ids of 128 characters in a path: tests/infra/test_edge.py builds the largest request of each part): they
# count instead of blocking, and the API's own limits (validation: 422, API Gateway's) stay what refuses.
COUNTED_SIZE_RULES = ("SizeRestrictions_QUERYSTRING", "SizeRestrictions_BODY", "SizeRestrictions_URIPATH")
# The web ACL's log group; WAF requires this prefix of a CloudWatch Logs destination.
WAF_LOG_GROUP_PREFIX = "aws-waf-logs-"


def _managed_group(group: str) -> wafv2.CfnWebACL.ManagedRuleGroupStatementProperty:
    overrides = (
        [
            wafv2.CfnWebACL.RuleActionOverrideProperty(
                name=rule, action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={})
            )
            for rule in COUNTED_SIZE_RULES
        ]
        if group == "AWSManagedRulesCommonRuleSet"
        else None
    )
    return wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
        vendor_name="AWS", name=group, rule_action_overrides=overrides
    )


def _visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )


class Edge(Construct):
    """Web ACL (per-IP rate limit first, then managed rule groups), access-logged distribution."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, edge: EdgeSettings) -> None:
        super().__init__(scope, construct_id)
        rules = [
            wafv2.CfnWebACL.RuleProperty(
                name="PerIpRateLimit",
                priority=0,
                action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                statement=wafv2.CfnWebACL.StatementProperty(
                    rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                        aggregate_key_type="IP",
                        limit=edge.rate_limit,
                        evaluation_window_sec=edge.rate_window_s,
                    )
                ),
                visibility_config=_visibility("PerIpRateLimit"),
            ),
            *(
                wafv2.CfnWebACL.RuleProperty(
                    name=group,
                    priority=priority,
                    override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
                    statement=wafv2.CfnWebACL.StatementProperty(managed_rule_group_statement=_managed_group(group)),
                    visibility_config=_visibility(group),
                )
                for priority, group in enumerate(MANAGED_RULE_GROUPS, start=1)
            ),
        ]
        self.web_acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="CLOUDFRONT",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility(config.name("edge")),
            rules=rules,
        )
        # What WAF blocked or counted and why (each rule's match), never the bearer token.
        waf_log_group_name = f"{WAF_LOG_GROUP_PREFIX}{config.name('edge')}"
        self.waf_logs = logs.LogGroup(
            self,
            "WafLogs",
            log_group_name=waf_log_group_name,
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=removal_policy(config),
        )
        self.waf_logging = wafv2.CfnLoggingConfiguration(
            self,
            "WafLogging",
            resource_arn=self.web_acl.attr_arn,
            # WAF wants the log group's ARN without the ":*" that its GetAtt Arn carries
            log_destination_configs=[
                Stack.of(self).format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=waf_log_group_name,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
            redacted_fields=[
                wafv2.CfnLoggingConfiguration.FieldToMatchProperty(single_header={"Name": "authorization"})
            ],
        )
        self.waf_logging.node.add_dependency(self.waf_logs)
        self.logs = s3.Bucket(
            self,
            "AccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            # CloudFront standard logging writes with an ACL
            object_ownership=s3.ObjectOwnership.OBJECT_WRITER,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=removal_policy(config),
        )
        custom_domain = edge.domain is not None and edge.certificate_arn is not None
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"shop-{config.stage} API",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.HttpOrigin(
                    edge.origin_domain,
                    protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
                    origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
                ),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                # an API: nothing is cached, every viewer header but Host reaches the origin
                cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
            ),
            domain_names=[edge.domain] if custom_domain and edge.domain else None,
            certificate=(
                acm.Certificate.from_certificate_arn(self, "Certificate", edge.certificate_arn)
                if custom_domain and edge.certificate_arn
                else None
            ),
            minimum_protocol_version=cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
            web_acl_id=self.web_acl.attr_arn,
            enable_logging=True,
            log_bucket=self.logs,
            log_file_prefix="cloudfront/",
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
        )
        self.custom_domain = custom_domain
