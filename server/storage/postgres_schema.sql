-- The PostgreSQL store's tables (server/storage/postgres.py applies this at open, in two
-- transactions split at the line `-- Second transaction.`, each under an advisory lock, so
-- processes starting together do not race, and with every lock wait bounded). Idempotent.

-- One row per stream that was appended to or is claimed: its revision and fence (0: never
-- claimed). A row nothing was written under is deleted when its claim is let go.
CREATE TABLE IF NOT EXISTS streams (
    name text PRIMARY KEY,
    rev bigint NOT NULL DEFAULT 0,
    fence bigint NOT NULL DEFAULT 0
);
-- Fences are never given out twice, by any stream, so deleting a stream's row cannot hand
-- an old fence to its next claimant (an append still in flight under it would pass): a
-- claim's fence is a number drawn from the sequence stream_fences, by the claim statement
-- itself (postgres.py CLAIM) and again by this trigger, whatever the statement set (an
-- older version's `s.fence + 1` included); a claim may so use up several numbers (on a
-- conflict, BEFORE INSERT fires on the proposed row too), and the row keeps the last. On
-- a conflict they are drawn under the row's lock, so a row's fence only grows (appends
-- check equality: what matters is that no other claim ever held the number). Replaced at
-- every open: a change to it reaches existing databases.
CREATE OR REPLACE FUNCTION streams_fence() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN  -- the sequence beside the table, whatever the search_path
    NEW.fence := nextval(quote_ident(TG_TABLE_SCHEMA) || '.stream_fences');
    RETURN NEW;
END $f$;
-- A database made before the sequence (or a table restored without the trigger) gets them
-- here, once, the sequence moved above every fence in use, never back (the table locked
-- meanwhile: no older process's claim slips in before the trigger exists).
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = 'streams'::regclass
                   AND tgname = 'streams_fence') THEN
        LOCK TABLE streams IN SHARE ROW EXCLUSIVE MODE;
        CREATE SEQUENCE IF NOT EXISTS stream_fences;
        PERFORM setval('stream_fences', greatest(coalesce(max(fence), 0) + 1,
                                                 (SELECT last_value + is_called::int
                                                  FROM stream_fences)), false)
        FROM streams;
        CREATE TRIGGER streams_fence BEFORE INSERT OR UPDATE OF fence ON streams
            FOR EACH ROW WHEN (NEW.fence <> 0) EXECUTE FUNCTION streams_fence();
    END IF;
END $$;
-- A fence is never negative (an older version's claim stored -1 where the trigger did
-- not fire). Such rows get a fresh fence first (their holders then fenced), under row locks
-- only: a NOT VALID constraint still checks every later update of a row, so an append (it
-- changes only rev) to a row left at -1 would fail, and with it its whole batch. Then the
-- constraint is added NOT VALID (no scan under the table's lock): from then on no row gets
-- a negative fence. A -1 written between the two (an older process's claim) is mended,
-- and the constraint validated, in the second transaction.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'streams'::regclass
                   AND conname = 'streams_fence_check') THEN
        UPDATE streams SET fence = nextval('stream_fences') WHERE fence < 0;
        ALTER TABLE streams ADD CONSTRAINT streams_fence_check CHECK (fence >= 0) NOT VALID;
    END IF;
END $$;
-- A claim's fence is positive (0 is the fence of writers that never claimed: a claim
-- standing under it would fence nobody): postgres.py CLAIM returns its fence through this,
-- which fails the statement, so nothing is claimed, if the sequence was altered to give
-- less. Replaced at every open.
CREATE OR REPLACE FUNCTION claimed_fence(fence bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN
    IF fence <= 0 THEN
        RAISE EXCEPTION 'the sequence stream_fences gave fence % to a claim (was it altered?): '
                        'a fence must be positive', fence;
    END IF;
    RETURN fence;
END $f$;
-- data is text, not jsonb: the stored text is exactly what the server wrote; fence is the
-- claim the event was written under (an audit: per stream it never goes down).
CREATE TABLE IF NOT EXISTS events (
    stream text NOT NULL,
    rev bigint NOT NULL,
    data text NOT NULL,
    fence bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (stream, rev)
);
CREATE TABLE IF NOT EXISTS snapshots (
    stream text PRIMARY KEY,
    rev bigint NOT NULL,
    data text NOT NULL
);
-- A write's caller, its client request id and its reply, in the same transaction as its
-- events (rev: the write's last event), so the caller's retry is answered with the first
-- result by any process (another caller's write with the same request id is its own).
CREATE TABLE IF NOT EXISTS receipts (
    stream text NOT NULL,
    rev bigint NOT NULL,
    request_id text NOT NULL,
    result text NOT NULL,
    caller text NOT NULL DEFAULT '',
    PRIMARY KEY (stream, rev)
);
-- Ownership (server/storage/cluster.py): which process holds a world until when (the
-- database's clock), and each process's internal address with its last heartbeat.
CREATE TABLE IF NOT EXISTS leases (
    world text PRIMARY KEY,
    node text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_node ON leases (node);
-- The cluster's settings; `peer_secret` is what the processes present to each other.
CREATE TABLE IF NOT EXISTS cluster (
    key text PRIMARY KEY,
    value text NOT NULL
);
-- instance: the random id of the process registered under the name (cluster.py).
CREATE TABLE IF NOT EXISTS nodes (
    node text PRIMARY KEY,
    addr text NOT NULL,
    seen_at timestamptz NOT NULL,
    instance text NOT NULL DEFAULT ''
);
-- Columns added since their tables were first made, each checked first: ALTER TABLE would
-- lock the table (and the appends of running processes) at every open, even with IF NOT
-- EXISTS. Rows made before get ''. Receipts made before they were the caller's own: ''
-- is no caller, they are never matched again (a retry of such a write is applied afresh).
-- Nodes registered by an older version's process (which never sets it): '' is no
-- process's id, a newer process takes that name over only once its heartbeat stopped.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'receipts'::regclass
                   AND attname = 'caller' AND NOT attisdropped) THEN
        ALTER TABLE receipts ADD COLUMN caller text NOT NULL DEFAULT '';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'nodes'::regclass
                   AND attname = 'instance' AND NOT attisdropped) THEN
        ALTER TABLE nodes ADD COLUMN instance text NOT NULL DEFAULT '';
    END IF;
END $$;
-- Second transaction.
-- A row given -1 while the first transaction waited to add the constraint gets a fresh
-- fence, and the constraint is checked on every row: under row locks and a lock that lets
-- appends and claims go on (the constraint, in place since the first transaction, keeps a
-- -1 from slipping in meanwhile). Once: a validated constraint skips it. If the lock is
-- held too long (a VACUUM, an index built concurrently) the open goes on, saying so: the
-- next open validates.
DO $$ BEGIN
    IF EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'streams'::regclass
               AND conname = 'streams_fence_check' AND NOT convalidated) THEN
        UPDATE streams SET fence = nextval('stream_fences') WHERE fence < 0;
        ALTER TABLE streams VALIDATE CONSTRAINT streams_fence_check;
    END IF;
END $$;
