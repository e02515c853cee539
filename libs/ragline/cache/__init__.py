"""The permission-scoped semantic answer cache (issue 7; docs/cache.md)."""

from ragline.cache.result_cache import PgResultCache, answer_cache_factory, build_result_cache
from ragline.cache.settings import CacheSettings
from ragline.cache.version import index_version

__all__ = [
    "CacheSettings",
    "PgResultCache",
    "answer_cache_factory",
    "build_result_cache",
    "index_version",
]
