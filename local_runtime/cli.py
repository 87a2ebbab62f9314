"""`python -m local_runtime dev|token|invoke|replay`: the local stack, tokens, one-off invocations, replays."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import pathlib
import shutil
import signal
import sys
import threading
from typing import Any

from infra.settings import LOCAL_TABLE_NAME
from local_runtime import auth, dev_state, failures
from local_runtime.dynamodb_local import FULL_JIT, QUICK_START, DynamoDBLocal, create_table
from shop.limits import CAPTURE_MODES, DEFAULT_CAPTURE

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_STATE_DIR = REPO_ROOT / ".local"
DEFAULT_TABLE_NAME = LOCAL_TABLE_NAME  # the `-c local=true` synth names it too (sam local invoke)
READY_LINE = "local stack ready"
MAX_STORE_RESTARTS = 5
WORKER_INIT_S = 60.0  # how long `dev` waits for the functions' workers to import their handlers before it serves
STORE_FAULTS_FILE = "store-faults.json"  # what fault drills write to throttle the functions' store calls
# The variables the running `dev` gives its functions (its --env, make dev's FUNCTION_ENV, and its payments'):
# `replay` gives them to the functions it runs, so that a replay judges a record's freshness with the stack's
# archival grace and runs in the stack's payment mode.
DEV_ENV_FILE = "dev-env.json"

log = logging.getLogger("local_runtime")


def _table_name(app: Any) -> str:
    name = app.table.table_name
    return name if isinstance(name, str) and len(name) >= 3 else DEFAULT_TABLE_NAME


def _synthesized_capture(app: Any) -> str:
    """The capture mode the templates were synthesized for (-c capture): payment_steps' CAPTURE, on_ship without."""
    steps = app.functions.get("payment_steps")
    capture = steps.environment.get("CAPTURE") if steps is not None else None
    return capture if isinstance(capture, str) and capture else DEFAULT_CAPTURE


