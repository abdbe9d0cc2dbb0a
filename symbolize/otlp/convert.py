"""``symbolize convert``: pprof <-> OTLP profiles, by what the input's bytes are.

Inputs: a pprof profile (or a gperftools one, read as :mod:`symbolize.pprof` reads them) or an
OTLP export (:mod:`symbolize.otlp.encoding`); gzipped or not. Outputs: pprof protobuf, or OTLP
protobuf or JSON; gzipped when the input was. pprof -> OTLP -> pprof gives back the same
profile message (:mod:`symbolize.otlp.from_pprof`); OTLP -> pprof says what pprof had no place for.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from symbolize.errors import SymbolizeError
from symbolize.otlp.encoding import Encoding, encode_profiles_data, is_json, read_profiles_data
from symbolize.otlp.from_pprof import profiles_from_pprof
from symbolize.otlp.to_pprof import pprof_from_profiles
from symbolize.pprof import GZIP_MAGIC, gunzip, parse_profile, serialize_profile
from symbolize.profiles import OPENTELEMETRY_EXPORT, ProfileFormat, describe_protobuf, sniff_format


class Target(enum.StrEnum):
    OTLP = "otlp"
    PPROF = "pprof"


@dataclass(frozen=True)
class Converted:
    """The output's bytes, and a note on what the output format had no place for (or None)."""

    data: bytes
    note: str | None = None


def is_otlp(data: bytes) -> bool:
    """Whether ``data`` (gunzipped) is an OTLP profiles export, JSON or protobuf."""
    return is_json(data) or describe_protobuf(data) == OPENTELEMETRY_EXPORT


def looks_like_otlp(data: bytes, path: Path | str = "<memory>") -> bool:
    """:func:`is_otlp` of ``data`` as read (gunzipped first when it is gzip)."""
    return is_otlp(gunzip(data, path) if data[:2] == GZIP_MAGIC else data)


def convert(
    data: bytes,
    to: Target,
    *,
    encoding: Encoding = Encoding.PROTOBUF,
    original_payload: bool = False,
    path: Path | str = "<memory>",
) -> Converted:
    """``data`` (any input of the module docstring) as ``to``; ``encoding`` is the OTLP output's.

    ``original_payload`` puts the input's bytes, as given, in the first OTLP profile's
    ``original_payload`` (format ``pprof``): only for a pprof input converted to OTLP.
    Errors are SymbolizeErrors naming ``path``.
    """
    gzipped = data[:2] == GZIP_MAGIC
    plain = gunzip(data, path) if gzipped else data
    if is_otlp(plain):
        if original_payload:
            raise SymbolizeError("--original-payload: the input is already OTLP", path)
        message, _, _ = read_profiles_data(plain, path)
        if to is Target.OTLP:
            return Converted(_compressed(encode_profiles_data(message, encoding), gzipped))
        profile, dropped = pprof_from_profiles(message, path)
        return Converted(serialize_profile(profile, gzip=gzipped), dropped.describe())
    profile, _ = parse_profile(plain, path)
    if to is Target.PPROF:
        return Converted(serialize_profile(profile, gzip=gzipped))
    if original_payload and sniff_format(plain) is not ProfileFormat.PPROF:
        raise SymbolizeError(f"--original-payload: the input is a {sniff_format(plain).value}, not pprof", path)
    converted = profiles_from_pprof(profile, original_payload=data if original_payload else None, path=path)
    return Converted(_compressed(encode_profiles_data(converted, encoding), gzipped))


def _compressed(data: bytes, gzipped: bool) -> bytes:
    if not gzipped:
        return data
    import gzip

    return gzip.compress(data, compresslevel=6, mtime=0)
