-- What the trace's tokens cost at the prices of RAG_MODEL_PRICES when it was recorded
-- (core/prices.py): prompt and completion tokens each at their price per 1,000. Both NULL when
-- the model had no price or no tokens were counted (unknown, not free), and on traces recorded
-- before these columns existed.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS cost_amount DOUBLE PRECISION;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS cost_currency TEXT;