def cmd_token(args: argparse.Namespace) -> int:
    keys = auth.load_or_create_keys(pathlib.Path(args.data_dir))
    groups = [g.strip() for g in (args.groups or "").split(",") if g.strip()]
    print(auth.issue_token(keys, args.sub, groups=groups, ttl_s=args.ttl))
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    from local_runtime import payments as local_payments
    from local_runtime.function_logs import Follower, start_run
    from local_runtime.functions import Functions
    from local_runtime.gateway import Gateway, swagger_assets_dir
    from local_runtime.local_aws import S3_DIR, BusCapture, LocalAws
    from local_runtime.localstripe import LocalStripe
    from local_runtime.openapi import load_document
    from local_runtime.poller import StreamPoller
    from local_runtime.schedules import Scheduler
    from local_runtime.seed import seed_once
    from local_runtime.template import Resolver, TemplateError, load_app
    from local_runtime.ttl import TtlDeletions, TtlEmulator

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    state_dir = pathlib.Path(args.data_dir).resolve()
    ddb_dir = state_dir / "dynamodb"
    if args.fresh or args.in_memory:
        shutil.rmtree(ddb_dir, ignore_errors=True)
        for checkpoints in state_dir.glob("stream-checkpoints*.json"):
            checkpoints.unlink(missing_ok=True)
        shutil.rmtree(state_dir / failures.LOCAL_DIR, ignore_errors=True)
        shutil.rmtree(state_dir / S3_DIR, ignore_errors=True)
    try:
        app = load_app(pathlib.Path(args.cdk_out))
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # payment_steps' filters come from the templates: functions told another mode would never see what to capture
    synthesized = _synthesized_capture(app)
    for wanted in (args.capture, _overrides(args.env).get("CAPTURE")):
        if wanted is None or wanted == synthesized:
            continue
        print(
            f"error: {args.cdk_out} was synthesized with capture={synthesized}, not {wanted}: "
            f"run `make synth CAPTURE={wanted}` (or `npx cdk synth -c capture={wanted}`) rather than setting CAPTURE",
            file=sys.stderr,
        )
        return 2
    if args.schedule_interval is not None and args.schedule_interval < 0:
        print("error: --schedule-interval takes seconds (0: no schedules)", file=sys.stderr)
        return 2
    table_name = _table_name(app)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    # The drills (--deployed-budget) time the store under load: the full JIT there.
    quick = FULL_JIT if args.deployed_budget else QUICK_START
    ddb = DynamoDBLocal(port=args.dynamodb_port, data_dir=None if args.in_memory else ddb_dir, jvm_options=quick)
    aws = LocalAws(state_dir, port=args.aws_port)
    functions: Functions | None = None
    server = None
    paying: Any = None  # local_runtime.payments.LocalPayments with --payments stripe
    stripe_server: LocalStripe | None = None
    follower: Follower | None = None
    pollers: list[StreamPoller] = []
    ttl: TtlEmulator | None = None
    scheduler: Scheduler | None = None
    capture: BusCapture | None = None
    ttl_deletions = TtlDeletions(app.table.spec.ttl_attribute or "expires_at", _key_names(app.table.spec))
    try:
        names = Resolver(app, table_name=table_name, secret=lambda _: "", buses=True)
        keys = auth.load_or_create_keys(state_dir)
        overrides = _overrides(args.env)
        webhook_secret = local_payments.new_webhook_secret()

        def aws_ready() -> list[Any]:
            aws.wait_ready()
            aws.create_buckets(names.named("AWS::S3::Bucket", "BucketName"))
            return [aws.create_bus(bus) for bus in names.named("AWS::Events::EventBus", "Name")]

        def tokens() -> tuple[str, str]:
            return auth.issue_token(keys, "demo-customer"), auth.issue_token(keys, "demo-admin", groups=["admin"])

        def warm_functions() -> Functions:
            started = Functions(
                app,
                table_name=table_name,
                endpoint=ddb.endpoint,
                state_dir=state_dir,
                concurrency=args.concurrency,
                deployed_budget=args.deployed_budget,
                store_faults=state_dir / STORE_FAULTS_FILE if args.deployed_budget else None,
                aws_endpoint=aws.endpoint,
                overrides=overrides,
                log_dir=logs,
            )
            started.warm()
            return started

        # A warm start waits on Java's start; everything else is done meanwhile: every function's worker importing
        # its handler (a deployed function's init), moto's server (a child too: its import and requests stay off
        # this interpreter) with its buckets and buses, localstripe's boot, the banner's tokens, the Swagger assets.
        # The workers' environment names every port, so the ports come first: Java's is taken when it is spawned,
        # moto's and localstripe's as soon as their children have bound them.
        # Java, moto and localstripe from this thread: each dies with the thread that started it (PR_SET_PDEATHSIG).
        ddb.spawn()
        aws.spawn()
        if args.payments == "stripe":
            stripe_server = LocalStripe().spawn()
            stripe_server.wait_port()
            overrides = {**local_payments.environment(stripe_server.endpoint, webhook_secret), **overrides}
        else:
            local_payments.forget(state_dir)
            overrides = {"PAYMENTS": "none", **overrides}
        aws.wait_port()
        _remember_env(state_dir, overrides)
        logs = start_run(state_dir, sorted(app.functions))
        functions = warm_functions()
        planned = ddb.endpoint
        with concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="start") as starting:
            aws_started = starting.submit(aws_ready)
            banner_tokens = starting.submit(tokens)
            swagger_dir = starting.submit(swagger_assets_dir)
            ddb.start()
            buses = aws_started.result()
        if ddb.endpoint != planned:  # the port Java was given was taken meanwhile: the workers must know the new one
            functions.close()
            functions = warm_functions()
        client = ddb.client()
        create_table(client, table_name, spec=app.table.spec, exist_ok=True)
        for bus in buses:
            capture = BusCapture(aws, bus).start()
        if not args.no_seed:
            seeded = seed_once(client, table_name, ddb_dir / ".seeded")
            if seeded:
                print(f"seeded {len(seeded)} demo products", flush=True)

        def invoke(name: str, event: Any) -> Any:
            assert functions is not None
            return functions.invoke(name, event)

        # The gateway is bound first (port 0: any free one), so localstripe can be told where to deliver; it
        # serves once every function is warm.
        gateway = Gateway(
            app.routes,
            invoke,
            auth.JwtAuthorizer(keys),
            openapi=lambda: load_document(REPO_ROOT, servers=[url]),
            swagger_dir=swagger_dir.result(),
        )
        server = gateway.server(args.host, args.port)
        url = f"http://{args.host}:{server.server_address[1]}"
        if stripe_server is not None:
            paying = local_payments.start(state_dir, url, stripe_server, webhook_secret)
        # Every worker has imported its handler before the first request or record: the first answer is as fast
        # as the next (a deployed function is initialised before its first invocation too).
        for name, ready in sorted(functions.wait_warm(WORKER_INIT_S).items()):
            if ready is None:
                print(f"warning: {name} is still importing its handler after {WORKER_INIT_S:.0f}s", file=sys.stderr)
            elif not ready.get("ready"):
                error = ready.get("error") or {}
                print(
                    f"warning: {name} failed its init ({error.get('errorType')}: {error.get('errorMessage')}): "
                    f"each invocation answers that error; {logs / (name + '.log')} has the traceback",
                    file=sys.stderr,
                    flush=True,
                )
        threading.Thread(target=server.serve_forever, name="gateway", daemon=True).start()
        mappings = [m for m in app.mappings if m.table is not None and m.enabled]
        if args.ttl_interval > 0 and app.table.spec.ttl_attribute:
            # fed by the pollers' records, it scans the table at its first sweep and every few minutes only
            ttl = TtlEmulator(
                client,
                table_name,
                attribute=app.table.spec.ttl_attribute,
                key_names=_key_names(app.table.spec),
                deletions=ttl_deletions,
                interval=args.ttl_interval,
                fed_by_stream=bool(mappings),
            )
        for mapping in mappings:
            pollers.append(
                StreamPoller(
                    mapping,
                    dynamodb=client,
                    streams=ddb.client("dynamodbstreams"),
                    table_name=table_name,
                    invoke=functools.partial(invoke, mapping.function),
                    state_dir=state_dir,
                    ttl_deletions=ttl_deletions,
                    observe=ttl.observe if ttl is not None else None,
                ).start()
            )
        if ttl is not None:
            ttl.start()
        if args.schedule_interval != 0:
            scheduler = Scheduler(app.schedules, invoke, interval_s=args.schedule_interval)
            if scheduler:
                scheduler.start()
        dev_state.record(
            state_dir,
            gateway=url,
            dynamodb_port=ddb.port,
            aws=aws.endpoint,
            localstripe=paying.server.endpoint if paying is not None else None,
        )
        payments_line = (
            f"localstripe {paying.server.endpoint} -> {paying.webhook_url}; capture {_synthesized_capture(app)}; "
            "pay: make -s pay ORDER=<id>"
            if paying is not None
            else "off (PAYMENTS=none: the stream confirms every order)"
        )
        customer, admin = banner_tokens.result()
        print(
            f"\nShop API      {url}\n"
            f"API docs      {url}/docs   (OpenAPI: {url}/openapi.json)\n"
            f"DynamoDB      {ddb.endpoint}  table {table_name}  data {'in memory' if args.in_memory else ddb_dir}\n"
            f"S3, events    {aws.endpoint}  buckets {', '.join(aws.buckets) or '-'}; "
            f"bus events -> {state_dir / 'events.jsonl'}\n"
            f"TTL           {f'every {args.ttl_interval:g}s' if ttl else 'off'}\n"
            f"schedules     {scheduler.describe() if scheduler is not None else 'off (--schedule-interval 0)'}\n"
            f"payments      {payments_line}\n"
            f"functions     {', '.join(sorted(app.functions))}; stream pollers: {len(pollers)}\n"
            f"logs          {logs}/<function>.log   (follow them: make logs; or make dev V=1)\n\n"
            f"export CUSTOMER_TOKEN={customer}\n\n"
            f"export ADMIN_TOKEN={admin}\n\n"
            f"{READY_LINE} at {url} (Ctrl-C stops everything)",
            flush=True,
        )
        if args.verbose or args.echo_logs:
            follower = Follower(logs).start()
        restarts = stripe_restarts = 0
        while not stop.wait(1.0):
            if paying is not None and stripe_restarts <= local_payments.MAX_RESTARTS and not paying.server.is_running():
                stripe_restarts += 1
                print(local_payments.restart(paying, attempt=stripe_restarts), file=sys.stderr, flush=True)
            if not ddb.is_running():
                if restarts >= MAX_STORE_RESTARTS:
                    print("error: DynamoDB Local exited again; stopping", file=sys.stderr)
                    return 1
                restarts += 1
                # As a supervisor would: same port, same data; the functions answer 503 meanwhile.
                print("DynamoDB Local exited; restarting it on the same data", file=sys.stderr, flush=True)
                ddb.restart()
        print("stopping...", flush=True)
        return 0
    finally:
        if follower is not None:
            follower.stop()
        if server is not None:
            server.shutdown()
            server.server_close()
        if ttl is not None:
            ttl.stop()
        if scheduler is not None:
            scheduler.stop()
        for poller in pollers:
            poller.stop()
        if functions is not None:
            functions.close()
        if paying is not None:
            paying.server.stop()
            local_payments.forget(state_dir)
        if stripe_server is not None:
            stripe_server.stop()
        (state_dir / DEV_ENV_FILE).unlink(missing_ok=True)
        dev_state.forget(state_dir)
        if capture is not None:
            capture.stop()
        aws.stop()
        ddb.stop()


