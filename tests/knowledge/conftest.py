"""A Milvus server for the knowledge tests that run against both stores (see milvus_server.py)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import DEMO_DIR
from tests.knowledge.milvus_server import MilvusServerProcess


@pytest.fixture(scope="session")
def milvus_server_uri(tmp_path_factory):
    """The URI of a Milvus 2.3.5 server started for this run, on free ports, stopped at its end."""
    if importlib.util.find_spec("milvus") is None:
        pytest.skip(
            "the `milvus` package is not installed: pip install -e '.[dev,milvus-server]' "
            "(make install does) to run the Milvus server tests"
        )
    server = MilvusServerProcess(tmp_path_factory.mktemp("milvus-server"))
    uri = server.start(timeout_s=120)
    yield uri
    server.stop()
    server.remove_data()


@pytest.fixture(params=["lite", "server"])
def milvus_uri(request) -> str | None:
    """Where a test's KB keeps its vectors: None for a Milvus Lite file in the KB folder, else the
    test server's URI (each KB made there gets a collection of its own)."""
    return None if request.param == "lite" else request.getfixturevalue("milvus_server_uri")


@pytest.fixture(scope="session")
def demo_kb_on_server(milvus_server_uri, tmp_path_factory):
    """The demo KB with its vectors on the test server, ingested once per run; tests must not modify it."""
    from citescope.knowledge.ingest import Ingestor
    from citescope.knowledge.kb import KnowledgeBase
    from citescope.knowledge.settings import get_settings

    kb_dir = tmp_path_factory.mktemp("demo-kb-server")
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir, milvus_uri=milvus_server_uri), create=True)
    summary = Ingestor(kb, show_progress=False).run([DEMO_DIR])
    assert not summary.issues, summary.issues
    kb.warm_up()
    yield kb
    kb.close()
