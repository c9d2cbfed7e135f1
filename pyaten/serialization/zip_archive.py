"""The zip container of PyTorch's checkpoints: a streaming writer and a bounded reader.

Note: the archive layout
    `torch.save` writes a zip whose records all sit under one folder (the archive name:
    `archive`, or the file's stem): `data.pkl` (the pickled object), `.format_version`,
    `.storage_alignment`, `byteorder`, `data/<key>` (one record per storage, its raw bytes),
    `version` and `.data/serialization_id`. Every record is stored, never compressed, and its
    bytes start on a 64-byte boundary (the local header's extra field is padded with an `FB`
    field), so a reader can map a storage straight out of the file. Offsets and sizes past
    4 GiB use zip64 fields; the end of the archive always carries the zip64 end records.

    The reader trusts nothing: the central directory is parsed in chunks (its entry count is
    bounded by its size, checked against the file's), each record must lie inside the file,
    compressed records are refused (a storage is mapped or read in place, never inflated),
    and small records are read only up to a limit. So memory never exceeds what the file's
    own size accounts for, whatever the headers declare.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import IO

import numpy as np

__all__ = ["ZipReader", "ZipWriter", "ArchiveError"]

_LOCAL = 0x04034B50
_CENTRAL = 0x02014B50
_END = 0x06054B50
_END64 = 0x06064B50
_LOCATOR64 = 0x07064B50
_ALIGNMENT = 64
_MAX32 = 0xFFFFFFFF
_CHUNK = 1 << 20
_PAD_FIELD = 0x4246  # "FB", the padding field PyTorch's writer uses
_UTF8 = 0x0800  # names are UTF-8 (general purpose flag bit 11)


class ArchiveError(RuntimeError):
    """A zip archive that cannot be read as a PyTorch checkpoint."""


class ZipWriter:
    """Writes records one after another to `out`; `close()` writes the central directory."""

    def __init__(self, out: IO[bytes], archive_name: str) -> None:
        self.out = out
        self.archive_name = archive_name
        self.position = 0
        self.entries: list[tuple[bytes, int, int, int]] = []  # name, offset, crc, size

    def write_record(self, name: str, data: bytes | memoryview | np.ndarray) -> None:
        full = f"{self.archive_name}/{name}".encode()
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        size = view.nbytes
        crc = zlib.crc32(view)
        big = size >= _MAX32
        extra64 = struct.pack("<HHQQ", 1, 16, size, size) if big else b""
        start = self.position + 30 + len(full) + len(extra64) + 4
        padding = -start % _ALIGNMENT
        extra = extra64 + struct.pack("<HH", _PAD_FIELD, padding) + b"Z" * padding
        recorded = _MAX32 if big else size
        header = struct.pack(
            "<IHHHHHIIIHH", _LOCAL, 45 if big else 20, _UTF8, 0, 0, 0x21, crc, recorded, recorded,
            len(full), len(extra),
        )
        self.entries.append((full, self.position, crc, size))
        self._write(header)
        self._write(full)
        self._write(extra)
        self._write(view)

    def close(self) -> None:
        directory_start = self.position
        for name, offset, crc, size in self.entries:
            fields = []
            if size >= _MAX32:
                fields += [size, size]
            if offset >= _MAX32:
                fields.append(offset)
            extra = b""
            if fields:
                extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields)
            recorded = _MAX32 if size >= _MAX32 else size
            self._write(struct.pack(
                "<IHHHHHHIIIHHHHHII", _CENTRAL, 0x031E, 45, _UTF8, 0, 0, 0x21, crc, recorded,
                recorded, len(name), len(extra), 0, 0, 0, 0, min(offset, _MAX32),
            ))
            self._write(name)
            self._write(extra)
        directory_size = self.position - directory_start
        end64 = self.position
        count = len(self.entries)
        self._write(struct.pack(
            "<IQHHIIQQQQ", _END64, 44, 0x031E, 45, 0, 0, count, count, directory_size,
            directory_start,
        ))
        self._write(struct.pack("<IIQI", _LOCATOR64, 0, end64, 1))
        self._write(struct.pack(
            "<IHHHHIIH", _END, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
            min(directory_size, _MAX32), min(directory_start, _MAX32), 0,
        ))

    def _write(self, data: bytes | memoryview) -> None:
        self.out.write(data)
        self.position += len(data) if isinstance(data, bytes) else data.nbytes


class ZipReader:
    """The records of a zip archive read from a seekable binary file: `names()`, `size(name)`,
    `read(name, limit)` for small records, `data_offset(name)` and `read_into(name, array)`
    for storages. Names are given without the archive's folder."""

    def __init__(self, handle: IO[bytes], what: str) -> None:
        self.handle = handle
        self.what = what
        handle.seek(0, os.SEEK_END)
        self.file_size = handle.tell()
        start, size, count = self._find_directory()
        # A central entry takes at least 46 bytes: the count cannot outgrow the directory.
        if start + size > self.file_size or count * 46 > size:
            raise self._bad("the central directory does not fit in the file")
        self.prefix = ""
        self.records: dict[str, tuple[int, int, int, int]] = {}
        self._read_directory(start, size, count)

    def _bad(self, problem: str) -> ArchiveError:
        return ArchiveError(f"pyaten.load: {self.what} is not a valid checkpoint: {problem}")

    def _read_at(self, offset: int, size: int) -> bytes:
        self.handle.seek(offset)
        data = self.handle.read(size)
        if len(data) != size:
            raise self._bad("the file is truncated")
        return data

    def _find_directory(self) -> tuple[int, int, int]:
        tail_size = min(self.file_size, 22 + 0xFFFF)
        tail = self._read_at(self.file_size - tail_size, tail_size)
        at = tail.rfind(struct.pack("<I", _END))
        while at >= 0 and at + 22 > len(tail):
            at = tail.rfind(struct.pack("<I", _END), 0, at)
        if at < 0:
            raise self._bad("failed finding central directory (truncated or not a zip file)")
        end_offset = self.file_size - tail_size + at
        (_, disk, _, _, count, size, start, _) = struct.unpack("<IHHHHIIH", tail[at : at + 22])
        if disk != 0:
            raise self._bad("multi-disk archives are not supported")
        if _MAX32 in (size, start) or count == 0xFFFF:
            if end_offset < 20:
                raise self._bad("the zip64 locator is missing")
            locator = self._read_at(end_offset - 20, 20)
            signature, _, end64, _ = struct.unpack("<IIQI", locator)
            if signature != _LOCATOR64 or end64 + 56 > end_offset:
                raise self._bad("the zip64 locator is invalid")
            record = self._read_at(end64, 56)
            fields = struct.unpack("<IQHHIIQQQQ", record)
            if fields[0] != _END64:
                raise self._bad("the zip64 end record is invalid")
            count, size, start = fields[7], fields[8], fields[9]
        return start, size, count

    def _read_directory(self, start: int, size: int, count: int) -> None:
        buffer = b""
        position = start
        end = start + size
        for _ in range(count):
            if len(buffer) < 46:
                buffer, position = self._refill(buffer, position, end, 46)
            fields = struct.unpack("<IHHHHHHIIIHHHHHII", buffer[:46])
            if fields[0] != _CENTRAL:
                raise self._bad("a central directory entry has a bad signature")
            method, compressed, size_, name_len, extra_len, comment_len, offset = (
                fields[4], fields[8], fields[9], fields[10], fields[11], fields[12], fields[16],
            )
            total = 46 + name_len + extra_len + comment_len
            if len(buffer) < total:
                buffer, position = self._refill(buffer, position, end, total)
            name = buffer[46 : 46 + name_len].decode("utf-8", "replace")
            extra = buffer[46 + name_len : 46 + name_len + extra_len]
            size_, compressed, offset = _zip64_fields(extra, size_, compressed, offset)
            buffer = buffer[total:]
            folder, slash, rest = name.partition("/")
            if not slash or not rest:
                raise self._bad(f"record '{name}' is not inside the archive's folder")
            if not self.prefix:
                self.prefix = folder
            elif folder != self.prefix:
                raise self._bad(f"record '{name}' is outside the archive folder '{self.prefix}'")
            if offset + 30 + compressed > self.file_size or compressed > self.file_size:
                raise self._bad(f"record '{rest}' lies outside the file")
            if rest in self.records:
                raise self._bad(f"record '{rest}' appears twice")
            self.records[rest] = (offset, compressed, size_, method)

    def _refill(self, buffer: bytes, position: int, end: int, need: int) -> tuple[bytes, int]:
        want = max(need - len(buffer), min(_CHUNK, end - position))
        if position + want > end:
            raise self._bad("the central directory is truncated")
        return buffer + self._read_at(position, want), position + want

    def names(self) -> list[str]:
        return list(self.records)

    def has(self, name: str) -> bool:
        return name in self.records

    def size(self, name: str) -> int:
        return self._record(name)[2]

    def _record(self, name: str) -> tuple[int, int, int, int]:
        record = self.records.get(name)
        if record is None:
            raise self._bad(f"the archive has no record '{name}'")
        return record

    def data_offset(self, name: str) -> int:
        """Where the record's bytes start in the file (checked to lie inside it)."""
        offset, compressed, size, method = self._record(name)
        if method != 0 or compressed != size:
            raise self._bad(
                f"record '{name}' is compressed; PyTorch checkpoints store records uncompressed"
            )
        header = self._read_at(offset, 30)
        signature, name_len, extra_len = (
            struct.unpack("<I", header[:4])[0], *struct.unpack("<HH", header[26:30])
        )
        if signature != _LOCAL:
            raise self._bad(f"record '{name}' has no local header")
        start = offset + 30 + name_len + extra_len
        if start + size > self.file_size:
            raise self._bad(f"record '{name}' reaches past the end of the file")
        return start

    def read(self, name: str, limit: int) -> bytes:
        """A small record's bytes, refused when larger than `limit`."""
        size = self.size(name)
        if size > limit:
            raise self._bad(f"record '{name}' is {size} bytes, more than the limit of {limit}")
        return self._read_at(self.data_offset(name), size)

    def read_into(self, name: str, array: np.ndarray) -> None:
        """The record's bytes streamed into `array` (uint8, exactly the record's size)."""
        start = self.data_offset(name)
        view = memoryview(array).cast("B")
        self.handle.seek(start)
        done = 0
        while done < view.nbytes:
            got = self.handle.readinto(view[done : done + (64 << 20)])
            if not got:
                raise self._bad(f"record '{name}' is truncated")
            done += got


def _zip64_fields(extra: bytes, size: int, compressed: int, offset: int) -> tuple[int, int, int]:
    """Sizes and offset, replaced by the zip64 extra field's values where they overflowed."""
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack("<HH", extra[at : at + 4])
        body = extra[at + 4 : at + 4 + length]
        if tag == 1:
            values = list(struct.unpack(f"<{len(body) // 8}Q", body[: len(body) // 8 * 8]))
            if size == _MAX32 and values:
                size = values.pop(0)
            if compressed == _MAX32 and values:
                compressed = values.pop(0)
            if offset == _MAX32 and values:
                offset = values.pop(0)
        at += 4 + length
    return size, compressed, offset