def cmd_pay(args: argparse.Namespace) -> int:
    from local_runtime.payments import USAGE, PayError, pay

    if not args.order.strip():
        print(USAGE, file=sys.stderr)
        return 2
    try:
        print(pay(pathlib.Path(args.data_dir).resolve(), args.order, args.card))
    except PayError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _remember_env(state_dir: pathlib.Path, overrides: dict[str, str]) -> None:
    """What `dev` gives its functions, for `replay` (DEV_ENV_FILE; written over a crashed run's)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / DEV_ENV_FILE).write_text(json.dumps(overrides, sort_keys=True))


def _dev_env(state_dir: pathlib.Path) -> dict[str, str]:
    """The variables the running `dev` gives its functions, none when it is not running."""
    path = state_dir / DEV_ENV_FILE
    return {str(k): str(v) for k, v in json.loads(path.read_text()).items()} if path.exists() else {}


def _overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --env takes NAME=VALUE, got {pair!r}")
        overrides[name] = value
    return overrides


def _key_names(spec: Any) -> tuple[str, ...]:
    return tuple(entry["AttributeName"] for entry in spec.key_schema)


def cmd_logs(args: argparse.Namespace) -> int:
    from local_runtime.function_logs import Follower, log_dir

    directory = log_dir(pathlib.Path(args.data_dir).resolve())
    if not directory.is_dir():
        print(f"error: no function logs in {directory}: start `make dev` first", file=sys.stderr)
        return 2
    follower = Follower(directory, raw=True if args.raw else None, from_start=args.all)
    with contextlib.suppress(KeyboardInterrupt):
        follower.run()
    return 0


def cmd_invoke(args: argparse.Namespace) -> int:
    from local_runtime.functions import function_environment, invoke_in_process, layer_paths
    from local_runtime.template import TemplateError, load_app

    try:
        app = load_app(pathlib.Path(args.cdk_out))
        fn = app.function(args.function)
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    event_path = pathlib.Path(args.event)
    if not event_path.exists() and (REPO_ROOT / args.event).exists():
        event_path = REPO_ROOT / args.event
    event = json.load(sys.stdin) if args.event == "-" else json.loads(event_path.read_text())
    state_dir = pathlib.Path(args.data_dir).resolve()
    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    with contextlib.ExitStack() as stack:
        fresh_store = not endpoint
        if endpoint:
            table_name = os.environ.get("TABLE_NAME") or _table_name(app)
        else:
            ddb = stack.enter_context(DynamoDBLocal())
            endpoint = ddb.endpoint
            table_name = _table_name(app)
            create_table(ddb.client(), table_name, spec=app.table.spec)
        env = function_environment(app, fn, table_name=table_name, endpoint=endpoint, state_dir=state_dir)
        if fresh_store:
            _load_sample_seed(env, layer_paths(fn))
        # As `sam local invoke` does: the function's own output (logs, EMF metrics) goes to stderr,
        # the response alone to stdout.
        with contextlib.redirect_stdout(sys.stderr):
            result = invoke_in_process(fn, env, event)
    json.dump(result.payload, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if result.ok else 1


def cmd_replay(args: argparse.Namespace) -> int:
    """Re-drive given-up stream batches through the consumer that gave each up (order_events, payment_steps):
    the deployed bucket (--function names the consumer), or `make dev`'s (routed by the mapping in the key)."""
    if args.bucket:
        import boto3

        store: failures.FailureStore = failures.BucketStore(boto3.client("s3"), args.bucket)
        report: failures.ReplayReport | None = failures.replay(
            store, failures.lambda_invoker(boto3.client("lambda"), args.function)
        )
    else:
        report = _replay_locally(args)
    if report is None:
        return 2
    for key in report.replayed:
        print(f"replayed  {key}")
    for key in report.failed:
        print(f"failed    {key}  (kept; fix the cause and replay again)")
    print(f"{len(report.replayed)} replayed, {len(report.failed)} failed again")
    return 1 if report.failed else 0


