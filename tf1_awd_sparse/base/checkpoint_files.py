"""A checkpoint's files checked with the standard library, without
TensorFlow (``awd-lm info`` imports none): `check_checkpoint_files` finds
a missing, empty, damaged or truncated index or data shard from the files'
names, the index's table (TensorFlow's sorted string table: footer, index
block, data blocks) and the extent of every tensor it records (each
``BundleEntryProto``'s shard, offset and size), reading none of the data.

Only what a reader of the values would meet is refused; a data file whose
bytes are damaged in place (its length intact) is found only by reading
them (`base.checkpoints`, ``Saver.restore``).
"""
import glob
import os
import struct

from tf1_awd_sparse.base.errors import Error

__all__ = ["CheckpointFileError", "check_checkpoint_files"]

#: The last 8 bytes of a TensorFlow table (little-endian): the index file
#: of a checkpoint ends with it.
TABLE_MAGIC = 0xdb4775248b80fb57
# The table's footer: two block handles (varints) padded to 40 bytes,
# then the magic number.
_FOOTER = 48
# Each block is followed by its compression type (1 byte) and a CRC.
_TRAILER = 5


class CheckpointFileError(ValueError, Error):
    """A checkpoint whose files are missing, empty, damaged or shorter than
    its index records; one line naming the prefix and the file."""


def _varint(buf, pos):
    """(value, next position) of the varint at ``pos``."""
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise IndexError("varint outside the buffer")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _block(buf, offset, size):
    """The contents of the table block at ``offset`` (None: compressed,
    not read here)."""
    if offset + size + _TRAILER > len(buf):
        raise IndexError("block outside the file")
    if buf[offset + size] != 0:   # snappy: the bundle writer uses none
        return None
    return buf[offset:offset + size]


def _entries(block):
    """The (key, value) pairs of a table block (keys prefix-compressed)."""
    restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * restarts
    if end < 0:
        raise IndexError("restart array outside the block")
    pos, key = 0, b""
    while pos < end:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        length, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + length > end:
            raise IndexError("entry outside the block")
        key = key[:shared] + bytes(block[pos:pos + unshared])
        pos += unshared
        yield key, block[pos:pos + length]
        pos += length


def _extent(entry):
    """(shard, end) of a ``BundleEntryProto``: fields 3 (shard_id), 4
    (offset) and 5 (size), the others skipped by their wire type."""
    fields, pos = {}, 0
    while pos < len(entry):
        tag, pos = _varint(entry, pos)
        kind = tag & 7
        if kind == 0:
            fields[tag >> 3], pos = _varint(entry, pos)
        elif kind == 2:
            length, pos = _varint(entry, pos)
            pos += length
        elif kind in (1, 5):
            pos += 8 if kind == 1 else 4
        else:
            raise IndexError("wire type %d" % kind)
    if pos != len(entry):
        raise IndexError("entry runs past its end")
    return fields.get(3, 0), fields.get(4, 0) + fields.get(5, 0)


def _recorded_ends(index):
    """{shard: the end of its last tensor} from the index's bytes (None for
    a compressed table); raises IndexError or struct.error on a damaged
    one."""
    footer = index[len(index) - _FOOTER:]
    _, pos = _varint(footer, 0)   # the metaindex block handle, unused
    _, pos = _varint(footer, pos)
    offset, pos = _varint(footer, pos)
    size, _ = _varint(footer, pos)
    top = _block(index, offset, size)
    if top is None:
        return None
    ends = {}
    for _, handle in _entries(top):
        block_offset, pos = _varint(handle, 0)
        block_size, _ = _varint(handle, pos)
        block = _block(index, block_offset, block_size)
        if block is None:
            return None
        for key, value in _entries(block):
            if key:   # the empty key holds the header, not a tensor
                shard, end = _extent(bytes(value))
                ends[shard] = max(ends.get(shard, 0), end)
    return ends


def check_checkpoint_files(prefix):
    """Refuses a checkpoint whose files could not all be read.

    Args:
      prefix: the checkpoint prefix (``<prefix>.index`` and
        ``<prefix>.data-NNNNN-of-MMMMM``).

    Raises:
      CheckpointFileError (a ValueError): the index is missing, empty or
        not a table; a data shard is missing or empty, or shorter than
        the tensors the index records in it (truncated); one line naming
        the prefix and the file.
    """
    index_path = prefix + ".index"
    name = os.path.basename
    if not os.path.isfile(index_path):
        raise CheckpointFileError(
            "%s: no checkpoint there (no file %s; a run writes it at the "
            "end of its first epoch)" % (prefix, name(index_path)))
    with open(index_path, "rb") as handle:
        index = handle.read()
    if len(index) < _FOOTER or struct.unpack(
            "<Q", index[-8:])[0] != TABLE_MAGIC:
        raise CheckpointFileError(
            "%s: checkpoint damaged: %s is %s" % (prefix, name(index_path), (
                "empty (0 bytes)" if not index else "not a checkpoint index "
                "(truncated or damaged: no table footer)")))
    shards = glob.glob(glob.escape(prefix) + ".data-*-of-*")
    expected = {"%s.data-%05d-of-%s" % (prefix, i, total)
                for total in {path.rsplit("-of-", 1)[1] for path in shards}
                if total.isdigit() for i in range(int(total))}
    missing = sorted(expected - set(shards)) or (
        [] if shards else [prefix + ".data-00000-of-00001"])
    if missing:
        raise CheckpointFileError("%s: checkpoint incomplete: no data file "
                                  "%s" % (prefix, name(missing[0])))
    try:
        ends = _recorded_ends(index)
    except (IndexError, struct.error):
        raise CheckpointFileError(
            "%s: checkpoint damaged: %s is not a checkpoint index (its "
            "table cannot be read)" % (prefix, name(index_path)))
    for path in sorted(shards):
        size = os.path.getsize(path)
        shard = int(path.rsplit(".data-", 1)[1].split("-of-")[0])
        end = (ends or {}).get(shard, 0)
        if size == 0 or size < end:
            raise CheckpointFileError(
                "%s: checkpoint damaged: %s is %s" % (prefix, name(path), (
                    "empty (0 bytes)" if size == 0 else "truncated (%d "
                    "bytes, its index records %d)" % (size, end))))
