-- The database that `rag db init` of local-rag fe38ad4 made in an empty PostgreSQL database:
-- its schema and rows (django_migrations, content types, permissions, the `default` knowledge
-- base, the lexical_stats row) as `pg_dump --no-owner --no-privileges --inserts` wrote them,
-- less pg_dump's comments, its extension statements and settings only newer servers know.
-- tests/knowledge/test_db_upgrade.py upgrades it. pgvector is created by a superuser first.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

CREATE FUNCTION public.chunks_knowledge_base_fill() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT knowledge_base_id INTO NEW.knowledge_base_id FROM documents WHERE id = NEW.document_id;
  END IF;
  RETURN NEW;
END
$$;

CREATE FUNCTION public.chunks_lexical_cells_fill() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.lexical_cells := lexical_cells_make(NEW.lexical_terms, NEW.lexical_length);
  RETURN NEW;
END
$$;

CREATE FUNCTION public.documents_knowledge_base_fill() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT s.knowledge_base_id INTO NEW.knowledge_base_id
    FROM knowledge_base_sources s WHERE s.path = NEW.vault_path;
    IF NEW.knowledge_base_id IS NULL THEN
      SELECT id INTO NEW.knowledge_base_id FROM knowledge_bases WHERE slug = 'default';
    END IF;
  END IF;
  RETURN NEW;
END
$$;

CREATE FUNCTION public.documents_knowledge_base_follow() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE chunks SET knowledge_base_id = NEW.knowledge_base_id WHERE document_id = NEW.id;
  RETURN NULL;
END
$$;

CREATE FUNCTION public.lexical_cells_make(terms tsvector, length integer) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT array_to_tsvector(coalesce(array_agg(
           u.lexeme || '~' || width_bucket(
             cardinality(u.positions) + 2 * cardinality(array_positions(u.weights, 'B')),
             ARRAY[2, 3, 4, 5, 7, 10, 15]) || '.' || lexical_length_cell(length)),
         ARRAY[]::text[]))
  FROM unnest(terms) AS u
$$;

CREATE FUNCTION public.lexical_length_cell(length integer) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT greatest(width_bucket(length, ARRAY[1, 9, 13, 19, 28, 41, 61, 91, 136, 201, 301, 451,
                                              676, 1001, 1501, 2251, 3376, 5064]) - 1, 0)::int2
$$;

CREATE FUNCTION public.lexical_scope_stats_apply(kb_ids bigint[], terms tsvector[], lengths integer[], sign integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF sign > 0 THEN
    INSERT INTO lexical_scope_stats AS s (knowledge_base_id, chunk_count, term_count)
    SELECT r.kb, count(*), coalesce(sum(r.length), 0)
    FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
    WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
    GROUP BY r.kb ORDER BY r.kb
    ON CONFLICT (knowledge_base_id) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count,
          term_count = s.term_count + excluded.term_count;
    INSERT INTO lexical_length_stats AS s (knowledge_base_id, length_cell, chunk_count)
    SELECT r.kb, lexical_length_cell(r.length), count(*)
    FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
    WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, length_cell) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count;
    INSERT INTO lexical_term_stats AS s (knowledge_base_id, term, df)
    SELECT r.kb, t.term, count(*)
    FROM unnest(kb_ids, terms) AS r(kb, terms)
    CROSS JOIN LATERAL unnest(tsvector_to_array(r.terms)) AS t(term)
    WHERE r.kb IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, term) DO UPDATE SET df = s.df + excluded.df;
  ELSE
    UPDATE lexical_scope_stats s SET chunk_count = s.chunk_count - r.chunks,
                                     term_count = s.term_count - r.length
    FROM (SELECT r.kb, count(*) AS chunks, coalesce(sum(r.length), 0) AS length
          FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
          WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
          GROUP BY r.kb ORDER BY r.kb) r
    WHERE s.knowledge_base_id = r.kb;
    UPDATE lexical_length_stats s SET chunk_count = s.chunk_count - r.chunks
    FROM (SELECT r.kb, lexical_length_cell(r.length) AS length_cell, count(*) AS chunks
          FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
          WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.length_cell = r.length_cell;
    UPDATE lexical_term_stats s SET df = s.df - r.df
    FROM (SELECT r.kb, t.term, count(*) AS df
          FROM unnest(kb_ids, terms) AS r(kb, terms)
          CROSS JOIN LATERAL unnest(tsvector_to_array(r.terms)) AS t(term)
          WHERE r.kb IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.term = r.term;
    DELETE FROM lexical_term_stats
    WHERE knowledge_base_id = ANY(kb_ids) AND df <= 0;
  END IF;
END
$$;

CREATE FUNCTION public.lexical_scope_stats_rebuild() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM lexical_scope_stats;
  DELETE FROM lexical_length_stats;
  DELETE FROM lexical_term_stats;
  INSERT INTO lexical_scope_stats (knowledge_base_id, chunk_count, term_count)
  SELECT knowledge_base_id, count(*), coalesce(sum(lexical_length), 0)
  FROM chunks WHERE lexical_terms IS NOT NULL AND knowledge_base_id IS NOT NULL
  GROUP BY 1;
  INSERT INTO lexical_length_stats (knowledge_base_id, length_cell, chunk_count)
  SELECT knowledge_base_id, lexical_length_cell(lexical_length), count(*)
  FROM chunks WHERE lexical_terms IS NOT NULL AND knowledge_base_id IS NOT NULL
  GROUP BY 1, 2;
  INSERT INTO lexical_term_stats (knowledge_base_id, term, df)
  SELECT c.knowledge_base_id, t.term, count(*)
  FROM chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.lexical_terms)) AS t(term)
  WHERE c.lexical_terms IS NOT NULL AND c.knowledge_base_id IS NOT NULL
  GROUP BY 1, 2;
END
$$;

CREATE FUNCTION public.lexical_scope_stats_reset() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM lexical_scope_stats;
  DELETE FROM lexical_length_stats;
  DELETE FROM lexical_term_stats;
  RETURN NULL;
END
$$;

CREATE FUNCTION public.lexical_scope_stats_track() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  kb_ids BIGINT[];
  terms TSVECTOR[];
  lengths INTEGER[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO lexical_scope_stats AS s (knowledge_base_id, chunk_count, term_count)
    SELECT n.knowledge_base_id, count(*), coalesce(sum(n.lexical_length), 0)
    FROM lexical_new n
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (knowledge_base_id) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count,
          term_count = s.term_count + excluded.term_count;
    INSERT INTO lexical_length_stats AS s (knowledge_base_id, length_cell, chunk_count)
    SELECT n.knowledge_base_id, lexical_length_cell(n.lexical_length), count(*)
    FROM lexical_new n
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, length_cell) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count;
    INSERT INTO lexical_term_stats AS s (knowledge_base_id, term, df)
    SELECT n.knowledge_base_id, t.term, count(*)
    FROM lexical_new n CROSS JOIN LATERAL unnest(tsvector_to_array(n.lexical_terms)) AS t(term)
    WHERE n.knowledge_base_id IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, term) DO UPDATE SET df = s.df + excluded.df;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE lexical_scope_stats s SET chunk_count = s.chunk_count - r.chunks,
                                     term_count = s.term_count - r.length
    FROM (SELECT o.knowledge_base_id AS kb, count(*) AS chunks,
                 coalesce(sum(o.lexical_length), 0) AS length
          FROM lexical_old o
          WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
          GROUP BY 1 ORDER BY 1) r
    WHERE s.knowledge_base_id = r.kb;
    UPDATE lexical_length_stats s SET chunk_count = s.chunk_count - r.chunks
    FROM (SELECT o.knowledge_base_id AS kb, lexical_length_cell(o.lexical_length) AS length_cell,
                 count(*) AS chunks
          FROM lexical_old o
          WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.length_cell = r.length_cell;
    UPDATE lexical_term_stats s SET df = s.df - r.df
    FROM (SELECT o.knowledge_base_id AS kb, t.term, count(*) AS df
          FROM lexical_old o
          CROSS JOIN LATERAL unnest(tsvector_to_array(o.lexical_terms)) AS t(term)
          WHERE o.knowledge_base_id IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.term = r.term;
    DELETE FROM lexical_term_stats
    WHERE knowledge_base_id IN (SELECT DISTINCT knowledge_base_id FROM lexical_old) AND df <= 0;
  ELSE
    SELECT array_agg(n.knowledge_base_id), array_agg(n.lexical_terms), array_agg(n.lexical_length)
    INTO kb_ids, terms, lengths
    FROM lexical_new n JOIN lexical_old o ON o.id = n.id
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
      AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
           OR o.lexical_length IS DISTINCT FROM n.lexical_length
           OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id);
    IF kb_ids IS NOT NULL THEN
      PERFORM lexical_scope_stats_apply(kb_ids, terms, lengths, 1);
    END IF;
    SELECT array_agg(o.knowledge_base_id), array_agg(o.lexical_terms), array_agg(o.lexical_length)
    INTO kb_ids, terms, lengths
    FROM lexical_old o JOIN lexical_new n ON n.id = o.id
    WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
      AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
           OR o.lexical_length IS DISTINCT FROM n.lexical_length
           OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id);
    IF kb_ids IS NOT NULL THEN
      PERFORM lexical_scope_stats_apply(kb_ids, terms, lengths, -1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION public.lexical_stats_reset() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE lexical_stats SET chunk_count = 0, term_count = 0;
  RETURN NULL;
END
$$;

CREATE FUNCTION public.lexical_stats_track() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  added_chunks BIGINT := 0;
  added_terms BIGINT := 0;
  removed_chunks BIGINT := 0;
  removed_terms BIGINT := 0;
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT count(*), coalesce(sum(lexical_length), 0) INTO added_chunks, added_terms
    FROM lexical_new WHERE lexical_terms IS NOT NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    SELECT count(*), coalesce(sum(lexical_length), 0) INTO removed_chunks, removed_terms
    FROM lexical_old WHERE lexical_terms IS NOT NULL;
  END IF;
  IF added_chunks <> removed_chunks OR added_terms <> removed_terms THEN
    UPDATE lexical_stats SET chunk_count = chunk_count + added_chunks - removed_chunks,
                             term_count = term_count + added_terms - removed_terms;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION public.search_index_log() RETURNS trigger
    LANGUAGE plpgsql
    AS $_$
DECLARE
  changed TEXT;
BEGIN
  IF TG_TABLE_NAME = 'chunks' AND TG_OP = 'UPDATE' THEN
    changed := $q$
      SELECT o.knowledge_base_id AS kb, o.id AS chunk_id
      FROM search_index_new n JOIN search_index_old o ON o.id = n.id
      WHERE o.knowledge_base_id IS NOT NULL
        AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
             OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id)
      UNION
      SELECT n.knowledge_base_id, n.id
      FROM search_index_new n JOIN search_index_old o ON o.id = n.id
      WHERE n.knowledge_base_id IS NOT NULL
        AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
             OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id)$q$;
  ELSIF TG_TABLE_NAME = 'chunks' THEN
    changed := format($q$
      SELECT r.knowledge_base_id AS kb, r.id AS chunk_id FROM %I r
      WHERE r.knowledge_base_id IS NOT NULL$q$,
      CASE TG_OP WHEN 'INSERT' THEN 'search_index_new' ELSE 'search_index_old' END);
  ELSE
    changed := format($q$
      SELECT DISTINCT c.knowledge_base_id AS kb, c.id AS chunk_id
      FROM %I r JOIN chunks c ON c.id = r.chunk_id
      WHERE c.knowledge_base_id IS NOT NULL$q$,
      CASE TG_OP WHEN 'DELETE' THEN 'search_index_old' ELSE 'search_index_new' END);
  END IF;
  EXECUTE format($q$
    WITH changed AS MATERIALIZED (%s), bumped AS (
      INSERT INTO search_index_state AS s (knowledge_base_id, generation)
      SELECT DISTINCT kb, 1 FROM changed ORDER BY 1
      ON CONFLICT (knowledge_base_id) DO UPDATE
        SET generation = s.generation + 1, changed_at = now()
      RETURNING s.knowledge_base_id, s.generation
    )
    INSERT INTO search_index_changes (knowledge_base_id, generation, chunk_id)
    SELECT c.kb, b.generation, c.chunk_id FROM changed c
    JOIN bumped b ON b.knowledge_base_id = c.kb$q$, changed);
  RETURN NULL;
