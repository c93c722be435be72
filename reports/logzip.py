"""Size checks of an `.eval` log's zip members, before Inspect reads any of them.

Inspect decompresses a member whole (`header.json` for a header, each sample for its events),
so a log of a few MB whose `header.json` inflates to GBs (a zip bomb) would take that much
memory. `oversized_member` reads the zip's central directory and refuses a member that
declares more than `MEMBER_LIMIT` (`SAMPLE_LIMIT` for a sample); since a declared size can
lie, a member that could inflate past its limit is also decompressed as a stream (nothing
kept) and refused when it yields more than it declares. Deflate inflates at most ~1032:1, so
members whose compressed size bounds them under the limit are not streamed.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO, BinaryIO, cast

#: Largest decompressed member a report reads (bytes): the header, summaries, reductions. Parsing
#: JSON takes ~5 times its size in memory, so a report reading one stays under ~500 MB RSS.
MEMBER_LIMIT = 48 << 20
#: Largest decompressed sample (`samples/...`): a transcript with images can be large.
SAMPLE_LIMIT = 256 << 20
#: Deflate's largest expansion (a stream of one repeated byte): ~1032 output bytes per input byte.
DEFLATE_MAX_RATIO = 1032
_ZSTD = 93
_CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def oversized_member(
    path: str | Path, limit: int = MEMBER_LIMIT, sample_limit: int = SAMPLE_LIMIT
) -> str | None:
    """Why a member of the `.eval` zip at `path` is too large to read, or None when none is.

    Args:
        path: A local `.eval` log.
        limit: Largest decompressed size allowed per member, in bytes.
        sample_limit: The same for a sample (`samples/...`).

    Returns:
        One line naming the member and its size, or None (also when the file is no zip at all:
        Inspect's reader then says what is wrong with it).
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return None
    member_limit = limit
    with archive, open(path, "rb") as raw:
        for info in archive.infolist():
            name = info.filename
            limit = sample_limit if name.startswith("samples/") else member_limit
            if info.file_size > limit or info.compress_size > limit:
                size = max(info.file_size, info.compress_size)
                return f"zip member {name!r} declares {_mib(size)}, over the {_mib(limit)} limit"
            if info.compress_type == zipfile.ZIP_STORED:
                continue
            if (
                info.compress_type == zipfile.ZIP_DEFLATED
                and info.compress_size * DEFLATE_MAX_RATIO <= limit
            ):
                continue
            found = _inflated_size(raw, info, min(info.file_size, limit) + 1)
            if found > info.file_size:
                return (
                    f"zip member {name!r} inflates past the {_mib(info.file_size)} it declares "
                    f"(stopped at {_mib(found)})"
                )
    return None


def _inflated_size(raw: BinaryIO, info: zipfile.ZipInfo, stop: int) -> int:
    """How many bytes the member decompresses to, counting no further than `stop`."""
    raw.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    raw.seek(info.header_offset + _LOCAL_HEADER.size + header[9] + header[10])
    compressed = _Bounded(raw, info.compress_size)
    try:
        if info.compress_type == zipfile.ZIP_DEFLATED:
            return _inflated_deflate(compressed, stop)
        if info.compress_type == _ZSTD:
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], compressed)) as reader:
                total = 0
                while total < stop and (chunk := reader.read(_CHUNK)):
                    total += len(chunk)
                return total
    except (zlib.error, ValueError, OSError):
        return 0  # a corrupt stream: Inspect's reader names it
    return 0  # a method Inspect cannot read either: its reader says so


def _inflated_deflate(compressed: _Bounded, stop: int) -> int:
    decompressor = zlib.decompressobj(-15)
    total = 0
    while total < stop:
        data = compressed.read(_CHUNK)
        total += len(decompressor.decompress(data, _CHUNK))
        while decompressor.unconsumed_tail and total < stop:
            total += len(decompressor.decompress(decompressor.unconsumed_tail, _CHUNK))
        if not data:
            break
    return total


class _Bounded:
    """The next `size` bytes of `raw`, as a file (a member's compressed bytes)."""

    def __init__(self, raw: BinaryIO, size: int) -> None:
        self._raw = raw
        self._left = size

    def read(self, size: int = -1) -> bytes:
        wanted = self._left if size < 0 else min(size, self._left)
        data = self._raw.read(wanted)
        self._left -= len(data)
        return data