def _replay_locally(args: argparse.Namespace) -> failures.ReplayReport | None:
    from local_runtime import payments as local_payments
    from local_runtime.functions import Functions
    from local_runtime.template import TemplateError, load_app

    try:
        app = load_app(pathlib.Path(args.cdk_out))
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    streamed = [m for m in app.mappings if m.table is not None]
    # a batch of a mapping the templates no longer hold goes to order_events (the table's first consumer)
    mapping = next((m for m in streamed if m.function == "order_events"), streamed[0] if streamed else None)
    if mapping is None:
        print("error: no stream mapping in the templates", file=sys.stderr)
        return None
    state_dir = pathlib.Path(args.data_dir).resolve()
    try:
        endpoint = dev_state.endpoint_for(args.endpoint, args.dynamodb_port, state_dir)
    except dev_state.NoStack as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    # Under a running `make dev` with payments, payment_steps' batches are applied against its localstripe.
    paying = local_payments.running_environment(state_dir)
    # The variables `dev` was started with (--env, remembered in its data dir; a replay's own --env wins): a stack
    # run with ARCHIVE_GRACE_SECONDS=0 archives at once, and its replays must measure a record's freshness with the
    # same grace (shop.services.archive_timing), or a record of an archived order writes beside its marker.
    overrides = {**(paying or {}), **_dev_env(state_dir), **_overrides(args.env)}
    functions = Functions(
        app,
        table_name=_table_name(app),
        endpoint=endpoint,
        state_dir=state_dir,
        concurrency=1,
        overrides=overrides or None,
    )
    try:
        store = failures.DirectoryStore(state_dir / failures.LOCAL_DIR)
        routes = {m.logical_id: functools.partial(functions.invoke, m.function) for m in app.mappings if m.table}
        return failures.replay(store, functools.partial(functions.invoke, mapping.function), routes=routes)
    finally:
        functions.close()


