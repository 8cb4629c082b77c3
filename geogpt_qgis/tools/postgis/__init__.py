"""PostGIS tools: the user's saved PostgreSQL connections, queried safely."""
