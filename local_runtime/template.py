"""Read what the local runtime needs out of the synthesized CloudFormation templates in `cdk.out/`.

Routes, integrations, the JWT authorizer, functions, the table, the stream mapping and the schedules (EventBridge
rules with a rate that invoke a function), with intrinsics resolved locally (`Resolver`); what each becomes:
docs/local-runtime.md, "What mirrors AWS".
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

from local_runtime.table_definition import TABLE_RESOURCE_TYPES, TableSpec, spec_from_resource

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
ACCOUNT_ID = "000000000000"
REGION = "us-east-1"
PAGINATION_SECRET_ARN, PAGINATION_SECRET = "PAGINATION_SECRET_ARN", "PAGINATION_SECRET"
SECRET_REFERENCE = re.compile(r"\{\{resolve:(secretsmanager|ssm-secure|ssm):([^}]*)\}\}")


class TemplateError(RuntimeError):
    pass


class _Unset:
    """A value that does not exist locally (e.g. the EventBridge bus): the env var is left unset."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass
class FunctionDef:
    logical_id: str
    name: str  # the repo's function name: customers, products, orders, sessions, order_events
    handler: str  # "handler.handler"
    code_dir: pathlib.Path
    environment: dict[str, Any]  # raw (intrinsics unresolved)
    memory_mb: int = 128
    timeout_s: int = 3
    runtime: str = "python3"
    stack: str = ""
    layers: list[pathlib.Path] = field(default_factory=list)

    @property
    def function_name(self) -> str:
        return f"shop-local-{self.name}"

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"


@dataclass
class AuthorizerDef:
    logical_id: str
    issuer: Any
    audience: Any
    identity_source: list[str]


@dataclass
class RouteDef:
    route_key: str  # "GET /products/{product_id}" or "$default"
    function: str  # FunctionDef.name
    authorization_type: str = "NONE"
    authorizer: str | None = None  # AuthorizerDef.logical_id
    scopes: list[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        return "ANY" if self.route_key == "$default" else self.route_key.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return "" if self.route_key == "$default" else self.route_key.split(" ", 1)[1]


@dataclass
class MappingDef:
    logical_id: str
    function: str  # FunctionDef.name
    table: str | None  # table logical id when the source is a DynamoDB stream
    batch_size: int = 100
    starting_position: str = "TRIM_HORIZON"
    filters: list[dict[str, Any]] = field(default_factory=list)
    maximum_retry_attempts: int = -1  # -1: until the record expires, as Lambda
    bisect_on_error: bool = False
    report_batch_item_failures: bool = False
    maximum_record_age_s: int = -1
    maximum_batching_window_s: int = 0
    on_failure: str | None = None  # destination ARN (locally: .local/stream-failures/, local_runtime.failures)
    enabled: bool = True


# EventBridge's rate expressions (`rate(1 minute)`, `rate(5 minutes)`, `rate(2 hours)`, `rate(1 day)`); seconds too,
# which EventBridge refuses but a local template may hold.
_RATE = re.compile(r"^rate\(\s*(\d+)\s+(second|minute|hour|day)s?\s*\)$")
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400}


def rate_seconds(expression: str) -> int | None:
    """The period of a `rate(...)` schedule expression in seconds; None for anything else (cron, malformed)."""
    match = _RATE.match(expression.strip())
    if match is None or int(match.group(1)) < 1:
        return None
    return int(match.group(1)) * _UNIT_S[match.group(2)]


@dataclass
class ScheduleDef:
    """An EventBridge rule's schedule and one of its targets that is a function of the app."""

    logical_id: str  # the rule's
    name: str  # the rule's name: its Name, else its logical id
    expression: str  # "rate(1 minute)", "cron(...)"
    function: str  # FunctionDef.name
    input: Any = None  # the target's constant Input (parsed JSON), sent instead of the scheduled event
    enabled: bool = True

    @property
    def rate_s(self) -> int | None:
        """Its period in seconds, None when it is not a rate (a cron expression: not run locally)."""
        return rate_seconds(self.expression)

    @property
    def arn(self) -> str:
        return f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{self.name}"


@dataclass
class TableDef:
    logical_id: str
    spec: TableSpec
    table_name: Any = None


