"""Build the events Lambda receives: API Gateway HTTP API payload 2.0 and DynamoDB stream batches.

Also turns a payload 2.0 handler result into the HTTP response API Gateway would send.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, unquote

from local_runtime.template import ACCOUNT_ID, REGION
from local_runtime.ttl import TTL_IDENTITY

API_ID = "localapi"
# Content types API Gateway HTTP APIs pass as text; everything else arrives base64-encoded.
TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-www-form-urlencoded",
)
TEXT_SUFFIXES = ("+json", "+xml")


def is_text(content_type: str | None) -> bool:
    if not content_type:
        return True  # no content type: API Gateway treats the body as text
    media = content_type.split(";", 1)[0].strip().lower()
    return media.startswith(TEXT_TYPES) or media.endswith(TEXT_SUFFIXES)


def decode_path(raw_path: str) -> str:
    """The path as API Gateway HTTP APIs route on it and pass it on: percent-decoded, as UTF-8.

    Raises ValueError for a path whose escapes do not decode to UTF-8 (the gateway answers 400).
    """
    return unquote(raw_path, errors="strict")


def _request_id() -> str:
    return base64.b64encode(secrets.token_bytes(12)).decode().rstrip("=")[:14] + "="


def claims_as_strings(claims: dict[str, Any]) -> dict[str, str]:
    """JWT claims as API Gateway passes them to payload 2.0: every value a string, arrays as "[a b]"."""
    out: dict[str, str] = {}
    for key, value in claims.items():
        if isinstance(value, list):
            out[key] = "[" + " ".join(str(v) for v in value) + "]"
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, dict):
            out[key] = json.dumps(value, separators=(",", ":"))
        else:
            out[key] = str(value)
    return out


@dataclass
class HttpRequest:
    method: str
    raw_path: str
    raw_query: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"


def http_api_event(
    request: HttpRequest,
    *,
    route_key: str,
    path_parameters: dict[str, str] | None = None,
    claims: dict[str, Any] | None = None,
    scopes: list[str] | None = None,
    stage: str = "$default",
    now: float | None = None,
) -> dict[str, Any]:
    """A payload format 2.0 event, as the HTTP API's Lambda proxy integration sends it.

    ``rawPath`` and ``requestContext.http.path`` carry the decoded path, as API Gateway sends them
    (despite the name); ``pathParameters`` are the decoded segments the route matched.
    """
    now = time.time() if now is None else now
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        key = name.lower()
        if key == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
            continue
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    host = headers.get("host", "127.0.0.1")
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    if ":" in host:
        headers.setdefault("x-forwarded-port", host.rsplit(":", 1)[1])
    headers.setdefault("x-amzn-trace-id", f"Root=1-{int(now):08x}-{secrets.token_hex(12)}")
    query: dict[str, str] = {}
    for key, value in parse_qsl(request.raw_query, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    request_id = _request_id()
    path = decode_path(request.raw_path)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": request.raw_query,
    }
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if query:
        event["queryStringParameters"] = query
    context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": host,
        "domainPrefix": host.split(".", 1)[0].split(":", 1)[0],
        "http": {
            "method": request.method.upper(),
            "path": path,
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request_id,
        "routeKey": route_key,
        "stage": stage,
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims_as_strings(claims), "scopes": scopes or None}}
    event["requestContext"] = context
    if request.body:
        if is_text(headers.get("content-type")):
            event["body"] = request.body.decode("utf-8", "replace")
            event["isBase64Encoded"] = False
        else:
            event["body"] = base64.b64encode(request.body).decode()
            event["isBase64Encoded"] = True
    else:
        event["isBase64Encoded"] = False
    if path_parameters:
        event["pathParameters"] = path_parameters
    return event


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def http_response(result: Any) -> HttpResponse:
    """Map a payload 2.0 result to HTTP like API Gateway (a result without statusCode is a 200 JSON body)."""
    if not (isinstance(result, dict) and "statusCode" in result):
        text = result if isinstance(result, str) else json.dumps(result)
        return HttpResponse(200, [("content-type", "application/json")], text.encode())
    headers = [(str(k).lower(), str(v)) for k, v in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(str(name).lower(), str(v)) for v in values]
    headers += [("set-cookie", str(c)) for c in result.get("cookies") or []]
    raw = result.get("body")
    body: bytes
    if raw is None:
        body = b""
    elif result.get("isBase64Encoded"):
        body = base64.b64decode(raw)
    else:
        body = str(raw).encode()
    if body and not any(k == "content-type" for k, _ in headers):
        headers.append(("content-type", "application/json"))
    return HttpResponse(int(result["statusCode"]), headers, body)


# -- DynamoDB streams ----------------------------------------------------------------------------


def _epoch(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        seconds = value.timestamp()
        return int(seconds) if seconds == int(seconds) else seconds
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _plain(value: Any) -> Any:
    """boto3's stream record -> JSON (binary attributes as base64 strings, as Lambda delivers them)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dt.datetime | Decimal):
        return _epoch(value)
    return value


def stream_record(raw: dict[str, Any], stream_arn: str, region: str = REGION) -> dict[str, Any]:
    """One GetRecords record as Lambda puts it into `Records` (key order as Lambda sends it)."""
    ddb = raw.get("dynamodb") or {}
    dynamodb: dict[str, Any] = {}
    if "ApproximateCreationDateTime" in ddb:
        dynamodb["ApproximateCreationDateTime"] = _epoch(ddb["ApproximateCreationDateTime"])
    for key in ("Keys", "NewImage", "OldImage", "SequenceNumber", "SizeBytes", "StreamViewType"):
        if key in ddb:
            dynamodb[key] = _plain(ddb[key])
    name = raw.get("eventName")
    record: dict[str, Any] = {
        "eventID": raw.get("eventID"),
        "eventName": event_name(name, dynamodb),
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    }
    if raw.get("userIdentity"):
        record["userIdentity"] = _plain(raw["userIdentity"])
    elif is_local_ttl_delete(name, dynamodb):
        record["userIdentity"] = dict(TTL_IDENTITY)
    return record


EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")


def is_local_ttl_delete(name: Any, data: dict[str, Any]) -> bool:
    """DynamoDB Local's own TTL delete: it names the record `UNKNOWN_TO_SDK_VERSION` (any name but the
    three), with the OldImage only, no userIdentity, and the index keys in Keys. Its other deletes are
    `REMOVE`."""
    return name not in EVENT_NAMES and "OldImage" in data and "NewImage" not in data


def event_name(name: Any, data: dict[str, Any]) -> Any:
    """The record's event name, as DynamoDB would send it (DynamoDB Local's TTL delete: `REMOVE`)."""
    if name in EVENT_NAMES:
        return name
    if "NewImage" in data:
        return "MODIFY" if "OldImage" in data else "INSERT"
    return "REMOVE" if "OldImage" in data else name


def stream_event(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": list(records)}
