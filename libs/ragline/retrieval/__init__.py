"""Permission-correct hybrid retrieval: intent, dense (pgvector) and BM25 (OpenSearch)
under the caller's scope, RRF, optional rerank, diversity, parent expansion, abstention,
citations and an audit trail. ``service.SearchService`` runs one search end to end.
"""
