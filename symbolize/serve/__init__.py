"""``symbolize serve --forward URL``: an OTLP/HTTP profiles pass-through that names native frames.

A collector (or the eBPF profiler) exports to us, we name the export's bare addresses with one
long-lived loader (its indexes stay warm) and forward the named export to the receiver at
``URL``; the sender's answer is the receiver's, so nothing is acknowledged that the receiver did
not take. :mod:`~symbolize.serve.protocol` (what OTLP/HTTP says: paths, content types, the
development version header, status bodies, Retry-After), :mod:`~symbolize.serve.forward` (the
client side, with retries), :mod:`~symbolize.serve.naming` (the naming worker and its bounded
queue), :mod:`~symbolize.serve.server` (the HTTP side, admission, health, graceful shutdown).
Nothing here is imported by another command (start-up is measured): the CLI imports it inside
``serve``.
"""