END
$_$;

CREATE FUNCTION public.search_index_reset() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM search_index_changes;
  UPDATE search_index_state SET generation = generation + 1, log_start = generation + 2,
                                changed_at = now();
  RETURN NULL;
END
$$;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE public.auth_group (
    id integer NOT NULL,
    name character varying(150) NOT NULL
);

ALTER TABLE public.auth_group ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_group_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.auth_group_permissions (
    id bigint NOT NULL,
    group_id integer NOT NULL,
    permission_id integer NOT NULL
);

ALTER TABLE public.auth_group_permissions ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_group_permissions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.auth_permission (
    id integer NOT NULL,
    name character varying(255) NOT NULL,
    content_type_id integer NOT NULL,
    codename character varying(100) NOT NULL
);

ALTER TABLE public.auth_permission ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_permission_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.auth_user (
    id integer NOT NULL,
    password character varying(128) NOT NULL,
    last_login timestamp with time zone,
    is_superuser boolean NOT NULL,
    username character varying(150) NOT NULL,
    first_name character varying(150) NOT NULL,
    last_name character varying(150) NOT NULL,
    email character varying(254) NOT NULL,
    is_staff boolean NOT NULL,
    is_active boolean NOT NULL,
    date_joined timestamp with time zone NOT NULL
);

CREATE TABLE public.auth_user_groups (
    id bigint NOT NULL,
    user_id integer NOT NULL,
    group_id integer NOT NULL
);

ALTER TABLE public.auth_user_groups ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_user_groups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE public.auth_user ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_user_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.auth_user_user_permissions (
    id bigint NOT NULL,
    user_id integer NOT NULL,
    permission_id integer NOT NULL
);

ALTER TABLE public.auth_user_user_permissions ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.auth_user_user_permissions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.axes_accessattempt (
    id integer NOT NULL,
    user_agent character varying(255) NOT NULL,
    ip_address inet,
    username character varying(255),
    http_accept character varying(1025) NOT NULL,
    path_info character varying(255) NOT NULL,
    attempt_time timestamp with time zone NOT NULL,
    get_data text NOT NULL,
    post_data text NOT NULL,
    failures_since_start integer NOT NULL,
    CONSTRAINT axes_accessattempt_failures_since_start_check CHECK ((failures_since_start >= 0))
);

ALTER TABLE public.axes_accessattempt ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.axes_accessattempt_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.axes_accessattemptexpiration (
    access_attempt_id integer NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.axes_accessfailurelog (
    id integer NOT NULL,
    user_agent character varying(255) NOT NULL,
    ip_address inet,
    username character varying(255),
    http_accept character varying(1025) NOT NULL,
    path_info character varying(255) NOT NULL,
    attempt_time timestamp with time zone NOT NULL,
    locked_out boolean NOT NULL
);

ALTER TABLE public.axes_accessfailurelog ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.axes_accessfailurelog_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.axes_accesslog (
    id integer NOT NULL,
    user_agent character varying(255) NOT NULL,
    ip_address inet,
    username character varying(255),
    http_accept character varying(1025) NOT NULL,
    path_info character varying(255) NOT NULL,
    attempt_time timestamp with time zone NOT NULL,
    logout_time timestamp with time zone,
    session_hash character varying(64) NOT NULL
);

ALTER TABLE public.axes_accesslog ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.axes_accesslog_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.background_jobs (
    id bigint NOT NULL,
    type text NOT NULL,
    resource text DEFAULT ''::text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    stage text DEFAULT ''::text NOT NULL,
    progress real DEFAULT 0 NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_until timestamp with time zone,
    last_error text,
    result jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    CONSTRAINT background_jobs_max_attempts_check CHECK ((max_attempts >= 1)),
    CONSTRAINT background_jobs_progress_check CHECK (((progress >= (0)::double precision) AND (progress <= (1)::double precision))),
    CONSTRAINT background_jobs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);

CREATE SEQUENCE public.background_jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.background_jobs_id_seq OWNED BY public.background_jobs.id;

CREATE TABLE public.chunks (
    id bigint NOT NULL,
    document_id bigint NOT NULL,
    chunk_index integer NOT NULL,
    content text NOT NULL,
    file_path text NOT NULL,
    relative_path text NOT NULL,
    heading_path text[] DEFAULT ARRAY[]::text[] NOT NULL,
    frontmatter jsonb DEFAULT '{}'::jsonb NOT NULL,
    tags text[] DEFAULT ARRAY[]::text[] NOT NULL,
    wikilinks text[] DEFAULT ARRAY[]::text[] NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    content_hash text NOT NULL,
    token_count integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    lexical_terms tsvector,
    lexical_length integer,
    lexical_version smallint,
    page_start integer,
    page_end integer,
    knowledge_base_id bigint,
    lexical_cells tsvector
);
ALTER TABLE ONLY public.chunks ALTER COLUMN content SET STORAGE EXTERNAL;
ALTER TABLE ONLY public.chunks ALTER COLUMN lexical_terms SET STORAGE MAIN;
ALTER TABLE ONLY public.chunks ALTER COLUMN lexical_cells SET STORAGE MAIN;

CREATE SEQUENCE public.chunks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.chunks_id_seq OWNED BY public.chunks.id;

CREATE TABLE public.conversations_conversation (
    id bigint NOT NULL,
    owner character varying(40) NOT NULL,
    knowledge_bases character varying(63)[],
    title character varying(200) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id integer,
    filters jsonb
);

ALTER TABLE public.conversations_conversation ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.conversations_conversation_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.conversations_message (
    id bigint NOT NULL,
    role character varying(16) NOT NULL,
    text text NOT NULL,
    mode character varying(16) NOT NULL,
    confidence double precision,
    standalone_query text NOT NULL,
    condensation character varying(16) NOT NULL,
    citations jsonb NOT NULL,
    notice jsonb,
    trace_id character varying(36) NOT NULL,
    prompt_tokens integer,
    completion_tokens integer,
    token_source character varying(16) NOT NULL,
    rating smallint,
    error_type character varying(32) NOT NULL,
    comment text NOT NULL,
    feedback_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    conversation_id bigint NOT NULL,
    unsupported_citations integer NOT NULL
);

ALTER TABLE public.conversations_message ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.conversations_message_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.django_admin_log (
    id integer NOT NULL,
    action_time timestamp with time zone NOT NULL,
    object_id text,
    object_repr character varying(200) NOT NULL,
    action_flag smallint NOT NULL,
    change_message text NOT NULL,
    content_type_id integer,
    user_id integer NOT NULL,
    CONSTRAINT django_admin_log_action_flag_check CHECK ((action_flag >= 0))
);

ALTER TABLE public.django_admin_log ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.django_admin_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.django_content_type (
    id integer NOT NULL,
    app_label character varying(100) NOT NULL,
    model character varying(100) NOT NULL
);

ALTER TABLE public.django_content_type ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.django_content_type_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.django_migrations (
    id bigint NOT NULL,
    app character varying(255) NOT NULL,
    name character varying(255) NOT NULL,
    applied timestamp with time zone NOT NULL
);

ALTER TABLE public.django_migrations ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.django_migrations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.django_session (
    session_key character varying(40) NOT NULL,
    session_data text NOT NULL,
    expire_date timestamp with time zone NOT NULL
);

CREATE TABLE public.document_versions (
    id bigint NOT NULL,
    document_id bigint NOT NULL,
    content_hash text NOT NULL,
    config_hash text NOT NULL,
    config jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text NOT NULL,
    chunk_count integer DEFAULT 0 NOT NULL,
    vector_count integer DEFAULT 0 NOT NULL,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    activated_at timestamp with time zone,
    CONSTRAINT document_versions_status_check CHECK ((status = ANY (ARRAY['active'::text, 'superseded'::text, 'failed'::text])))
);

CREATE SEQUENCE public.document_versions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.document_versions_id_seq OWNED BY public.document_versions.id;

CREATE TABLE public.documents (
    id bigint NOT NULL,
    vault_path text NOT NULL,
    file_path text NOT NULL,
    relative_path text NOT NULL,
    content_hash text NOT NULL,
    mtime_ns bigint,
    size_bytes bigint,
    frontmatter jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    format text DEFAULT 'markdown'::text NOT NULL,
    title text,
    page_count integer,
    ocr_page_count integer DEFAULT 0 NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    knowledge_base_id bigint,
    status text DEFAULT 'active'::text NOT NULL,
    original_name text,
    source_name text,
    active_version_id bigint,
    tags text[]
);

CREATE SEQUENCE public.documents_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.documents_id_seq OWNED BY public.documents.id;

CREATE TABLE public.embeddings (
    id bigint NOT NULL,
    chunk_id bigint NOT NULL,
    embedding_provider text NOT NULL,
    embedding_model text NOT NULL,
    embedding_dim integer NOT NULL,
    embedding public.vector(1024) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT embeddings_embedding_dim_check CHECK ((embedding_dim = 1024))
);
ALTER TABLE ONLY public.embeddings ALTER COLUMN embedding SET STORAGE PLAIN;

CREATE SEQUENCE public.embeddings_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.embeddings_id_seq OWNED BY public.embeddings.id;

CREATE TABLE public.ingest_runs (
    id bigint NOT NULL,
    vault_path text NOT NULL,
    embedding_provider text NOT NULL,
    embedding_model text NOT NULL,
    embedding_dim integer NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    documents_added integer DEFAULT 0 NOT NULL,
    documents_updated integer DEFAULT 0 NOT NULL,
    documents_deleted integer DEFAULT 0 NOT NULL,
    documents_skipped integer DEFAULT 0 NOT NULL,
    chunks_written integer DEFAULT 0 NOT NULL,
    embeddings_written integer DEFAULT 0 NOT NULL,
    error_summary text,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT ingest_runs_embedding_dim_check CHECK ((embedding_dim = 1024)),
    CONSTRAINT ingest_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'success'::text, 'failed'::text])))
);

