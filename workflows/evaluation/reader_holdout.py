"""Which reading-comprehension passages the reader benchmark holds out of every training run: those
whose article title hashes into READER_BENCH_BUCKET (docs/reader.md). Its own module, on the standard
library and the text's normal form only, because training imports it, also where the runtime's
packages are not installed (a lent GPU)."""

from __future__ import annotations

import hashlib
import re

from citescope.knowledge.normalize import normalize

MRC_BUCKETS = 10
READER_BENCH_BUCKET = 0  # mrc_train.jsonl titles in this bucket: the reader benchmark, never trained on


def title_bucket(title: str) -> int:
    """A title's bucket, 0..MRC_BUCKETS-1: whole titles, so no article's passages straddle the split."""
    key = re.sub(r"\s+", "", normalize(title)).lower()
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % MRC_BUCKETS


def is_reader_bench_title(title: str) -> bool:
    """True for an mrc_train.jsonl row (by its `title`) that belongs to the reader benchmark:
    training code must drop every such row."""
    return title_bucket(title) == READER_BENCH_BUCKET