def _load_sample_seed(env: dict[str, str], paths: list[str]) -> None:
    """The data the sample events in events/ refer to (events/seed.json), written as the functions would."""
    os.environ.update(env)
    sys.path[:0] = [p for p in paths if p not in sys.path]
    from local_runtime.sample_data import load_seed
    from shop.config import settings

    settings.cache_clear()
    load_seed()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m local_runtime", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", default=str(DEFAULT_STATE_DIR), help="local state (keys, secrets, data)")

    dev = sub.add_parser("dev", help="run the whole backend locally (foreground)")
    common(dev)
    dev.add_argument("--port", type=int, default=3000, help="gateway port (0: any free port)")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--fresh", action="store_true", help="start with an empty table")
    dev.add_argument(
        "--in-memory",
        action="store_true",
        help="keep the table in DynamoDB Local's memory (-inMemory): a third less of its CPU a call, and nothing "
        "survives a stop (implies --fresh)",
    )
    dev.add_argument("--cdk-out", default=str(REPO_ROOT / "cdk.out"))
    dev.add_argument("--dynamodb-port", type=int, default=None, help="DynamoDB Local port (default: free)")
    dev.add_argument("--concurrency", type=int, default=4, help="warm workers per function, at most")
    dev.add_argument("--no-seed", action="store_true", help="do not seed the demo catalogue")
    dev.add_argument(
        "--deployed-budget",
        action="store_true",
        help="the deployed store timeouts, not the relaxed local ones, and <data-dir>/store-faults.json "
        "injects throttling (fault drills, bench/drills.py)",
    )
    dev.add_argument(
        "--ttl-interval",
        type=float,
        default=2.0,
        help="seconds between two TTL sweeps (DynamoDB Local's own deletes are unreliable; 0: off)",
    )
    dev.add_argument(
        "--schedule-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="run each schedule of the templates (an EventBridge rule with a rate invoking a function: payment_steps' "
        "windows' sweep) every SECONDS instead of its rate (make dev: SCHEDULE_INTERVAL; 0: none; default: its rate)",
    )
    dev.add_argument("--aws-port", type=int, default=0, help="the local S3 and EventBridge port (default: free)")
    dev.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a variable of every function (e.g. SESSION_TTL_SECONDS=5, ARCHIVE_AFTER_DAYS=0)",
    )
    dev.add_argument(
        "--payments",
        choices=("none", "stripe"),
        default="none",
        help="stripe: localstripe on a free port, every function pointed at it (make dev's default); "
        "none: version 2's flow, the stream confirms every order",
    )
    dev.add_argument(
        "--capture",
        choices=CAPTURE_MODES,
        default=None,
        help="refuse to start unless the templates were synthesized for this capture mode (-c capture: CAPTURE and "
        "payment_steps' filters come from them; make dev passes its CAPTURE); default: whatever they hold",
    )
    dev.add_argument("-v", "--verbose", action="store_true", help="log every request, and the functions' logs")
    dev.add_argument(
        "--echo-logs",
        action="store_true",
        help="the functions' logs on stdout too (readable on a terminal, JSON lines otherwise)",
    )
    dev.set_defaults(func=cmd_dev)

    token = sub.add_parser("token", help="print a bearer token the local gateway accepts")
    common(token)
    token.add_argument("--sub", required=True)
    token.add_argument("--groups", default="", help="comma-separated, e.g. admin")
    token.add_argument("--ttl", type=int, default=auth.DEFAULT_TTL_S, help="lifetime in seconds")
    token.set_defaults(func=cmd_token)

    logs = sub.add_parser("logs", help="follow a running `dev`'s function logs (Ctrl-C stops)")
    common(logs)
    logs.add_argument("--raw", action="store_true", help="the JSON lines as deployed, even on a terminal")
    logs.add_argument("--all", action="store_true", help="from the start of this run, not from now")
    logs.set_defaults(func=cmd_logs)

    invoke = sub.add_parser("invoke", help="invoke one function in-process with an event file")
    common(invoke)
    invoke.add_argument("--function", required=True)
    invoke.add_argument("--event", required=True, help="JSON file, or - for stdin")
    invoke.add_argument("--cdk-out", default=str(REPO_ROOT / "cdk.out"))
    invoke.set_defaults(func=cmd_invoke)

    pay = sub.add_parser("pay", help="pay an order of the running dev stack through localstripe (make pay)")
    common(pay)
    pay.add_argument("--order", required=True, help="the order id")
    pay.add_argument(
        "--card", default="visa", choices=("visa", "declined"), help="declined: a card localstripe declines"
    )
    pay.set_defaults(func=cmd_pay)

    replay = sub.add_parser("replay", help="re-drive given-up stream batches through order_events")
    common(replay)
    replay.add_argument("--cdk-out", default=str(REPO_ROOT / "cdk.out"))
    replay.add_argument(
        "--dynamodb-port", type=int, default=None, help="DynamoDB Local's port (default: the running `make dev`'s)"
    )
    replay.add_argument("--endpoint", default=None, help="DynamoDB endpoint (default: 127.0.0.1:<port>)")
    replay.add_argument("--bucket", default=None, help="deployed: the StreamFailureBucket output of ShopEvents")
    replay.add_argument("--function", default=None, help="deployed: the OrderEventsFunction output of ShopEvents")
    replay.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="local: a variable of the functions overridden, as `dev --env` set it (e.g. ARCHIVE_GRACE_SECONDS=0)",
    )
    replay.set_defaults(func=cmd_replay)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "replay" and bool(args.bucket) != bool(args.function):
        parser.error("replay: --bucket and --function go together (the deployed stage), or neither (local)")
    try:
        return int(args.func(args))
    except RuntimeError as exc:  # e.g. Java or DynamoDB Local missing: one clear line
        print(f"error: {exc}", file=sys.stderr)
        return 1