@dataclass
class AppModel:
    templates: dict[str, dict[str, Any]]
    functions: dict[str, FunctionDef]  # by repo function name
    routes: list[RouteDef]
    authorizers: dict[str, AuthorizerDef]
    mappings: list[MappingDef]
    tables: dict[str, TableDef]
    schedules: list[ScheduleDef] = field(default_factory=list)

    def function(self, name: str) -> FunctionDef:
        try:
            return self.functions[name]
        except KeyError:
            raise TemplateError(
                f"no function {name!r} in the template (have: {', '.join(sorted(self.functions))})"
            ) from None

    @property
    def table(self) -> TableDef:
        if len(self.tables) != 1:
            raise TemplateError(f"expected one DynamoDB table in cdk.out, found {sorted(self.tables)}")
        return next(iter(self.tables.values()))


# -- loading -------------------------------------------------------------------------------------


def template_paths(cdk_out: pathlib.Path) -> list[pathlib.Path]:
    paths = sorted(pathlib.Path(cdk_out).glob("*.template.json"))
    if not paths:
        raise TemplateError(f"no *.template.json in {cdk_out}: run `make synth` (npx cdk synth) first")
    return paths


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def known_function_names(root: pathlib.Path = REPO_ROOT) -> list[str]:
    folder = root / "functions"
    names = (
        [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]
        if folder.is_dir()
        else []
    )
    return names or ["customers", "products", "orders", "sessions", "order_events"]


def _function_name(logical_id: str, resource: dict[str, Any], known: list[str]) -> str:
    """Which repo function a Lambda resource deploys: service name env, FunctionName, cdk path, id."""
    props = resource.get("Properties") or {}
    tagged = (resource.get("Metadata") or {}).get("shop:function")
    if isinstance(tagged, str) and tagged:
        return tagged
    env = (props.get("Environment") or {}).get("Variables") or {}
    service = env.get("POWERTOOLS_SERVICE_NAME")
    if isinstance(service, str) and service in known:
        return service
    hints = [
        props.get("FunctionName") if isinstance(props.get("FunctionName"), str) else "",
        (resource.get("Metadata") or {}).get("aws:cdk:path", ""),
        logical_id,
    ]
    for hint in hints:
        normal = _normal(str(hint))
        candidates = [n for n in known if _normal(n) in normal]
        if candidates:
            return max(candidates, key=len)
    return logical_id


def _refs(value: Any, exports: dict[str, Any] | None = None) -> list[str]:
    """Every logical id referenced (Ref / Fn::GetAtt / ${X} in Fn::Sub) anywhere in a value,
    following Fn::ImportValue to the exporting stack's output."""
    found: list[str] = []
    if isinstance(value, dict):
        imported = value.get("Fn::ImportValue")
        if isinstance(imported, str) and exports and imported in exports:
            found += _refs(exports[imported], exports)
        if "Ref" in value and isinstance(value["Ref"], str):
            found.append(value["Ref"])
        if "Fn::GetAtt" in value:
            att = value["Fn::GetAtt"]
            found.append(att[0] if isinstance(att, list) else str(att).split(".", 1)[0])
        if "Fn::Sub" in value:
            sub = value["Fn::Sub"]
            text = sub[0] if isinstance(sub, list) else sub
            if isinstance(text, str):
                found += [m.split(".", 1)[0] for m in re.findall(r"\$\{([^}!]+)\}", text)]
        for v in value.values():
            found += _refs(v, exports)
    elif isinstance(value, list):
        for v in value:
            found += _refs(v, exports)
    return found


