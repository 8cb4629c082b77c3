"""Tool families: plain functions the model calls, grouped by what they work on."""
