"""OpenTelemetry profiles (``opentelemetry.proto.profiles.v1development``, the messages of the
``opentelemetry-proto`` wheel): reading and writing them, and the lossless pprof <-> OTLP converter.

:mod:`~symbolize.otlp.encoding` (bytes: protobuf, OTLP JSON), :mod:`~symbolize.otlp.from_pprof` and
:mod:`~symbolize.otlp.to_pprof` (the two directions), :mod:`~symbolize.otlp.attributes` (the keys),
:mod:`~symbolize.otlp.convert` (``symbolize convert``). Nothing here is imported by a run that
does not convert: the CLI imports it inside the command (start-up is measured).
"""