def load_app(
    cdk_out: pathlib.Path | None = None,
    *,
    templates: dict[str, dict[str, Any]] | None = None,
    root: pathlib.Path = REPO_ROOT,
) -> AppModel:
    """Parse every stack template of a cloud assembly (or the given {stack: template} dict)."""
    if templates is None:
        cdk_out = pathlib.Path(cdk_out or root / "cdk.out")
        templates = {
            p.name.removesuffix(".template.json"): json.loads(p.read_text(encoding="utf-8"))
            for p in template_paths(cdk_out)
        }
    base = pathlib.Path(cdk_out) if cdk_out is not None else root / "cdk.out"
    resources: dict[str, tuple[str, dict[str, Any]]] = {}
    exports: dict[str, Any] = {}
    for stack, template in templates.items():
        for output in (template.get("Outputs") or {}).values():
            export = (output.get("Export") or {}).get("Name")
            if isinstance(export, str):
                exports[export] = output.get("Value")
        for logical_id, res in (template.get("Resources") or {}).items():
            resources[logical_id] = (stack, res)

    def of_type(*types: str) -> dict[str, tuple[str, dict[str, Any]]]:
        return {lid: sr for lid, sr in resources.items() if sr[1].get("Type") in types}

    known = known_function_names(root)
    layer_dirs: dict[str, pathlib.Path] = {}
    for lid, (_stack, res) in of_type("AWS::Lambda::LayerVersion").items():
        asset = (res.get("Metadata") or {}).get("aws:asset:path")
        if asset:
            layer_dirs[lid] = base / asset

    functions: dict[str, FunctionDef] = {}
    by_logical: dict[str, str] = {}
    for lid, (stack, res) in of_type("AWS::Lambda::Function").items():
        props = res.get("Properties") or {}
        runtime = str(props.get("Runtime", ""))
        if not runtime.startswith("python"):
            continue  # CDK's own helper functions (custom resources) are Node.js
        if (res.get("Metadata") or {}).get("shop:local") is False:
            continue  # deployed only (the pagination key's rotation, the admin MFA token trigger)
        name = _function_name(lid, res, known)
        asset = (res.get("Metadata") or {}).get("aws:asset:path")
        handler_file = str(props.get("Handler", "handler.handler")).rpartition(".")[0].replace(".", "/") + ".py"
        if asset and (base / asset / handler_file).is_file():
            code_dir = base / asset
        elif (root / "functions" / name).is_dir():
            code_dir = root / "functions" / name
        else:
            continue  # not one of ours (e.g. an inline log-retention helper)
        functions[name] = FunctionDef(
            logical_id=lid,
            name=name,
            handler=str(props.get("Handler", "handler.handler")),
            code_dir=code_dir,
            environment=dict((props.get("Environment") or {}).get("Variables") or {}),
            memory_mb=int(props.get("MemorySize", 128)),
            timeout_s=int(props.get("Timeout", 3)),
            runtime=runtime,
            stack=stack,
            layers=[layer_dirs[r] for r in _refs(props.get("Layers"), exports) if r in layer_dirs],
        )
        by_logical[lid] = name
    # an alias (`live`) or a version invokes its function's code: the local runtime runs that code
    for lid, (_stack, res) in of_type("AWS::Lambda::Alias", "AWS::Lambda::Version").items():
        targets = [by_logical[r] for r in _refs((res.get("Properties") or {}).get("FunctionName")) if r in by_logical]
        if targets:
            by_logical[lid] = targets[0]

    tables = {
        lid: TableDef(lid, spec_from_resource(res), (res.get("Properties") or {}).get("TableName"))
        for lid, (_stack, res) in of_type(*TABLE_RESOURCE_TYPES).items()
    }

    integrations: dict[str, str] = {}
    for lid, (_stack, res) in of_type("AWS::ApiGatewayV2::Integration").items():
        targets = [
            by_logical[r]
            for r in _refs((res.get("Properties") or {}).get("IntegrationUri"), exports)
            if r in by_logical
        ]
        if targets:
            integrations[lid] = targets[0]

    authorizers: dict[str, AuthorizerDef] = {}
    for lid, (_stack, res) in of_type("AWS::ApiGatewayV2::Authorizer").items():
        props = res.get("Properties") or {}
        if props.get("AuthorizerType") != "JWT":
            continue
        jwt_config = props.get("JwtConfiguration") or {}
        authorizers[lid] = AuthorizerDef(
            lid,
            jwt_config.get("Issuer"),
            jwt_config.get("Audience"),
            list(props.get("IdentitySource") or ["$request.header.Authorization"]),
        )

    routes: list[RouteDef] = []
    for _lid, (_stack, res) in of_type("AWS::ApiGatewayV2::Route").items():
        props = res.get("Properties") or {}
        targets = [integrations[r] for r in _refs(props.get("Target"), exports) if r in integrations]
        if not targets:
            continue
        auth_refs = [r for r in _refs(props.get("AuthorizerId"), exports) if r in authorizers]
        routes.append(
            RouteDef(
                route_key=str(props["RouteKey"]),
                function=targets[0],
                authorization_type=str(props.get("AuthorizationType", "NONE")),
                authorizer=auth_refs[0] if auth_refs else None,
                scopes=[s for s in props.get("AuthorizationScopes") or [] if isinstance(s, str)],
            )
        )

    mappings: list[MappingDef] = []
    for lid, (_stack, res) in of_type("AWS::Lambda::EventSourceMapping").items():
        props = res.get("Properties") or {}
        fn_refs = [by_logical[r] for r in _refs(props.get("FunctionName"), exports) if r in by_logical]
        if not fn_refs and isinstance(props.get("FunctionName"), str):
            fn_refs = [n for n in functions if _normal(n) in _normal(props["FunctionName"])]
        if not fn_refs:
            continue
        source_tables = [r for r in _refs(props.get("EventSourceArn"), exports) if r in tables]
        from local_runtime.filters import parse_filters

        destination = ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        mappings.append(
            MappingDef(
                logical_id=lid,
                function=fn_refs[0],
                table=source_tables[0] if source_tables else None,
                batch_size=int(props.get("BatchSize", 100)),
                starting_position=str(props.get("StartingPosition", "TRIM_HORIZON")),
                filters=parse_filters(props.get("FilterCriteria")),
                maximum_retry_attempts=int(props.get("MaximumRetryAttempts", -1)),
                bisect_on_error=bool(props.get("BisectBatchOnFunctionError", False)),
                report_batch_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                maximum_record_age_s=int(props.get("MaximumRecordAgeInSeconds", -1)),
                maximum_batching_window_s=int(props.get("MaximumBatchingWindowInSeconds", 0)),
                on_failure=json.dumps(destination) if destination is not None else None,
                enabled=bool(props.get("Enabled", True)),
            )
        )

    schedules: list[ScheduleDef] = []
    for lid, (_stack, res) in of_type("AWS::Events::Rule").items():
        props = res.get("Properties") or {}
        expression = props.get("ScheduleExpression")
        if not isinstance(expression, str):
            continue  # a rule on an event pattern: not a schedule (docs/local-runtime.md, "What differs")
        named = props.get("Name")
        name = named if isinstance(named, str) else lid
        for target in props.get("Targets") or []:
            fn_refs = [by_logical[r] for r in _refs(target.get("Arn"), exports) if r in by_logical]
            if not fn_refs:
                continue  # a target that is not one of the app's functions (a queue, a state machine...)
            constant = target.get("Input")
            schedules.append(
                ScheduleDef(
                    logical_id=lid,
                    name=name,
                    expression=expression,
                    function=fn_refs[0],
                    input=json.loads(constant) if isinstance(constant, str) else None,
                    enabled=str(props.get("State", "ENABLED")) == "ENABLED",
                )
            )

    return AppModel(templates, functions, routes, authorizers, mappings, tables, schedules)


