"""``symbolize serve``'s run: build the service, listen, stop gracefully on SIGTERM or SIGINT."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from symbolize.serve.diagnostics import log
from symbolize.serve.forward import Forwarder, ForwardTarget
from symbolize.serve.naming import NamingWorker
from symbolize.serve.server import ProfileService, ServeHTTPServer, ServeLimits

if TYPE_CHECKING:
    from symbolize.api import Session
    from symbolize.loader import Loader
    from symbolize.rewrite import RewriteOptions


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) as (host, port); ValueError when it is neither."""
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not HOST:PORT: {text!r}")
    return host, int(port)


def serve(
    listen: tuple[str, int],
    forward_url: str,
    session: Session,
    rewrite_options: Callable[[Loader], RewriteOptions],
    limits: ServeLimits,
    *,
    forward_headers: dict[str, str] | None = None,
    ready: Callable[[str], None] = log,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down as the server's docstring says. ``ready``
    hears ``listening on http://HOST:PORT`` once connections are accepted (the port read back
    when 0 was asked). ``forward_headers`` go with every forwarded export (a backend's credentials)."""
    forwarder = Forwarder(ForwardTarget(forward_url), deadline=limits.forward_deadline,
                          attempt_timeout=limits.attempt_timeout, headers=forward_headers)  # fmt: skip
    worker = NamingWorker(session, rewrite_options, capacity=limits.max_pending)
    service = ProfileService(worker, forwarder, limits)
    try:
        httpd = ServeHTTPServer(listen, service)
    except OSError as exc:
        worker.stop(1.0)
        raise OSError(exc.errno, f"cannot listen: {exc.strerror}", f"{listen[0]}:{listen[1]}") from exc
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    accepting = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="symbolize-accept")
    accepting.start()
    host, port = httpd.server_address[:2]
    shown_host = host.decode() if isinstance(host, bytes) else host
    shown_host = f"[{shown_host}]" if ":" in shown_host else shown_host
    ready(f"listening on http://{shown_host}:{port}, forwarding to {forwarder.target.shown}")
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _shut_down(httpd, service, accepting, limits)
        worker.stop(limits.shutdown_timeout)
        forwarder.close()


def _shut_down(httpd: ServeHTTPServer, service: ProfileService, accepting: threading.Thread,
               limits: ServeLimits) -> None:  # fmt: skip
    service.stopping.set()
    httpd.shutdown()
    accepting.join()
    httpd.socket.close()  # new connections are refused from here
    httpd.close_idle()
    finished = service.wait_idle(limits.shutdown_timeout)
    if not finished:
        service.aborting.set()  # the rest are answered 503 + Retry-After now
        service.forwarder.abort()
        service.wait_idle(limits.forward_deadline + 5.0)
    httpd.close_idle()
    httpd.server_close()  # joins the connections' threads
    log(f"stopped ({'every export answered' if finished else 'exports past the deadline answered 503'})")
