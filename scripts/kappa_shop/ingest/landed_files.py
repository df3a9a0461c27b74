"""The files of a landing-zone ingestion batch: which files the streaming query assigned to a
batch (read from its checkpoint's logs), and the check that none of them changed or went away
while the batch read them. A batch that fails the check is not committed; the next ingestion
replays it with the same files."""

from __future__ import annotations

from pathlib import Path

from kappa_shop.errors import KappaShopError


def refuse_a_removed_file(error: Exception, batch_id: int) -> None:
    """One line for a landed file removed between the batch's listing and its read (Spark:
    FAILED_READ_FILE.FILE_NOT_EXIST), naming it; other errors are left to the caller."""
    import re

    match = re.search(r"FILE_NOT_EXIST\].*?reading file (\S+?)\.?\s", str(error), re.DOTALL)
    if match is None:
        return
    raise _removed(local_path(match[1]), batch_id) from None


def _removed(path: Path, batch_id: int) -> KappaShopError:
    return KappaShopError(
        f"landed file {path} was removed after ingestion batch {batch_id} listed it: landed "
        "files are the log and are never removed. Nothing of the batch was committed: put "
        "the file back and ingest again (the batch reads the files it listed)"
    )


def local_path(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))


def files_of_batch_in(query_checkpoint: Path, epoch_id: int) -> list[Path]:
    """The files the streaming query assigned to batch `epoch_id`, as it logged them in its
    checkpoint before the batch ran. The offsets log (`offsets/<id>`: a `v1` line, the query's
    metadata, then the source's `{"logOffset": n}`) says up to which batch of the file source's
    own log the batch reads; the batch reads the source's batches after the one before it.
    Usually one source batch per batch, but not after a kill between Spark's writing the
    source's log and the offsets log: the replay then reads two, and the numbers part."""
    end = _source_log_offset(query_checkpoint, epoch_id)
    start = _source_log_offset(query_checkpoint, epoch_id - 1) if epoch_id > 0 else -1
    return [
        path
        for source_batch in range(start + 1, end + 1)
        for path in _source_log_files(query_checkpoint / "sources" / "0", source_batch, epoch_id)
    ]


def _unreadable_checkpoint(path: Path, epoch_id: int) -> KappaShopError:
    return KappaShopError(
        f"cannot read which files make up ingestion batch {epoch_id + 1} from the query's "
        f"checkpoint ({path}; a Spark whose checkpoint format this version of kappa-shop does "
        "not know?): nothing of the batch was committed"
    )


def _source_log_offset(query_checkpoint: Path, epoch_id: int) -> int:
    """The file source's log batch up to which batch `epoch_id` reads (its offsets log)."""
    import json

    path = query_checkpoint / "offsets" / str(epoch_id)
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    try:
        if lines[0] != "v1":
            raise ValueError(lines[0])
        return int(json.loads(lines[2])["logOffset"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise _unreadable_checkpoint(path, epoch_id) from None


def _source_log_files(source_log: Path, source_batch: int, epoch_id: int) -> list[Path]:
    """The files of one batch of Spark's FileStreamSource log: `<id>`, or `<id>.compact`
    holding every batch up to it; a `v1` line, then a JSON object per file."""
    import json

    for name in (str(source_batch), f"{source_batch}.compact"):
        path = source_log / name
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            break
    else:
        path, lines = source_log / str(source_batch), []
    if not lines or lines[0] != "v1":
        raise _unreadable_checkpoint(path, epoch_id)
    entries = [json.loads(line) for line in lines[1:] if line.strip()]
    return [local_path(entry["path"]) for entry in entries if entry["batchId"] == source_batch]


def check_files_unchanged(files: list[Path], sizes: dict[Path, int], batch_id: int) -> None:
    """Refuse a batch one of whose `files` (those the query assigned to it) changed after the
    batch listed it: `sizes` holds each read file's size as listed. A file that grew
    (still being written: the landing protocol is to write under a hidden name and rename, as
    `deliver` does), one that is gone (read already, or not: Spark passes over a file that is
    missing when a batch starts, so a batch replayed after a crash would leave it out), one
    empty when listed and not now. The batch is not committed: the next ingestion replays it
    with the same files. (A file that grows after its batch is committed is beyond any check
    here: its new lines are never read.)"""
    for path in files:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise _removed(path, batch_id) from None
        if size != sizes.get(path, 0):
            raise KappaShopError(
                f"landed file {path} changed while ingestion batch {batch_id} read it "
                f"({sizes.get(path, 0):,} bytes when listed, {size:,} now): a file must land "
                "whole (written under a hidden name, then renamed; `kappa-shop deliver` does). "
                f"Batch {batch_id} was not committed: ingest again once the file is complete"
            )