# -- intrinsic functions -------------------------------------------------------------------------


class Resolver:
    """Resolves CloudFormation intrinsics to local values.

    Ref of the DynamoDB table -> the local table name; secret dynamic references
    (`{{resolve:secretsmanager:...}}`) and PAGINATION_SECRET_ARN -> a local secret; EventBridge buses -> UNSET (no EventBridge
    locally), or with `buses` (the local EventBridge runs: local_runtime.local_aws) the bus's name;
    functions -> local names/ARNs; pseudo parameters -> fake account/region. Anything else
    becomes "local-<LogicalId>".
    """

    def __init__(
        self,
        app: AppModel,
        *,
        table_name: str,
        secret: Any,
        region: str = REGION,
        buses: bool = False,
    ) -> None:
        self.app = app
        self.table_name = table_name
        self.secret = secret  # callable(name) -> str
        self.region = region
        self.buses = buses
        self._types: dict[str, str] = {}
        self._properties: dict[str, dict[str, Any]] = {}
        self._exports: dict[str, Any] = {}
        for template in app.templates.values():
            for lid, res in (template.get("Resources") or {}).items():
                self._types[lid] = str(res.get("Type", ""))
                self._properties[lid] = res.get("Properties") or {}
            for output in (template.get("Outputs") or {}).values():
                name = (output.get("Export") or {}).get("Name")
                if isinstance(name, str):
                    self._exports[name] = output.get("Value")

    def environment(self, fn: FunctionDef) -> dict[str, str]:
        env: dict[str, str] = {}
        for key, raw in fn.environment.items():
            value = self.resolve(raw)
            if value is UNSET or value is None:
                continue
            text = value if isinstance(value, str) else json.dumps(value)
            if key == PAGINATION_SECRET_ARN:  # deployed, read at run time; locally the key itself
                env[PAGINATION_SECRET] = self.secret(text.split(":", 1)[0])
                continue
            env[key] = SECRET_REFERENCE.sub(lambda m: self.secret(m.group(2).split(":", 1)[0]), text)
        return env

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return UNSET if any(i is UNSET for i in items) else items
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Fn::GetAtt":
                lid, att = (arg if isinstance(arg, list) else str(arg).split(".", 1))[:2]
                return self._get_att(lid, att)
            if key == "Fn::Join":
                sep, parts = arg
                resolved = [self.resolve(p) for p in parts]
                if any(p is UNSET for p in resolved):
                    return UNSET
                return str(sep).join(str(p) for p in resolved)
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::Select":
                index, items = arg
                resolved = self.resolve(items)
                return UNSET if resolved is UNSET else resolved[int(self.resolve(index))]
            if key == "Fn::Split":
                sep, text = arg
                resolved = self.resolve(text)
                return UNSET if resolved is UNSET else str(resolved).split(sep)
            if key == "Fn::ImportValue":
                name = self.resolve(arg)
                return self.resolve(self._exports[name]) if name in self._exports else f"local-{name}"
            if key == "Fn::If":
                return self.resolve(arg[1])  # conditions are not evaluated locally: the "true" branch
        return {k: self.resolve(v) for k, v in value.items()}

    def _ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "shop-local",
            "AWS::NoValue": UNSET,
        }
        if name in pseudo:
            return pseudo[name]
        rtype = self._types.get(name, "")
        if rtype in TABLE_RESOURCE_TYPES:
            return self.table_name
        if rtype == "AWS::Events::EventBus" and self.buses:
            return self.resolve(self._properties[name].get("Name"))
        if rtype.startswith("AWS::Events::"):
            return UNSET
        if rtype == "AWS::SecretsManager::Secret":
            return f"arn:aws:secretsmanager:{self.region}:{ACCOUNT_ID}:secret:{name}"
        if rtype == "AWS::Lambda::Function":
            for fn in self.app.functions.values():
                if fn.logical_id == name:
                    return fn.function_name
        return f"local-{name}"

    def _get_att(self, lid: str, att: str) -> Any:
        rtype = self._types.get(lid, "")
        if rtype in TABLE_RESOURCE_TYPES:
            arn = f"arn:aws:dynamodb:{self.region}:{ACCOUNT_ID}:table/{self.table_name}"
            return f"{arn}/stream/local" if att == "StreamArn" else arn
        if rtype == "AWS::Events::EventBus" and self.buses and att == "Arn":
            return f"arn:aws:events:{self.region}:{ACCOUNT_ID}:event-bus/{self._ref(lid)}"
        if rtype.startswith("AWS::Events::"):
            return UNSET
        if rtype == "AWS::Lambda::Function":
            for fn in self.app.functions.values():
                if fn.logical_id == lid:
                    return fn.arn
        return f"local-{lid}-{att}"

    def named(self, resource_type: str, name_property: str) -> list[str]:
        """The resolved names of the resources of a type that set their name (buckets, buses)."""
        names = []
        for lid, rtype in self._types.items():
            value = self._properties[lid].get(name_property)
            if rtype == resource_type and value is not None:
                resolved = self.resolve(value)
                if isinstance(resolved, str):
                    names.append(resolved)
        return sorted(set(names))

    def _sub(self, arg: Any) -> Any:
        text, variables = (arg[0], self.resolve(arg[1])) if isinstance(arg, list) else (arg, {})
        if variables is UNSET:
            return UNSET
        unset = False

        def repl(match: re.Match[str]) -> str:
            nonlocal unset
            expr = match.group(1)
            if expr.startswith("!"):
                return "${" + expr[1:] + "}"
            if expr in variables:
                value = variables[expr]
            elif "." in expr and not expr.startswith("AWS::"):
                lid, att = expr.split(".", 1)
                value = self._get_att(lid, att)
            else:
                value = self._ref(expr)
            if value is UNSET:
                unset = True
                return ""
            return str(value)

        result = re.sub(r"\$\{([^}]+)\}", repl, str(text))
        return UNSET if unset else result
