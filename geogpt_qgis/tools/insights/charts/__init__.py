"""Charts from the data: a layer's attribute table or a SQL result, aggregated first, drawn with matplotlib."""
