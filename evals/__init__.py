"""``make eval``: real GIS tasks through the whole agent, scored against answers computed independently.

Each task is a question about the demo town, the trace a competent model
would produce (tool calls, then an answer written from what the tools
returned), and the expected result, computed with shapely from the
GeoPackage, never with the tool under test.  The scripted model server
plays the trace through the real graph, real tools, real QGIS, PostGIS and
OGC API server.  A robustness part replays calls as weak local models
really make them and counts how many errors name the fix.
"""
