"""Bring an embedded cluster made before passwords to today's model, keeping its data.

Such a cluster trusts every local connection, and the application's role is its bootstrap
superuser (the role with OID 10). PostgreSQL never lets that role lose SUPERUSER, and
REASSIGN OWNED refuses it, so the upgrade renames it to the bootstrap superuser, creates a
fresh application role without powers, and hands the application's databases and their
objects to it one by one. pg_hba.conf is switched to scram-sha-256 last: until then every step
can simply run again after an interruption.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from core.errors import first_line
from ops.embedded_pg import Cluster, EmbeddedPostgresError
from ops.pg_auth import (
    DATABASE_EXISTS,
    ROLE_EXISTS,
    AppAccess,
    BootstrapCredentials,
    app_role_ensure,
    hba_scram_write,
    password_verifier,
    server_connect,
)

# A short-lived second superuser: a role cannot rename itself while it is connected.
UPGRADE_HELPER = "local_rag_upgrade"
BOOTSTRAP_SUPERUSER = "SELECT rolname FROM pg_roles WHERE oid = 10"
# The bootstrap superuser's objects in the application's schemas, in an order ALTER ... OWNER
# accepts: tables first (their indexes and sequences follow them), then free-standing
# sequences, routines, types and schemas. Extension members stay with their extension.
# Names come back quoted by the server (regclass / regprocedure / regtype / quote_ident).
OWNED_OBJECTS = """
WITH owned AS (
  SELECT 1 AS step, CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
           WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END AS kind,
         c.oid::regclass::text AS name, c.relnamespace AS nsp, 'pg_class'::regclass AS catalog,
         c.oid
    FROM pg_class c WHERE c.relowner = 10 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  UNION ALL
  SELECT 2, 'SEQUENCE', c.oid::regclass::text, c.relnamespace, 'pg_class'::regclass, c.oid
    FROM pg_class c WHERE c.relowner = 10 AND c.relkind = 'S' AND NOT EXISTS (
      SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
         AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
  UNION ALL
  SELECT 3, CASE p.prokind WHEN 'a' THEN 'AGGREGATE' ELSE 'ROUTINE' END,
         p.oid::regprocedure::text, p.pronamespace, 'pg_proc'::regclass, p.oid
    FROM pg_proc p WHERE p.proowner = 10
  UNION ALL
  SELECT 4, CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype::text,
         t.typnamespace, 'pg_type'::regclass, t.oid
    FROM pg_type t LEFT JOIN pg_class r ON r.oid = t.typrelid
   WHERE t.typowner = 10 AND (t.typtype IN ('e', 'd', 'r') OR r.relkind = 'c')
  UNION ALL
  SELECT 5, 'SCHEMA', quote_ident(n.nspname), n.oid, 'pg_namespace'::regclass, n.oid
    FROM pg_namespace n WHERE n.nspowner = 10
)
SELECT o.kind, o.name FROM owned o JOIN pg_namespace n ON n.oid = o.nsp
 WHERE left(n.nspname, 3) <> 'pg_' AND n.nspname <> 'information_schema'
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = o.catalog AND d.objid = o.oid
                      AND d.deptype = 'e')
 ORDER BY o.step, o.name
"""


def legacy_cluster_upgrade(*, cluster: Cluster, port: int, bootstrap: BootstrapCredentials,
                           access: AppAccess) -> None:
    """Rename the trusted superuser to the bootstrap superuser (with its password), create the
    application roles, give them their databases and objects, then require passwords."""
    try:
        _upgrade(cluster=cluster, port=port, bootstrap=bootstrap, access=access)
    except psycopg.Error as exc:
        raise EmbeddedPostgresError(
            f"upgrading the embedded cluster to password authentication failed: "
            f"{first_line(exc)}. It still accepts local connections without a password until "
            "the upgrade finishes; run `rag pg start` again to resume it.") from exc


def _upgrade(*, cluster: Cluster, port: int, bootstrap: BootstrapCredentials,
             access: AppAccess) -> None:
    host = "127.0.0.1"
    first = _trusted_login(host=host, port=port,
                           candidates=[bootstrap.user, *access.roles, "postgres"])
    with server_connect(host=host, port=port, user=first, password=None, dbname="postgres") as conn:
        row = conn.execute(BOOTSTRAP_SUPERUSER).fetchone()
        assert row is not None  # oid 10, the bootstrap superuser, is in every cluster
        superuser = row[0]
    if superuser != bootstrap.user:
        _bootstrap_rename(host=host, port=port, current=superuser, wanted=bootstrap.user)
    with server_connect(host=host, port=port, user=bootstrap.user, password=None,
                        dbname="postgres") as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(UPGRADE_HELPER)))
        conn.execute(sql.SQL("ALTER ROLE {} WITH LOGIN SUPERUSER PASSWORD {}").format(
            sql.Identifier(bootstrap.user),
            sql.Literal(password_verifier(conn, role=bootstrap.user, password=bootstrap.password))))
        for role, password in access.roles.items():
            app_role_ensure(conn, role=role, password=password)
        existing = [name for name in access.databases
                    if conn.execute(DATABASE_EXISTS, (name,)).fetchone()]
        for name in existing:
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(name), sql.Identifier(access.databases[name])))
    for name in existing:
        _objects_hand_over(host=host, port=port, user=bootstrap.user, dbname=name,
                           owner=access.databases[name])
    hba_scram_write(hba_file=cluster.hba_file)
    cluster.reload()


def _trusted_login(*, host: str, port: int, candidates: list[str]) -> str:
    """The first of `candidates` the trusting server lets in as a superuser."""
    for user in dict.fromkeys(candidates):
        try:
            with server_connect(host=host, port=port, user=user, password=None,
                                dbname="postgres") as conn:
                row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                                   ).fetchone()
                assert row is not None  # the role just logged in as exists
                if row[0]:
                    return user
        except EmbeddedPostgresError:
            continue
    raise EmbeddedPostgresError(
        f"cannot upgrade the embedded cluster on {host}:{port}: none of "
        f"{', '.join(candidates)} is a superuser it lets in without a password")


def _bootstrap_rename(*, host: str, port: int, current: str, wanted: str) -> None:
    with server_connect(host=host, port=port, user=current, password=None,
                        dbname="postgres") as conn:
        if conn.execute(ROLE_EXISTS, (wanted,)).fetchone():
            raise EmbeddedPostgresError(
                f"the embedded cluster has both {current} (its bootstrap superuser) and a role "
                f"named {wanted}; drop {wanted} (DROP ROLE {wanted}) and run `rag pg start` again")
        if not conn.execute(ROLE_EXISTS, (UPGRADE_HELPER,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} WITH LOGIN SUPERUSER").format(
                sql.Identifier(UPGRADE_HELPER)))
    with server_connect(host=host, port=port, user=UPGRADE_HELPER, password=None,
                        dbname="postgres") as conn:
        conn.execute(sql.SQL("ALTER ROLE {} RENAME TO {}").format(
            sql.Identifier(current), sql.Identifier(wanted)))


def _objects_hand_over(*, host: str, port: int, user: str, dbname: str, owner: str) -> None:
    """Give `owner` every object of `dbname` the bootstrap superuser owns (extensions aside)."""
    with (server_connect(host=host, port=port, user=user, password=None, dbname=dbname) as conn,
          conn.transaction()):
        for kind, name in conn.execute(OWNED_OBJECTS).fetchall():
            conn.execute(sql.SQL("ALTER {} {} OWNER TO {}").format(
                sql.SQL(kind), sql.SQL(name), sql.Identifier(owner)))
