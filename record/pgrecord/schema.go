package pgrecord

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
)

// migrations are the schema's versions, in order: migrations[i] takes a
// schema at version i to version i+1. A released step is never edited; a
// change is a new step.
//
// Every write takes the one row of bots_head FOR UPDATE before it reads
// anything, so writes are serialised across every instance: a revision is
// taken, and becomes visible, in the order the writes were made, which is
// what lets a change feed read "every change after revision N" and never
// miss one that commits late. Revisions have no gaps: a write that fails
// rolls its revision back. The notification carries the change itself
// ("rev kind etag id record") where it fits, so a listener that has every
// revision before it needs no read; otherwise only "rev". The functions
// answer a new revision, or a
// negative status: -1 exists, -2 gone, -3 not found, -4 conflict, -5 the
// folder is another bot's (checked under the same lock, so two instances
// cannot both give one folder away; an edit that keeps its folder is not
// checked again).
var migrations = []string{`
CREATE TABLE bots_head (
	one bool PRIMARY KEY DEFAULT true CHECK (one),
	rev bigint NOT NULL
);
INSERT INTO bots_head (rev) VALUES (0);

CREATE TABLE bots (
	id text COLLATE "C" PRIMARY KEY,
	rev bigint NOT NULL,
	record text NOT NULL,
	folder text COLLATE "C" -- the clean folder it works in on this host; NULL for none
);
CREATE INDEX bots_folder ON bots (folder) WHERE folder IS NOT NULL;

CREATE TABLE bots_gone (
	id text COLLATE "C" PRIMARY KEY,
	rev bigint NOT NULL
);

CREATE TABLE bots_changes (
	rev bigint PRIMARY KEY,
	kind smallint NOT NULL,
	id text COLLATE "C" NOT NULL,
	etag bigint NOT NULL,
	record text NOT NULL,
	at timestamptz NOT NULL DEFAULT now() -- for pruning, hourly: no index to keep on every write
);

CREATE TABLE bots_meta (
	key text PRIMARY KEY,
	value text NOT NULL
);

CREATE FUNCTION bots_channel() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT 'bots_' || left(md5(current_schema()), 16) $$;

CREATE FUNCTION bots_notify(p_rev bigint, p_kind int, p_id text, p_etag bigint, p_record text) RETURNS void LANGUAGE sql AS $$
	SELECT pg_notify('bots_' || left(md5(current_schema()), 16), CASE WHEN octet_length(p_record) + octet_length(p_id) < 7000
		THEN p_rev || ' ' || p_kind || ' ' || p_etag || ' ' || p_id || ' ' || p_record
		ELSE p_rev::text END)
$$;

-- Whether a bot other than p_id works in a folder of p_above (the folder
-- and those above it) or in [p_lo, p_hi) (those below it): two index
-- lookups.
CREATE FUNCTION bots_folder_taken(p_id text, p_above text[], p_lo text, p_hi text) RETURNS bool LANGUAGE sql STABLE AS $$
	SELECT EXISTS (SELECT 1 FROM bots WHERE folder = ANY(p_above) AND id <> p_id)
		OR EXISTS (SELECT 1 FROM bots WHERE folder >= p_lo AND folder < p_hi AND id <> p_id)
$$;

CREATE FUNCTION bots_create(p_id text, p_record text, p_folder text, p_above text[], p_lo text, p_hi text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE h bigint;
BEGIN
	SELECT rev + 1 INTO h FROM bots_head FOR UPDATE;
	IF EXISTS (SELECT 1 FROM bots_gone WHERE id = p_id) THEN RETURN -2; END IF;
	IF p_folder IS NOT NULL AND bots_folder_taken(p_id, p_above, p_lo, p_hi) THEN RETURN -5; END IF;
	INSERT INTO bots (id, rev, record, folder) VALUES (p_id, h, p_record, p_folder) ON CONFLICT (id) DO NOTHING;
	IF NOT FOUND THEN RETURN -1; END IF;
	UPDATE bots_head SET rev = h;
	INSERT INTO bots_changes (rev, kind, id, etag, record) VALUES (h, 1, p_id, h, p_record);
	PERFORM bots_notify(h, 1, p_id, h, p_record);
	RETURN h;
END $$;

CREATE FUNCTION bots_update(p_id text, p_record text, p_folder text, p_above text[], p_lo text, p_hi text, p_if bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE h bigint; cur bigint; cur_folder text;
BEGIN
	SELECT rev INTO h FROM bots_head FOR UPDATE;
	SELECT rev, folder INTO cur, cur_folder FROM bots WHERE id = p_id;
	IF NOT FOUND THEN RETURN -3; END IF;
	IF p_if <> 0 AND cur <> p_if THEN RETURN -4; END IF;
	IF p_folder IS NOT NULL AND p_folder IS DISTINCT FROM cur_folder AND bots_folder_taken(p_id, p_above, p_lo, p_hi) THEN RETURN -5; END IF;
	h := h + 1;
	UPDATE bots_head SET rev = h;
	UPDATE bots SET rev = h, record = p_record, folder = p_folder WHERE id = p_id;
	INSERT INTO bots_changes (rev, kind, id, etag, record) VALUES (h, 2, p_id, h, p_record);
	PERFORM bots_notify(h, 2, p_id, h, p_record);
	RETURN h;
END $$;

CREATE FUNCTION bots_delete(p_id text, p_if bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE h bigint; cur bigint; rec text;
BEGIN
	SELECT rev INTO h FROM bots_head FOR UPDATE;
	SELECT rev, record INTO cur, rec FROM bots WHERE id = p_id;
	IF NOT FOUND THEN RETURN -3; END IF;
	IF p_if <> 0 AND cur <> p_if THEN RETURN -4; END IF;
	h := h + 1;
	UPDATE bots_head SET rev = h;
	DELETE FROM bots WHERE id = p_id;
	INSERT INTO bots_gone (id, rev) VALUES (p_id, h);
	INSERT INTO bots_changes (rev, kind, id, etag, record) VALUES (h, 3, p_id, cur, rec);
	PERFORM bots_notify(h, 3, p_id, cur, rec);
	RETURN h;
END $$;
`}

// SchemaVersion is the schema version this package writes and reads.
func SchemaVersion() int { return len(migrations) }

// migrate brings the record store's schema up to SchemaVersion.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgschema.Migrate(ctx, pool, "record", migrations)
}
