"""Finding places by name across project layers and PostGIS tables, and making them usable as areas."""
