"""Unit tests: payload 2.0 events, stream records, the JWT authorizer, template parsing."""

from __future__ import annotations

import base64
import datetime as dt
import json
import pathlib
import time

import pytest

from local_runtime import auth, events
from local_runtime.gateway import Router
from local_runtime.table_definition import DEFAULT_TABLE_SPEC, spec_from_template
from local_runtime.template import UNSET, Resolver, load_app

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
REPO = pathlib.Path(__file__).resolve().parents[2]


# -- payload 2.0 ---------------------------------------------------------------------------------
def test_http_api_event_shape():
    request = events.HttpRequest(
        method="post",
        raw_path="/products/p%201",
        raw_query="a=1&a=2&b=",
        headers=[
            ("Host", "127.0.0.1:3000"),
            ("Content-Type", "application/json"),
            ("X-Multi", "1"),
            ("x-multi", "2"),
            ("Cookie", "s=1; t=2"),
            ("User-Agent", "curl/8"),
        ],
        body=b'{"x": 1}',
    )
    event = events.http_api_event(
        request,
        route_key="POST /products/{product_id}",
        path_parameters={"product_id": "p 1"},
        claims={"sub": "u1", "cognito:groups": ["admin", "ops"], "exp": 5},
        scopes=["s1"],
        now=1_700_000_000.5,
    )
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /products/{product_id}"
    assert event["rawPath"] == "/products/p 1"  # decoded, as API Gateway HTTP APIs send it
    assert event["rawQueryString"] == "a=1&a=2&b="
    assert event["cookies"] == ["s=1", "t=2"]
    assert "cookie" not in event["headers"]
    assert event["headers"]["x-multi"] == "1,2"
    assert event["headers"]["content-type"] == "application/json"
    assert event["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert event["pathParameters"] == {"product_id": "p 1"}
    ctx = event["requestContext"]
    assert ctx["http"] == {
        "method": "POST",
        "path": "/products/p 1",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "curl/8",
    }
    assert ctx["stage"] == "$default"
    assert ctx["routeKey"] == event["routeKey"]
    assert ctx["timeEpoch"] == 1_700_000_000_500
    assert ctx["time"] == "14/Nov/2023:22:13:20 +0000"
    assert ctx["requestId"]
    assert ctx["accountId"]
    assert ctx["apiId"]
    assert ctx["domainName"] == "127.0.0.1:3000"
    assert ctx["authorizer"]["jwt"]["claims"] == {"sub": "u1", "cognito:groups": "[admin ops]", "exp": "5"}
    assert ctx["authorizer"]["jwt"]["scopes"] == ["s1"]
    assert event["body"] == '{"x": 1}'
    assert event["isBase64Encoded"] is False


def test_binary_body_is_base64_and_public_route_has_no_authorizer():
    request = events.HttpRequest("PUT", "/f", headers=[("content-type", "image/png")], body=b"\x89PNG\x00")
    event = events.http_api_event(request, route_key="PUT /f")
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\x89PNG\x00"
    assert "authorizer" not in event["requestContext"]
    assert "queryStringParameters" not in event
    assert "pathParameters" not in event
    assert "cookies" not in event


def test_http_response_mapping():
    res = events.http_response({"statusCode": 201, "headers": {"ETag": '"1"'}, "body": "{}", "cookies": ["a=1"]})
    assert res.status == 201
    assert ("etag", '"1"') in res.headers
    assert ("set-cookie", "a=1") in res.headers
    assert ("content-type", "application/json") in res.headers
    inferred = events.http_response({"hello": "world"})
    assert inferred.status == 200
    assert json.loads(inferred.body) == {"hello": "world"}
    binary = events.http_response(
        {"statusCode": 200, "body": base64.b64encode(b"\x00").decode(), "isBase64Encoded": True}
    )
    assert binary.body == b"\x00"


def test_stream_record_shape():
    raw = {
        "eventID": "e1",
        "eventName": "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "ddblocal",
        "dynamodb": {
            "ApproximateCreationDateTime": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            "Keys": {"PK": {"S": "SESSION#1"}, "SK": {"S": "SESSION"}},
            "OldImage": {"PK": {"S": "SESSION#1"}, "blob": {"B": b"\x01"}},
            "SequenceNumber": "100",
            "SizeBytes": 42,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "userIdentity": {"Type": "Service", "PrincipalId": "dynamodb.amazonaws.com"},
    }
    record = events.stream_record(raw, "arn:stream")
    assert list(record) == [
        "eventID", "eventName", "eventVersion", "eventSource", "awsRegion", "dynamodb", "eventSourceARN", "userIdentity",
    ]  # fmt: skip
    assert record["eventVersion"] == "1.1"
    assert record["eventSource"] == "aws:dynamodb"
    assert record["awsRegion"] == "us-east-1"
    assert record["eventSourceARN"] == "arn:stream"
    assert record["dynamodb"]["ApproximateCreationDateTime"] == 1704067200
    assert record["dynamodb"]["OldImage"]["blob"] == {"B": "AQ=="}
    assert "NewImage" not in record["dynamodb"]
    json.dumps(record)
    del raw["userIdentity"]
    assert "userIdentity" not in events.stream_record(raw, "arn:stream")


# -- JWT authorizer ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    return auth.load_or_create_keys(tmp_path_factory.mktemp("state"))


def test_token_round_trip(keys):
    authorizer = auth.JwtAuthorizer(keys)
    token = auth.issue_token(keys, "demo-admin", groups=["admin"])
    claims, scopes = authorizer.verify(f"Bearer {token}")
    assert claims["sub"] == "demo-admin"
    assert claims["cognito:groups"] == ["admin"]
    assert claims["token_use"] == "access"
    assert claims["client_id"] == auth.LOCAL_AUDIENCE
    assert scopes == ["aws.cognito.signin.user.admin"]
    authorizer.verify(token)  # API Gateway also accepts the bare token


def test_keys_are_kept(keys, tmp_path):
    first = auth.load_or_create_keys(tmp_path)
    assert auth.load_or_create_keys(tmp_path) == first
    assert first.kid != keys.kid


def _without_kid(keys: auth.KeyPair) -> str:
    """A token signed by the right key whose header does not say which key (API Gateway needs `kid`)."""
    import jwt

    claims = jwt.decode(auth.issue_token(keys, "u"), options={"verify_signature": False})
    return jwt.encode(claims, keys.private_pem, algorithm="RS256")


@pytest.mark.parametrize(
    "make",
    [
        lambda k: None,
        lambda k: "Bearer not-a-jwt",
        lambda k: auth.issue_token(k, "u", ttl_s=-10),
        lambda k: auth.issue_token(k, "u", issuer="https://evil"),
        lambda k: auth.issue_token(k, "u", audience="other-client"),
        lambda k: auth.issue_token(k, "u", now=time.time() + 3600),  # nbf in the future
        lambda k: auth.issue_token(auth.load_or_create_keys(pathlib.Path("/tmp/other-keys-lr")), "u"),
        _without_kid,
        lambda k: auth.issue_token(k, "u", audience="other-client", extra={"client_id": auth.LOCAL_AUDIENCE}),
    ],
    ids=[
        "missing", "garbage", "expired", "issuer", "audience", "not-yet-valid", "foreign-key", "no-kid",
        "aud-wrong-client-id-right",
    ],
)  # fmt: skip
def test_rejections(keys, make):
    with pytest.raises(auth.Unauthorized):
        auth.JwtAuthorizer(keys).verify(make(keys))


def test_client_id_is_the_audience_only_without_aud(keys):
    import jwt

    claims = jwt.decode(auth.issue_token(keys, "u"), options={"verify_signature": False})
    del claims["aud"]
    token = jwt.encode(claims, keys.private_pem, algorithm="RS256", headers={"kid": keys.kid})
    assert auth.JwtAuthorizer(keys).verify(token)[0]["client_id"] == auth.LOCAL_AUDIENCE


def test_hs256_token_is_rejected(keys):
    import jwt

    forged = jwt.encode(
        {"sub": "u", "iss": auth.LOCAL_ISSUER, "aud": auth.LOCAL_AUDIENCE, "exp": time.time() + 60}, "k" * 32
    )
    with pytest.raises(auth.Unauthorized):
        auth.JwtAuthorizer(keys).verify(forged)


def test_route_scopes(keys):
    token = auth.issue_token(keys, "u")
    with pytest.raises(auth.Unauthorized):
        auth.JwtAuthorizer(keys).verify(token, ["orders/write"])
    auth.JwtAuthorizer(keys).verify(token, ["aws.cognito.signin.user.admin"])


# -- templates -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mini_app():
    return load_app(
        templates={"Mini": json.loads((FIXTURES / "mini.template.json").read_text())},
        root=FIXTURES,
    )


def test_mini_template_functions_routes_mapping(mini_app):
    assert sorted(mini_app.functions) == ["order_events", "products"]
    products = mini_app.function("products")
    assert products.code_dir == FIXTURES / "functions" / "products"
    assert (products.memory_mb, products.timeout_s, products.handler) == (512, 10, "handler.handler")
    keys = {r.route_key: r for r in mini_app.routes}
    assert set(keys) == {
        "GET /products/{product_id}", "GET /products", "POST /products", "ANY /products/{product_id}/{proxy+}",
    }  # fmt: skip
    assert keys["POST /products"].authorization_type == "JWT"
    assert keys["POST /products"].authorizer == "HttpApiJwtAuthorizer"
    assert keys["GET /products"].authorization_type == "NONE"
    (mapping,) = mini_app.mappings
    assert mapping.function == "order_events"
    assert mapping.table == "ShopTable1234"
    assert (mapping.batch_size, mapping.maximum_retry_attempts, mapping.bisect_on_error) == (10, 3, True)
    assert mapping.report_batch_item_failures
    assert len(mapping.filters) == 2
    assert mapping.on_failure


def test_resolver_environment(mini_app, tmp_path):
    resolver = Resolver(mini_app, table_name="shop-local", secret=lambda name: f"secret-of-{name}")
    env = resolver.environment(mini_app.function("order_events"))
    assert env["TABLE_NAME"] == "shop-local"
    assert env["PAGINATION_SECRET"] == "secret-of-arn"
    assert "EVENT_BUS_NAME" not in env
    assert env["STATUS_SHARDS"] == "4"
    assert resolver.resolve({"Fn::Sub": "t-${AWS::Region}-${ShopTable1234}"}) == "t-us-east-1-shop-local"
    assert resolver.resolve({"Fn::GetAtt": ["OrderBus55", "Arn"]}) is UNSET


def test_secret_reference_resolves_to_stable_local_secret(mini_app, tmp_path):
    from local_runtime.functions import function_environment

    fn = mini_app.function("products")
    first = function_environment(mini_app, fn, table_name="shop-local", endpoint="http://e", state_dir=tmp_path)
    again = function_environment(mini_app, fn, table_name="shop-local", endpoint="http://e", state_dir=tmp_path)
    assert first["PAGINATION_SECRET"] == again["PAGINATION_SECRET"]
    assert len(first["PAGINATION_SECRET"]) >= 32
    assert first["AWS_ENDPOINT_URL_DYNAMODB"] == "http://e"
    assert first["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert first["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "512"


def test_router_specificity(mini_app):
    router = Router(mini_app.routes)
    assert router.match("GET", "/products").route.route_key == "GET /products"
    found = router.match("GET", "/products/p1")
    assert found.route.route_key == "GET /products/{product_id}"
    assert found.path_parameters == {"product_id": "p1"}
    greedy = router.match("DELETE", "/products/p1/a/b")
    assert greedy.route.route_key == "ANY /products/{product_id}/{proxy+}"
    assert greedy.path_parameters == {"product_id": "p1", "proxy": "a/b"}
    assert router.match("DELETE", "/products/p1") is None
    assert router.match("GET", "/nothing") is None


def test_default_table_spec_matches_the_fixture():
    assert spec_from_template(FIXTURES / "mini.template.json").normalized() == DEFAULT_TABLE_SPEC.normalized()


@pytest.mark.skipif(not list((REPO / "cdk.out").glob("*.template.json")), reason="cdk.out not synthesized")
def test_default_table_spec_matches_the_synthesized_table():
    app = load_app(REPO / "cdk.out")
    assert app.table.spec.normalized() == DEFAULT_TABLE_SPEC.normalized()


@pytest.mark.skipif(not list((REPO / "cdk.out").glob("*.template.json")), reason="cdk.out not synthesized")
def test_synthesized_app_is_understood():
    app = load_app(REPO / "cdk.out")
    (mapping,) = [m for m in app.mappings if m.function == "order_events"]
    assert mapping.table == next(iter(app.tables))
    assert mapping.filters
    if app.functions:  # the handlers exist
        assert {r.function for r in app.routes} <= set(app.functions)
        assert any(r.authorization_type == "JWT" for r in app.routes)


def test_routes_and_mappings_through_the_live_alias_reach_the_function_code():
    """Deployed templates invoke each function's `live` alias (docs/deploy.md#safe-deployments)."""
    template = json.loads((FIXTURES / "mini.template.json").read_text())
    resources = template["Resources"]
    for function, alias in (("ProductsFnAA", "ProductsLive"), ("OrderEventsFnBB", "OrderEventsLive")):
        resources[f"{function}Version"] = {
            "Type": "AWS::Lambda::Version",
            "Properties": {"FunctionName": {"Ref": function}},
        }
        resources[alias] = {
            "Type": "AWS::Lambda::Alias",
            "Properties": {
                "FunctionName": {"Ref": function},
                "FunctionVersion": {"Fn::GetAtt": [f"{function}Version", "Version"]},
                "Name": "live",
            },
        }
    resources["ProductsIntegration"]["Properties"]["IntegrationUri"] = {"Ref": "ProductsLive"}
    resources["OrderEventsMapping"]["Properties"]["FunctionName"] = {"Ref": "OrderEventsLive"}
    app = load_app(templates={"Mini": template}, root=FIXTURES)
    assert {route.function for route in app.routes} == {"products"}
    assert len(app.routes) == 4
    assert [mapping.function for mapping in app.mappings] == ["order_events"]
