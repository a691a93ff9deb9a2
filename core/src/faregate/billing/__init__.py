"""Billing: prices, the quota ledger and settlement."""
