"""The insights tool family: finding places by name and charting the data.

- ``family``: ``InsightTools`` (find_places, make_chart), the tools the model sees.
The work is done in the sibling packages ``tools/places/`` (finding and matching names) and
``tools/charts/`` (aggregating and drawing), each with one job; only this family calls them.
"""