CREATE SEQUENCE public.ingest_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.ingest_runs_id_seq OWNED BY public.ingest_runs.id;

CREATE TABLE public.job_workers (
    owner text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.knowledge_apitoken (
    id bigint NOT NULL,
    name character varying(100) NOT NULL,
    prefix character varying(16) NOT NULL,
    token_hash character varying(64) NOT NULL,
    read_only boolean NOT NULL,
    narrowed boolean NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    user_id integer NOT NULL
);

ALTER TABLE public.knowledge_apitoken ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.knowledge_apitoken_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.knowledge_apitoken_knowledge_bases (
    id bigint NOT NULL,
    apitoken_id bigint NOT NULL,
    knowledgebase_id bigint NOT NULL
);

ALTER TABLE public.knowledge_apitoken_knowledge_bases ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.knowledge_apitoken_knowledge_bases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.knowledge_base_sources (
    id bigint NOT NULL,
    knowledge_base_id bigint NOT NULL,
    kind text NOT NULL,
    path text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT knowledge_base_sources_kind_check CHECK ((kind = ANY (ARRAY['vault'::text, 'uploads'::text])))
);

CREATE SEQUENCE public.knowledge_base_sources_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.knowledge_base_sources_id_seq OWNED BY public.knowledge_base_sources.id;

CREATE TABLE public.knowledge_bases (
    id bigint NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    outbound text DEFAULT 'local-only'::text NOT NULL,
    CONSTRAINT knowledge_bases_outbound_check CHECK ((outbound = ANY (ARRAY['local-only'::text, 'allowed'::text]))),
    CONSTRAINT knowledge_bases_slug_check CHECK ((slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text))
);

CREATE SEQUENCE public.knowledge_bases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.knowledge_bases_id_seq OWNED BY public.knowledge_bases.id;

CREATE TABLE public.knowledge_grant (
    id bigint NOT NULL,
    role character varying(16) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    knowledge_base_id bigint NOT NULL,
    user_id integer NOT NULL
);

ALTER TABLE public.knowledge_grant ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.knowledge_grant_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.lexical_length_stats (
    knowledge_base_id bigint NOT NULL,
    length_cell smallint NOT NULL,
    chunk_count bigint NOT NULL
);

CREATE TABLE public.lexical_scope_stats (
    knowledge_base_id bigint NOT NULL,
    chunk_count bigint NOT NULL,
    term_count bigint NOT NULL
);

CREATE TABLE public.lexical_stats (
    id boolean DEFAULT true NOT NULL,
    chunk_count bigint NOT NULL,
    term_count bigint NOT NULL,
    CONSTRAINT lexical_stats_chunk_count_check CHECK ((chunk_count >= 0)),
    CONSTRAINT lexical_stats_id_check CHECK (id),
    CONSTRAINT lexical_stats_term_count_check CHECK ((term_count >= 0))
);

CREATE TABLE public.lexical_term_stats (
    knowledge_base_id bigint NOT NULL,
    term text NOT NULL,
    df integer NOT NULL
);

CREATE TABLE public.restore_runs (
    id text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone
);

CREATE TABLE public.search_index_changes (
    knowledge_base_id bigint NOT NULL,
    generation bigint NOT NULL,
    chunk_id bigint NOT NULL,
    logged_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.search_index_state (
    knowledge_base_id bigint NOT NULL,
    generation bigint DEFAULT 0 NOT NULL,
    log_start bigint DEFAULT 1 NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.token_failures (
    address text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    failures integer NOT NULL
);

CREATE TABLE public.traces (
    id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    operation text NOT NULL,
    channel text NOT NULL,
    caller text DEFAULT ''::text NOT NULL,
    user_id integer,
    token_id bigint,
    knowledge_base_ids bigint[] DEFAULT ARRAY[]::bigint[] NOT NULL,
    status text DEFAULT 'ok'::text NOT NULL,
    error_code text,
    mode text,
    parameters jsonb DEFAULT '{}'::jsonb NOT NULL,
    timings_ms jsonb DEFAULT '{}'::jsonb NOT NULL,
    embedding_model text,
    llm_model text,
    prompt_tokens integer,
    completion_tokens integer,
    prompt_version text,
    citations jsonb DEFAULT '[]'::jsonb NOT NULL,
    question text,
    answer text,
    token_source text
);

CREATE TABLE public.vector_index_tuning (
    index_name text NOT NULL,
    index_oid oid NOT NULL,
    embedding_provider text NOT NULL,
    embedding_model text NOT NULL,
    m integer,
    ef_construction integer,
    ef_searches integer[] NOT NULL,
    recalls double precision[] NOT NULL,
    target_recall double precision NOT NULL,
    sample_size integer NOT NULL,
    vectors bigint NOT NULL,
    seconds double precision NOT NULL,
    measured_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT vector_index_tuning_check CHECK (((cardinality(ef_searches) = cardinality(recalls)) AND (cardinality(recalls) > 0)))
);

CREATE TABLE public.workbench_evalrun (
    id bigint NOT NULL,
    job_id bigint,
    status character varying(16) NOT NULL,
    parameters jsonb NOT NULL,
    summary jsonb NOT NULL,
    report jsonb NOT NULL,
    error text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    created_by_id integer,
    knowledge_base_id bigint NOT NULL,
    question_set_id bigint NOT NULL
);

ALTER TABLE public.workbench_evalrun ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.workbench_evalrun_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.workbench_feedback (
    id bigint NOT NULL,
    trace_id character varying(36) NOT NULL,
    rating smallint NOT NULL,
    error_type character varying(32) NOT NULL,
    comment text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id integer
);

ALTER TABLE public.workbench_feedback ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.workbench_feedback_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.workbench_questionset (
    id bigint NOT NULL,
    name character varying(200) NOT NULL,
    source_name character varying(255) NOT NULL,
    questions jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    created_by_id integer,
    knowledge_base_id bigint NOT NULL
);

ALTER TABLE public.workbench_questionset ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.workbench_questionset_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY public.background_jobs ALTER COLUMN id SET DEFAULT nextval('public.background_jobs_id_seq'::regclass);

ALTER TABLE ONLY public.chunks ALTER COLUMN id SET DEFAULT nextval('public.chunks_id_seq'::regclass);

ALTER TABLE ONLY public.document_versions ALTER COLUMN id SET DEFAULT nextval('public.document_versions_id_seq'::regclass);

ALTER TABLE ONLY public.documents ALTER COLUMN id SET DEFAULT nextval('public.documents_id_seq'::regclass);

ALTER TABLE ONLY public.embeddings ALTER COLUMN id SET DEFAULT nextval('public.embeddings_id_seq'::regclass);

ALTER TABLE ONLY public.ingest_runs ALTER COLUMN id SET DEFAULT nextval('public.ingest_runs_id_seq'::regclass);

ALTER TABLE ONLY public.knowledge_base_sources ALTER COLUMN id SET DEFAULT nextval('public.knowledge_base_sources_id_seq'::regclass);

ALTER TABLE ONLY public.knowledge_bases ALTER COLUMN id SET DEFAULT nextval('public.knowledge_bases_id_seq'::regclass);

INSERT INTO public.auth_permission VALUES (1, 'Can add log entry', 1, 'add_logentry');
INSERT INTO public.auth_permission VALUES (2, 'Can change log entry', 1, 'change_logentry');
INSERT INTO public.auth_permission VALUES (3, 'Can delete log entry', 1, 'delete_logentry');
INSERT INTO public.auth_permission VALUES (4, 'Can view log entry', 1, 'view_logentry');
INSERT INTO public.auth_permission VALUES (5, 'Can add permission', 2, 'add_permission');
INSERT INTO public.auth_permission VALUES (6, 'Can change permission', 2, 'change_permission');
INSERT INTO public.auth_permission VALUES (7, 'Can delete permission', 2, 'delete_permission');
INSERT INTO public.auth_permission VALUES (8, 'Can view permission', 2, 'view_permission');
INSERT INTO public.auth_permission VALUES (9, 'Can add group', 3, 'add_group');
INSERT INTO public.auth_permission VALUES (10, 'Can change group', 3, 'change_group');
INSERT INTO public.auth_permission VALUES (11, 'Can delete group', 3, 'delete_group');
INSERT INTO public.auth_permission VALUES (12, 'Can view group', 3, 'view_group');
INSERT INTO public.auth_permission VALUES (13, 'Can add user', 4, 'add_user');
INSERT INTO public.auth_permission VALUES (14, 'Can change user', 4, 'change_user');
INSERT INTO public.auth_permission VALUES (15, 'Can delete user', 4, 'delete_user');
INSERT INTO public.auth_permission VALUES (16, 'Can view user', 4, 'view_user');
INSERT INTO public.auth_permission VALUES (17, 'Can add content type', 5, 'add_contenttype');
INSERT INTO public.auth_permission VALUES (18, 'Can change content type', 5, 'change_contenttype');
INSERT INTO public.auth_permission VALUES (19, 'Can delete content type', 5, 'delete_contenttype');
INSERT INTO public.auth_permission VALUES (20, 'Can view content type', 5, 'view_contenttype');
INSERT INTO public.auth_permission VALUES (21, 'Can add session', 6, 'add_session');
INSERT INTO public.auth_permission VALUES (22, 'Can change session', 6, 'change_session');
INSERT INTO public.auth_permission VALUES (23, 'Can delete session', 6, 'delete_session');
INSERT INTO public.auth_permission VALUES (24, 'Can view session', 6, 'view_session');
INSERT INTO public.auth_permission VALUES (25, 'Can add background job', 7, 'add_backgroundjob');
INSERT INTO public.auth_permission VALUES (26, 'Can change background job', 7, 'change_backgroundjob');
INSERT INTO public.auth_permission VALUES (27, 'Can delete background job', 7, 'delete_backgroundjob');
INSERT INTO public.auth_permission VALUES (28, 'Can view background job', 7, 'view_backgroundjob');
INSERT INTO public.auth_permission VALUES (29, 'Can add trace', 8, 'add_trace');
INSERT INTO public.auth_permission VALUES (30, 'Can change trace', 8, 'change_trace');
INSERT INTO public.auth_permission VALUES (31, 'Can delete trace', 8, 'delete_trace');
INSERT INTO public.auth_permission VALUES (32, 'Can view trace', 8, 'view_trace');
INSERT INTO public.auth_permission VALUES (33, 'Can add api token', 9, 'add_apitoken');
INSERT INTO public.auth_permission VALUES (34, 'Can change api token', 9, 'change_apitoken');
INSERT INTO public.auth_permission VALUES (35, 'Can delete api token', 9, 'delete_apitoken');
INSERT INTO public.auth_permission VALUES (36, 'Can view api token', 9, 'view_apitoken');
INSERT INTO public.auth_permission VALUES (37, 'Can add grant', 10, 'add_grant');
INSERT INTO public.auth_permission VALUES (38, 'Can change grant', 10, 'change_grant');
INSERT INTO public.auth_permission VALUES (39, 'Can delete grant', 10, 'delete_grant');
INSERT INTO public.auth_permission VALUES (40, 'Can view grant', 10, 'view_grant');
INSERT INTO public.auth_permission VALUES (41, 'Can add access attempt', 11, 'add_accessattempt');
INSERT INTO public.auth_permission VALUES (42, 'Can change access attempt', 11, 'change_accessattempt');
INSERT INTO public.auth_permission VALUES (43, 'Can delete access attempt', 11, 'delete_accessattempt');
INSERT INTO public.auth_permission VALUES (44, 'Can view access attempt', 11, 'view_accessattempt');
INSERT INTO public.auth_permission VALUES (45, 'Can add access log', 12, 'add_accesslog');
INSERT INTO public.auth_permission VALUES (46, 'Can change access log', 12, 'change_accesslog');
INSERT INTO public.auth_permission VALUES (47, 'Can delete access log', 12, 'delete_accesslog');
INSERT INTO public.auth_permission VALUES (48, 'Can view access log', 12, 'view_accesslog');
INSERT INTO public.auth_permission VALUES (49, 'Can add access failure', 13, 'add_accessfailurelog');
INSERT INTO public.auth_permission VALUES (50, 'Can change access failure', 13, 'change_accessfailurelog');
INSERT INTO public.auth_permission VALUES (51, 'Can delete access failure', 13, 'delete_accessfailurelog');
INSERT INTO public.auth_permission VALUES (52, 'Can view access failure', 13, 'view_accessfailurelog');
INSERT INTO public.auth_permission VALUES (53, 'Can add access attempt expiration', 14, 'add_accessattemptexpiration');
INSERT INTO public.auth_permission VALUES (54, 'Can change access attempt expiration', 14, 'change_accessattemptexpiration');
INSERT INTO public.auth_permission VALUES (55, 'Can delete access attempt expiration', 14, 'delete_accessattemptexpiration');
INSERT INTO public.auth_permission VALUES (56, 'Can view access attempt expiration', 14, 'view_accessattemptexpiration');
INSERT INTO public.auth_permission VALUES (57, 'Can add chunk', 15, 'add_chunk');
INSERT INTO public.auth_permission VALUES (58, 'Can change chunk', 15, 'change_chunk');
INSERT INTO public.auth_permission VALUES (59, 'Can delete chunk', 15, 'delete_chunk');
INSERT INTO public.auth_permission VALUES (60, 'Can view chunk', 15, 'view_chunk');
INSERT INTO public.auth_permission VALUES (61, 'Can add document', 16, 'add_document');
INSERT INTO public.auth_permission VALUES (62, 'Can change document', 16, 'change_document');
INSERT INTO public.auth_permission VALUES (63, 'Can delete document', 16, 'delete_document');
INSERT INTO public.auth_permission VALUES (64, 'Can view document', 16, 'view_document');
INSERT INTO public.auth_permission VALUES (65, 'Can add document version', 17, 'add_documentversion');
INSERT INTO public.auth_permission VALUES (66, 'Can change document version', 17, 'change_documentversion');
INSERT INTO public.auth_permission VALUES (67, 'Can delete document version', 17, 'delete_documentversion');
INSERT INTO public.auth_permission VALUES (68, 'Can view document version', 17, 'view_documentversion');
INSERT INTO public.auth_permission VALUES (69, 'Can add embedding', 18, 'add_embedding');
INSERT INTO public.auth_permission VALUES (70, 'Can change embedding', 18, 'change_embedding');
INSERT INTO public.auth_permission VALUES (71, 'Can delete embedding', 18, 'delete_embedding');
INSERT INTO public.auth_permission VALUES (72, 'Can view embedding', 18, 'view_embedding');
INSERT INTO public.auth_permission VALUES (73, 'Can add ingest run', 19, 'add_ingestrun');
INSERT INTO public.auth_permission VALUES (74, 'Can change ingest run', 19, 'change_ingestrun');
INSERT INTO public.auth_permission VALUES (75, 'Can delete ingest run', 19, 'delete_ingestrun');
INSERT INTO public.auth_permission VALUES (76, 'Can view ingest run', 19, 'view_ingestrun');
INSERT INTO public.auth_permission VALUES (77, 'Can add knowledge base', 20, 'add_knowledgebase');
INSERT INTO public.auth_permission VALUES (78, 'Can change knowledge base', 20, 'change_knowledgebase');
INSERT INTO public.auth_permission VALUES (79, 'Can delete knowledge base', 20, 'delete_knowledgebase');
INSERT INTO public.auth_permission VALUES (80, 'Can view knowledge base', 20, 'view_knowledgebase');
INSERT INTO public.auth_permission VALUES (81, 'Can add knowledge base source', 21, 'add_knowledgebasesource');
INSERT INTO public.auth_permission VALUES (82, 'Can change knowledge base source', 21, 'change_knowledgebasesource');
INSERT INTO public.auth_permission VALUES (83, 'Can delete knowledge base source', 21, 'delete_knowledgebasesource');
INSERT INTO public.auth_permission VALUES (84, 'Can view knowledge base source', 21, 'view_knowledgebasesource');
INSERT INTO public.auth_permission VALUES (85, 'Can add conversation', 22, 'add_conversation');
INSERT INTO public.auth_permission VALUES (86, 'Can change conversation', 22, 'change_conversation');
INSERT INTO public.auth_permission VALUES (87, 'Can delete conversation', 22, 'delete_conversation');
INSERT INTO public.auth_permission VALUES (88, 'Can view conversation', 22, 'view_conversation');
INSERT INTO public.auth_permission VALUES (89, 'Can add message', 23, 'add_message');
INSERT INTO public.auth_permission VALUES (90, 'Can change message', 23, 'change_message');
INSERT INTO public.auth_permission VALUES (91, 'Can delete message', 23, 'delete_message');
INSERT INTO public.auth_permission VALUES (92, 'Can view message', 23, 'view_message');
INSERT INTO public.auth_permission VALUES (93, 'Can add question set', 24, 'add_questionset');
INSERT INTO public.auth_permission VALUES (94, 'Can change question set', 24, 'change_questionset');
INSERT INTO public.auth_permission VALUES (95, 'Can delete question set', 24, 'delete_questionset');
INSERT INTO public.auth_permission VALUES (96, 'Can view question set', 24, 'view_questionset');
INSERT INTO public.auth_permission VALUES (97, 'Can add eval run', 25, 'add_evalrun');
INSERT INTO public.auth_permission VALUES (98, 'Can change eval run', 25, 'change_evalrun');
INSERT INTO public.auth_permission VALUES (99, 'Can delete eval run', 25, 'delete_evalrun');
INSERT INTO public.auth_permission VALUES (100, 'Can view eval run', 25, 'view_evalrun');
INSERT INTO public.auth_permission VALUES (101, 'Can add feedback', 26, 'add_feedback');
INSERT INTO public.auth_permission VALUES (102, 'Can change feedback', 26, 'change_feedback');
INSERT INTO public.auth_permission VALUES (103, 'Can delete feedback', 26, 'delete_feedback');
INSERT INTO public.auth_permission VALUES (104, 'Can view feedback', 26, 'view_feedback');

INSERT INTO public.django_content_type VALUES (1, 'admin', 'logentry');
INSERT INTO public.django_content_type VALUES (2, 'auth', 'permission');
INSERT INTO public.django_content_type VALUES (3, 'auth', 'group');
INSERT INTO public.django_content_type VALUES (4, 'auth', 'user');
INSERT INTO public.django_content_type VALUES (5, 'contenttypes', 'contenttype');
INSERT INTO public.django_content_type VALUES (6, 'sessions', 'session');
INSERT INTO public.django_content_type VALUES (7, 'jobs', 'backgroundjob');
INSERT INTO public.django_content_type VALUES (8, 'traces', 'trace');
INSERT INTO public.django_content_type VALUES (9, 'access', 'apitoken');
INSERT INTO public.django_content_type VALUES (10, 'access', 'grant');
INSERT INTO public.django_content_type VALUES (11, 'axes', 'accessattempt');
INSERT INTO public.django_content_type VALUES (12, 'axes', 'accesslog');
INSERT INTO public.django_content_type VALUES (13, 'axes', 'accessfailurelog');
INSERT INTO public.django_content_type VALUES (14, 'axes', 'accessattemptexpiration');
INSERT INTO public.django_content_type VALUES (15, 'knowledge', 'chunk');
INSERT INTO public.django_content_type VALUES (16, 'knowledge', 'document');
INSERT INTO public.django_content_type VALUES (17, 'knowledge', 'documentversion');
INSERT INTO public.django_content_type VALUES (18, 'knowledge', 'embedding');
INSERT INTO public.django_content_type VALUES (19, 'knowledge', 'ingestrun');
INSERT INTO public.django_content_type VALUES (20, 'knowledge', 'knowledgebase');
INSERT INTO public.django_content_type VALUES (21, 'knowledge', 'knowledgebasesource');
INSERT INTO public.django_content_type VALUES (22, 'conversations', 'conversation');
INSERT INTO public.django_content_type VALUES (23, 'conversations', 'message');
INSERT INTO public.django_content_type VALUES (24, 'workbench', 'questionset');
INSERT INTO public.django_content_type VALUES (25, 'workbench', 'evalrun');
INSERT INTO public.django_content_type VALUES (26, 'workbench', 'feedback');

INSERT INTO public.django_migrations VALUES (1, 'contenttypes', '0001_initial', '2026-12-04 22:53:46.073707+00');
INSERT INTO public.django_migrations VALUES (2, 'auth', '0001_initial', '2026-12-04 22:53:46.112075+00');
INSERT INTO public.django_migrations VALUES (3, 'knowledge', '0001_initial', '2026-12-04 22:53:46.144206+00');
INSERT INTO public.django_migrations VALUES (4, 'access', '0001_initial', '2026-12-04 22:53:46.156117+00');
INSERT INTO public.django_migrations VALUES (5, 'admin', '0001_initial', '2026-12-04 22:53:46.17185+00');
INSERT INTO public.django_migrations VALUES (6, 'admin', '0002_logentry_remove_auto_add', '2026-12-04 22:53:46.180004+00');
INSERT INTO public.django_migrations VALUES (7, 'admin', '0003_logentry_add_action_flag_choices', '2026-12-04 22:53:46.186953+00');
INSERT INTO public.django_migrations VALUES (8, 'contenttypes', '0002_remove_content_type_name', '2026-12-04 22:53:46.203445+00');
INSERT INTO public.django_migrations VALUES (9, 'auth', '0002_alter_permission_name_max_length', '2026-12-04 22:53:46.215364+00');
INSERT INTO public.django_migrations VALUES (10, 'auth', '0003_alter_user_email_max_length', '2026-12-04 22:53:46.233133+00');
INSERT INTO public.django_migrations VALUES (11, 'auth', '0004_alter_user_username_opts', '2026-12-04 22:53:46.240491+00');
INSERT INTO public.django_migrations VALUES (12, 'auth', '0005_alter_user_last_login_null', '2026-12-04 22:53:46.249057+00');
INSERT INTO public.django_migrations VALUES (13, 'auth', '0006_require_contenttypes_0002', '2026-12-04 22:53:46.252157+00');
INSERT INTO public.django_migrations VALUES (14, 'auth', '0007_alter_validators_add_error_messages', '2026-12-04 22:53:46.259539+00');
INSERT INTO public.django_migrations VALUES (15, 'auth', '0008_alter_user_username_max_length', '2026-12-04 22:53:46.277511+00');
INSERT INTO public.django_migrations VALUES (16, 'auth', '0009_alter_user_last_name_max_length', '2026-12-04 22:53:46.288566+00');
INSERT INTO public.django_migrations VALUES (17, 'auth', '0010_alter_group_name_max_length', '2026-12-04 22:53:46.309114+00');
INSERT INTO public.django_migrations VALUES (18, 'auth', '0011_update_proxy_permissions', '2026-12-04 22:53:46.328602+00');
INSERT INTO public.django_migrations VALUES (19, 'auth', '0012_alter_user_first_name_max_length', '2026-12-04 22:53:46.344852+00');
INSERT INTO public.django_migrations VALUES (20, 'axes', '0001_initial', '2026-12-04 22:53:46.35359+00');
INSERT INTO public.django_migrations VALUES (21, 'axes', '0002_auto_20151217_2044', '2026-12-04 22:53:46.380627+00');
INSERT INTO public.django_migrations VALUES (22, 'axes', '0003_auto_20160322_0929', '2026-12-04 22:53:46.391489+00');
INSERT INTO public.django_migrations VALUES (23, 'axes', '0004_auto_20181024_1538', '2026-12-04 22:53:46.406957+00');
INSERT INTO public.django_migrations VALUES (24, 'axes', '0005_remove_accessattempt_trusted', '2026-12-04 22:53:46.413692+00');
INSERT INTO public.django_migrations VALUES (25, 'axes', '0006_remove_accesslog_trusted', '2026-12-04 22:53:46.421812+00');
INSERT INTO public.django_migrations VALUES (26, 'axes', '0007_alter_accessattempt_unique_together', '2026-12-04 22:53:46.451398+00');
INSERT INTO public.django_migrations VALUES (27, 'axes', '0008_accessfailurelog', '2026-12-04 22:53:46.464066+00');
INSERT INTO public.django_migrations VALUES (28, 'axes', '0009_add_session_hash', '2026-12-04 22:53:46.470082+00');
INSERT INTO public.django_migrations VALUES (29, 'axes', '0010_accessattemptexpiration', '2026-12-04 22:53:46.476069+00');
INSERT INTO public.django_migrations VALUES (30, 'conversations', '0001_initial', '2026-12-04 22:53:46.52813+00');
INSERT INTO public.django_migrations VALUES (31, 'conversations', '0002_message_unsupported_citations', '2026-12-04 22:53:46.536612+00');
INSERT INTO public.django_migrations VALUES (32, 'conversations', '0003_conversation_filters', '2026-12-04 22:53:46.555347+00');
INSERT INTO public.django_migrations VALUES (33, 'jobs', '0001_initial', '2026-12-04 22:53:46.560959+00');
INSERT INTO public.django_migrations VALUES (34, 'traces', '0001_initial', '2026-12-04 22:53:46.563384+00');
INSERT INTO public.django_migrations VALUES (35, 'knowledge', '0002_background_job_to_jobs', '2026-12-04 22:53:46.588334+00');
INSERT INTO public.django_migrations VALUES (36, 'knowledge', '0003_trace_to_traces', '2026-12-04 22:53:46.610368+00');
INSERT INTO public.django_migrations VALUES (37, 'knowledge', '0004_access_models_to_access', '2026-12-04 22:53:46.649833+00');
INSERT INTO public.django_migrations VALUES (38, 'search_index', '0001_initial', '2026-12-04 22:53:46.654554+00');
INSERT INTO public.django_migrations VALUES (39, 'sessions', '0001_initial', '2026-12-04 22:53:46.660362+00');
INSERT INTO public.django_migrations VALUES (40, 'workbench', '0001_initial', '2026-12-04 22:53:46.720196+00');

INSERT INTO public.knowledge_bases VALUES (1, 'default', 'Default', 'Vaults ingested without a knowledge base of their own.', '2026-12-04 22:53:45.912505+00', '2026-12-04 22:53:45.912505+00', 'local-only');

INSERT INTO public.lexical_stats VALUES (true, 0, 0);

SELECT pg_catalog.setval('public.auth_group_id_seq', 1, false);

SELECT pg_catalog.setval('public.auth_group_permissions_id_seq', 1, false);

SELECT pg_catalog.setval('public.auth_permission_id_seq', 104, true);

SELECT pg_catalog.setval('public.auth_user_groups_id_seq', 1, false);

SELECT pg_catalog.setval('public.auth_user_id_seq', 1, false);

SELECT pg_catalog.setval('public.auth_user_user_permissions_id_seq', 1, false);

SELECT pg_catalog.setval('public.axes_accessattempt_id_seq', 1, false);

SELECT pg_catalog.setval('public.axes_accessfailurelog_id_seq', 1, false);

SELECT pg_catalog.setval('public.axes_accesslog_id_seq', 1, false);

SELECT pg_catalog.setval('public.background_jobs_id_seq', 1, false);

SELECT pg_catalog.setval('public.chunks_id_seq', 1, false);

SELECT pg_catalog.setval('public.conversations_conversation_id_seq', 1, false);

SELECT pg_catalog.setval('public.conversations_message_id_seq', 1, false);

SELECT pg_catalog.setval('public.django_admin_log_id_seq', 1, false);

SELECT pg_catalog.setval('public.django_content_type_id_seq', 26, true);

SELECT pg_catalog.setval('public.django_migrations_id_seq', 40, true);

SELECT pg_catalog.setval('public.document_versions_id_seq', 1, false);

SELECT pg_catalog.setval('public.documents_id_seq', 1, false);

SELECT pg_catalog.setval('public.embeddings_id_seq', 1, false);

SELECT pg_catalog.setval('public.ingest_runs_id_seq', 1, false);

SELECT pg_catalog.setval('public.knowledge_apitoken_id_seq', 1, false);

SELECT pg_catalog.setval('public.knowledge_apitoken_knowledge_bases_id_seq', 1, false);

SELECT pg_catalog.setval('public.knowledge_base_sources_id_seq', 1, false);

SELECT pg_catalog.setval('public.knowledge_bases_id_seq', 1, true);

SELECT pg_catalog.setval('public.knowledge_grant_id_seq', 1, false);

SELECT pg_catalog.setval('public.workbench_evalrun_id_seq', 1, false);

SELECT pg_catalog.setval('public.workbench_feedback_id_seq', 1, false);

SELECT pg_catalog.setval('public.workbench_questionset_id_seq', 1, false);

ALTER TABLE ONLY public.auth_group
    ADD CONSTRAINT auth_group_name_key UNIQUE (name);

ALTER TABLE ONLY public.auth_group_permissions
    ADD CONSTRAINT auth_group_permissions_group_id_permission_id_0cd325b0_uniq UNIQUE (group_id, permission_id);

ALTER TABLE ONLY public.auth_group_permissions
    ADD CONSTRAINT auth_group_permissions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_group
    ADD CONSTRAINT auth_group_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_permission
    ADD CONSTRAINT auth_permission_content_type_id_codename_01ab375a_uniq UNIQUE (content_type_id, codename);

ALTER TABLE ONLY public.auth_permission
    ADD CONSTRAINT auth_permission_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_user_groups
    ADD CONSTRAINT auth_user_groups_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_user_groups
    ADD CONSTRAINT auth_user_groups_user_id_group_id_94350c0c_uniq UNIQUE (user_id, group_id);

ALTER TABLE ONLY public.auth_user
    ADD CONSTRAINT auth_user_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_user_user_permissions
    ADD CONSTRAINT auth_user_user_permissions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_user_user_permissions
    ADD CONSTRAINT auth_user_user_permissions_user_id_permission_id_14a6b632_uniq UNIQUE (user_id, permission_id);

ALTER TABLE ONLY public.auth_user
    ADD CONSTRAINT auth_user_username_key UNIQUE (username);

ALTER TABLE ONLY public.axes_accessattempt
    ADD CONSTRAINT axes_accessattempt_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.axes_accessattempt
    ADD CONSTRAINT axes_accessattempt_username_ip_address_user_agent_8ea22282_uniq UNIQUE (username, ip_address, user_agent);

ALTER TABLE ONLY public.axes_accessattemptexpiration
    ADD CONSTRAINT axes_accessattemptexpiration_pkey PRIMARY KEY (access_attempt_id);

ALTER TABLE ONLY public.axes_accessfailurelog
    ADD CONSTRAINT axes_accessfailurelog_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.axes_accesslog
    ADD CONSTRAINT axes_accesslog_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.background_jobs
    ADD CONSTRAINT background_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_document_id_chunk_index_key UNIQUE (document_id, chunk_index);

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.conversations_conversation
    ADD CONSTRAINT conversations_conversation_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.conversations_message
    ADD CONSTRAINT conversations_message_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.django_admin_log
    ADD CONSTRAINT django_admin_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.django_content_type
    ADD CONSTRAINT django_content_type_app_label_model_76bd3d3b_uniq UNIQUE (app_label, model);

ALTER TABLE ONLY public.django_content_type
    ADD CONSTRAINT django_content_type_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.django_migrations
    ADD CONSTRAINT django_migrations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.django_session
    ADD CONSTRAINT django_session_pkey PRIMARY KEY (session_key);

ALTER TABLE ONLY public.document_versions
    ADD CONSTRAINT document_versions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_vault_path_relative_path_key UNIQUE (vault_path, relative_path);

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_chunk_id_embedding_provider_embedding_model_embe_key UNIQUE (chunk_id, embedding_provider, embedding_model, embedding_dim);

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.ingest_runs
    ADD CONSTRAINT ingest_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.job_workers
    ADD CONSTRAINT job_workers_pkey PRIMARY KEY (owner);

ALTER TABLE ONLY public.knowledge_apitoken_knowledge_bases
    ADD CONSTRAINT knowledge_apitoken_knowl_apitoken_id_knowledgebas_7a42d411_uniq UNIQUE (apitoken_id, knowledgebase_id);

ALTER TABLE ONLY public.knowledge_apitoken_knowledge_bases
    ADD CONSTRAINT knowledge_apitoken_knowledge_bases_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.knowledge_apitoken
    ADD CONSTRAINT knowledge_apitoken_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.knowledge_apitoken
    ADD CONSTRAINT knowledge_apitoken_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.knowledge_base_sources
    ADD CONSTRAINT knowledge_base_sources_path_key UNIQUE (path);

ALTER TABLE ONLY public.knowledge_base_sources
    ADD CONSTRAINT knowledge_base_sources_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.knowledge_bases
    ADD CONSTRAINT knowledge_bases_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.knowledge_bases
    ADD CONSTRAINT knowledge_bases_slug_key UNIQUE (slug);

ALTER TABLE ONLY public.knowledge_grant
    ADD CONSTRAINT knowledge_grant_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lexical_length_stats
    ADD CONSTRAINT lexical_length_stats_pkey PRIMARY KEY (knowledge_base_id, length_cell);

ALTER TABLE ONLY public.lexical_scope_stats
    ADD CONSTRAINT lexical_scope_stats_pkey PRIMARY KEY (knowledge_base_id);

ALTER TABLE ONLY public.lexical_stats
    ADD CONSTRAINT lexical_stats_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lexical_term_stats
    ADD CONSTRAINT lexical_term_stats_pkey PRIMARY KEY (knowledge_base_id, term);

ALTER TABLE ONLY public.workbench_feedback
    ADD CONSTRAINT one_feedback_per_answer_and_user UNIQUE (trace_id, user_id);

ALTER TABLE ONLY public.knowledge_grant
    ADD CONSTRAINT one_grant_per_user_and_base UNIQUE (user_id, knowledge_base_id);

ALTER TABLE ONLY public.workbench_questionset
    ADD CONSTRAINT one_question_set_name_per_base UNIQUE (knowledge_base_id, name);

ALTER TABLE ONLY public.restore_runs
    ADD CONSTRAINT restore_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.search_index_state
    ADD CONSTRAINT search_index_state_pkey PRIMARY KEY (knowledge_base_id);

ALTER TABLE ONLY public.token_failures
    ADD CONSTRAINT token_failures_pkey PRIMARY KEY (address);

ALTER TABLE ONLY public.traces
    ADD CONSTRAINT traces_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.vector_index_tuning
    ADD CONSTRAINT vector_index_tuning_pkey PRIMARY KEY (index_name);

ALTER TABLE ONLY public.workbench_evalrun
    ADD CONSTRAINT workbench_evalrun_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.workbench_feedback
    ADD CONSTRAINT workbench_feedback_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.workbench_questionset
    ADD CONSTRAINT workbench_questionset_pkey PRIMARY KEY (id);

CREATE INDEX auth_group_name_a6ea08ec_like ON public.auth_group USING btree (name varchar_pattern_ops);

CREATE INDEX auth_group_permissions_group_id_b120cbf9 ON public.auth_group_permissions USING btree (group_id);

CREATE INDEX auth_group_permissions_permission_id_84c5c92e ON public.auth_group_permissions USING btree (permission_id);

CREATE INDEX auth_permission_content_type_id_2f476e4b ON public.auth_permission USING btree (content_type_id);

CREATE INDEX auth_user_groups_group_id_97559544 ON public.auth_user_groups USING btree (group_id);

CREATE INDEX auth_user_groups_user_id_6a12ed8b ON public.auth_user_groups USING btree (user_id);

CREATE INDEX auth_user_user_permissions_permission_id_1fbb5f2c ON public.auth_user_user_permissions USING btree (permission_id);

CREATE INDEX auth_user_user_permissions_user_id_a95ead1b ON public.auth_user_user_permissions USING btree (user_id);

CREATE INDEX auth_user_username_6821ab7c_like ON public.auth_user USING btree (username varchar_pattern_ops);

CREATE INDEX axes_accessattempt_ip_address_10922d9c ON public.axes_accessattempt USING btree (ip_address);

CREATE INDEX axes_accessattempt_user_agent_ad89678b ON public.axes_accessattempt USING btree (user_agent);

CREATE INDEX axes_accessattempt_user_agent_ad89678b_like ON public.axes_accessattempt USING btree (user_agent varchar_pattern_ops);

CREATE INDEX axes_accessattempt_username_3f2d4ca0 ON public.axes_accessattempt USING btree (username);

CREATE INDEX axes_accessattempt_username_3f2d4ca0_like ON public.axes_accessattempt USING btree (username varchar_pattern_ops);

CREATE INDEX axes_accessfailurelog_ip_address_2e9f5a7f ON public.axes_accessfailurelog USING btree (ip_address);

CREATE INDEX axes_accessfailurelog_user_agent_ea145dda ON public.axes_accessfailurelog USING btree (user_agent);

CREATE INDEX axes_accessfailurelog_user_agent_ea145dda_like ON public.axes_accessfailurelog USING btree (user_agent varchar_pattern_ops);

CREATE INDEX axes_accessfailurelog_username_a8b7e8a4 ON public.axes_accessfailurelog USING btree (username);

CREATE INDEX axes_accessfailurelog_username_a8b7e8a4_like ON public.axes_accessfailurelog USING btree (username varchar_pattern_ops);

CREATE INDEX axes_accesslog_ip_address_86b417e5 ON public.axes_accesslog USING btree (ip_address);

CREATE INDEX axes_accesslog_user_agent_0e659004 ON public.axes_accesslog USING btree (user_agent);

CREATE INDEX axes_accesslog_user_agent_0e659004_like ON public.axes_accesslog USING btree (user_agent varchar_pattern_ops);

CREATE INDEX axes_accesslog_username_df93064b ON public.axes_accesslog USING btree (username);

CREATE INDEX axes_accesslog_username_df93064b_like ON public.axes_accesslog USING btree (username varchar_pattern_ops);

CREATE INDEX conversation_owner_recent ON public.conversations_conversation USING btree (owner, updated_at DESC);

CREATE INDEX conversations_conversation_owner_7da35487 ON public.conversations_conversation USING btree (owner);

CREATE INDEX conversations_conversation_owner_7da35487_like ON public.conversations_conversation USING btree (owner varchar_pattern_ops);

CREATE INDEX conversations_conversation_updated_at_3ed41a01 ON public.conversations_conversation USING btree (updated_at);

CREATE INDEX conversations_conversation_user_id_c3e4e6ca ON public.conversations_conversation USING btree (user_id);

CREATE INDEX conversations_message_conversation_id_f1a2d5e9 ON public.conversations_message USING btree (conversation_id);

CREATE INDEX django_admin_log_content_type_id_c4bce8eb ON public.django_admin_log USING btree (content_type_id);

CREATE INDEX django_admin_log_user_id_c564eba6 ON public.django_admin_log USING btree (user_id);

CREATE INDEX django_session_expire_date_a5c62663 ON public.django_session USING btree (expire_date);

CREATE INDEX django_session_session_key_c0390e0f_like ON public.django_session USING btree (session_key varchar_pattern_ops);

CREATE INDEX idx_background_jobs_claim ON public.background_jobs USING btree (run_after, id) WHERE (status = 'queued'::text);

CREATE INDEX idx_background_jobs_lease ON public.background_jobs USING btree (lease_until) WHERE (status = 'running'::text);

CREATE INDEX idx_background_jobs_resource ON public.background_jobs USING btree (resource, id);

CREATE INDEX idx_chunks_content_hash ON public.chunks USING btree (content_hash);

CREATE INDEX idx_chunks_document_id ON public.chunks USING btree (document_id);

CREATE INDEX idx_chunks_knowledge_base ON public.chunks USING btree (knowledge_base_id);

CREATE INDEX idx_chunks_knowledge_base_lexical ON public.chunks USING btree (knowledge_base_id) INCLUDE (lexical_length) WHERE (lexical_terms IS NOT NULL);

CREATE INDEX idx_chunks_lexical_cells ON public.chunks USING gin (lexical_cells);

CREATE INDEX idx_chunks_lexical_missing ON public.chunks USING btree (id) WHERE (lexical_terms IS NULL);

CREATE INDEX idx_chunks_lexical_stale_v3 ON public.chunks USING btree (id) WHERE (lexical_version IS DISTINCT FROM 3);

CREATE INDEX idx_chunks_relative_path ON public.chunks USING btree (relative_path);

CREATE INDEX idx_document_versions_document ON public.document_versions USING btree (document_id, id);

CREATE INDEX idx_documents_content_hash ON public.documents USING btree (content_hash);

CREATE INDEX idx_documents_frontmatter ON public.documents USING gin (frontmatter jsonb_path_ops);

CREATE INDEX idx_documents_knowledge_base ON public.documents USING btree (knowledge_base_id);

CREATE INDEX idx_documents_path_prefix ON public.documents USING btree (knowledge_base_id, relative_path text_pattern_ops);

CREATE UNIQUE INDEX idx_documents_source_name ON public.documents USING btree (knowledge_base_id, lower(source_name)) WHERE (source_name IS NOT NULL);

CREATE INDEX idx_documents_tags ON public.documents USING gin (tags);

CREATE INDEX idx_documents_title_trgm_v2 ON public.documents USING gin (lower(COALESCE(title, (frontmatter ->> 'title'::text), source_name, relative_path)) public.gin_trgm_ops);

CREATE INDEX idx_embeddings_config ON public.embeddings USING btree (embedding_provider, embedding_model, embedding_dim);

CREATE INDEX idx_kb_sources_knowledge_base ON public.knowledge_base_sources USING btree (knowledge_base_id);

CREATE INDEX idx_lexical_term_stats_unused ON public.lexical_term_stats USING btree (knowledge_base_id) WHERE (df <= 0);

CREATE INDEX idx_search_index_changes_generation ON public.search_index_changes USING btree (knowledge_base_id, generation);

CREATE INDEX idx_traces_created_at ON public.traces USING btree (created_at);

CREATE INDEX knowledge_apitoken_knowledge_bases_apitoken_id_9b04b56d ON public.knowledge_apitoken_knowledge_bases USING btree (apitoken_id);

CREATE INDEX knowledge_apitoken_knowledge_bases_knowledgebase_id_1d04c895 ON public.knowledge_apitoken_knowledge_bases USING btree (knowledgebase_id);

CREATE INDEX knowledge_apitoken_token_hash_1fe3e51d_like ON public.knowledge_apitoken USING btree (token_hash varchar_pattern_ops);

CREATE INDEX knowledge_apitoken_user_id_d2c75cc7 ON public.knowledge_apitoken USING btree (user_id);

CREATE INDEX knowledge_grant_knowledge_base_id_a4b7de75 ON public.knowledge_grant USING btree (knowledge_base_id);

CREATE INDEX knowledge_grant_user_id_9f1786ff ON public.knowledge_grant USING btree (user_id);

CREATE INDEX workbench_evalrun_created_by_id_ea9ca84a ON public.workbench_evalrun USING btree (created_by_id);

CREATE INDEX workbench_evalrun_knowledge_base_id_b62e5a4f ON public.workbench_evalrun USING btree (knowledge_base_id);

CREATE INDEX workbench_evalrun_question_set_id_d05efe1b ON public.workbench_evalrun USING btree (question_set_id);

CREATE INDEX workbench_feedback_trace_id_5dcde82c ON public.workbench_feedback USING btree (trace_id);

CREATE INDEX workbench_feedback_trace_id_5dcde82c_like ON public.workbench_feedback USING btree (trace_id varchar_pattern_ops);

CREATE INDEX workbench_feedback_user_id_aec48363 ON public.workbench_feedback USING btree (user_id);

CREATE INDEX workbench_questionset_created_by_id_478e57d0 ON public.workbench_questionset USING btree (created_by_id);

CREATE INDEX workbench_questionset_knowledge_base_id_47113969 ON public.workbench_questionset USING btree (knowledge_base_id);

CREATE TRIGGER chunks_knowledge_base_fill BEFORE INSERT ON public.chunks FOR EACH ROW WHEN ((new.knowledge_base_id IS NULL)) EXECUTE FUNCTION public.chunks_knowledge_base_fill();

CREATE TRIGGER chunks_lexical_cells_insert BEFORE INSERT ON public.chunks FOR EACH ROW WHEN (((new.lexical_terms IS NOT NULL) AND (new.lexical_cells IS NULL))) EXECUTE FUNCTION public.chunks_lexical_cells_fill();

CREATE TRIGGER chunks_lexical_cells_update BEFORE UPDATE ON public.chunks FOR EACH ROW WHEN (((new.lexical_terms IS NOT NULL) AND ((new.lexical_terms IS DISTINCT FROM old.lexical_terms) OR (new.lexical_length IS DISTINCT FROM old.lexical_length)) AND (NOT (new.lexical_cells IS DISTINCT FROM old.lexical_cells)))) EXECUTE FUNCTION public.chunks_lexical_cells_fill();

CREATE TRIGGER chunks_lexical_scope_stats_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS lexical_old FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_scope_stats_track();

CREATE TRIGGER chunks_lexical_scope_stats_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS lexical_new FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_scope_stats_track();

CREATE TRIGGER chunks_lexical_scope_stats_truncate AFTER TRUNCATE ON public.chunks FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_scope_stats_reset();

CREATE TRIGGER chunks_lexical_scope_stats_update AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS lexical_old NEW TABLE AS lexical_new FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_scope_stats_track();

CREATE TRIGGER chunks_lexical_stats_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS lexical_old FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_stats_track();

CREATE TRIGGER chunks_lexical_stats_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS lexical_new FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_stats_track();

CREATE TRIGGER chunks_lexical_stats_truncate AFTER TRUNCATE ON public.chunks FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_stats_reset();

CREATE TRIGGER chunks_lexical_stats_update AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS lexical_old NEW TABLE AS lexical_new FOR EACH STATEMENT EXECUTE FUNCTION public.lexical_stats_track();

CREATE TRIGGER chunks_search_index_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS search_index_old FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

CREATE TRIGGER chunks_search_index_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS search_index_new FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

CREATE TRIGGER chunks_search_index_truncate AFTER TRUNCATE ON public.chunks FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_reset();

CREATE TRIGGER chunks_search_index_update AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS search_index_old NEW TABLE AS search_index_new FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

CREATE TRIGGER documents_knowledge_base_fill BEFORE INSERT ON public.documents FOR EACH ROW WHEN ((new.knowledge_base_id IS NULL)) EXECUTE FUNCTION public.documents_knowledge_base_fill();

CREATE TRIGGER documents_knowledge_base_follow AFTER UPDATE OF knowledge_base_id ON public.documents FOR EACH ROW WHEN ((old.knowledge_base_id IS DISTINCT FROM new.knowledge_base_id)) EXECUTE FUNCTION public.documents_knowledge_base_follow();

CREATE TRIGGER embeddings_search_index_delete AFTER DELETE ON public.embeddings REFERENCING OLD TABLE AS search_index_old FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

CREATE TRIGGER embeddings_search_index_insert AFTER INSERT ON public.embeddings REFERENCING NEW TABLE AS search_index_new FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

CREATE TRIGGER embeddings_search_index_truncate AFTER TRUNCATE ON public.embeddings FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_reset();

CREATE TRIGGER embeddings_search_index_update AFTER UPDATE ON public.embeddings REFERENCING OLD TABLE AS search_index_old NEW TABLE AS search_index_new FOR EACH STATEMENT EXECUTE FUNCTION public.search_index_log();

ALTER TABLE ONLY public.auth_group_permissions
    ADD CONSTRAINT auth_group_permissio_permission_id_84c5c92e_fk_auth_perm FOREIGN KEY (permission_id) REFERENCES public.auth_permission(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_group_permissions
    ADD CONSTRAINT auth_group_permissions_group_id_b120cbf9_fk_auth_group_id FOREIGN KEY (group_id) REFERENCES public.auth_group(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_permission
    ADD CONSTRAINT auth_permission_content_type_id_2f476e4b_fk_django_co FOREIGN KEY (content_type_id) REFERENCES public.django_content_type(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_user_groups
    ADD CONSTRAINT auth_user_groups_group_id_97559544_fk_auth_group_id FOREIGN KEY (group_id) REFERENCES public.auth_group(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_user_groups
    ADD CONSTRAINT auth_user_groups_user_id_6a12ed8b_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_user_user_permissions
    ADD CONSTRAINT auth_user_user_permi_permission_id_1fbb5f2c_fk_auth_perm FOREIGN KEY (permission_id) REFERENCES public.auth_permission(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.auth_user_user_permissions
    ADD CONSTRAINT auth_user_user_permissions_user_id_a95ead1b_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.axes_accessattemptexpiration
    ADD CONSTRAINT axes_accessattemptex_access_attempt_id_6b73a47a_fk_axes_acce FOREIGN KEY (access_attempt_id) REFERENCES public.axes_accessattempt(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_document_id_fkey FOREIGN KEY (document_id) REFERENCES public.documents(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id);

ALTER TABLE ONLY public.conversations_conversation
    ADD CONSTRAINT conversations_conversation_user_id_c3e4e6ca_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.conversations_message
    ADD CONSTRAINT conversations_messag_conversation_id_f1a2d5e9_fk_conversat FOREIGN KEY (conversation_id) REFERENCES public.conversations_conversation(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.django_admin_log
    ADD CONSTRAINT django_admin_log_content_type_id_c4bce8eb_fk_django_co FOREIGN KEY (content_type_id) REFERENCES public.django_content_type(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.django_admin_log
    ADD CONSTRAINT django_admin_log_user_id_c564eba6_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.document_versions
    ADD CONSTRAINT document_versions_document_id_fkey FOREIGN KEY (document_id) REFERENCES public.documents(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_active_version_id_fkey FOREIGN KEY (active_version_id) REFERENCES public.document_versions(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id);

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES public.chunks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.knowledge_apitoken
    ADD CONSTRAINT knowledge_apitoken_user_id_d2c75cc7_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.knowledge_base_sources
    ADD CONSTRAINT knowledge_base_sources_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.knowledge_grant
    ADD CONSTRAINT knowledge_grant_user_id_9f1786ff_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.lexical_length_stats
    ADD CONSTRAINT lexical_length_stats_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lexical_scope_stats
    ADD CONSTRAINT lexical_scope_stats_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lexical_term_stats
    ADD CONSTRAINT lexical_term_stats_knowledge_base_id_fkey FOREIGN KEY (knowledge_base_id) REFERENCES public.knowledge_bases(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.workbench_evalrun
    ADD CONSTRAINT workbench_evalrun_created_by_id_ea9ca84a_fk_auth_user_id FOREIGN KEY (created_by_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.workbench_evalrun
    ADD CONSTRAINT workbench_evalrun_question_set_id_d05efe1b_fk_workbench FOREIGN KEY (question_set_id) REFERENCES public.workbench_questionset(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.workbench_feedback
    ADD CONSTRAINT workbench_feedback_user_id_aec48363_fk_auth_user_id FOREIGN KEY (user_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.workbench_questionset
    ADD CONSTRAINT workbench_questionset_created_by_id_478e57d0_fk_auth_user_id FOREIGN KEY (created_by_id) REFERENCES public.auth_user(id) DEFERRABLE INITIALLY DEFERRED;
