"""The permission-scoped semantic answer cache (issue 7; docs/cache.md)."""

from ragline.cache.result_cache import PgResultCache, answer_cache_factory
from ragline.cache.settings import CacheSettings

__all__ = ["CacheSettings", "PgResultCache", "answer_cache_factory"]
