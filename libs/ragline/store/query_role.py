"""The RLS-bound login role of the query service, created from the settings (never from a
repository file, so no password is committed): LOGIN, NOSUPERUSER, NOBYPASSRLS, owns
nothing, may connect and use schema ``public``. Migrations grant it SELECT per table.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.errors import ConfigError

__all__ = ["POLICY_ROLE", "QueryRole", "assert_unprivileged", "ensure_query_role"]

# the role name the migrations' GRANTs and RLS policies are written for
POLICY_ROLE = "ragline_query"

_ATTRS = sql.SQL("LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION INHERIT")


@dataclass(frozen=True, kw_only=True)
class QueryRole:
    name: str
    # None: leave the password alone (certificate/IAM auth, or managed by a DBA)
    password: str | None

    def __repr__(self) -> str:  # never print the password
        return f"QueryRole(name={self.name!r})"

    @classmethod
    def from_settings(cls, settings: Settings) -> QueryRole:
        """From ``RAGLINE_PG_QUERY_DSN`` when set (its user and password), so the role
        always matches the DSN the query service will use; else from
        ``RAGLINE_PG_QUERY_ROLE`` / ``RAGLINE_PG_QUERY_PASSWORD``."""
        if settings.pg_query_dsn is not None:
            parts = conninfo_to_dict(settings.pg_query_dsn.get_secret_value())
            user = parts.get("user")
            if not isinstance(user, str) or not user:
                raise ConfigError("RAGLINE_PG_QUERY_DSN names no user")
            password = parts.get("password")
            return cls(name=user, password=str(password) if password else None)
        if settings.pg_dsn is not None and "pg_query_password" not in settings.model_fields_set:
            # external Postgres without an explicit password: never (re)set the role's
            # password to the local default, which would break and weaken the real one
            return cls(name=settings.pg_query_role, password=None)
        return cls(
            name=settings.pg_query_role,
            password=settings.pg_query_password.get_secret_value(),
        )


def _role_exists(conn: psycopg.Connection[TupleRow], name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None


def _upsert_login_role(conn: psycopg.Connection[TupleRow], role: QueryRole) -> None:
    verb = sql.SQL("ALTER ROLE" if _role_exists(conn, role.name) else "CREATE ROLE")
    stmt = sql.SQL("{verb} {role} WITH {attrs}").format(
        verb=verb, role=sql.Identifier(role.name), attrs=_ATTRS
    )
    if role.password is not None:
        stmt = sql.SQL("{} PASSWORD {}").format(stmt, sql.Literal(role.password))
    conn.execute(stmt)


def _check_owns_nothing(conn: psycopg.Connection[TupleRow], name: str) -> None:
    row = conn.execute(
        """SELECT r.rolsuper OR r.rolbypassrls,
                  (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid)
                + (SELECT count(*) FROM pg_namespace n WHERE n.nspowner = r.oid)
                + (SELECT count(*) FROM pg_proc p WHERE p.proowner = r.oid)
                + (SELECT count(*) FROM pg_type t WHERE t.typowner = r.oid)
             FROM pg_roles r WHERE r.rolname = %s""",
        (name,),
    ).fetchone()
    if row is None:
        raise ConfigError(f"query role {name!r} was not created")
    privileged, owned = row
    if privileged:
        raise ConfigError(f"query role {name!r} is a superuser or bypasses RLS")
    if owned:
        # an owner is exempt from its tables' RLS unless FORCEd: refuse to go on
        raise ConfigError(f"query role {name!r} owns {owned} objects; it must own nothing")


def ensure_query_role(conn: psycopg.Connection[TupleRow], role: QueryRole) -> None:
    """Create or realign the query role (idempotent; run it in a transaction).

    When the login role is not named ``ragline_query``, a NOLOGIN ``ragline_query`` is
    kept too and granted to it, so the policies and grants written for that name apply.
    """
    _upsert_login_role(conn, role)
    target = sql.Identifier(role.name)
    if role.name != POLICY_ROLE:
        if not _role_exists(conn, POLICY_ROLE):
            conn.execute(
                sql.SQL("CREATE ROLE {} NOLOGIN NOSUPERUSER NOBYPASSRLS").format(
                    sql.Identifier(POLICY_ROLE)
                )
            )
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(POLICY_ROLE), target))
    db = conn.execute("SELECT current_database()").fetchone()
    assert db is not None and isinstance(db[0], str)
    conn.execute(
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db[0]), target)
    )
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(target))
    _check_owns_nothing(conn, role.name)


async def assert_unprivileged(pool: AsyncConnectionPool) -> None:
    """Refuse to serve (``ConfigError``) when the pool's login role is a superuser or
    has BYPASSRLS: row-level security, the query service's only tenant and ACL
    boundary in Postgres, would not apply to it."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
        row = await cur.fetchone()
    if row is None:
        raise ConfigError("cannot read the query role's attributes")
    user, superuser, bypass = row
    if superuser or bypass:
        what = "a superuser" if superuser else "a BYPASSRLS role"
        raise ConfigError(
            f"the query service connects as {user!r}, {what}: row-level security would not "
            "apply; use the RLS-bound query role (RAGLINE_PG_QUERY_DSN, docs/query.md)"
        )
