/*
 * migrations: Drover's database schema, as numbered migrations.
 *
 * A migration is applied once, in its own transaction, and recorded in
 * schema_migrations. store_migrate() holds a session-level advisory lock for
 * the whole run, so several droverd starting at once serialise here: the
 * first applies what is pending, the others find nothing left to do. Never
 * edit a migration that has shipped; add the next one. docs/schema.md
 * describes the tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"
#include "store.h"

/* An arbitrary constant naming Drover's migration lock among advisory locks. */
#define MIGRATION_LOCK_KEY "7301946285"

struct migration {
    int version;
    const char *name;
    const char *sql;
};

static const struct migration migrations[] = {
    {1, "initial schema",
     /* Tenants, users and their API tokens (salted hashes only). */
     "CREATE TABLE tenants ("
     "  id bigserial PRIMARY KEY,"
     "  name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),"
     "  max_clusters integer, max_nodes integer,"
     "  created_at timestamptz NOT NULL DEFAULT now());"
     "CREATE TABLE users ("
     "  id bigserial PRIMARY KEY,"
     "  tenant_id bigint REFERENCES tenants(id) ON DELETE CASCADE,"
     "  name text NOT NULL,"
     "  role text NOT NULL CHECK (role IN ('superadmin', 'admin', 'user')),"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  UNIQUE (tenant_id, name));"
     "CREATE TABLE api_tokens ("
     "  id text PRIMARY KEY," /* public part of the token, used to find the row */
     "  user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     "  salt bytea NOT NULL, hash bytea NOT NULL," /* hash of the secret part */
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  expires_at timestamptz, revoked_at timestamptz);"
     /* Admin entities, versioned: a cluster keeps the template version it was made from. */
     "CREATE TABLE entities ("
     "  tenant_id bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,"
     "  kind text NOT NULL CHECK (kind IN ('provider', 'hardwaretype', 'imagetype',"
     "                                     'service', 'clustertemplate')),"
     "  name text NOT NULL,"
     "  version integer NOT NULL CHECK (version > 0),"
     "  body jsonb NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  deleted_at timestamptz,"
     "  PRIMARY KEY (tenant_id, kind, name, version));"
     /* Clusters and their nodes, with the nodes' accumulated key-values. */
     "CREATE TABLE clusters ("
     "  id bigserial PRIMARY KEY,"
     "  tenant_id bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,"
     "  owner_id bigint REFERENCES users(id) ON DELETE SET NULL,"
     "  name text NOT NULL,"
     "  template_name text NOT NULL, template_version integer NOT NULL,"
     "  provider text, status text NOT NULL,"
     "  layout jsonb NOT NULL DEFAULT '[]', config jsonb NOT NULL DEFAULT '{}',"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  updated_at timestamptz NOT NULL DEFAULT now(),"
     "  deleted_at timestamptz);"
     "CREATE UNIQUE INDEX clusters_live_name ON clusters (tenant_id, name)"
     "  WHERE deleted_at IS NULL;"
     "CREATE TABLE nodes ("
     "  cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,"
     "  id text NOT NULL,"
     "  hardwaretype text NOT NULL, imagetype text NOT NULL,"
     "  services jsonb NOT NULL DEFAULT '[]',"
     "  properties jsonb NOT NULL DEFAULT '{}',"
     "  status text NOT NULL,"
     "  PRIMARY KEY (cluster_id, id));"
     /* Jobs and their tasks: the durable history of every operation. */
     "CREATE TABLE jobs ("
     "  id bigserial PRIMARY KEY,"
     "  tenant_id bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,"
     "  cluster_id bigint REFERENCES clusters(id) ON DELETE SET NULL,"
     "  operation text NOT NULL, status text NOT NULL,"
     "  format_version integer NOT NULL DEFAULT 1,"
     "  request jsonb NOT NULL DEFAULT '{}', plan jsonb, error text,"
     "  requested_by bigint REFERENCES users(id) ON DELETE SET NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  started_at timestamptz, ended_at timestamptz);"
     "CREATE INDEX jobs_cluster ON jobs (cluster_id, created_at);"
     "CREATE INDEX jobs_open ON jobs (status) WHERE ended_at IS NULL;"
     "CREATE TABLE tasks ("
     "  job_id bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
     "  id text NOT NULL,"
     "  node_id text, service text, action text NOT NULL, status text NOT NULL,"
     "  attempts integer NOT NULL DEFAULT 0, result jsonb,"
     "  started_at timestamptz, ended_at timestamptz,"
     "  PRIMARY KEY (job_id, id));"
     /* Who did what to which entity, when, from where. Append-only. */
     "CREATE TABLE audit_log ("
     "  id bigserial PRIMARY KEY,"
     "  at timestamptz NOT NULL DEFAULT now(),"
     "  tenant_id bigint, user_id bigint, actor text NOT NULL,"
     "  action text NOT NULL, entity_kind text, entity_id text,"
     "  source text, detail jsonb NOT NULL DEFAULT '{}');"
     "CREATE INDEX audit_log_tenant ON audit_log (tenant_id, at);"
     /* The full state of a cluster after each successful operation. */
     "CREATE TABLE snapshots ("
     "  cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,"
     "  job_id bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
     "  taken_at timestamptz NOT NULL DEFAULT now(),"
     "  state jsonb NOT NULL,"
     "  PRIMARY KEY (cluster_id, job_id));"},
    {2, "api: partial templates, cluster request fields, lookup indexes",
     /* Partial templates are entities too (extends/includes). */
     "ALTER TABLE entities DROP CONSTRAINT entities_kind_check;"
     "ALTER TABLE entities ADD CONSTRAINT entities_kind_check CHECK (kind IN ('provider',"
     "  'hardwaretype', 'imagetype', 'service', 'clustertemplate', 'partialtemplate'));"
     "CREATE INDEX entities_live ON entities (tenant_id, kind, name) WHERE deleted_at IS NULL;"
     /* Superadmins belong to no tenant; their names are unique among themselves. */
     "CREATE UNIQUE INDEX users_global_name ON users (name) WHERE tenant_id IS NULL;"
     "CREATE INDEX api_tokens_user ON api_tokens (user_id);"
     /* What the cluster was asked to be: size, services, hardware and image. */
     "ALTER TABLE clusters ADD COLUMN size integer NOT NULL DEFAULT 0,"
     "  ADD COLUMN services jsonb NOT NULL DEFAULT '[]',"
     "  ADD COLUMN hardwaretype text, ADD COLUMN imagetype text;"
     "CREATE INDEX clusters_tenant ON clusters (tenant_id, id) WHERE deleted_at IS NULL;"
     "CREATE INDEX jobs_tenant ON jobs (tenant_id, id);"},
    {3, "api hardening: token labels, deleted users and tenants",
     /* A token's label, for listing one's tokens (expires_at exists since version 1). */
     "ALTER TABLE api_tokens ADD COLUMN label text NOT NULL DEFAULT '';"
     /* Users and tenants are deleted by marking them: history and audit keep their names,
        and a live name may be used again. */
     "ALTER TABLE users ADD COLUMN deleted_at timestamptz;"
     "ALTER TABLE tenants ADD COLUMN deleted_at timestamptz;"
     "ALTER TABLE users DROP CONSTRAINT users_tenant_id_name_key;"
     "CREATE UNIQUE INDEX users_live_name ON users (tenant_id, name) WHERE deleted_at IS NULL;"
     "DROP INDEX users_global_name;"
     "CREATE UNIQUE INDEX users_global_name ON users (name)"
     "  WHERE tenant_id IS NULL AND deleted_at IS NULL;"
     "ALTER TABLE tenants DROP CONSTRAINT tenants_name_key;"
     "CREATE UNIQUE INDEX tenants_live_name ON tenants (name) WHERE deleted_at IS NULL;"},
    {4, "engine: job ownership and fencing, pinned inputs, task phases, attempts",
     /* The owner's fencing token: a write carrying a lower one changes nothing. */
     "ALTER TABLE jobs ADD COLUMN owner text,"
     "  ADD COLUMN owner_token bigint NOT NULL DEFAULT 0,"
     "  ADD COLUMN control text, ADD COLUMN phase text,"
     "  ADD COLUMN inputs jsonb, ADD COLUMN plan_sha text, ADD COLUMN rollback_plan jsonb,"
     "  ADD COLUMN snapshot jsonb, ADD COLUMN target jsonb;"
     "UPDATE jobs SET status = 'rolled-back' WHERE status = 'rolledback';"
     /* A job has a forward plan ('f') and maybe a rollback plan ('r'): task ids repeat. */
     "ALTER TABLE tasks ADD COLUMN phase text NOT NULL DEFAULT 'f',"
     "  ADD COLUMN idx integer, ADD COLUMN deps jsonb, ADD COLUMN strategy text,"
     "  ADD COLUMN worker text, ADD COLUMN message text,"
     "  ADD COLUMN format_version integer NOT NULL DEFAULT 1;"
     "ALTER TABLE tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (job_id, phase, id);"
     "CREATE UNIQUE INDEX tasks_idx ON tasks (job_id, phase, idx);"
     /* Every delivery of every attempt: who ran it, when, how it ended. */
     "CREATE TABLE task_attempts ("
     "  job_id bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
     "  phase text NOT NULL, task_id text NOT NULL, attempt integer NOT NULL,"
     "  run text NOT NULL," /* the run record's name: one per delivery */
     "  worker text, status text NOT NULL,"
     "  started_at timestamptz, ended_at timestamptz,"
     "  message text, how text, output_tail text, result jsonb, undo jsonb,"
     "  PRIMARY KEY (job_id, phase, task_id, attempt, run));"
     "ALTER TABLE clusters ADD COLUMN secrets jsonb NOT NULL DEFAULT '{}';"
     "ALTER TABLE nodes ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();"},
    {5, "resources: a tenant's plugin resources, versioned",
     /* One row per pushed version; body is the canonical JSON map path -> base64 whose
        SHA-256 is sha256 (docs/api.md "Resources"). Never edited, never deleted. */
     "CREATE TABLE resources ("
     "  tenant_id bigint NOT NULL REFERENCES tenants(id),"
     "  version integer NOT NULL,"
     "  sha256 text NOT NULL, size bigint NOT NULL, files integer NOT NULL,"
     "  body bytea NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  created_by text NOT NULL,"
     "  PRIMARY KEY (tenant_id, version));"},
    {6, "quotas: a tenant's own limits",
     /* The superadmin's per-tenant quotas ({"clusters": 5, ...}); a quota not named takes
        droverd's quota.* default (docs/api.md "Quotas"). Old resources versions are now
        pruned (store_resource_prune). */
     "ALTER TABLE tenants ADD COLUMN quotas jsonb NOT NULL DEFAULT '{}';"},
    {7, "large jobs: task counts and a change counter kept at write time",
     /* How many tasks of each job are in each phase and status, kept by statement-level
        triggers from the rows each INSERT, UPDATE or DELETE of tasks changed (transition
        tables), so that a job's summary reads a few rows instead of counting its tasks.
        The lock holds off writers of tasks (an older node in a rolling upgrade) until the
        counts and their triggers are in: none is counted twice or missed. */
     "LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;"
     "CREATE TABLE job_task_counts ("
     "  job_id bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
     "  phase text NOT NULL, status text NOT NULL, n bigint NOT NULL,"
     "  PRIMARY KEY (job_id, phase, status));"
     /* Bumped once per statement that changed a task of the job (its status, attempts,
        worker, times): part of the summary's revision. */
     "ALTER TABLE jobs ADD COLUMN task_changes bigint NOT NULL DEFAULT 0;"
     "INSERT INTO job_task_counts (job_id, phase, status, n)"
     "  SELECT job_id, phase, status, count(*) FROM tasks GROUP BY 1, 2, 3;"
     "CREATE FUNCTION drover_task_counts() RETURNS trigger LANGUAGE plpgsql AS $f$"
     " BEGIN"
     "  IF TG_OP = 'INSERT' THEN"
     "   INSERT INTO job_task_counts AS c (job_id, phase, status, n)"
     "    SELECT job_id, phase, status, count(*) FROM new_rows GROUP BY 1, 2, 3"
     "    ON CONFLICT (job_id, phase, status) DO UPDATE SET n = c.n + excluded.n;"
     "   UPDATE jobs SET task_changes = task_changes + 1"
     "    WHERE id IN (SELECT DISTINCT job_id FROM new_rows);"
     "  ELSIF TG_OP = 'UPDATE' THEN"
     "   INSERT INTO job_task_counts AS c (job_id, phase, status, n)"
     "    SELECT job_id, phase, status, sum(d) FROM ("
     "      SELECT job_id, phase, status, 1 AS d FROM new_rows"
     "      UNION ALL SELECT job_id, phase, status, -1 FROM old_rows) x"
     "    GROUP BY 1, 2, 3 HAVING sum(d) <> 0"
     "    ON CONFLICT (job_id, phase, status) DO UPDATE SET n = c.n + excluded.n;"
     "   UPDATE jobs SET task_changes = task_changes + 1"
     "    WHERE id IN (SELECT DISTINCT job_id FROM new_rows);"
     "  ELSE"
     "   UPDATE job_task_counts c SET n = c.n - x.n FROM ("
     "     SELECT job_id, phase, status, count(*) AS n FROM old_rows GROUP BY 1, 2, 3) x"
     "    WHERE c.job_id = x.job_id AND c.phase = x.phase AND c.status = x.status;"
     "  END IF;"
     "  RETURN NULL;"
     " END $f$;"
     "CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks"
     "  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
     "  EXECUTE FUNCTION drover_task_counts();"
     "CREATE TRIGGER tasks_count_update AFTER UPDATE ON tasks"
     "  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT"
     "  EXECUTE FUNCTION drover_task_counts();"
     "CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks"
     "  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
     "  EXECUTE FUNCTION drover_task_counts();"
     /* The queued and running tasks of a job (explanations: what a node is busy with). */
     "CREATE INDEX tasks_busy ON tasks (job_id, phase) WHERE status IN ('queued', 'running');"},
    {8, "logs: attempts numbered in the order they were written, per job",
     /* A follower of a job's logs asks for the attempts written or changed after the last
        one it saw (docs/api.md "Jobs", attempts?since=). Each row written takes the next
        value of the sequence attempt_numbers in a row-level trigger. Every writer of a
        job's attempts holds the job row's lock from its first statement to its commit (the
        engine's fence, job_pg.c), so one job's numbers are taken in commit order and a
        reader that sees number N of a job sees every smaller one of it. A rewrite that
        changes nothing keeps its number. Rows written before this migration have 0. */
     "CREATE SEQUENCE attempt_numbers;"
     "ALTER TABLE task_attempts ADD COLUMN seq bigint NOT NULL DEFAULT 0;"
     "CREATE FUNCTION drover_attempt_seq() RETURNS trigger LANGUAGE plpgsql AS $f$"
     " BEGIN"
     "  IF TG_OP = 'UPDATE' AND (NEW.worker, NEW.status, NEW.started_at, NEW.ended_at,"
     "      NEW.message, NEW.how, NEW.output_tail) IS NOT DISTINCT FROM (OLD.worker,"
     "      OLD.status, OLD.started_at, OLD.ended_at, OLD.message, OLD.how, OLD.output_tail)"
     "  THEN"
     "   NEW.seq := OLD.seq;"
     "  ELSE"
     "   NEW.seq := nextval('attempt_numbers');"
     "  END IF;"
     "  RETURN NEW;"
     " END $f$;"
     "CREATE TRIGGER task_attempts_seq BEFORE INSERT OR UPDATE ON task_attempts"
     "  FOR EACH ROW EXECUTE FUNCTION drover_attempt_seq();"
     "CREATE INDEX task_attempts_seq ON task_attempts (job_id, seq);"},
    {9, "small jobs: catalogue versions, the plan off the job row, no job row write per task write",
     /* A tenant's catalogue has a version: a row-level trigger on entities gives the
        tenant a new number (the sequence catalog_numbers) in every transaction that
        writes one of its entities, whoever writes it (an older node too). A number names
        one catalogue only: the entities a snapshot sees with that head are those of the
        transaction that set it. droverd keeps the catalogues it parsed by (tenant,
        version) and reads the head alone while it has it (docs/schema.md, version 9). */
     "CREATE SEQUENCE catalog_numbers;"
     "CREATE TABLE catalog_heads ("
     "  tenant_id bigint PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,"
     "  version bigint NOT NULL);"
     "INSERT INTO catalog_heads (tenant_id, version)"
     "  SELECT id, nextval('catalog_numbers') FROM tenants;"
     "CREATE FUNCTION drover_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $f$"
     " DECLARE t bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;"
     " BEGIN"
     "  INSERT INTO catalog_heads AS h (tenant_id, version)"
     "   SELECT t, nextval('catalog_numbers') WHERE EXISTS (SELECT 1 FROM tenants WHERE id = t)"
     "   ON CONFLICT (tenant_id) DO UPDATE SET version = nextval('catalog_numbers');"
     "  RETURN NULL;"
     " END $f$;"
     "CREATE TRIGGER entities_catalog_version AFTER INSERT OR UPDATE OR DELETE ON entities"
     "  FOR EACH ROW EXECUTE FUNCTION drover_catalog_version();"
     /* The catalogues jobs were made from, once per version (jobs.catalog_version, and
        inputs {"catalog": {"version": V}}), instead of a copy in every job. */
     "CREATE TABLE catalogs ("
     "  tenant_id bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,"
     "  version bigint NOT NULL,"
     "  entities jsonb NOT NULL," /* [{kind, name, version, body}], as the API read them */
     "  created_at timestamptz NOT NULL DEFAULT now(),"
     "  PRIMARY KEY (tenant_id, version));"
     "ALTER TABLE jobs ADD COLUMN catalog_version bigint;"
     /* What is large and written once leaves the job row, whose updates (owner, phase,
        status, end) then copy a small tuple: inputs, plan and snapshot at the start,
        the rollback plan when made. Ended jobs' move now; unfinished ones keep theirs on
        the row, where an older node resuming them during a rolling upgrade reads them
        (readers take job_plans' first, then the row's). */
     "CREATE TABLE job_plans ("
     "  job_id bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,"
     "  inputs jsonb, plan jsonb, snapshot jsonb, rollback_plan jsonb);"
     "INSERT INTO job_plans (job_id, inputs, plan, snapshot, rollback_plan)"
     "  SELECT id, inputs, plan, snapshot, rollback_plan FROM jobs WHERE ended_at IS NOT NULL"
     "  AND (inputs IS NOT NULL OR plan IS NOT NULL OR snapshot IS NOT NULL"
     "    OR rollback_plan IS NOT NULL);"
     "UPDATE jobs SET inputs = NULL, plan = NULL, snapshot = NULL, rollback_plan = NULL"
     "  WHERE ended_at IS NOT NULL AND (inputs IS NOT NULL OR plan IS NOT NULL"
     "    OR snapshot IS NOT NULL OR rollback_plan IS NOT NULL);"
     /* The task triggers keep the counts only: the job row was updated once per statement
        on tasks (jobs.task_changes), about eight times a small job. The summary's revision
        takes the job's newest attempt number instead (version 8's seq: every attempt
        written or changed takes one). jobs.task_changes stays for older nodes, unchanged. */
     "CREATE OR REPLACE FUNCTION drover_task_counts() RETURNS trigger LANGUAGE plpgsql AS $f$"
     " BEGIN"
     "  IF TG_OP = 'INSERT' THEN"
     "   INSERT INTO job_task_counts AS c (job_id, phase, status, n)"
     "    SELECT job_id, phase, status, count(*) FROM new_rows GROUP BY 1, 2, 3"
     "    ON CONFLICT (job_id, phase, status) DO UPDATE SET n = c.n + excluded.n;"
     "  ELSIF TG_OP = 'UPDATE' THEN"
     "   INSERT INTO job_task_counts AS c (job_id, phase, status, n)"
     "    SELECT job_id, phase, status, sum(d) FROM ("
     "      SELECT job_id, phase, status, 1 AS d FROM new_rows"
     "      UNION ALL SELECT job_id, phase, status, -1 FROM old_rows) x"
     "    GROUP BY 1, 2, 3 HAVING sum(d) <> 0"
     "    ON CONFLICT (job_id, phase, status) DO UPDATE SET n = c.n + excluded.n;"
     "  ELSE"
     "   UPDATE job_task_counts c SET n = c.n - x.n FROM ("
     "     SELECT job_id, phase, status, count(*) AS n FROM old_rows GROUP BY 1, 2, 3) x"
     "    WHERE c.job_id = x.job_id AND c.phase = x.phase AND c.status = x.status;"
     "  END IF;"
     "  RETURN NULL;"
     " END $f$;"
     /* A job's status is in no index, so its changes can be HOT updates (with room on the
        page); the unfinished jobs stay indexed, by tenant (the jobs quota counts them). */
     "DROP INDEX jobs_open;"
     "CREATE INDEX jobs_open ON jobs (tenant_id) WHERE ended_at IS NULL;"
     "ALTER TABLE jobs SET (fillfactor = 80);"},
    {10, "fencing tokens name their ZooKeeper incarnation",
     /* A token is the pair (owner_zk, owner_token): the incarnation of ZooKeeper the lock
        was taken in (the ctime of /drover/ensemble), then its zxid. A rebuilt ZooKeeper's
        zxids start low again; its incarnation is later, so its owners' tokens still win
        (docs/engine.md "A rebuilt ZooKeeper"). 0: taken before this version. */
     "ALTER TABLE jobs ADD COLUMN owner_zk bigint NOT NULL DEFAULT 0;"},
};

