"""Text pieces shared by several domains, below all of them: the embedding model's
tokenizer (the chunker sizes children with it, the enricher fits headers into its
budget) and the fallback title of a document."""

from ragline.text.titles import title_from_uri
from ragline.text.tokenizer import TokenCounter, TokenOffsets, load_token_counter

__all__ = ["TokenCounter", "TokenOffsets", "load_token_counter", "title_from_uri"]
