"""A real S3 server on loopback: moto's ``ThreadedMotoServer`` (the ``moto[server]`` test extra).

moto answers the S3 REST protocol as AWS does (conditional PUT with ``If-None-Match: *``
included), from memory, in a thread of the test process; the clients under test (obstore, in
this process or in the subprocesses a test starts) talk to it over HTTP on 127.0.0.1, on a
port the OS chose. :meth:`S3Server.stop` takes it away mid-run (a store that goes away).

Usable as a script too (a benchmark's store)::

    python tests/servers/s3.py      # prints the AWS_* variables and the bucket URL, serves until killed
"""

from __future__ import annotations

import contextlib
import importlib.util
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"


class Unavailable(Exception):
    """Why the S3 server cannot run here (the tests skip with it)."""


@dataclass
class S3Server:
    """A running moto server with one bucket."""

    endpoint: str
    bucket: str
    _server: Any = field(repr=False)

    @property
    def environ(self) -> dict[str, str]:
        """The variables that point obstore (and boto3) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }

    def url(self, prefix: str = "") -> str:
        return f"s3://{self.bucket}/{prefix}".rstrip("/")

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, **_keys())

    def keys(self, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``, with its bytes (read with boto3, not the code under test)."""
        client = self.client()
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"]] = client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
        return found

    def stop(self) -> None:
        self._server.stop()


def _keys() -> dict[str, str]:
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@contextlib.contextmanager
def start_s3() -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1 (an ephemeral port) with a fresh bucket; stopped on exit."""
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
        raise Unavailable("moto[server] is not installed (pip install -e '.[test]')")
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request, on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    running = S3Server(f"http://{host}:{port}", f"indexes-{uuid.uuid4().hex[:12]}", server)
    try:
        running.client().create_bucket(Bucket=running.bucket)
        yield running
    finally:
        with contextlib.suppress(Exception):  # stopped already by the test
            server.stop()


@contextlib.contextmanager
def stalling_endpoint() -> Iterator[str]:
    """An endpoint (``http://127.0.0.1:PORT``) that accepts connections, reads what it is sent and
    never answers: an S3 server that hangs. Its connections are closed when the context ends."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stopped = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stopped.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)  # read by nobody, answered never

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        host, port = listener.getsockname()[:2]
        yield f"http://{host}:{port}"
    finally:
        stopped.set()
        thread.join()
        listener.close()
        for connection in held:
            connection.close()


if __name__ == "__main__":
    import time

    with start_s3() as serving:
        for name, value in serving.environ.items():
            print(f"export {name}={value}")
        print(f"export SYMBOLIZE_INDEX_STORE={serving.url('idx')}", flush=True)
        while True:
            time.sleep(3600)