#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

int store_schema_version(void)
{
    return migrations[NMIGRATIONS - 1].version;
}

static int applied_versions(PGconn *c, int *max_applied, struct drv_err *err)
{
    PGresult *r;
    int rc =
        store_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, &r, err);
    if (rc)
        return rc;
    *max_applied = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int store_migrate(const char *conninfo, const char *node_id, int *applied, struct drv_err *err)
{
    if (applied)
        *applied = 0;
    PGconn *c = store_connect(conninfo, err);
    if (!c)
        return err ? err->code : DRV_EAGAIN;
    int rc = store_exec(c, "SELECT pg_advisory_lock(" MIGRATION_LOCK_KEY ")", 0, NULL, NULL, err);
    if (rc)
        goto out;
    rc = store_exec(c,
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    "  version integer PRIMARY KEY, name text NOT NULL,"
                    "  applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL)",
                    0, NULL, NULL, err);
    int have = 0;
    if (rc == 0)
        rc = applied_versions(c, &have, err);
    if (rc == 0 && have > store_schema_version()) {
        /* A newer droverd migrated this database. Version N runs on N+1's schema
           only if the migration was additive; refuse rather than guess. */
        rc = drv_err_set(err, DRV_EINVAL, 0,
                         "database schema version %d is newer than this build's %d", have,
                         store_schema_version());
    }
    /* Test hook (docs/testing.md "Fault hooks"): schema-upto:N applies the migrations up to
       version N only, then fails the start, so that a test may fill a database of an older
       schema and watch the next migration upgrade it. */
    char *upto_arg = fault_arg("schema-upto");
    int upto = upto_arg ? atoi(upto_arg) : 0;
    free(upto_arg);
    for (int i = 0; rc == 0 && i < NMIGRATIONS; i++) {
        const struct migration *m = &migrations[i];
        if (m->version <= have)
            continue;
        if (upto > 0 && m->version > upto)
            break;
        char v[16];
        snprintf(v, sizeof(v), "%d", m->version);
        const char *params[] = {v, m->name, node_id};
        rc = store_exec(c, "BEGIN", 0, NULL, NULL, err);
        if (rc == 0)
            rc = store_exec_script(c, m->sql, err);
        if (rc == 0)
            rc = store_exec(c,
                            "INSERT INTO schema_migrations (version, name, applied_by)"
                            " VALUES ($1::integer, $2, $3)",
                            3, params, NULL, err);
        if (rc == 0)
            rc = store_exec(c, "COMMIT", 0, NULL, NULL, err);
        if (rc) {
            struct drv_err ignored;
            store_exec(c, "ROLLBACK", 0, NULL, NULL, &ignored);
            drv_err_prefix(err, "migration %d (%s)", m->version, m->name);
            break;
        }
        log_info("store", "event=migration_applied version=%d name=\"%s\" by=%s", m->version,
                 m->name, node_id);
        if (applied)
            (*applied)++;
    }
    if (rc == 0 && upto > 0) {
        log_warn("store", "event=fault-injected fault=schema-upto version=%d", upto);
        rc = drv_err_set(err, DRV_EINVAL, 0, "stopped at schema version %d (test hook schema-upto)",
                         upto);
    }
    struct drv_err ignored;
    store_exec(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK_KEY ")", 0, NULL, NULL, &ignored);
out:
    PQfinish(c);
    return rc;
}
