"""The real redis-server the shared ledger's tests run against."""

from tests.support.redis_server import own_redis_server, redis_server

__all__ = ["own_redis_server", "redis_server"]
