"""The relay's rate limits (docs/operations.md, "Rate limits"): new-api's model request rate
limit per user, the per-key limits (requests and tokens per minute, parallel requests), their
counters in memory or in Redis."""
