"""Start and stop localstripe (PyPI: a stateful fake Stripe server) for tests and the local runtime.

`LocalStripe().start()` runs it in a child process on 127.0.0.1: the child binds the port itself (0: any free
one) and reports it, so two engineers or two test sessions never race for one. localstripe 1.15.10 pickles its
whole store to /tmp/localstripe.pickle after every write and reloads it at start; the child runs with that off
(each instance starts empty and keeps its data in memory), so parallel instances never share or clobber state.
It also lets a declined intent take another card, as Stripe does (`_confirmable_after_decline`); `as_released=True`
runs localstripe without that correction (the test that pins what it corrects).

Webhooks: `register_webhook(id, url, secret)` is localstripe's `POST /_config/webhooks/<id>` (form fields
`url`, `secret`, optional `events`); it then signs every event it sends to `url` with `secret` as Stripe does
(`Stripe-Signature: t=<created>,v1=<hmac>`), one second after the change. The Stripe adapter reaches it with
`api_base=<endpoint>` and any `sk_test_...` key (docs/payments.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from local_runtime import child_process

TEST_SECRET_KEY = "sk_test_localstripe"  # noqa: S105 - not a secret: localstripe accepts any key that starts with sk_test_
_READY_PREFIX = "localstripe listening on port "


class LocalStripe:
    """One localstripe process; `port=None` lets the child pick a free one."""

    def __init__(self, *, port: int | None = None, host: str = "127.0.0.1", as_released: bool = False) -> None:
        self._requested_port = port or 0
        self._as_released = as_released
        self.port = 0
        self.host = host
        self._proc: subprocess.Popen[str] | None = None
        self._log: Any = None
        self._ready = False
        self._port_read = False  # the spawned child's port line read (`wait_port`)
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        if not self.port:
            raise RuntimeError("LocalStripe has no port yet: call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 30.0) -> LocalStripe:
        """Spawn the server (unless `spawn` did) and block until it answers (RuntimeError with its log tail
        otherwise)."""
        return self.spawn().wait_ready(timeout)

    def spawn(self) -> LocalStripe:
        """Start the process and return at once, so that it boots while the caller does something else; `start`
        then waits for it. It dies with the thread that spawns it (PR_SET_PDEATHSIG): spawn it from a long-lived
        one."""
        with self._lock:
            if self.is_running():
                return self
            self._ready = self._port_read = False
            self._log = tempfile.TemporaryFile(prefix="localstripe-", mode="w+")  # noqa: SIM115 - closed in stop()
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "local_runtime.localstripe",
                    "--serve",
                    self.host,
                    str(self._requested_port),
                    *(["--as-released"] if self._as_released else []),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
                start_new_session=True,
                preexec_fn=child_process.set_pdeathsig,  # noqa: PLW1509 - one prctl call
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            )
            child_process.track(self)
            return self

    def wait_port(self, timeout: float = 30.0) -> int:
        """The port the spawned server bound: the child binds it before it loads localstripe, so `endpoint` is known
        about when Python has started, well before the server answers (`wait_ready`)."""
        with self._lock:
            try:
                self._read_port_once(timeout)
            except RuntimeError:
                self._terminate()
                child_process.untrack(self)
                raise
            return self.port

    def wait_ready(self, timeout: float = 30.0) -> LocalStripe:
        """Block until the spawned server answers (RuntimeError with its log tail otherwise)."""
        with self._lock:
            if self._ready:
                return self
            try:
                self._read_port_once(timeout)
                self._wait_ready(timeout)
            except RuntimeError:
                self._terminate()
                child_process.untrack(self)
                raise
            self._ready = True
            return self

    def restart(self, timeout: float = 30.0) -> LocalStripe:
        """A new server on the port this one had, after its process exited: localstripe keeps its objects in
        memory, so it starts empty."""
        with self._lock:
            self._terminate()
            self._requested_port = self.port
        return self.start(timeout)

    def _read_port_once(self, timeout: float) -> None:
        if not self._port_read:
            assert self._proc is not None
            self.port = child_process.read_port(self._proc, _READY_PREFIX, timeout, self._log)
            self._port_read = True

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.request("GET", "/v1/customers?limit=1")
                return
            except (OSError, urllib.error.URLError):
                pass
            if self._proc is None or self._proc.poll() is not None:
                raise RuntimeError(f"localstripe exited on port {self.port}: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"localstripe did not answer on {self.endpoint} within {timeout:.0f}s")
            time.sleep(0.05)

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> bytes:
        """One call to the server with the test key; HTTPError on a 4xx/5xx answer."""
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.endpoint + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {TEST_SECRET_KEY}")
        with urllib.request.urlopen(request, timeout=10) as answer:
            body: bytes = answer.read()
            return body

    def register_webhook(self, webhook_id: str, url: str, secret: str, events: list[str] | None = None) -> None:
        """Deliver every event (or only `events`) to `url`, signed with `secret`."""
        form = {"url": url, "secret": secret}
        if events is not None:
            raise ValueError("localstripe reads `events` only from a JSON body; register every event instead")
        self.request("POST", f"/_config/webhooks/{urllib.parse.quote(webhook_id, safe='')}", form)

    def flush(self) -> None:
        """Forget every object (customers, intents, ...): a clean server for the next test."""
        self.request("DELETE", "/_config/data")

    def _log_tail(self, limit: int = 2000) -> str:
        return child_process.log_tail(self._log, limit)

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server's process group; idempotent."""
        with self._lock:
            self._terminate(timeout)
            child_process.untrack(self)

    def _terminate(self, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is not None:
            child_process.stop_group(proc, timeout)
            if proc.stdout is not None:
                proc.stdout.close()
        child_process.close_log(self._log)
        self._log = None

    def __enter__(self) -> LocalStripe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _confirmable_after_decline(resources: Any) -> None:
    """Stripe returns an intent whose confirmation was declined to `requires_payment_method`, and a new payment
    method makes it `requires_confirmation` again. localstripe 1.15.10 derives the status from the intent's latest
    charge, the declined one, so its confirm refuses the intent for good (400): a new payment method on such an
    intent unlinks that charge (it stays among the charges) until the next confirmation makes another."""
    intent = resources.PaymentIntent
    update = intent._update

    def _update(self: Any, **data: Any) -> None:
        declined = self.latest_charge is not None and self.latest_charge.status == "failed"
        update(self, **data)
        if declined and "payment_method" in data:
            self.latest_charge = None

    intent._update = _update


def _serve(host: str, port: int, *, as_released: bool = False) -> None:  # pragma: no cover - the child process
    # The port first, reported at once (LocalStripe.wait_port), then the libraries: the parent can hand the endpoint
    # to its functions while they load; a connection before the server listens is refused and retried.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    print(f"{_READY_PREFIX}{sock.getsockname()[1]}", flush=True)
    from aiohttp import web
    from localstripe import resources, server

    resources.Store.dump_to_disk = lambda self: None  # in memory only
    if not as_released:
        _confirmable_after_decline(resources)
    web.run_app(server.app, sock=sock, print=None, access_log=None, handle_signals=True)


def main(argv: list[str]) -> None:  # pragma: no cover - manual helper and the child's entry point
    if argv[:1] == ["--serve"]:
        _serve(argv[1], int(argv[2]), as_released="--as-released" in argv[3:])
        return
    with LocalStripe(port=int(argv[0]) if argv else None) as stripe_server:
        print(stripe_server.endpoint, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
