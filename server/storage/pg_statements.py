"""The PostgreSQL store's statements (server/storage/postgres.py runs them on the tables of
postgres_schema.sql)."""

from pathlib import Path

# The schema, applied at open as two transactions (postgres.py _apply_schema).
SCHEMA = (Path(__file__).with_name("postgres_schema.sql")).read_text().split(
    "\n-- Second transaction.\n")
if len(SCHEMA) != 2:
    raise ImportError("postgres_schema.sql must split into two transactions at exactly one "
                      "line '-- Second transaction.'")
SCHEMA_LOCK = 0x70657472  # advisory lock key: processes starting together apply it in turn
SCHEMA_WAIT = 30  # seconds an open waits for another process's schema transaction

NOTIFY_CHUNK = 7000  # bytes of `stream:rev` lines per NOTIFY (PostgreSQL's limit is 8000)

# One batch of appends: b = one row per append, e = one row per event (pre-numbered),
# r = one row per receipt (written only with its stream's events).
# New streams (never claimed: fence 0, expected 0) are inserted; the others move only if
# their revision and fence are the held ones. Row locks make a concurrent claim wait or
# win: a claim that commits first leaves this batch's UPDATE nothing to match.
APPEND = f"""
WITH b AS (SELECT * FROM unnest(%(s)s::text[], %(x)s::bigint[], %(n)s::bigint[],
                                %(f)s::bigint[]) AS b(stream, expected, n, fence)),
fresh AS (INSERT INTO streams AS t (name, rev, fence)
          SELECT stream, n, 0 FROM b WHERE expected = 0 AND fence = 0
          ON CONFLICT (name) DO UPDATE SET rev = excluded.rev WHERE t.rev = 0 AND t.fence = 0
          RETURNING t.name, t.rev),
moved AS (UPDATE streams t SET rev = t.rev + b.n FROM b
          WHERE t.name = b.stream AND t.rev = b.expected AND t.fence = b.fence
            AND NOT (b.expected = 0 AND b.fence = 0)
          RETURNING t.name, t.rev),
ok AS (SELECT name, rev FROM fresh UNION ALL SELECT name, rev FROM moved),
ins AS (INSERT INTO events (stream, rev, data, fence)
        SELECT e.stream, e.rev, e.data, b.fence
        FROM unnest(%(es)s::text[], %(er)s::bigint[], %(ed)s::text[]) AS e(stream, rev, data)
        JOIN b ON b.stream = e.stream
        WHERE e.stream IN (SELECT name FROM ok)),
rcp AS (INSERT INTO receipts (stream, rev, caller, request_id, result)
        SELECT r.stream, r.rev, r.caller, r.id, r.result
        FROM unnest(%(rs)s::text[], %(rr)s::bigint[], %(rc)s::text[], %(ri)s::text[],
                    %(rd)s::text[]) AS r(stream, rev, caller, id, result)
        WHERE r.stream IN (SELECT name FROM ok)),
note AS MATERIALIZED (
        SELECT pg_notify(%(channel)s, string_agg(name || ':' || rev, E'\\n' ORDER BY name))
        FROM (SELECT name, rev, sum(octet_length(name) + 21) OVER (ORDER BY name)
                                / {NOTIFY_CHUNK} AS chunk FROM ok) c
        GROUP BY chunk)
SELECT name, rev FROM ok UNION ALL SELECT NULL, count(*) FROM note
"""
STATES = "SELECT name, rev, fence FROM streams WHERE name = ANY(%s)"
# A claim's fence is drawn from the sequence stream_fences (so no fence is ever given out
# twice), here and, where it fires, by the schema's trigger streams_fence: RETURNING gives
# what the row holds, whichever drew it last (the trigger does not fire for a session
# with session_replication_role = replica, or once disabled), through the schema's
# claimed_fence, which fails the statement (nothing written) if that is not positive.
CLAIM = ("INSERT INTO streams AS s (name, rev, fence) "
         "VALUES (%s, 0, nextval('stream_fences')) "
         "ON CONFLICT (name) DO UPDATE SET fence = nextval('stream_fences') "
         "RETURNING claimed_fence(fence), rev")
# A stream nothing was written under, still under this claim (none newer took it).
FORGET = "DELETE FROM streams WHERE name = %s AND rev = 0 AND fence = %s"
SAVE_SNAPSHOT = ("INSERT INTO snapshots AS p (stream, rev, data) VALUES (%s, %s, %s) "
                 "ON CONFLICT (stream) DO UPDATE SET rev = excluded.rev, data = excluded.data "
                 "WHERE p.rev <= excluded.rev")
