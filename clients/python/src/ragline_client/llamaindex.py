"""LlamaIndex retriever over ragline (``pip install 'ragline-client[llamaindex]'``).

    from ragline_client import Ragline
    from ragline_client.llamaindex import RaglineLlamaRetriever

    retriever = RaglineLlamaRetriever(Ragline(url, token=get_token), top_k=5)
    nodes = retriever.retrieve("how do I rotate keys")
    nodes[0].score, nodes[0].node.metadata["cite"], nodes[0].node.metadata["contains_pii"]

Each ``NodeWithScore`` is one result: a ``TextNode`` (id = chunk id, text = chunk text)
with ``ragline_client.evidence.metadata`` as metadata, and the score ragline ranked by.
The citation and the flags stay visible to the LLM (``MetadataMode.LLM``); ids and raw
scores are excluded from what the LLM and embedders see.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from ragline_client.client import AsyncRagline, Ragline
from ragline_client.evidence import metadata, primary_score
from ragline_client.models import Mode, SearchFilters, SearchRequest, SearchResponse

__all__ = ["RaglineLlamaRetriever", "to_nodes"]

_HIDDEN = ["chunk_id", "scores", "score", "citation", "query_index", "trace_id", "source", "flags"]


def to_nodes(
    response: SearchResponse, *, drop_injection_suspects: bool = False
) -> list[NodeWithScore]:
    out = []
    for r in response.results:
        if drop_injection_suspects and r.flags.injection_suspect:
            continue
        node = TextNode(
            id_=r.chunk_id,
            text=r.text,
            metadata=metadata(r, response),
            excluded_llm_metadata_keys=list(_HIDDEN),
            excluded_embed_metadata_keys=list(_HIDDEN),
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=r.document_id)},
        )
        out.append(NodeWithScore(node=node, score=primary_score(r)))
    return out


class RaglineLlamaRetriever(BaseRetriever):
    """``retrieve``/``aretrieve`` through ``POST /v1/search``. ``client`` serves sync calls,
    ``async_client`` async ones (without it, async calls use the sync client)."""

    def __init__(
        self,
        client: Ragline | None = None,
        *,
        async_client: AsyncRagline | None = None,
        top_k: int = 5,
        mode: Mode = "hybrid",
        rerank: bool = False,
        max_per_document: int | None = None,
        filters: SearchFilters | dict[str, Any] | None = None,
        drop_injection_suspects: bool = False,
        **kwargs: Any,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("give `client`, `async_client` or both")
        super().__init__(**kwargs)
        self._client = client
        self._async_client = async_client
        fields: dict[str, Any] = {"top_k": top_k, "mode": mode, "rerank": rerank}
        if max_per_document is not None:
            fields["max_per_document"] = max_per_document
        if filters is not None:
            fields["filters"] = filters
        SearchRequest.model_validate({"query": "x", **fields})  # fail fast on bad settings
        self._fields = fields
        self._drop = drop_injection_suspects

    def _request(self, query_bundle: QueryBundle) -> SearchRequest:
        return SearchRequest.model_validate({"query": query_bundle.query_str, **self._fields})

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._client is None:
            raise ValueError("RaglineLlamaRetriever needs `client` for sync calls")
        resp = self._client.search(self._request(query_bundle))
        return to_nodes(resp, drop_injection_suspects=self._drop)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._async_client is None:
            return self._retrieve(query_bundle)
        resp = await self._async_client.search(self._request(query_bundle))
        return to_nodes(resp, drop_injection_suspects=self._drop)
