"""OpenTelemetry profiles (``opentelemetry.proto.profiles.v1development``, the messages of the
``opentelemetry-proto`` wheel): reading and writing them, the lossless pprof <-> OTLP converter,
and naming and stamping exports.

:mod:`~symbolize.otlp.encoding` (bytes: protobuf, OTLP JSON), :mod:`~symbolize.otlp.from_pprof` and
:mod:`~symbolize.otlp.to_pprof` (the two directions), :mod:`~symbolize.otlp.attributes` (the keys),
:mod:`~symbolize.otlp.dictionary` (building and appending to a ``ProfilesDictionary``),
:mod:`~symbolize.otlp.convert` (``symbolize convert``), :mod:`~symbolize.otlp.rewrite`
(``symbolize profile`` on OTLP: ``rewrite_otlp_payload``, what ``serve`` calls) and
:mod:`~symbolize.otlp.stamp` (``symbolize stamp`` on OTLP). Nothing here is imported by a run that
reads no OTLP: the CLI and the API import it inside the functions that need it (start-up is
measured).
"""
