"""LangChain retriever over ragline (``pip install 'ragline-client[langchain]'``).

    from ragline_client import Ragline
    from ragline_client.langchain import RaglineRetriever

    retriever = RaglineRetriever(client=Ragline(url, token=get_token), top_k=5)
    docs = retriever.invoke("how do I rotate keys")
    docs[0].metadata["cite"], docs[0].metadata["injection_suspect"]

Each ``Document`` is one result: ``page_content`` the chunk text (its parent section's
with ``use_parent_text``), ``id`` the chunk id, ``metadata`` from
``ragline_client.evidence.metadata`` (citation, scores, flags, ``untrusted``).
``drop_injection_suspects=True`` leaves flagged chunks out instead of passing them on.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ragline_client.client import AsyncRagline, Ragline
from ragline_client.evidence import metadata
from ragline_client.models import Mode, SearchFilters, SearchRequest, SearchResponse

__all__ = ["RaglineRetriever", "to_documents"]


def to_documents(
    response: SearchResponse,
    *,
    use_parent_text: bool = False,
    drop_injection_suspects: bool = False,
) -> list[Document]:
    docs = []
    for r in response.results:
        if drop_injection_suspects and r.flags.injection_suspect:
            continue
        text = r.parent_text if use_parent_text and r.parent_text else r.text
        docs.append(Document(page_content=text, id=r.chunk_id, metadata=metadata(r, response)))
    return docs


class RaglineRetriever(BaseRetriever):
    """A ``BaseRetriever`` backed by ``POST /v1/search``. Give ``client`` (sync calls),
    ``async_client`` (``ainvoke``), or both; without ``async_client`` async calls run the
    sync client in a thread."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Ragline | None = None
    async_client: AsyncRagline | None = None
    top_k: int = Field(default=5, ge=1, le=200)
    mode: Mode = "hybrid"
    rerank: bool = False
    expand_parents: bool = False
    use_parent_text: bool = False
    max_per_document: int | None = None
    filters: SearchFilters | dict[str, Any] | None = None
    drop_injection_suspects: bool = False

    def _request(self, query: str) -> SearchRequest:
        fields: dict[str, Any] = {
            "query": query,
            "top_k": self.top_k,
            "mode": self.mode,
            "rerank": self.rerank,
            "expand_parents": self.expand_parents or self.use_parent_text,
        }
        if self.max_per_document is not None:
            fields["max_per_document"] = self.max_per_document
        if self.filters is not None:
            fields["filters"] = self.filters
        return SearchRequest.model_validate(fields)

    def _documents(self, response: SearchResponse) -> list[Document]:
        return to_documents(
            response,
            use_parent_text=self.use_parent_text,
            drop_injection_suspects=self.drop_injection_suspects,
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.client is None:
            raise ValueError("RaglineRetriever needs `client` for sync calls")
        return self._documents(self.client.search(self._request(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return self._documents(await self.async_client.search(self._request(query)))
