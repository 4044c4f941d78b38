-- Where prompt_tokens and completion_tokens came from: 'provider' (the LLM server's `usage`)
-- or 'counted' (local-rag's own count, when the server sent no usage); NULL without an LLM
-- call, and on traces recorded before this column existed.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS token_source TEXT;
