"""OGC API Features: servers, collections, queries and the layers they become."""
